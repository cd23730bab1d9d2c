"""NodeVolumeLimits (CSI limits from CSINode) and the in-tree EBS / GCE PD limits,
after upstream's csi_test.go and non_csi_test.go."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth.framework import Code, CycleState, Status
from kubeberth.model import Node, NodeInfo, Pod
from kubeberth.plugins.node_volume_limits import (
    ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,
    KUBE_MAX_PD_VOLS,
    EBSLimits,
    GCEPDLimits,
    NodeVolumeLimits,
    NodeVolumeLimitsArgs,
)
from kubeberth.plugins.volume_restrictions import VolumeRestrictions
from tests.builders import make_node, make_pod
from tests.doubles import handle, store_of

from ._volume_helpers import claim_volume, csi_node, pv, pvc, storage_class

EBS_CSI = "ebs.csi.aws.com"
GCE_CSI = "pd.csi.storage.gke.io"
EXCEEDED = Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)


# ---- objects ----------------------------------------------------------------------------------
def csi_pv(name: str, driver: str) -> dict[str, Any]:
    return pv(name, source={"csi": {"driver": driver, "volumeHandle": name}})


def ebs_pv(name: str, vid: str) -> dict[str, Any]:
    return pv(name, source={"awsElasticBlockStore": {"volumeID": vid}})


def gce_pv(name: str, pd: str) -> dict[str, Any]:
    return pv(name, source={"gcePersistentDisk": {"pdName": pd}})


def bound(claim: str, volume: str, ns: str = "default") -> dict[str, Any]:
    return pvc(claim, volume_name=volume, namespace=ns)


OBJECTS: list[dict[str, Any]] = [
    storage_class("csi-sc", provisioner=EBS_CSI),
    storage_class("gce-csi-sc", provisioner=GCE_CSI),
    storage_class("ebs-intree-sc", provisioner="kubernetes.io/aws-ebs"),
    storage_class("gce-intree-sc", provisioner="kubernetes.io/gce-pd"),
    storage_class("other-sc", provisioner="example.com/other"),
]
for i in range(6):
    OBJECTS += [csi_pv(f"csi-ebs-{i}", EBS_CSI), bound(f"csi-ebs-{i}", f"csi-ebs-{i}")]
    OBJECTS += [csi_pv(f"csi-gce-{i}", GCE_CSI), bound(f"csi-gce-{i}", f"csi-gce-{i}")]
    OBJECTS += [ebs_pv(f"ebs-pv-{i}", f"vol-pv-{i}"), bound(f"ebs-claim-{i}", f"ebs-pv-{i}")]
    OBJECTS += [gce_pv(f"gce-pv-{i}", f"pd-pv-{i}"), bound(f"gce-claim-{i}", f"gce-pv-{i}")]
OBJECTS += [
    pvc("pending-csi-0", storage_class="csi-sc"),
    pvc("pending-csi-1", storage_class="csi-sc"),
    pvc("pending-other", storage_class="other-sc"),
    pvc("pending-ebs-intree", storage_class="ebs-intree-sc"),
    pvc("pending-ebs-intree-2", storage_class="ebs-intree-sc"),
    pvc("pending-no-class"),
    pvc("missing-pv-csi", volume_name="no-such-pv", storage_class="csi-sc"),
    pvc("missing-pv-no-class", volume_name="no-such-pv"),
    pvc("missing-pv-ebs", volume_name="no-such-pv", storage_class="ebs-intree-sc"),
    pv("host-pv"), bound("host-claim", "host-pv"),
    pvc("abc-xyz", storage_class="csi-sc", namespace="test",
        owner={"apiVersion": "v1", "kind": "Pod", "name": "abc", "uid": "uid-test-abc", "controller": True}),
    pvc("abc-notowned", storage_class="csi-sc", namespace="test"),
]


def claims(name: str, *names: str, node: str = "", ns: str = "default") -> Pod:
    return make_pod(name, ns, volumes=[claim_volume(c) for c in names], node=node)


def inline_ebs(name: str, *vids: str, node: str = "") -> Pod:
    return make_pod(name, volumes=[{"name": v, "awsElasticBlockStore": {"volumeID": v}} for v in vids],
                    node=node)


def inline_gce(name: str, *pds: str, node: str = "") -> Pod:
    return make_pod(name, volumes=[{"name": p, "gcePersistentDisk": {"pdName": p}} for p in pds], node=node)


def ephemeral_pod(name: str = "abc", volume: str = "xyz", node: str = "") -> Pod:
    return make_pod(name, "test", volumes=[{"name": volume, "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}],
                    node=node)


def on_node(*pods: Pod) -> list[Pod]:
    return [Pod({**p.raw, "spec": {**p.spec, "nodeName": "node-for-test"}}) for p in pods]


def run(plugin_cls: type[NodeVolumeLimits], pod: Pod, existing: list[Pod], *, csi_limits: dict[str, int | None]
        | None = None, node: Node | None = None, args: NodeVolumeLimitsArgs | None = None,
        extra: list[dict[str, Any]] = ()) -> Status | None:  # type: ignore[assignment]
    objs = list(OBJECTS) + list(extra)
    if csi_limits is not None:
        objs.append(csi_node("node-for-test", csi_limits))
    ni = NodeInfo(node or make_node("node-for-test"), on_node(*existing))
    plugin = plugin_cls(args, handle(objects=store_of(*objs), node_infos=[ni]))
    state = CycleState()
    _, pre = plugin.pre_filter(state, pod, [ni])
    if pre is not None and pre.is_skip():
        return None
    return plugin.filter(state, pod, ni)


# ---- CSI ------------------------------------------------------------------------------------------
CSI_CASES = [
    ("fits when node volume limit >= new pod's CSI volumes", claims("new", "csi-ebs-0"),
     [claims("old", "csi-ebs-1", "csi-ebs-2")], {EBS_CSI: 4}, None),
    ("doesn't fit when node volume limit <= pod's CSI volumes", claims("new", "csi-ebs-0"),
     [claims("old", "csi-ebs-1", "csi-ebs-2")], {EBS_CSI: 2}, EXCEEDED),
    ("fits exactly at the limit", claims("new", "csi-ebs-0"),
     [claims("old", "csi-ebs-1", "csi-ebs-2")], {EBS_CSI: 3}, None),
    ("fits when the driver does not report a limit", claims("new", "csi-ebs-0"),
     [claims("old", "csi-ebs-1", "csi-ebs-2")], {EBS_CSI: None}, None),
    ("fits without a CSINode", claims("new", "csi-ebs-0"), [claims("old", "csi-ebs-1", "csi-ebs-2")], None, None),
    ("count pending PVCs towards the limit", claims("new", "csi-ebs-0"),
     [claims("old", "pending-csi-0", "csi-ebs-1")], {EBS_CSI: 2}, EXCEEDED),
    ("count multiple pending PVCs", claims("new", "pending-csi-0"),
     [claims("old", "pending-csi-1")], {EBS_CSI: 1}, EXCEEDED),
    ("a new pending PVC counts too", claims("new", "pending-csi-0", "pending-csi-1"), [], {EBS_CSI: 1}, EXCEEDED),
    ("count a PVC with a missing PV by its class", claims("new", "missing-pv-csi"),
     [claims("old", "csi-ebs-1")], {EBS_CSI: 1}, EXCEEDED),
    ("don't count a PVC with a missing PV and no class", claims("new", "missing-pv-no-class"),
     [claims("old", "csi-ebs-1")], {EBS_CSI: 1}, None),
    ("don't count pending PVCs of another driver", claims("new", "csi-ebs-0"),
     [claims("old", "pending-other")], {EBS_CSI: 1}, None),
    ("don't count pending PVCs without class", claims("new", "csi-ebs-0"),
     [claims("old", "pending-no-class")], {EBS_CSI: 1}, None),
    ("count volumes of the same driver only", claims("new", "csi-ebs-0"),
     [claims("old", "csi-gce-1", "csi-gce-2")], {EBS_CSI: 1, GCE_CSI: 2}, None),
    ("limit of the other driver applies to it", claims("new", "csi-gce-0"),
     [claims("old", "csi-gce-1", "csi-gce-2")], {EBS_CSI: 10, GCE_CSI: 2}, EXCEEDED),
    ("don't count a volume used by several pods twice", claims("new", "csi-ebs-1"),
     [claims("old", "csi-ebs-1", "csi-ebs-2")], {EBS_CSI: 2}, None),
    ("a volume shared by two existing pods counts once", claims("new", "csi-ebs-0"),
     [claims("a", "csi-ebs-1"), claims("b", "csi-ebs-1")], {EBS_CSI: 2}, None),
    ("non-CSI PVs are not counted", claims("new", "csi-ebs-0"), [claims("old", "host-claim")], {EBS_CSI: 1}, None),
    ("missing PVC of the new pod", claims("new", "no-such-claim"), [], {EBS_CSI: 1},
     Status.unresolvable('looking up PVC default/no-such-claim: persistentvolumeclaim "no-such-claim" not found')),
    ("missing PVC of an existing pod is not counted", claims("new", "csi-ebs-0"),
     [claims("old", "no-such-claim")], {EBS_CSI: 1}, None),
    ("in-tree EBS counted under the CSI driver when migrated", inline_ebs("new", "vol-a"),
     [claims("old", "csi-ebs-1")], {EBS_CSI: 1}, EXCEEDED),
    ("in-tree EBS PV counted under the CSI driver when migrated", claims("new", "ebs-claim-0"),
     [claims("old", "csi-ebs-1")], {EBS_CSI: 1}, EXCEEDED),
    ("pending in-tree EBS claim counted under the CSI driver when migrated", claims("new", "pending-ebs-intree"),
     [claims("old", "csi-ebs-1")], {EBS_CSI: 1}, EXCEEDED),
    ("in-tree GCE PD counted under its CSI driver when migrated", inline_gce("new", "pd-a"),
     [claims("old", "csi-gce-1")], {GCE_CSI: 1}, EXCEEDED),
    ("ephemeral volume missing", ephemeral_pod(volume="gone"), [], {EBS_CSI: 4},
     Status.unresolvable('looking up PVC test/abc-gone: persistentvolumeclaim "abc-gone" not found')),
    ("ephemeral volume not owned", ephemeral_pod(volume="notowned"), [], {EBS_CSI: 4},
     Status(Code.ERROR, "PVC test/abc-notowned was not created for pod test/abc (pod is not owner)")),
    ("ephemeral volume counted", ephemeral_pod(), [claims("old", "csi-ebs-1")], {EBS_CSI: 1}, EXCEEDED),
    ("ephemeral volume fits", ephemeral_pod(), [claims("old", "csi-ebs-1")], {EBS_CSI: 2}, None),
]


@pytest.mark.parametrize(("pod", "existing", "limits", "want"), [c[1:] for c in CSI_CASES],
                         ids=[c[0] for c in CSI_CASES])
def test_csi_limits(pod: Pod, existing: list[Pod], limits: dict[str, int | None] | None,
                    want: Status | None) -> None:
    assert run(NodeVolumeLimits, pod, existing, csi_limits=limits) == want


def test_node_allocatable_csi_limit_used_without_csinode() -> None:
    node = make_node("node-for-test", extra={f"attachable-volumes-csi-{EBS_CSI}": "1"})
    got = run(NodeVolumeLimits, claims("new", "csi-ebs-0"), [claims("old", "csi-ebs-1")], node=node)
    assert got == EXCEEDED


def test_csinode_limit_overrides_node_allocatable() -> None:
    node = make_node("node-for-test", extra={f"attachable-volumes-csi-{EBS_CSI}": "1"})
    got = run(NodeVolumeLimits, claims("new", "csi-ebs-0"), [claims("old", "csi-ebs-1")], node=node,
              csi_limits={EBS_CSI: 5})
    assert got is None


def test_pre_filter_skips_pods_without_volumes_to_count() -> None:
    plugin = NodeVolumeLimits(None, handle())
    _, st = plugin.pre_filter(CycleState(), make_pod("p", volumes=[{"name": "e", "emptyDir": {}}]), [])
    assert st is not None and st.is_skip()
    _, st = plugin.pre_filter(CycleState(), claims("p", "csi-ebs-0"), [])
    assert st is None


# ---- in-tree EBS / GCE PD ---------------------------------------------------------------------------
INTREE_CASES = [
    # (id, plugin, new pod, existing, args limit, want)
    ("fits when node capacity >= new pod's EBS volumes", inline_ebs("new", "ovp"),
     [inline_ebs("a", "tvp1", "tvp2"), inline_ebs("b", "ovp")], 4, None),
    ("doesn't fit when node capacity < new pod's EBS volumes", inline_ebs("new", "tvp1", "tvp2"),
     [inline_ebs("a", "ovp")], 2, EXCEEDED),
    ("new pod's count ignores non-EBS volumes", make_pod("new", volumes=[{"name": "e", "emptyDir": {}}]),
     [inline_ebs("a", "x", "y")], 2, None),
    ("existing pods' counts ignore non-EBS volumes", inline_ebs("new", "ovp"),
     [make_pod("a", volumes=[{"name": "e", "emptyDir": {}}]), inline_ebs("b", "x")], 2, None),
    ("new pod's count considers PVCs backed by EBS volumes", claims("new", "ebs-claim-0"),
     [inline_ebs("a", "x")], 1, EXCEEDED),
    ("new pod's count ignores PVCs not backed by EBS volumes", claims("new", "host-claim"),
     [inline_ebs("a", "x")], 1, None),
    ("existing pods' counts consider PVCs backed by EBS volumes", inline_ebs("new", "x"),
     [claims("a", "ebs-claim-0")], 1, EXCEEDED),
    ("existing pods' counts ignore PVCs not backed by EBS volumes", inline_ebs("new", "x"),
     [claims("a", "host-claim")], 1, None),
    ("the same EBS volumes are not counted multiple times", inline_ebs("new", "x"),
     [inline_ebs("a", "x"), inline_ebs("b", "x", "y")], 2, None),
    ("a PV and an inline volume with the same id count once", inline_ebs("new", "vol-pv-0"),
     [claims("a", "ebs-claim-0")], 1, None),
    ("pod with unbound PVC of the EBS provisioner is counted", claims("new", "pending-ebs-intree"),
     [inline_ebs("a", "x")], 1, EXCEEDED),
    ("existing pod with unbound PVC of the EBS provisioner is counted", inline_ebs("new", "x"),
     [claims("a", "pending-ebs-intree")], 1, EXCEEDED),
    ("two pods with the same unbound PVC count it once", claims("new", "pending-ebs-intree"),
     [claims("a", "pending-ebs-intree")], 1, None),
    ("unbound PVC of another provisioner is not counted", claims("new", "pending-other"),
     [inline_ebs("a", "x")], 1, None),
    ("pod with missing PV is counted by its class", claims("new", "missing-pv-ebs"),
     [inline_ebs("a", "x")], 1, EXCEEDED),
    ("missing PVC of the new pod", claims("new", "no-such-claim"), [], 1,
     Status.unresolvable('looking up PVC default/no-such-claim: persistentvolumeclaim "no-such-claim" not found')),
    ("missing PVC of an existing pod is not counted", inline_ebs("new", "x"),
     [claims("a", "no-such-claim")], 1, None),
    ("CSI volumes do not count against the EBS limit", inline_ebs("new", "x"),
     [claims("a", "csi-ebs-0", "csi-ebs-1")], 1, None),
]


@pytest.mark.parametrize(("pod", "existing", "limit", "want"), [c[1:] for c in INTREE_CASES],
                         ids=[c[0] for c in INTREE_CASES])
@pytest.mark.parametrize("plugin_cls", [NodeVolumeLimits, EBSLimits])
def test_ebs_limits(plugin_cls: type[NodeVolumeLimits], pod: Pod, existing: list[Pod], limit: int,
                    want: Status | None) -> None:
    assert run(plugin_cls, pod, existing, args=NodeVolumeLimitsArgs(maxEBSVolumes=limit)) == want


GCE_CASES = [
    ("fits when node capacity >= new pod's GCE volumes", inline_gce("new", "ovp"),
     [inline_gce("a", "tvp1", "tvp2"), inline_gce("b", "ovp")], 4, None),
    ("doesn't fit when node capacity < new pod's GCE volumes", inline_gce("new", "tvp1", "tvp2"),
     [inline_gce("a", "ovp")], 2, EXCEEDED),
    ("PVCs backed by GCE PDs count", claims("new", "gce-claim-0"), [inline_gce("a", "x")], 1, EXCEEDED),
    ("EBS volumes do not count against the GCE limit", inline_gce("new", "x"), [inline_ebs("a", "y")], 1, None),
    ("unbound PVC of the GCE provisioner is counted", claims("new", "gce-claim-1"),
     [claims("a", "gce-claim-2")], 1, EXCEEDED),
]


@pytest.mark.parametrize(("pod", "existing", "limit", "want"), [c[1:] for c in GCE_CASES],
                         ids=[c[0] for c in GCE_CASES])
@pytest.mark.parametrize("plugin_cls", [NodeVolumeLimits, GCEPDLimits])
def test_gce_pd_limits(plugin_cls: type[NodeVolumeLimits], pod: Pod, existing: list[Pod], limit: int,
                       want: Status | None) -> None:
    assert run(plugin_cls, pod, existing, args=NodeVolumeLimitsArgs(maxGCEPDVolumes=limit)) == want


def test_ebs_limits_ignore_gce_and_gce_limits_ignore_ebs() -> None:
    tight = NodeVolumeLimitsArgs(maxEBSVolumes=1, maxGCEPDVolumes=1)
    assert run(EBSLimits, inline_gce("new", "a"), [inline_gce("o", "b")], args=tight) is None
    assert run(GCEPDLimits, inline_ebs("new", "a"), [inline_ebs("o", "b")], args=tight) is None
    assert run(NodeVolumeLimits, inline_gce("new", "a"), [inline_gce("o", "b")], args=tight) == EXCEEDED


def test_in_tree_limits_defer_to_csi_when_node_has_csinode() -> None:
    """With a CSINode (migration on), in-tree volumes count only against the CSI driver's limit."""
    existing = [inline_ebs("a", "x", "y")]
    args = NodeVolumeLimitsArgs(maxEBSVolumes=1)
    assert run(EBSLimits, inline_ebs("new", "z"), existing, args=args, csi_limits={}) is None
    assert run(NodeVolumeLimits, inline_ebs("new", "z"), existing, args=args, csi_limits={EBS_CSI: 5}) is None
    assert run(NodeVolumeLimits, inline_ebs("new", "z"), existing, args=args, csi_limits={EBS_CSI: 2}) == EXCEEDED


def _ebs_pods(n: int) -> list[Pod]:
    return [inline_ebs(f"p{i}", f"vol-{i}") for i in range(n)]


@pytest.mark.parametrize(("plugin_cls", "pod_fn", "existing", "labels", "want"), [
    (EBSLimits, lambda: inline_ebs("new", "new-vol"), 38, {}, None),
    (EBSLimits, lambda: inline_ebs("new", "new-vol"), 39, {}, EXCEEDED),
    (EBSLimits, lambda: inline_ebs("new", "new-vol"), 24, {"node.kubernetes.io/instance-type": "m5.large"}, None),
    (EBSLimits, lambda: inline_ebs("new", "new-vol"), 25, {"node.kubernetes.io/instance-type": "m5.large"},
     EXCEEDED),
    (EBSLimits, lambda: inline_ebs("new", "new-vol"), 25, {"beta.kubernetes.io/instance-type": "t3.medium"},
     EXCEEDED),
    (EBSLimits, lambda: inline_ebs("new", "new-vol"), 25, {"node.kubernetes.io/instance-type": "m4.large"}, None),
    (GCEPDLimits, lambda: inline_gce("new", "new-pd"), 15, {}, None),
    (GCEPDLimits, lambda: inline_gce("new", "new-pd"), 16, {}, EXCEEDED),
], ids=["ebs 39th fits", "ebs 40th exceeds", "nitro 25th fits", "nitro 26th exceeds", "t3 is nitro",
        "m4 is not nitro", "gce 16th fits", "gce 17th exceeds"])
def test_default_limits(plugin_cls: type[NodeVolumeLimits], pod_fn: Any, existing: int, labels: dict[str, str],
                        want: Status | None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KUBE_MAX_PD_VOLS, raising=False)
    if plugin_cls is EBSLimits:
        pods = _ebs_pods(existing)
    else:
        pods = [inline_gce(f"p{i}", f"pd-{i}") for i in range(existing)]
    node = make_node("node-for-test", labels=labels)
    assert run(plugin_cls, pod_fn(), pods, node=node) == want


@pytest.mark.parametrize(("env", "existing", "want"), [
    ("3", 2, None),
    ("3", 3, EXCEEDED),
    ("0", 38, None),  # not positive: ignored, the default applies
    ("-1", 39, EXCEEDED),
    ("many", 38, None),  # not a number: ignored
], ids=["under env limit", "at env limit", "zero ignored", "negative ignored", "garbage ignored"])
def test_kube_max_pd_vols(env: str, existing: int, want: Status | None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KUBE_MAX_PD_VOLS, env)
    assert run(EBSLimits, inline_ebs("new", "new-vol"), _ebs_pods(existing)) == want


def test_limit_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KUBE_MAX_PD_VOLS, "2")
    pods = _ebs_pods(3)
    # The env var beats the default, the arg beats the env var, the node's allocatable beats both.
    assert run(EBSLimits, inline_ebs("new", "n"), pods) == EXCEEDED
    assert run(EBSLimits, inline_ebs("new", "n"), pods, args=NodeVolumeLimitsArgs(maxEBSVolumes=10)) is None
    node = make_node("node-for-test", extra={"attachable-volumes-aws-ebs": "3"})
    assert run(EBSLimits, inline_ebs("new", "n"), pods, node=node,
               args=NodeVolumeLimitsArgs(maxEBSVolumes=10)) == EXCEEDED
    node = make_node("node-for-test", extra={"attachable-volumes-gce-pd": "1"})
    assert run(GCEPDLimits, inline_gce("new", "n"), [inline_gce("o", "m")], node=node) == EXCEEDED


def test_args_validation() -> None:
    from kubeberth.config import ConfigError

    with pytest.raises(ConfigError) as err:
        handle(profile={"pluginConfig": [{"name": "NodeVolumeLimits", "args": {"maxEBSVolumes": 0}}]})
    assert "maxEBSVolumes" in str(err.value)
    with pytest.raises(ConfigError):
        handle(profile={"pluginConfig": [{"name": "NodeVolumeLimits", "args": {"unknown": 1}}]})
    fw = handle(profile={"pluginConfig": [{"name": "NodeVolumeLimits", "args": {"maxGCEPDVolumes": 8}}]})
    plugin = fw.plugins["NodeVolumeLimits"]
    assert isinstance(plugin, NodeVolumeLimits) and plugin.args.maxGCEPDVolumes == 8


def test_same_reason_as_other_filters_use() -> None:
    # Rejected as Unschedulable (not unresolvable): evicting pods frees attachments.
    got = run(NodeVolumeLimits, claims("new", "csi-ebs-0"), [claims("old", "csi-ebs-1")], csi_limits={EBS_CSI: 1})
    assert got is not None and got.code == Code.UNSCHEDULABLE
    assert VolumeRestrictions.name != NodeVolumeLimits.name


def test_resolution_is_memoised_per_object_generation() -> None:
    store = store_of(*OBJECTS, csi_node("node-for-test", {EBS_CSI: 1}))
    ni = NodeInfo(make_node("node-for-test"), on_node(claims("old", "pending-csi-0")))
    plugin = NodeVolumeLimits(None, handle(objects=store, node_infos=[ni]))
    pod = claims("new", "pending-csi-1")
    assert plugin.filter(CycleState(), pod, ni) == EXCEEDED
    # The existing pod's claim gets bound to a non-CSI volume: its count changes.
    store.put("PersistentVolume", pv("local-pv"))
    store.put("PersistentVolumeClaim", bound("pending-csi-0", "local-pv"))
    assert plugin.filter(CycleState(), pod, ni) is None
