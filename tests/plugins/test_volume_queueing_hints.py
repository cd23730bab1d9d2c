"""The volume plugins' registered events and QueueingHints, as upstream v1.37 registers them
(volume_binding.go, volume_restrictions.go, volume_zone.go, nodevolumelimits/csi.go)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth.framework.events import (
    ASSIGNED_POD,
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    NODE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    VOLUME_ATTACHMENT,
    ActionType,
    ClusterEvent,
    QueueingHint,
    with_hint,
)
from kubeberth.framework.types import QueuedPodInfo
from kubeberth.model import Pod
from kubeberth.plugins._csi_migration import TranslationError, inline_csi_driver
from kubeberth.plugins.node_volume_limits import EBSLimits, GCEPDLimits, NodeVolumeLimits
from kubeberth.plugins.volume_binding import VolumeBinding
from kubeberth.plugins.volume_restrictions import VolumeRestrictions
from kubeberth.plugins.volume_zone import VolumeZone
from kubeberth.queue.profile import QueueProfile, Strategy, worth_requeuing
from tests.builders import make_node, make_pod
from tests.doubles import handle
from tests.plugins.test_queueing_hints import hint, registered

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
A = ActionType


def matches(plugin: Any, event: ClusterEvent) -> bool:
    return any(r.event.match(event) for r in map(with_hint, plugin.events_to_register()))


def pvc(name: str, namespace: str = "default", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec}


def pv(name: str = "pv1", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {"capacity": {"storage": "1Gi"}}}


def storage_class(name: str = "sc", **fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "provisioner": "csi.example.com", **fields}


def csi_node(drivers: list[dict[str, Any]] | None = None,
             annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "n1", "annotations": annotations or {}}, "spec": {"drivers": drivers or []}}


def driver(name: str, count: int | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name, "nodeID": "n1"}
    if count is not None:
        d["allocatable"] = {"count": count}
    return d


def claim_volume(claim: str, name: str = "data") -> dict[str, Any]:
    return {"name": name, "persistentVolumeClaim": {"claimName": claim}}


def ephemeral_volume(name: str = "scratch") -> dict[str, Any]:
    return {"name": name, "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}


def pod_with(*volumes: dict[str, Any], name: str = "p", node: str = "", namespace: str = "default") -> Pod:
    return make_pod(name, namespace, node=node, volumes=list(volumes))


def gce(pd: str, read_only: bool = False) -> dict[str, Any]:
    return {"name": pd, "gcePersistentDisk": {"pdName": pd, "readOnly": read_only}}


PVC_ADD = ClusterEvent(PERSISTENT_VOLUME_CLAIM, A.ADD)
PVC_UPDATE = ClusterEvent(PERSISTENT_VOLUME_CLAIM, A.UPDATE_OTHER)
PV_ADD = ClusterEvent(PERSISTENT_VOLUME, A.ADD)
PV_UPDATE = ClusterEvent(PERSISTENT_VOLUME, A.UPDATE_OTHER)
SC_ADD = ClusterEvent(STORAGE_CLASS, A.ADD)
SC_UPDATE = ClusterEvent(STORAGE_CLASS, A.UPDATE_OTHER)
CSI_NODE_ADD = ClusterEvent(CSI_NODE, A.ADD)
CSI_NODE_UPDATE = ClusterEvent(CSI_NODE, A.UPDATE_OTHER)
POD_DELETED = ClusterEvent(ASSIGNED_POD, A.DELETE)
NODE_ADD = ClusterEvent(NODE, A.ADD)
NODE_LABELS = ClusterEvent(NODE, A.UPDATE_NODE_LABEL)


def test_registrations_are_upstreams() -> None:
    assert registered(VolumeBinding(None, handle())) == [
        (STORAGE_CLASS, A.ADD | A.UPDATE, True), (PERSISTENT_VOLUME_CLAIM, A.ADD | A.UPDATE, True),
        (PERSISTENT_VOLUME, A.ADD | A.UPDATE, False), (NODE, A.ADD | A.UPDATE_NODE_LABEL, False),
        (CSI_NODE, A.ADD | A.UPDATE, True), (CSI_DRIVER, A.UPDATE, True),
        (CSI_STORAGE_CAPACITY, A.ADD | A.UPDATE, True)]
    assert registered(VolumeRestrictions(None, handle())) == [
        (ASSIGNED_POD, A.DELETE, True), (NODE, A.ADD, False), (PERSISTENT_VOLUME_CLAIM, A.ADD, True)]
    assert registered(VolumeZone(None, handle())) == [
        (STORAGE_CLASS, A.ADD, True), (NODE, A.ADD | A.UPDATE_NODE_LABEL, False),
        (PERSISTENT_VOLUME_CLAIM, A.ADD | A.UPDATE, True), (PERSISTENT_VOLUME, A.ADD | A.UPDATE, True)]
    assert registered(NodeVolumeLimits(None, handle())) == [
        (CSI_NODE, A.ADD, False), (CSI_NODE, A.UPDATE, True), (ASSIGNED_POD, A.DELETE, True),
        (PERSISTENT_VOLUME_CLAIM, A.ADD, True), (VOLUME_ATTACHMENT, A.DELETE, True)]
    # Not v1.37 plugins: their pods stay requeued by any event, as before.
    assert registered(EBSLimits(None, handle())) == []
    assert registered(GCEPDLimits(None, handle())) == []


@pytest.mark.parametrize("event, wanted", [
    (ClusterEvent(PERSISTENT_VOLUME, A.DELETE), False),
    (ClusterEvent(PERSISTENT_VOLUME_CLAIM, A.DELETE), False),
    (ClusterEvent(STORAGE_CLASS, A.DELETE), False),
    (ClusterEvent(CSI_DRIVER, A.ADD), False),
    (ClusterEvent(NODE, A.UPDATE_NODE_TAINT), False),
    (ClusterEvent(ASSIGNED_POD, A.DELETE), False),
    (PV_UPDATE, True),
    (NODE_LABELS, True),
], ids=lambda v: v.label if isinstance(v, ClusterEvent) else str(v))
def test_volume_binding_listens_to_these_events_only(event: ClusterEvent, wanted: bool) -> None:
    assert matches(VolumeBinding(None, handle()), event) is wanted


# ---- VolumeBinding ----------------------------------------------------------------------

def test_volume_binding_pvc_hint_queues_the_pods_own_claims() -> None:
    vb = VolumeBinding(None, handle())
    pod = pod_with(claim_volume("data"), ephemeral_volume("scratch"))
    assert hint(vb, PVC_ADD, pod, None, pvc("data")) == QUEUE
    assert hint(vb, PVC_UPDATE, pod, pvc("data"), pvc("data", volumeName="pv1")) == QUEUE
    assert hint(vb, PVC_ADD, pod, None, pvc("p-scratch")) == QUEUE  # the ephemeral volume's claim
    assert hint(vb, PVC_ADD, pod, None, pvc("other")) == SKIP
    assert hint(vb, PVC_ADD, pod, None, pvc("data", namespace="team-b")) == SKIP
    assert hint(vb, PVC_ADD, pod_with(gce("disk")), None, pvc("data")) == SKIP


def test_volume_binding_storage_class_hint_queues_new_classes_and_topology_changes() -> None:
    vb = VolumeBinding(None, handle())
    pod = pod_with(claim_volume("data"))
    zone_a = [{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}]
    zone_ab = [{"matchLabelExpressions": [{"key": "zone", "values": ["a", "b"]}]}]
    assert hint(vb, SC_ADD, pod, None, storage_class()) == QUEUE
    assert hint(vb, SC_UPDATE, pod, storage_class(allowedTopologies=zone_a),
                storage_class(allowedTopologies=zone_ab)) == QUEUE
    assert hint(vb, SC_UPDATE, pod, storage_class(), storage_class(allowedTopologies=zone_a)) == QUEUE
    assert hint(vb, SC_UPDATE, pod, storage_class(allowedTopologies=zone_a),
                storage_class(allowedTopologies=zone_a, parameters={"type": "ssd"})) == SKIP
    # Semantic equality: null and an empty list are the same topology.
    assert hint(vb, SC_UPDATE, pod, storage_class(allowedTopologies=None),
                storage_class(allowedTopologies=[])) == SKIP


def test_volume_binding_csi_node_hint_queues_on_creation_and_migration_changes() -> None:
    vb = VolumeBinding(None, handle())
    pod = pod_with(claim_volume("data"))
    migrated = {"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/gce-pd"}
    assert hint(vb, CSI_NODE_ADD, pod, None, csi_node()) == QUEUE
    assert hint(vb, CSI_NODE_UPDATE, pod, csi_node(), csi_node(annotations=migrated)) == QUEUE
    assert hint(vb, CSI_NODE_UPDATE, pod, csi_node(annotations=migrated), csi_node(
        drivers=[driver("d", 4)], annotations={**migrated, "other": "x"})) == SKIP


def test_volume_binding_csi_driver_hint_queues_when_capacity_tracking_stops() -> None:
    vb = VolumeBinding(None, handle())
    update = ClusterEvent(CSI_DRIVER, A.UPDATE_OTHER)

    def csi_driver(capacity: bool | None) -> dict[str, Any]:
        spec = {} if capacity is None else {"storageCapacity": capacity}
        return {"metadata": {"name": "csi.example.com"}, "spec": spec}

    inline = pod_with({"name": "v", "csi": {"driver": "csi.example.com"}})
    assert hint(vb, update, inline, csi_driver(True), csi_driver(False)) == QUEUE
    assert hint(vb, update, inline, csi_driver(True), csi_driver(None)) == QUEUE
    assert hint(vb, update, inline, csi_driver(False), csi_driver(True)) == SKIP
    assert hint(vb, update, inline, csi_driver(True), csi_driver(True)) == SKIP
    other = pod_with({"name": "v", "csi": {"driver": "other.example.com"}})
    assert hint(vb, update, other, csi_driver(True), csi_driver(False)) == SKIP
    # As upstream, only inline CSI volumes are looked at, not claims.
    assert hint(vb, update, pod_with(claim_volume("data")), csi_driver(True), csi_driver(False)) == SKIP


def test_volume_binding_capacity_hint_queues_new_objects_and_larger_limits() -> None:
    vb = VolumeBinding(None, handle())
    pod = pod_with(claim_volume("data"))
    added, updated = ClusterEvent(CSI_STORAGE_CAPACITY, A.ADD), ClusterEvent(CSI_STORAGE_CAPACITY, A.UPDATE_OTHER)

    def cap(capacity: str | None = None, maximum: str | None = None) -> dict[str, Any]:
        obj: dict[str, Any] = {"metadata": {"name": "c", "namespace": "kube-system"}, "storageClassName": "sc"}
        if capacity is not None:
            obj["capacity"] = capacity
        if maximum is not None:
            obj["maximumVolumeSize"] = maximum
        return obj

    assert hint(vb, added, pod, None, cap()) == QUEUE
    assert hint(vb, updated, pod, cap("10Gi"), cap("20Gi")) == QUEUE
    assert hint(vb, updated, pod, cap(), cap("1Gi")) == QUEUE
    assert hint(vb, updated, pod, cap("20Gi"), cap("10Gi")) == SKIP
    assert hint(vb, updated, pod, cap("10Gi"), cap("10240Mi")) == SKIP  # the same size
    assert hint(vb, updated, pod, cap("10Gi"), cap()) == SKIP
    # maximumVolumeSize, when set, is the limit: a larger capacity with a small maximum is no help.
    assert hint(vb, updated, pod, cap("10Gi"), cap("50Gi", maximum="5Gi")) == SKIP
    assert hint(vb, updated, pod, cap("50Gi", maximum="5Gi"), cap("50Gi", maximum="6Gi")) == QUEUE


def test_a_hint_given_the_wrong_object_raises_which_the_queue_takes_as_queue() -> None:
    vb = VolumeBinding(None, handle())
    with pytest.raises(TypeError, match="PersistentVolumeClaim"):
        hint(vb, PVC_ADD, pod_with(claim_volume("data")), None, make_pod("not-a-claim"))
    with pytest.raises(TypeError, match="Pod"):
        hint(VolumeRestrictions(None, handle()), POD_DELETED, pod_with(gce("d")), pvc("data"), None)


# ---- VolumeRestrictions -----------------------------------------------------------------

def test_volume_restrictions_pod_deleted_hint() -> None:
    vr = VolumeRestrictions(None, handle())
    pod = pod_with(gce("disk"), claim_volume("rwop"))
    assert hint(vr, POD_DELETED, pod, pod_with(gce("disk"), name="holder", node="n1"), None) == QUEUE
    assert hint(vr, POD_DELETED, pod, pod_with(claim_volume("rwop"), name="user", node="n1"), None) == QUEUE
    assert hint(vr, POD_DELETED, pod, pod_with(gce("other"), name="o", node="n1"), None) == SKIP
    assert hint(vr, POD_DELETED, pod, make_pod("plain", node="n1"), None) == SKIP
    # Another namespace never counts, even for the same disk.
    assert hint(vr, POD_DELETED, pod, pod_with(gce("disk"), name="h", node="n1", namespace="b"), None) == SKIP
    # Both read-only: the disk was no conflict.
    ro = pod_with(gce("disk", read_only=True))
    assert hint(vr, POD_DELETED, ro, pod_with(gce("disk", read_only=True), name="h", node="n1"), None) == SKIP
    assert hint(vr, POD_DELETED, ro, pod_with(gce("disk"), name="h", node="n1"), None) == QUEUE


def test_volume_restrictions_pvc_added_hint_reads_only_claim_volumes() -> None:
    vr = VolumeRestrictions(None, handle())
    pod = pod_with(claim_volume("data"), ephemeral_volume("scratch"))
    assert hint(vr, PVC_ADD, pod, None, pvc("data")) == QUEUE
    assert hint(vr, PVC_ADD, pod, None, pvc("p-scratch")) == SKIP
    assert hint(vr, PVC_ADD, pod, None, pvc("data", namespace="b")) == SKIP
    assert hint(vr, NODE_ADD, pod, None, make_node("n")) == QUEUE
    assert not matches(vr, PVC_UPDATE)


# ---- VolumeZone ---------------------------------------------------------------------------

def test_volume_zone_storage_class_added_hint_wants_wait_for_first_consumer() -> None:
    vz = VolumeZone(None, handle())
    pod = pod_with(claim_volume("data"))
    assert hint(vz, SC_ADD, pod, None, storage_class(volumeBindingMode="WaitForFirstConsumer")) == QUEUE
    assert hint(vz, SC_ADD, pod, None, storage_class(volumeBindingMode="Immediate")) == SKIP
    assert hint(vz, SC_ADD, pod, None, storage_class()) == SKIP
    assert not matches(vz, SC_UPDATE)


def test_volume_zone_pvc_hint_queues_the_pods_claim_volumes() -> None:
    vz = VolumeZone(None, handle())
    pod = pod_with(claim_volume("data"), ephemeral_volume("scratch"))
    assert hint(vz, PVC_UPDATE, pod, pvc("data"), pvc("data", volumeName="pv1")) == QUEUE
    assert hint(vz, PVC_ADD, pod, None, pvc("data")) == QUEUE
    assert hint(vz, PVC_ADD, pod, None, pvc("p-scratch")) == SKIP
    assert hint(vz, PVC_ADD, pod, None, pvc("data", namespace="b")) == SKIP


@pytest.mark.parametrize("old, new, want", [
    (None, {}, QUEUE),
    ({"topology.kubernetes.io/zone": "a"}, {"topology.kubernetes.io/zone": "b"}, QUEUE),
    ({}, {"failure-domain.beta.kubernetes.io/region": "r"}, QUEUE),
    ({"topology.kubernetes.io/zone": "a"}, {"topology.kubernetes.io/zone": "a", "tier": "gold"}, SKIP),
    ({"topology.kubernetes.io/zone": "a__b"}, {"topology.kubernetes.io/zone": "b__a"}, SKIP),
    ({"topology.kubernetes.io/zone": "a__b"}, {"topology.kubernetes.io/zone": "a"}, QUEUE),
    # A value with an empty zone is ignored, as if the label were absent.
    ({"topology.kubernetes.io/zone": "a____b"}, {}, SKIP),
    ({"topology.kubernetes.io/zone": ""}, {"topology.kubernetes.io/zone": "a"}, QUEUE),
], ids=["created", "zone-changed", "region-added", "other-label", "same-zones", "zone-dropped",
        "malformed-removed", "empty-to-zone"])
def test_volume_zone_pv_hint(old: dict[str, str] | None, new: dict[str, str], want: QueueingHint) -> None:
    vz = VolumeZone(None, handle())
    event = PV_ADD if old is None else PV_UPDATE
    assert hint(vz, event, pod_with(claim_volume("data")), None if old is None else pv(labels=old),
                pv(labels=new)) == want


# ---- NodeVolumeLimits -----------------------------------------------------------------

@pytest.mark.parametrize("old, new, want", [
    ([driver("d", 2)], [driver("d", 3)], QUEUE),
    ([driver("d", 2)], [driver("d", 2), driver("e", 1)], QUEUE),
    ([driver("d")], [driver("d", 1)], QUEUE),
    ([driver("d", 3)], [driver("d", 2)], SKIP),
    ([driver("d", 2)], [driver("d", 2)], SKIP),
    ([driver("d", 2)], [], SKIP),
    ([], [driver("e")], SKIP),
], ids=["raised", "driver-added", "count-set", "lowered", "unchanged", "driver-removed", "no-count"])
def test_node_volume_limits_csi_node_updated_hint(old: list[dict[str, Any]], new: list[dict[str, Any]],
                                                  want: QueueingHint) -> None:
    nvl = NodeVolumeLimits(None, handle())
    assert hint(nvl, CSI_NODE_UPDATE, pod_with(claim_volume("data")), csi_node(old), csi_node(new)) == want
    assert hint(nvl, CSI_NODE_ADD, pod_with(claim_volume("data")), None, csi_node(new)) == QUEUE


def test_node_volume_limits_pod_deleted_hint_wants_a_placed_pod_with_counted_volumes() -> None:
    nvl = NodeVolumeLimits(None, handle())
    pod = pod_with(claim_volume("data"))
    ebs = {"name": "e", "awsElasticBlockStore": {"volumeID": "vol-1"}}
    empty_dir = {"name": "tmp", "emptyDir": {}}
    assert hint(nvl, POD_DELETED, pod, pod_with(claim_volume("x"), name="d", node="n1"), None) == QUEUE
    assert hint(nvl, POD_DELETED, pod, pod_with(ephemeral_volume(), name="d", node="n1"), None) == QUEUE
    assert hint(nvl, POD_DELETED, pod, pod_with(ebs, name="d", node="n1"), None) == QUEUE
    assert hint(nvl, POD_DELETED, pod, pod_with(empty_dir, name="d", node="n1"), None) == SKIP
    assert hint(nvl, POD_DELETED, pod, make_pod("d", node="n1"), None) == SKIP
    assert hint(nvl, POD_DELETED, pod, pod_with(claim_volume("x"), name="d"), None) == SKIP  # never placed
    nominated = pod_with(claim_volume("x"), name="d").raw
    nominated["status"] = {"nominatedNodeName": "n1"}
    assert hint(nvl, POD_DELETED, pod, Pod(nominated), None) == QUEUE


def test_node_volume_limits_pvc_added_hint_counts_ephemeral_claims() -> None:
    nvl = NodeVolumeLimits(None, handle())
    pod = pod_with(claim_volume("data"), ephemeral_volume("scratch"))
    assert hint(nvl, PVC_ADD, pod, None, pvc("data")) == QUEUE
    assert hint(nvl, PVC_ADD, pod, None, pvc("p-scratch")) == QUEUE
    assert hint(nvl, PVC_ADD, pod, None, pvc("other")) == SKIP
    assert hint(nvl, PVC_ADD, pod, None, pvc("data", namespace="b")) == SKIP
    assert not matches(nvl, PVC_UPDATE)


def test_node_volume_limits_volume_attachment_deleted_hint() -> None:
    nvl = NodeVolumeLimits(None, handle())
    deleted = ClusterEvent(VOLUME_ATTACHMENT, A.DELETE)

    def attachment(attacher: str) -> dict[str, Any]:
        return {"metadata": {"name": "va"}, "spec": {"attacher": attacher, "nodeName": "n1"}}

    pd = {"name": "pd", "gcePersistentDisk": {"pdName": "disk"}}
    assert hint(nvl, deleted, pod_with(claim_volume("data")), attachment("any.example.com"), None) == QUEUE
    assert hint(nvl, deleted, pod_with(pd), attachment("pd.csi.storage.gke.io"), None) == QUEUE
    assert hint(nvl, deleted, pod_with(pd), attachment("ebs.csi.aws.com"), None) == SKIP
    assert hint(nvl, deleted, pod_with({"name": "t", "emptyDir": {}}), attachment("ebs.csi.aws.com"), None) == SKIP
    # An ephemeral volume is not looked at here (upstream reads claim volumes only).
    assert hint(nvl, deleted, pod_with(ephemeral_volume()), attachment("ebs.csi.aws.com"), None) == SKIP
    # A volume the CSI translation rejects: an error, which the queue takes as Queue.
    bad = {"name": "e", "awsElasticBlockStore": {"volumeID": "aws://zone/not-a-volume"}}
    with pytest.raises(TranslationError, match="Invalid format for AWS volume"):
        hint(nvl, deleted, pod_with(bad), attachment("ebs.csi.aws.com"), None)


def test_through_the_queue_a_failing_hint_requeues_and_a_skip_keeps_the_pod() -> None:
    nvl = NodeVolumeLimits(None, handle())
    profile = QueueProfile("default-scheduler", lambda a, b: False, plugins={nvl.name: nvl})
    deleted = ClusterEvent(VOLUME_ATTACHMENT, A.DELETE)
    attachment = {"metadata": {"name": "va"}, "spec": {"attacher": "ebs.csi.aws.com"}}

    def rejected(*volumes: dict[str, Any]) -> QueuedPodInfo:
        q = QueuedPodInfo(pod_with(*volumes))
        q.unschedulable_plugins = {nvl.name}
        return q

    bad = {"name": "e", "awsElasticBlockStore": {"volumeID": "aws://zone/not-a-volume"}}
    assert worth_requeuing(profile, rejected(bad), deleted, attachment, None) == Strategy.AFTER_BACKOFF
    fine = {"name": "e", "awsElasticBlockStore": {"volumeID": "vol-1"}}
    assert worth_requeuing(profile, rejected(fine), deleted, attachment, None) == Strategy.AFTER_BACKOFF
    pd = {"name": "pd", "gcePersistentDisk": {"pdName": "disk"}}
    assert worth_requeuing(profile, rejected(pd), deleted, attachment, None) == Strategy.SKIP
    # An event NodeVolumeLimits did not register leaves its pods where they are.
    pv_added = ClusterEvent(PERSISTENT_VOLUME, A.ADD)
    assert worth_requeuing(profile, rejected(pd), pv_added, None, pv()) == Strategy.SKIP


@pytest.mark.parametrize("volume, want", [
    ({"gcePersistentDisk": {"pdName": "d"}}, "pd.csi.storage.gke.io"),
    ({"awsElasticBlockStore": {"volumeID": "vol-1"}}, "ebs.csi.aws.com"),
    ({"awsElasticBlockStore": {"volumeID": "aws://us-east-1a/vol-1"}}, "ebs.csi.aws.com"),
    ({"cinder": {"volumeID": "c"}}, "cinder.csi.openstack.org"),
    ({"azureDisk": {"diskName": "d", "diskURI": "u", "kind": "Managed"}}, "disk.csi.azure.com"),
    ({"azureFile": {"secretName": "s", "shareName": "x"}}, "file.csi.azure.com"),
    ({"vsphereVolume": {"volumePath": "p"}}, "csi.vsphere.vmware.com"),
    ({"portworxVolume": {"volumeID": "p"}}, "pxd.portworx.com"),
    ({"emptyDir": {}}, None),
    ({"csi": {"driver": "csi.example.com"}}, None),
], ids=lambda v: next(iter(v)) if isinstance(v, dict) else str(v))
def test_inline_csi_driver(volume: dict[str, Any], want: str | None) -> None:
    assert inline_csi_driver({"name": "v", **volume}) == want


def test_inline_csi_translation_errors_name_the_problem() -> None:
    with pytest.raises(TranslationError, match=r"kind\(Dedicated\) is not supported"):
        inline_csi_driver({"name": "v", "azureDisk": {"diskName": "d", "kind": "Dedicated"}})
    with pytest.raises(TranslationError, match="Invalid format for AWS volume"):
        inline_csi_driver({"name": "v", "awsElasticBlockStore": {"volumeID": "aws://zone/vol-1/extra"}})
