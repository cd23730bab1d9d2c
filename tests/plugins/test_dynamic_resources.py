"""DynamicResources at its extension points: claim-less pods as upstream (PreFilter skips,
PostFilter leaves it to preemption, or says "not found" when an earlier PreFilter rejected the
pod); pods with claims held back, rejected, allocated, reserved, bound and deallocated with
upstream's reasons."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth.cache.objects import ObjectStore
from kubeberth.framework import CycleState, NodeToStatus
from kubeberth.framework.status import Code
from kubeberth.plugins.dynamic_resources import DynamicResources
from tests.builders import make_node, make_pod, node_info


async def test_a_pod_without_claims_is_skipped_and_left_to_preemption() -> None:
    pl, state, pod = DynamicResources(), CycleState(), make_pod("p")
    _, status = pl.pre_filter(state, pod, [])
    assert status is not None and status.is_skip()
    _, post = await pl.post_filter(state, pod, NodeToStatus())
    assert post is not None and post.code == Code.UNSCHEDULABLE and post.message() == ""


async def test_without_its_prefilter_state_postfilter_fails_with_upstreams_not_found() -> None:
    _, post = await DynamicResources().post_filter(CycleState(), make_pod("p"), NodeToStatus())
    assert post is not None and post.code == Code.ERROR and post.message() == "not found"


# ---- pods with claims ------------------------------------------------------------------------------

DRIVER = "gpu.example.com"


class _Client:
    def __init__(self) -> None:
        self.writes: list[tuple[dict[str, Any], bool]] = []

    async def write_resource_claim(self, claim: dict[str, Any], *, update_metadata: bool = False) -> dict[str, Any]:
        self.writes.append((claim, update_metadata))
        return claim


class _Handle:
    def __init__(self) -> None:
        self.objects = ObjectStore()
        self.client = _Client()


def _cluster(devices: int = 1, **claim_status: Any) -> _Handle:
    h = _Handle()
    h.objects.put("DeviceClass", {"metadata": {"name": "gpu"},
                                  "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    h.objects.put("ResourceSlice", {"metadata": {"name": "n1-gpu"}, "spec": {
        "driver": DRIVER, "nodeName": "n1", "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": f"gpu-{i}"} for i in range(devices)]}})
    for name in ("a", "b"):
        h.objects.put("ResourceClaim", {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
                                        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                                            "deviceClassName": "gpu"}}]}}, "status": dict(claim_status)})
    return h


def _pod(name: str, claim: str, uid: str = "") -> Any:
    return make_pod(name, uid=uid or f"pod-{name}", resourceClaims=[{"name": "gpu", "resourceClaimName": claim}])


@pytest.mark.parametrize(("claims", "status", "want"), [
    ([{"name": "gpu", "resourceClaimName": "nope"}], {}, 'could not find ResourceClaim "default/nope"'),
    ([{"name": "gpu", "resourceClaimTemplateName": "t"}], {}, 'pod "default/p": ResourceClaim not created yet'),
    ([{"name": "gpu", "resourceClaimTemplateName": "t"}],
     {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "a"}]},
     "ResourceClaim default/a was not created for Pod default/p (Pod is not owner)"),
    ([{"name": "gpu"}], {}, 'pod "default/p", spec.resourceClaim "gpu": none of the supported fields are set'),
    ([{"name": "gpu", "resourceClaimTemplateName": "t"}], {"resourceClaimStatuses": [{"name": "gpu"}]}, None),
    ([{"name": "gpu", "resourceClaimName": "a"}], {}, None),
], ids=["missing claim", "template not instantiated", "not the owner", "no source", "no claim needed", "ready"])
def test_pre_enqueue(claims: list[dict[str, Any]], status: dict[str, Any], want: str | None) -> None:
    pod = make_pod("p", resourceClaims=claims)
    pod.raw["status"] = status
    got = DynamicResources(None, _cluster()).pre_enqueue(pod)
    assert (got.message() if got is not None else None) == want
    if got is not None:
        assert got.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


async def test_two_pods_never_get_the_same_device_and_prebind_writes_the_claim() -> None:
    h = _cluster(devices=1)
    pl = DynamicResources(None, h)
    n1 = node_info(make_node("n1"))
    first, second = _pod("first", "a"), _pod("second", "b")
    s1 = CycleState()
    assert pl.pre_filter(s1, first, [n1])[1] is None
    assert pl.filter(s1, first, n1) is None
    assert pl.score(s1, first, n1) == 0
    assert pl.reserve(s1, first, "n1") is None
    s2 = CycleState()
    assert pl.pre_filter(s2, second, [n1])[1] is None
    rejected = pl.filter(s2, second, n1)  # the device is in flight for the first pod
    assert rejected is not None and rejected.message() == "cannot allocate all claims"
    assert await pl.pre_bind(s1, first, "n1") is None
    written, with_metadata = h.client.writes[-1]
    assert with_metadata and written["metadata"]["finalizers"] == ["resource.kubernetes.io/delete-protection"]
    assert written["status"]["reservedFor"] == [{"resource": "pods", "name": "first", "uid": "pod-first"}]
    assert written["status"]["allocation"]["devices"]["results"] == [
        {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]
    assert pl.in_flight == {}
    s3 = CycleState()  # now the allocation is in the claim's status: still taken
    assert pl.pre_filter(s3, second, [n1])[1] is None
    rejected = pl.filter(s3, second, n1)
    assert rejected is not None and rejected.message() == "cannot allocate all claims"


async def test_unreserve_returns_the_device() -> None:
    h = _cluster(devices=1)
    pl = DynamicResources(None, h)
    n1 = node_info(make_node("n1"))
    s1 = CycleState()
    pl.pre_filter(s1, _pod("first", "a"), [n1])
    pl.filter(s1, _pod("first", "a"), n1)
    pl.reserve(s1, _pod("first", "a"), "n1")
    pl.unreserve(s1, _pod("first", "a"), "n1")
    s2 = CycleState()
    pl.pre_filter(s2, _pod("second", "b"), [n1])
    assert pl.filter(s2, _pod("second", "b"), n1) is None


async def test_a_claim_allocated_elsewhere_is_deallocated_in_post_filter() -> None:
    elsewhere = {"nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]},
        "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n2", "device": "gpu-0"}]}}
    h = _cluster(allocation=elsewhere)
    pl = DynamicResources(None, h)
    n1 = node_info(make_node("n1"))
    state, pod = CycleState(), _pod("p", "a")
    assert pl.pre_filter(state, pod, [n1])[1] is None
    rejected = pl.filter(state, pod, n1)
    assert rejected is not None and rejected.message() == "resourceclaim not available on the node"
    _, post = await pl.post_filter(state, pod, NodeToStatus())
    assert post is not None and post.code == Code.UNSCHEDULABLE
    assert post.message() == "deallocation of ResourceClaim completed"
    written, _ = h.client.writes[-1]
    assert "allocation" not in written["status"]


async def test_a_claim_reserved_by_another_pod_is_not_deallocated() -> None:
    elsewhere = {"nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}, "devices": {"results": []}}
    h = _cluster(allocation=elsewhere, reservedFor=[{"resource": "pods", "name": "o", "uid": "other"}])
    pl = DynamicResources(None, h)
    n1 = node_info(make_node("n1"))
    state, pod = CycleState(), _pod("p", "a")
    pl.pre_filter(state, pod, [n1])
    pl.filter(state, pod, n1)
    _, post = await pl.post_filter(state, pod, NodeToStatus())
    assert post is not None and post.code == Code.UNSCHEDULABLE and post.message() == ""
    assert h.client.writes == []


def test_a_missing_device_class_rejects_the_pod_in_prefilter() -> None:
    h = _cluster()
    h.objects.delete("DeviceClass", "gpu")
    _, status = DynamicResources(None, h).pre_filter(CycleState(), _pod("p", "a"), [])
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == "request gpu: device class gpu does not exist"


def test_the_claim_the_controller_made_moves_the_pod() -> None:
    """A status update that names the pod's generated claim is an update of the pod (upstream's
    UpdatePodGeneratedResourceClaim), unlike other status changes."""
    from kubeberth.framework.events import UNSCHEDULED_POD, ActionType, pod_scheduling_properties_change
    from kubeberth.queue import is_pod_updated

    before = make_pod("p", resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "t"}])
    after = make_pod("p", resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "t"}])
    after.raw["status"] = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu-x"}]}
    other = make_pod("p", resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "t"}])
    other.raw["status"] = {"phase": "Pending"}
    assert is_pod_updated(before, after) and not is_pod_updated(before, other)
    events = pod_scheduling_properties_change(after, before)
    want = [(UNSCHEDULED_POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM)]
    assert [(e.resource, e.action) for e in events] == want


async def test_unreserve_after_prebind_takes_the_pod_out_of_reserved_for() -> None:
    import asyncio

    h = _cluster(devices=1)
    pl = DynamicResources(None, h)
    n1 = node_info(make_node("n1"))
    state, pod = CycleState(), _pod("first", "a")
    pl.pre_filter(state, pod, [n1])
    pl.filter(state, pod, n1)
    pl.reserve(state, pod, "n1")
    assert await pl.pre_bind(state, pod, "n1") is None
    pl.unreserve(state, pod, "n1")  # the binding failed
    await asyncio.gather(*pl._tasks)
    written, _ = h.client.writes[-1]
    assert written["status"]["reservedFor"] == [] and written["status"]["allocation"]
