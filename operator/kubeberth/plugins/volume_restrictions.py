"""VolumeRestrictions: volumes that cannot be shared between pods.

Upstream's volumerestrictions plugin (the older NoDiskConflict predicate):

- the same GCE PD mounted by two pods on one node, unless both mount it read-only;
- the same AWS EBS volume (any mode);
- the same RBD image (overlapping Ceph monitors, same pool and image), unless both read-only;
- the same ISCSI IQN, unless both read-only;

all rejected with "node(s) had no available disk"; and a ReadWriteOncePod
PVC already used by any pod in the cluster, rejected with upstream's
ReadWriteOncePod reason (preemption may free it).

A rejected pod is tried again when a placed pod of its namespace goes that held a conflicting
disk or mounted one of its claims, on a new node, or on the creation of one of its claims.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..framework import (
    ASSIGNED_POD,
    NODE,
    PERSISTENT_VOLUME_CLAIM,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    FilterPlugin,
    Handle,
    NodeInfo,
    Pod,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    QueueingHint,
    Status,
)
from ._volume_events import as_existing, as_pod, claims_of, mounts_claim
from ._volume_util import PVC, access_modes, pod_claims, pvc_not_found

NAME = "VolumeRestrictions"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME

ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_RWOP_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod")

_RESTRICTED = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")


class _PreFilterState:
    __slots__ = ("conflicting_pvc_ref_count", "rwop_pvcs")

    def __init__(self, rwop_pvcs: frozenset[str], count: int) -> None:
        self.rwop_pvcs = rwop_pvcs  # "namespace/name" keys
        self.conflicting_pvc_ref_count = count

    def update_with_pod(self, pod: Pod, multiplier: int) -> None:
        for claim, _ in pod_claims(pod):
            if f"{pod.namespace}/{claim}" in self.rwop_pvcs:
                self.conflicting_pvc_ref_count += multiplier

    def clone(self) -> _PreFilterState:
        return _PreFilterState(self.rwop_pvcs, self.conflicting_pvc_ref_count)


def needs_restrictions_check(volume: Mapping[str, Any]) -> bool:
    return any(volume.get(k) is not None for k in _RESTRICTED)


def _have_overlap(a: Sequence[str], b: Sequence[str]) -> bool:
    return bool(set(a) & set(b))


def is_volume_conflict(volume: Mapping[str, Any], pod: Pod) -> bool:
    """Whether `volume` (of the incoming pod) conflicts with a volume of an existing `pod`."""
    gce = volume.get("gcePersistentDisk")
    ebs = volume.get("awsElasticBlockStore")
    iscsi = volume.get("iscsi")
    rbd = volume.get("rbd")
    for ev in pod.spec.get("volumes") or []:
        egce = ev.get("gcePersistentDisk")
        if gce is not None and egce is not None:
            if gce.get("pdName") == egce.get("pdName") and not (gce.get("readOnly") and egce.get("readOnly")):
                return True
        eebs = ev.get("awsElasticBlockStore")
        if ebs is not None and eebs is not None and ebs.get("volumeID") == eebs.get("volumeID"):
            return True
        eiscsi = ev.get("iscsi")
        if iscsi is not None and eiscsi is not None:
            if iscsi.get("iqn") == eiscsi.get("iqn") and not (iscsi.get("readOnly") and eiscsi.get("readOnly")):
                return True
        erbd = ev.get("rbd")
        if rbd is not None and erbd is not None:
            # The API server defaults the pool to "rbd".
            if (_have_overlap(rbd.get("monitors") or [], erbd.get("monitors") or [])
                    and (rbd.get("pool") or "rbd") == (erbd.get("pool") or "rbd")
                    and rbd.get("image") == erbd.get("image")
                    and not (rbd.get("readOnly") and erbd.get("readOnly"))):
                return True
    return False


def satisfy_volume_conflicts(pod: Pod, node_info: NodeInfo) -> bool:
    return _satisfy_volume_conflicts(pod, node_info.pods)


def _satisfy_volume_conflicts(pod: Pod, existing_pods: Sequence[Pod]) -> bool:
    for v in pod.spec.get("volumes") or []:
        if not needs_restrictions_check(v):
            continue
        for existing in existing_pods:
            if is_volume_conflict(v, existing):
                return False
    return True


class VolumeRestrictions(PreFilterPlugin, PreFilterExtensions, FilterPlugin):
    name = NAME

    def __init__(self, args: Any, handle: Handle) -> None:
        self.handle = handle

    # ---- QueueingHints ------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEvent | ClusterEventWithHint]:
        # spec.volumes is immutable: a pod update never frees a volume.
        return [
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.DELETE), self.after_assigned_pod_deleted),
            ClusterEvent(NODE, ActionType.ADD),
            ClusterEventWithHint(ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.ADD), self.after_pvc_added),
        ]

    def after_pvc_added(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """A claim the pod mounts (by a persistentVolumeClaim volume) was created: its access
        modes can be read now."""
        pvc = as_existing(new, "PersistentVolumeClaim")
        return QueueingHint.QUEUE if mounts_claim(pod, pvc, ephemeral=False) else QueueingHint.QUEUE_SKIP

    def after_assigned_pod_deleted(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """A pod of the same namespace went that held a disk conflicting with the pod's, or
        mounted one of its claims (which may be ReadWriteOncePod: the claim is not read here)."""
        deleted = as_pod(old)
        if deleted.namespace != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        if not _satisfy_volume_conflicts(pod, [deleted]):
            return QueueingHint.QUEUE
        if claims_of(pod, ephemeral=False) & claims_of(deleted, ephemeral=False):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # ---- PreFilter ------------------------------------------------------------
    def _rwop_pvcs(self, pod: Pod) -> tuple[frozenset[str], Status | None]:
        out: set[str] = set()
        objects = self.handle.objects
        for claim, _ in pod_claims(pod):
            if not claim:
                continue
            pvc = objects.get(PVC, f"{pod.namespace}/{claim}") if objects is not None else None
            if pvc is None:
                return frozenset(), Status.unresolvable(pvc_not_found(claim))
            if "ReadWriteOncePod" in access_modes(pvc):
                out.add(f"{pod.namespace}/{claim}")
        return frozenset(out), None

    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        volumes = pod.spec.get("volumes") or []
        needs_check = any(needs_restrictions_check(v) for v in volumes)
        rwop, status = self._rwop_pvcs(pod)
        if status is not None:
            return None, status
        # Every reference by a pod already placed; AddPod/RemovePod keep it exact, so
        # preemption sees a claim freed only when all its users are gone.
        count = 0
        if rwop:
            for ni in self.handle.snapshot.node_infos:
                refs = ni.pvc_ref_counts
                if refs:
                    for key in rwop:
                        count += refs.get(key, 0)
        if not needs_check and count == 0:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(rwop, count))
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self

    def add_pod(self, state: CycleState, pod_to_schedule: Pod, pod_to_add: Pod,
                node_info: NodeInfo) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if isinstance(s, _PreFilterState):
            s.update_with_pod(pod_to_add, 1)
        return None

    def remove_pod(self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: Pod,
                   node_info: NodeInfo) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if isinstance(s, _PreFilterState):
            s.update_with_pod(pod_to_remove, -1)
        return None

    # ---- Filter ---------------------------------------------------------------
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not satisfy_volume_conflicts(pod, node_info):
            return Status.unschedulable(ERR_REASON_DISK_CONFLICT)
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return Status.error(f"reading {PRE_FILTER_STATE_KEY!r} from cycleState: not found")
        if s.conflicting_pvc_ref_count > 0:
            return Status.unschedulable(ERR_REASON_RWOP_CONFLICT)
        return None


PLUGINS = [VolumeRestrictions]
