"""VolumeBinding's PreBind through the ClusterClient: what it writes (upstream's
bindAPIUpdate), how it waits for the PV controller (checkBindings), and its errors."""

from __future__ import annotations

from typing import Any

from kubeberth.client import UpdateRefused
from kubeberth.framework import Code, CycleState, Status
from kubeberth.model import NodeInfo, Pod
from kubeberth.plugins.volume_binding import (
    ERR_REASON_BIND_CONFLICT,
    VolumeBinding,
    VolumeBindingArgs,
    bind_volume_to_claim_ref,
)
from kubeberth.plugins.volume_binding.claims import is_older
from tests.builders import make_node, make_pod
from tests.doubles import ObjectWritingClient, handle, store_of

from ._volume_helpers import claim_volume, pv, pvc, storage_class

WAIT = storage_class("wait-sc", wait=True)
PROVISION = storage_class("provision-sc", wait=True, provisioner="example.com/csi")
SELECTED = "volume.kubernetes.io/selected-node"


def claim_pod(claim: str, name: str = "pod-a") -> Pod:
    return make_pod(name, "default", volumes=[claim_volume(claim)])


def setup(*objs: dict[str, Any], controller: bool = True, timeout: int = 600, refuse: str = "",
          client: bool = True) -> tuple[VolumeBinding, ObjectWritingClient, list[NodeInfo]]:
    store = store_of(WAIT, PROVISION, *objs)
    nodes = [NodeInfo(make_node("node-a", labels={"foo": "bar"})), NodeInfo(make_node("node-b"))]
    vc = ObjectWritingClient(store=store, controller=controller)
    if refuse:
        vc.fail("update", UpdateRefused(refuse))
    plugin = VolumeBinding(VolumeBindingArgs(bindTimeoutSeconds=timeout),
                           handle(objects=store, node_infos=nodes, client=vc if client else None))
    return plugin, vc, nodes


def reserve(plugin: VolumeBinding, pod: Pod, nodes: list[NodeInfo], node: str = "node-a") -> CycleState:
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, nodes)
    assert status is None
    for ni in nodes:
        plugin.filter(state, pod, ni)
    assert plugin.reserve(state, pod, node) is None
    return state


async def test_static_binding_writes_the_pv_claim_ref_and_the_controller_completes_it() -> None:
    claim = pvc("pvc-a", storage_class="wait-sc", request="1Gi", uid="u-a")
    claim["metadata"]["resourceVersion"] = "7"
    plugin, vc, nodes = setup(claim, pv("pv-a", storage_class="wait-sc"))
    pod = claim_pod("pvc-a")
    state = reserve(plugin, pod, nodes)
    assert plugin.assumed_pvs == {"pv-a": ("default/pvc-a", "u-a")}
    assert await plugin.pre_bind(state, pod, "node-a") is None
    # The scheduler writes only the PV, as upstream's bindAPIUpdate; the claim is the PV controller's.
    assert vc.of("update") == [("PersistentVolume", "pv-a")]
    [written] = vc.written
    assert written["spec"]["claimRef"] == {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": "default",
                                           "name": "pvc-a", "uid": "u-a", "resourceVersion": "7"}
    assert written["metadata"]["annotations"] == {"pv.kubernetes.io/bound-by-controller": "yes"}
    assert "status" not in written  # the phase is the PV controller's to set
    bound = vc.store.get("PersistentVolumeClaim", "default/pvc-a")
    assert bound is not None and bound["spec"]["volumeName"] == "pv-a"
    assert plugin.assumed_pvs == {}
    state2 = CycleState()
    plugin.pre_filter(state2, claim_pod("pvc-a", "pod-b"), nodes)
    assert state2.get("VolumeBinding").bound_claims[0]["metadata"]["name"] == "pvc-a"


def test_a_pv_the_user_pre_bound_is_not_marked_bound_by_controller() -> None:
    volume = pv("pv-a", storage_class="wait-sc", claim=("default", "pvc-a"))
    new = bind_volume_to_claim_ref(volume, pvc("pvc-a", uid="u-a"))
    assert new["spec"]["claimRef"]["uid"] == "u-a"
    assert "annotations" not in new["metadata"]
    same = bind_volume_to_claim_ref(new, pvc("pvc-a", uid="u-a"))
    assert same == new


async def test_provisioning_writes_the_selected_node_and_times_out_without_a_provisioner() -> None:
    plugin, vc, nodes = setup(pvc("pvc-a", storage_class="provision-sc", request="1Gi"), controller=False, timeout=0)
    pod = claim_pod("pvc-a")
    state = reserve(plugin, pod, nodes)
    got = await plugin.pre_bind(state, pod, "node-a")
    assert got == Status.error("binding volumes: context deadline exceeded")
    assert vc.of("update") == [("PersistentVolumeClaim", "pvc-a")]
    assert vc.written[0]["metadata"]["annotations"] == {SELECTED: "node-a"}
    # Nothing stays assumed, but the annotation in the cluster pins the claim's next pods.
    assert plugin.binder.assumed_selected_node == {}
    s2 = CycleState()
    other = claim_pod("pvc-a", "pod-b")
    plugin.pre_filter(s2, other, nodes)
    assert plugin.filter(s2, other, nodes[1]) == Status.unresolvable(ERR_REASON_BIND_CONFLICT)
    assert plugin.filter(s2, other, nodes[0]) is None


async def test_provisioning_completes_when_the_provisioner_binds_the_claim() -> None:
    plugin, vc, nodes = setup(pvc("pvc-a", storage_class="provision-sc", request="3Gi", uid="u-a"))
    pod = claim_pod("pvc-a")
    state = reserve(plugin, pod, nodes)
    assert await plugin.pre_bind(state, pod, "node-a") is None
    claim = vc.store.get("PersistentVolumeClaim", "default/pvc-a")
    assert claim is not None and claim["spec"]["volumeName"] == "pvc-u-a"
    volume = vc.store.get("PersistentVolume", "pvc-u-a")
    assert volume is not None and volume["spec"]["capacity"] == {"storage": "3Gi"}
    assert volume["spec"]["csi"] == {"driver": "example.com/csi", "volumeHandle": "pvc-u-a"}


async def test_prebind_polls_once_a_second_until_the_controller_binds() -> None:
    plugin, vc, nodes = setup(pvc("pvc-a", storage_class="wait-sc", uid="u-a"), pv("pv-a", storage_class="wait-sc"),
                              controller=False, timeout=30)
    pod = claim_pod("pvc-a")
    state = reserve(plugin, pod, nodes)
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 3:  # the PV controller catches up
            from kubeberth.whatif.volumes import bind_claimed_volume

            for kind, obj in bind_claimed_volume(vc.store, vc.written[0]):
                vc.store.put(kind, obj)

    plugin.binder.sleep = sleep
    assert await plugin.pre_bind(state, pod, "node-a") is None
    assert slept == [1.0, 1.0, 1.0]


async def run_with_change(change: Any, *objs: dict[str, Any], claim: str = "pvc-a") -> Status | None:
    """PreBind without a controller; `change(store)` runs at the first poll."""
    plugin, vc, nodes = setup(*objs, controller=False, timeout=30)
    pod = claim_pod(claim)
    state = reserve(plugin, pod, nodes)

    async def sleep(seconds: float) -> None:
        change(vc.store)

    plugin.binder.sleep = sleep
    return await plugin.pre_bind(state, pod, "node-a")


def _drop_claim_ref(store: Any) -> None:
    volume = dict(store.get("PersistentVolume", "pv-a"))
    volume["spec"] = {k: v for k, v in volume["spec"].items() if k != "claimRef"}
    store.put("PersistentVolume", volume)


def _annotate(value: str | None) -> Any:
    def change(store: Any) -> None:
        claim = dict(store.get("PersistentVolumeClaim", "default/pvc-a"))
        claim["metadata"] = dict(claim["metadata"])
        if value is None:
            claim["metadata"].pop("annotations")
        else:
            claim["metadata"]["annotations"] = {SELECTED: value}
        store.put("PersistentVolumeClaim", claim)
    return change


async def test_undone_bindings_are_errors_that_retry_the_pod() -> None:
    static = [pvc("pvc-a", storage_class="wait-sc", uid="u-a"), pv("pv-a", storage_class="wait-sc")]
    provision = [pvc("pvc-a", storage_class="provision-sc", request="1Gi")]
    assert await run_with_change(_drop_claim_ref, *static) == Status.error(
        'binding volumes: ClaimRef got reset for pv "pv-a"')
    assert await run_with_change(_annotate("node-b"), *provision) == Status.error(
        'binding volumes: provisioning failed for PVC "pvc-a"')
    assert await run_with_change(_annotate(None), *provision) == Status.error(
        'binding volumes: selectedNode annotation reset for PVC "pvc-a"')
    assert await run_with_change(lambda store: store.delete("PersistentVolume", "pv-a"), *static) == Status.error(
        'binding volumes: failed to check binding: persistentvolumes "pv-a" not found')


async def test_a_refused_update_fails_prebind_and_forgets_the_assumption() -> None:
    plugin, _, nodes = setup(pvc("pvc-a", storage_class="wait-sc"), pv("pv-a", storage_class="wait-sc"),
                             refuse='Operation cannot be fulfilled on persistentvolumes "pv-a": the object has been '
                                    "modified; please apply your changes to the latest version and try again")
    pod = claim_pod("pvc-a")
    state = reserve(plugin, pod, nodes)
    got = await plugin.pre_bind(state, pod, "node-a")
    assert got is not None and got.code == Code.ERROR
    assert got.message().startswith('Operation cannot be fulfilled on persistentvolumes "pv-a"')
    assert plugin.assumed_pvs == {}


async def test_without_a_client_prebind_says_so() -> None:
    plugin, _, nodes = setup(pvc("pvc-a", storage_class="wait-sc"), pv("pv-a", storage_class="wait-sc"), client=False)
    pod = claim_pod("pvc-a")
    state = reserve(plugin, pod, nodes)
    assert await plugin.pre_bind(state, pod, "node-a") == Status.error(
        "binding volumes: no cluster client to write them through")


async def test_prebind_for_a_node_filter_never_saw_is_an_error() -> None:
    plugin, _, nodes = setup(pvc("pvc-a", storage_class="wait-sc"), pv("pv-a", storage_class="wait-sc"))
    pod = claim_pod("pvc-a")
    state = reserve(plugin, pod, nodes)
    assert await plugin.pre_bind(state, pod, "node-z") == Status.error('no pod volume found for node "node-z"')


def test_a_watched_copy_older_than_the_write_is_waited_for() -> None:
    assert is_older({"metadata": {"resourceVersion": "9"}}, {"metadata": {"resourceVersion": "10"}})
    assert not is_older({"metadata": {"resourceVersion": "10"}}, {"metadata": {"resourceVersion": "10"}})
    assert not is_older({"metadata": {}}, {"metadata": {"resourceVersion": "10"}})
