"""VolumeBinding, after upstream's volume_binding_test.go and binder_test.go (FindPodVolumes,
findMatchingVolumes, checkVolumeProvisions), plus Reserve / PreBind on the ObjectStore."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth.cache.objects import ObjectStore
from kubeberth.framework import Code, CycleState, Status
from kubeberth.model import NodeInfo, Pod
from kubeberth.plugins.volume_binding import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_PV_NOT_EXIST,
    ERR_REASON_UNBOUND_IMMEDIATE,
    VolumeBinding,
    VolumeBindingArgs,
    bind_immediate_claims,
)
from tests.builders import make_node, make_pod
from tests.doubles import handle, store_of

from ._volume_helpers import claim_volume, pv, pvc, storage_class

IMMEDIATE = storage_class("immediate-sc")
WAIT = storage_class("wait-sc", wait=True)
WAIT_PROVISION = storage_class("wait-provision-sc", wait=True, provisioner="example.com/csi")
WAIT_TOPOLOGY = storage_class("wait-topology-sc", wait=True, provisioner="example.com/csi", allowed_topologies=[
    {"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": ["zone-a"]}]}])
CLASSES = [IMMEDIATE, WAIT, WAIT_PROVISION, WAIT_TOPOLOGY]

FOO_BAR = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
    {"key": "foo", "operator": "In", "values": ["bar"]}]}]}}
FOO_BARBAR = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
    {"key": "foo", "operator": "In", "values": ["barbar"]}]}]}}


def claim_pod(*claims: str, name: str = "pod-a", ns: str = "default") -> Pod:
    return make_pod(name, ns, volumes=[claim_volume(c) for c in claims])


def node_info(name: str = "node-a", labels: dict[str, str] | None = None) -> NodeInfo:
    return NodeInfo(make_node(name, labels=labels or {"foo": "bar"}))


def plugin_for(*objs: dict[str, Any], nodes: list[NodeInfo] = (), client: Any = None  # type: ignore[assignment]
               ) -> tuple[VolumeBinding, ObjectStore]:
    store = store_of(*CLASSES, *objs)
    return VolumeBinding(VolumeBindingArgs(), handle(objects=store, node_infos=nodes, client=client)), store


# ---- PreFilter + Filter table ---------------------------------------------------------------
CASES: list[tuple[str, Pod, list[dict[str, Any]], Status | None, set[str] | None, Status | None]] = [
    # (id, pod, objects, want prefilter status, want prefilter node names, want filter status)
    ("pod has no pvcs", make_pod("pod-a"), [], Status.skip(), None, None),
    ("pod has only non-claim volumes", make_pod("pod-a", volumes=[{"name": "e", "emptyDir": {}}]), [],
     Status.skip(), None, None),
    ("all bound", claim_pod("pvc-a"), [pvc("pvc-a", volume_name="pv-a"), pv("pv-a", claim=("default", "pvc-a"))],
     None, None, None),
    ("bound pv with matching node affinity", claim_pod("pvc-a"),
     [pvc("pvc-a", volume_name="pv-a"), pv("pv-a", claim=("default", "pvc-a"), node_affinity=FOO_BAR)],
     None, None, None),
    ("bound pv with node affinity conflict", claim_pod("pvc-a"),
     [pvc("pvc-a", volume_name="pv-a"), pv("pv-a", claim=("default", "pvc-a"), node_affinity=FOO_BARBAR)],
     None, None, Status.unresolvable(ERR_REASON_NODE_CONFLICT)),
    ("all bound with local volumes", claim_pod("pvc-a", "pvc-b"),
     [pvc("pvc-a", volume_name="pv-a"), pvc("pvc-b", volume_name="pv-b"),
      pv("pv-a", claim=("default", "pvc-a"), hosts=["node-a"]),
      pv("pv-b", claim=("default", "pvc-b"), hosts=["node-a", "node-b"])],
     None, None, None),  # since v1.33 no node subset from PreFilter: the Filter decides per node
    ("local volumes on different nodes leave no node", claim_pod("pvc-a", "pvc-b"),
     [pvc("pvc-a", volume_name="pv-a"), pvc("pvc-b", volume_name="pv-b"),
      pv("pv-a", claim=("default", "pvc-a"), hosts=["node-a"]),
      pv("pv-b", claim=("default", "pvc-b"), hosts=["node-b"])],
     None, None, Status.unresolvable(ERR_REASON_NODE_CONFLICT)),
    ("PVC does not exist", claim_pod("pvc-a"), [], Status.unresolvable('persistentvolumeclaim "pvc-a" not found'),
     None, None),
    ("part of PVCs do not exist", claim_pod("pvc-a", "pvc-b"),
     [pvc("pvc-a", volume_name="pv-a"), pv("pv-a", claim=("default", "pvc-a"))],
     Status.unresolvable('persistentvolumeclaim "pvc-b" not found'), None, None),
    ("immediate claims not bound", claim_pod("pvc-a"), [pvc("pvc-a", storage_class="immediate-sc")],
     Status.unresolvable(ERR_REASON_UNBOUND_IMMEDIATE), None, None),
    ("claim without class is immediate", claim_pod("pvc-a"), [pvc("pvc-a")],
     Status.unresolvable(ERR_REASON_UNBOUND_IMMEDIATE), None, None),
    ("claim of a missing class is immediate", claim_pod("pvc-a"), [pvc("pvc-a", storage_class="no-such-sc")],
     Status.unresolvable(ERR_REASON_UNBOUND_IMMEDIATE), None, None),
    ("pre-bound claim to a missing PV is immediate", claim_pod("pvc-a"),
     [pvc("pvc-a", volume_name="pv-a", bound=False, storage_class="wait-sc")],
     Status.unresolvable(ERR_REASON_UNBOUND_IMMEDIATE), None, None),
    ("pre-bound claim to a PV of another claim is immediate", claim_pod("pvc-a"),
     [pvc("pvc-a", volume_name="pv-a", bound=False), pv("pv-a", claim=("default", "other"))],
     Status.unresolvable(ERR_REASON_UNBOUND_IMMEDIATE), None, None),
    ("pre-bound claim to a free PV is bound by the controller", claim_pod("pvc-a"),
     [pvc("pvc-a", volume_name="pv-a", bound=False), pv("pv-a", node_affinity=FOO_BAR)], None, None, None),
    ("unbound claims no matches", claim_pod("pvc-a"), [pvc("pvc-a", storage_class="wait-sc")],
     None, None, Status.unresolvable(ERR_REASON_BIND_CONFLICT)),
    ("bound and unbound unsatisfied", claim_pod("pvc-a", "pvc-b"),
     [pvc("pvc-a", volume_name="pv-a"), pv("pv-a", claim=("default", "pvc-a"), node_affinity=FOO_BARBAR),
      pvc("pvc-b", storage_class="wait-sc")],
     None, None, Status.unresolvable(ERR_REASON_NODE_CONFLICT, ERR_REASON_BIND_CONFLICT)),
    ("pv not found", claim_pod("pvc-a"), [pvc("pvc-a", volume_name="pv-a")],
     None, None, Status.unresolvable(ERR_REASON_PV_NOT_EXIST)),
    ("pv not found claim lost", claim_pod("pvc-a"), [pvc("pvc-a", volume_name="pv-a", phase="Lost", bound=False)],
     Status.unresolvable('persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"'),
     None, None),
    ("claim being deleted", claim_pod("pvc-a"),
     [pvc("pvc-a", volume_name="pv-a", deleting=True), pv("pv-a", claim=("default", "pvc-a"))],
     Status.unresolvable('persistentvolumeclaim "pvc-a" is being deleted'), None, None),
    # WaitForFirstConsumer claims matched to static PVs.
    ("unbound claim matches an available PV", claim_pod("pvc-a"),
     [pvc("pvc-a", storage_class="wait-sc", request="5Gi"), pv("pv-a", storage_class="wait-sc")],
     None, None, None),
    ("PV too small", claim_pod("pvc-a"),
     [pvc("pvc-a", storage_class="wait-sc", request="20Gi"), pv("pv-a", storage_class="wait-sc")],
     None, None, Status.unresolvable(ERR_REASON_BIND_CONFLICT)),
    ("PV of another class", claim_pod("pvc-a"),
     [pvc("pvc-a", storage_class="wait-sc", request="1Gi"), pv("pv-a", storage_class="other")],
     None, None, Status.unresolvable(ERR_REASON_BIND_CONFLICT)),
    ("PV node affinity does not match the node", claim_pod("pvc-a"),
     [pvc("pvc-a", storage_class="wait-sc", request="1Gi"),
      pv("pv-a", storage_class="wait-sc", node_affinity=FOO_BARBAR)],
     None, None, Status.unresolvable(ERR_REASON_BIND_CONFLICT)),
    ("PV node affinity matches the node", claim_pod("pvc-a"),
     [pvc("pvc-a", storage_class="wait-sc", request="1Gi"),
      pv("pv-a", storage_class="wait-sc", node_affinity=FOO_BAR)], None, None, None),
    ("PV bound to another claim", claim_pod("pvc-a"),
     [pvc("pvc-a", storage_class="wait-sc", request="1Gi"),
      pv("pv-a", storage_class="wait-sc", claim=("default", "other"), phase="Bound")],
     None, None, Status.unresolvable(ERR_REASON_BIND_CONFLICT)),
    ("PV not Available", claim_pod("pvc-a"),
     [pvc("pvc-a", storage_class="wait-sc", request="1Gi"), pv("pv-a", storage_class="wait-sc", phase="Released")],
     None, None, Status.unresolvable(ERR_REASON_BIND_CONFLICT)),
    ("access modes do not match", claim_pod("pvc-a"),
     [pvc("pvc-a", storage_class="wait-sc", request="1Gi", access_modes=["ReadWriteMany"]),
      pv("pv-a", storage_class="wait-sc")], None, None, Status.unresolvable(ERR_REASON_BIND_CONFLICT)),
    ("volume modes do not match", claim_pod("pvc-a"),
     [pvc("pvc-a", storage_class="wait-sc", request="1Gi", volume_mode="Block"),
      pv("pv-a", storage_class="wait-sc")], None, None, Status.unresolvable(ERR_REASON_BIND_CONFLICT)),
    ("selector does not match", claim_pod("pvc-a"),
     [pvc("pvc-a", storage_class="wait-sc", request="1Gi", selector={"matchLabels": {"tier": "fast"}}),
      pv("pv-a", storage_class="wait-sc", labels={"tier": "slow"})],
     None, None, Status.unresolvable(ERR_REASON_BIND_CONFLICT)),
    ("selector matches", claim_pod("pvc-a"),
     [pvc("pvc-a", storage_class="wait-sc", request="1Gi", selector={"matchLabels": {"tier": "fast"}}),
      pv("pv-a", storage_class="wait-sc", labels={"tier": "fast"})], None, None, None),
    ("two claims cannot share one PV", claim_pod("pvc-a", "pvc-b"),
     [pvc("pvc-a", storage_class="wait-sc", request="1Gi"), pvc("pvc-b", storage_class="wait-sc", request="1Gi"),
      pv("pv-a", storage_class="wait-sc")], None, None, Status.unresolvable(ERR_REASON_BIND_CONFLICT)),
    ("two claims, two PVs", claim_pod("pvc-a", "pvc-b"),
     [pvc("pvc-a", storage_class="wait-sc", request="1Gi"), pvc("pvc-b", storage_class="wait-sc", request="1Gi"),
      pv("pv-a", storage_class="wait-sc"), pv("pv-b", storage_class="wait-sc")], None, None, None),
    ("PV pre-bound to the claim, not Available", claim_pod("pvc-a"),
     [pvc("pvc-a", storage_class="wait-sc", request="1Gi"),
      pv("pv-a", storage_class="wait-sc", claim=("default", "pvc-a"), phase="Bound")], None, None, None),
    ("PV pre-bound to the claim with node conflict", claim_pod("pvc-a"),
     [pvc("pvc-a", storage_class="wait-sc", request="1Gi"),
      pv("pv-a", storage_class="wait-sc", claim=("default", "pvc-a"), node_affinity=FOO_BARBAR),
      pv("pv-b", storage_class="wait-sc")], None, None, Status.unresolvable(ERR_REASON_BIND_CONFLICT)),
    # Dynamic provisioning.
    ("no-provisioner class cannot provision", claim_pod("pvc-a"), [pvc("pvc-a", storage_class="wait-sc")],
     None, None, Status.unresolvable(ERR_REASON_BIND_CONFLICT)),
    ("provisioner class provisions", claim_pod("pvc-a"), [pvc("pvc-a", storage_class="wait-provision-sc")],
     None, None, None),
    ("allowed topologies exclude the node", claim_pod("pvc-a"), [pvc("pvc-a", storage_class="wait-topology-sc")],
     None, None, Status.unresolvable(ERR_REASON_BIND_CONFLICT)),
    ("claim with a selected node elsewhere", claim_pod("pvc-a"),
     [pvc("pvc-a", storage_class="wait-provision-sc", annotations={"volume.kubernetes.io/selected-node": "x"})],
     None, None, Status.unresolvable(ERR_REASON_BIND_CONFLICT)),
    ("claim with this node selected", claim_pod("pvc-a"),
     [pvc("pvc-a", storage_class="wait-provision-sc",
          annotations={"volume.kubernetes.io/selected-node": "node-a"})], None, None, None),
    # Generic ephemeral volumes.
    ("ephemeral claim not created yet",
     make_pod("pod-a", volumes=[{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]), [],
     Status.unresolvable(
         'waiting for ephemeral volume controller to create the persistentvolumeclaim "pod-a-scratch"'),
     None, None),
    ("ephemeral claim not owned by the pod",
     make_pod("pod-a", volumes=[{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]),
     [pvc("pod-a-scratch", storage_class="wait-provision-sc")],
     Status.unresolvable("PVC default/pod-a-scratch was not created for pod default/pod-a (pod is not owner)"),
     None, None),
    ("ephemeral claim owned by the pod",
     make_pod("pod-a", volumes=[{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]),
     [pvc("pod-a-scratch", storage_class="wait-provision-sc",
          owner={"kind": "Pod", "name": "pod-a", "uid": "uid-default-pod-a", "controller": True})],
     None, None, None),
]


@pytest.mark.parametrize(("pod", "objects", "want_pre", "want_nodes", "want_filter"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_volume_binding(pod: Pod, objects: list[dict[str, Any]], want_pre: Status | None,
                        want_nodes: set[str] | None, want_filter: Status | None) -> None:
    ni = node_info()
    plugin, _ = plugin_for(*objects, nodes=[ni])
    state = CycleState()
    result, pre = plugin.pre_filter(state, pod, [ni])
    assert pre == want_pre
    assert (result.node_names if result is not None else None) == want_nodes
    if pre is None:
        assert plugin.filter(state, pod, ni) == want_filter


def test_rejections_are_unresolvable() -> None:
    ni = node_info()
    plugin, _ = plugin_for(pvc("pvc-a", storage_class="wait-sc"), nodes=[ni])
    state = CycleState()
    plugin.pre_filter(state, claim_pod("pvc-a"), [ni])
    got = plugin.filter(state, claim_pod("pvc-a"), ni)
    assert got is not None and got.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_smallest_fitting_pv_is_chosen_and_claims_match_smallest_first() -> None:
    objs = [pvc("big", storage_class="wait-sc", request="8Gi"), pvc("small", storage_class="wait-sc", request="1Gi"),
            pv("pv-10", storage_class="wait-sc", capacity="10Gi"),
            pv("pv-2", storage_class="wait-sc", capacity="2Gi"),
            pv("pv-9", storage_class="wait-sc", capacity="9Gi")]
    ni = node_info()
    plugin, _ = plugin_for(*objs, nodes=[ni])
    state = CycleState()
    pod = claim_pod("big", "small")
    plugin.pre_filter(state, pod, [ni])
    assert plugin.filter(state, pod, ni) is None
    chosen = {b.pvc["metadata"]["name"]: b.pv["metadata"]["name"]
              for b in state.get("VolumeBinding").pod_volumes_by_node["node-a"].static_bindings}
    assert chosen == {"small": "pv-2", "big": "pv-9"}


async def test_assumed_pv_is_not_offered_to_another_claim() -> None:
    objs = [pvc("pvc-a", storage_class="wait-sc", request="1Gi"), pvc("pvc-b", storage_class="wait-sc",
                                                                      request="1Gi"),
            pv("pv-a", storage_class="wait-sc")]
    ni = node_info()
    plugin, _ = plugin_for(*objs, nodes=[ni])
    first, second = claim_pod("pvc-a", name="first"), claim_pod("pvc-b", name="second")
    s1 = CycleState()
    plugin.pre_filter(s1, first, [ni])
    assert plugin.filter(s1, first, ni) is None
    plugin.reserve(s1, first, "node-a")
    s2 = CycleState()
    plugin.pre_filter(s2, second, [ni])
    assert plugin.filter(s2, second, ni) == Status.unresolvable(ERR_REASON_BIND_CONFLICT)
    # Unreserve gives it back.
    plugin.unreserve(s1, first, "node-a")
    s3 = CycleState()
    plugin.pre_filter(s3, second, [ni])
    assert plugin.filter(s3, second, ni) is None


async def test_all_bound_pods_do_nothing_at_reserve_and_prebind() -> None:
    ni = node_info()
    objs = [pvc("pvc-a", volume_name="pv-a"), pv("pv-a", claim=("default", "pvc-a"))]
    plugin, store = plugin_for(*objs, nodes=[ni])
    gen = store.generation
    pod = claim_pod("pvc-a")
    state = CycleState()
    plugin.pre_filter(state, pod, [ni])
    assert plugin.filter(state, pod, ni) is None
    assert plugin.reserve(state, pod, "node-a") is None
    assert await plugin.pre_bind(state, pod, "node-a") is None
    assert store.generation == gen
    # And a pod without claims (PreFilter skipped) too.
    state = CycleState()
    plugin.pre_filter(state, make_pod("plain"), [ni])
    assert plugin.reserve(state, make_pod("plain"), "node-a") is None
    assert await plugin.pre_bind(state, make_pod("plain"), "node-a") is None


def test_args() -> None:
    from kubeberth.config import ConfigError

    fw = handle(profile={"pluginConfig": [{"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 30}}]})
    plugin = fw.plugins["VolumeBinding"]
    assert isinstance(plugin, VolumeBinding) and plugin.args.bindTimeoutSeconds == 30
    with pytest.raises(ConfigError):
        handle(profile={"pluginConfig": [{"name": "VolumeBinding", "args": {"bindTimeoutSeconds": -1}}]})


def test_default_profile_runs_it_at_reserve_and_prebind() -> None:
    fw = handle(profile={}, nodes=[make_node("n")])
    for attr in ("pre_filter_plugins", "filter_plugins", "reserve_plugins", "pre_bind_plugins"):
        assert "VolumeBinding" in [p.name for p in getattr(fw, attr)], attr


# ---- the PV controller, for simulations -------------------------------------------------------
def test_bind_immediate_claims() -> None:
    store = store_of(
        *CLASSES,
        pvc("imm", storage_class="immediate-sc", request="1Gi"),
        pvc("noclass", request="1Gi"),
        pvc("wait", storage_class="wait-sc", request="1Gi"),
        pvc("prebound", volume_name="pv-pre", bound=False),
        pvc("toolarge", storage_class="immediate-sc", request="1Ti"),
        pv("pv-imm", storage_class="immediate-sc", capacity="5Gi"),
        pv("pv-imm-small", storage_class="immediate-sc", capacity="2Gi"),
        pv("pv-noclass", capacity="1Gi"),
        pv("pv-wait", storage_class="wait-sc"),
        pv("pv-pre"),
    )
    bound = bind_immediate_claims(store)
    assert sorted(bound) == ["default/imm", "default/noclass", "default/prebound"]
    assert store.get("PersistentVolumeClaim", "default/imm")["spec"]["volumeName"] == "pv-imm-small"
    assert store.get("PersistentVolumeClaim", "default/noclass")["spec"]["volumeName"] == "pv-noclass"
    assert store.get("PersistentVolume", "pv-pre")["spec"]["claimRef"]["name"] == "prebound"
    assert "volumeName" not in store.get("PersistentVolumeClaim", "default/wait")["spec"]
    assert "volumeName" not in store.get("PersistentVolumeClaim", "default/toolarge")["spec"]


def test_pv_named_by_another_claim_is_not_offered() -> None:
    objs = [pvc("pvc-a", storage_class="wait-sc", request="1Gi"),
            pvc("other", volume_name="pv-a", bound=False, storage_class="wait-sc"),
            pv("pv-a", storage_class="wait-sc")]
    ni = node_info()
    plugin, _ = plugin_for(*objs, nodes=[ni])
    state = CycleState()
    pod = claim_pod("pvc-a")
    plugin.pre_filter(state, pod, [ni])
    assert plugin.filter(state, pod, ni) == Status.unresolvable(ERR_REASON_BIND_CONFLICT)


def test_claim_mounted_twice_is_matched_once() -> None:
    objs = [pvc("pvc-a", storage_class="wait-sc", request="1Gi"), pv("pv-a", storage_class="wait-sc")]
    ni = node_info()
    plugin, _ = plugin_for(*objs, nodes=[ni])
    state = CycleState()
    pod = make_pod("pod-a", volumes=[claim_volume("pvc-a", "one"), claim_volume("pvc-a", "two")])
    plugin.pre_filter(state, pod, [ni])
    assert plugin.filter(state, pod, ni) is None
    assert len(state.get("VolumeBinding").pod_volumes_by_node["node-a"].static_bindings) == 1
