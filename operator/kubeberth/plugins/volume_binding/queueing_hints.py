"""VolumeBinding's registered events and QueueingHints (upstream's EventsToRegister and
isSchedulableAfter... functions of volume_binding.go): which storage and node changes may let
a pod it rejected bind its volumes."""

from __future__ import annotations

from typing import Any

from ...framework import (
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    NODE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Pod,
    QueueingHint,
)
from .._volume_events import as_existing, as_object, mounts_claim, pod_volumes
from .._volume_util import annotations_of, name_of, spec
from .capacity import volume_limit

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
A = ActionType

MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"


def after_storage_class_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A new class, or one whose allowedTopologies changed (its binding mode is immutable)."""
    before = as_object(old, "StorageClass")
    after = as_existing(new, "StorageClass")
    if before is None:
        return QUEUE
    if _semantic(before.get("allowedTopologies")) != _semantic(after.get("allowedTopologies")):
        return QUEUE
    return SKIP


def after_pvc_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Any creation or update of a claim the pod mounts (generic ephemeral ones included)."""
    pvc = as_existing(new, "PersistentVolumeClaim")
    return QUEUE if mounts_claim(pod, pvc, ephemeral=True) else SKIP


def after_csi_node_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A new CSINode, or a change of the in-tree plugins it says are migrated to CSI."""
    before = as_object(old, "CSINode")
    after = as_existing(new, "CSINode")
    if before is None:
        return QUEUE
    if (annotations_of(before).get(MIGRATED_PLUGINS_ANNOTATION)
            != annotations_of(after).get(MIGRATED_PLUGINS_ANNOTATION)):
        return QUEUE
    return SKIP


def after_csi_driver_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """The CSIDriver of one of the pod's inline CSI volumes stopped tracking storage capacity."""
    before = as_existing(old, "CSIDriver")
    after = as_existing(new, "CSIDriver")
    driver = name_of(after)
    for volume in pod_volumes(pod):
        csi = volume.get("csi")
        if csi is None or (csi.get("driver") or "") != driver:
            continue
        if spec(before).get("storageCapacity") is True and spec(after).get("storageCapacity") is not True:
            return QUEUE
    return SKIP


def after_csi_storage_capacity_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A new capacity object, or a larger volume limit (maximumVolumeSize, else capacity);
    its topology and class are immutable."""
    before = as_object(old, "CSIStorageCapacity")
    after = as_existing(new, "CSIStorageCapacity")
    if before is None:
        return QUEUE
    old_limit, new_limit = volume_limit(before), volume_limit(after)
    if new_limit is not None and (old_limit is None or new_limit > old_limit):
        return QUEUE
    return SKIP


def registrations() -> list[ClusterEvent | ClusterEventWithHint]:
    return [
        ClusterEventWithHint(ClusterEvent(STORAGE_CLASS, A.ADD | A.UPDATE), after_storage_class_change),
        ClusterEventWithHint(ClusterEvent(PERSISTENT_VOLUME_CLAIM, A.ADD | A.UPDATE), after_pvc_change),
        ClusterEvent(PERSISTENT_VOLUME, A.ADD | A.UPDATE),
        ClusterEvent(NODE, A.ADD | A.UPDATE_NODE_LABEL),
        ClusterEventWithHint(ClusterEvent(CSI_NODE, A.ADD | A.UPDATE), after_csi_node_change),
        ClusterEventWithHint(ClusterEvent(CSI_DRIVER, A.UPDATE), after_csi_driver_change),
        ClusterEventWithHint(ClusterEvent(CSI_STORAGE_CAPACITY, A.ADD | A.UPDATE), after_csi_storage_capacity_change),
    ]


def _semantic(value: Any) -> Any:
    """apimachinery's semantic equality over plain data: an absent, null or empty list equals
    any other of them, and so does an absent or null field."""
    if isinstance(value, dict):
        kept = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v is not None}
    if isinstance(value, list):
        return [_semantic(v) for v in value] or None
    return value
