"""DynamicResources' PodGroupPostFilter (kube-scheduler v1.37.2, GenericWorkload on,
DRAWorkloadResourceClaims at its default, off): for each of the group's pods the attempt reached,
what PostFilter does for a pod (one unavailable claim, reserved for nobody or for that pod only,
deallocated); whatever was done the status is Unschedulable with upstream's one message; a failed
write is an Error that ends it; a group placed by topology (TopologyAwareWorkloadScheduling with
spec.schedulingConstraints) is left alone."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth import features
from kubeberth.cache.objects import ObjectStore
from kubeberth.features import FeatureGates
from kubeberth.framework import CycleState
from kubeberth.framework.status import Code
from kubeberth.model import Pod, PodGroup
from kubeberth.plugins.dynamic_resources import DynamicResources
from tests.builders import make_node, make_pod, node_info

DRIVER = "gpu.example.com"
DONE = "deallocation and deletion of ResourceClaims completed"
ELSEWHERE = {"nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
    {"key": "metadata.name", "operator": "In", "values": ["gone"]}]}]},
    "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "gone", "device": "gpu-0"}]}}


class _Client:
    def __init__(self, fail: bool = False) -> None:
        self.writes: list[dict[str, Any]] = []
        self.fail = fail

    async def write_resource_claim(self, claim: dict[str, Any], *, update_metadata: bool = False) -> dict[str, Any]:
        if self.fail:
            raise RuntimeError(f'Operation cannot be fulfilled on resourceclaims "{claim["metadata"]["name"]}"')
        self.writes.append(claim)
        return claim


class _Handle:
    def __init__(self, fail: bool = False) -> None:
        self.objects = ObjectStore()
        self.client = _Client(fail)


def _cluster(claims: dict[str, dict[str, Any]], fail: bool = False) -> _Handle:
    h = _Handle(fail)
    h.objects.put("DeviceClass", {"metadata": {"name": "gpu"},
                                  "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    h.objects.put("ResourceSlice", {"metadata": {"name": "n1-gpu"}, "spec": {
        "driver": DRIVER, "nodeName": "n1", "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]}})
    for name, status in claims.items():
        h.objects.put("ResourceClaim", {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
                                        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                                            "deviceClassName": "gpu"}}]}}, "status": status})
    return h


def _member(name: str, claim: str | None) -> Pod:
    spec: dict[str, Any] = {"schedulingGroup": {"podGroupName": "g"}}
    if claim is not None:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim}]
    return make_pod(name, uid=f"pod-{name}", **spec)


def _group(**spec: Any) -> PodGroup:
    return PodGroup({"metadata": {"name": "g", "namespace": "default", "uid": "uid-g"},
                     "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, **spec}})


def _tried(pl: DynamicResources, *pods: Pod) -> list[tuple[Pod, CycleState]]:
    """Each pod through PreFilter and Filter on n1, as the group's algorithm did."""
    n1 = node_info(make_node("n1"))
    out = []
    for p in pods:
        state = CycleState()
        pl.pre_filter(state, p, [n1])
        pl.filter(state, p, n1)
        out.append((p, state))
    return out


def _names(h: _Handle) -> list[str]:
    return [w["metadata"]["name"] for w in h.client.writes]


@pytest.mark.parametrize(("claims", "want_written"), [
    pytest.param({"a": {"allocation": ELSEWHERE}, "b": {"allocation": ELSEWHERE}}, ["a", "b"],
                 id="each-pods-unavailable-claim"),
    pytest.param({"a": {"allocation": ELSEWHERE}, "b": {}}, ["a"], id="an-unallocated-claim-is-left"),
    pytest.param({"a": {"allocation": ELSEWHERE, "reservedFor": [{"resource": "pods", "name": "x", "uid": "x"}]},
                  "b": {"allocation": ELSEWHERE, "reservedFor": [{"resource": "pods", "name": "m1", "uid": "pod-m1"}]}},
                 ["b"], id="reserved-for-another-pod-is-left-for-itself-is-not"),
    pytest.param({"a": {}, "b": {}}, [], id="nothing-to-deallocate-same-message"),
])
async def test_each_pod_gets_what_postfilter_does_and_the_group_one_message(
        claims: dict[str, dict[str, Any]], want_written: list[str]) -> None:
    h = _cluster(claims)
    pl = DynamicResources(None, h)
    status = await pl.pod_group_post_filter(_group(), _tried(pl, _member("m0", "a"), _member("m1", "b")))
    assert (status.code, status.message()) == (Code.UNSCHEDULABLE, DONE)
    assert _names(h) == want_written
    for w in h.client.writes:
        assert not {"allocation", "reservedFor", "devices"} & set(w["status"])


async def test_pods_the_attempt_did_not_reach_and_pods_without_claims_are_passed_over() -> None:
    h = _cluster({"a": {"allocation": ELSEWHERE}, "b": {"allocation": ELSEWHERE}})
    pl = DynamicResources(None, h)
    tried = _tried(pl, _member("m0", None), _member("m1", "b"))
    status = await pl.pod_group_post_filter(_group(), [*tried, (_member("m2", "a"), CycleState())])
    assert (status.code, status.message()) == (Code.UNSCHEDULABLE, DONE)
    assert _names(h) == ["b"]


async def test_a_failed_write_is_the_error() -> None:
    h = _cluster({"a": {"allocation": ELSEWHERE}, "b": {"allocation": ELSEWHERE}}, fail=True)
    pl = DynamicResources(None, h)
    status = await pl.pod_group_post_filter(_group(), _tried(pl, _member("m0", "a"), _member("m1", "b")))
    assert status.code == Code.ERROR
    assert status.message() == 'Operation cannot be fulfilled on resourceclaims "a"'


@pytest.mark.parametrize(("gates", "constrained", "want"), [
    pytest.param("GenericWorkload=true,TopologyAwareWorkloadScheduling=true", True, ("", []), id="topology-aware"),
    pytest.param("GenericWorkload=true,TopologyAwareWorkloadScheduling=true", False, (DONE, ["a"]),
                 id="topology-gate-no-constraint"),
    pytest.param("GenericWorkload=true", True, (DONE, ["a"]), id="constraint-without-the-gate"),
])
async def test_topology_aware_groups_are_left_alone(gates: str, constrained: bool, want: tuple[str, list[str]]) -> None:
    h = _cluster({"a": {"allocation": ELSEWHERE}})
    pl = DynamicResources(None, h)
    spec = {"schedulingConstraints": {"topology": [{"key": "rack"}]}} if constrained else {}
    with features.override(FeatureGates.parse(gates)):
        status = await pl.pod_group_post_filter(_group(**spec), _tried(pl, _member("m0", "a")))
    assert (status.code, status.message(), _names(h)) == (Code.UNSCHEDULABLE, *want)
