"""VolumeZone: a pod's bound volumes must be in the node's zone and region.

Upstream's volumezone plugin (the older NoVolumeZoneConflict predicate). The
PVs a pod's claims are bound to carry zone/region labels (GA
`topology.kubernetes.io/*` or the deprecated `failure-domain.beta.kubernetes.io/*`;
a value may list several zones joined by `__`); a node with any of those
labels must match every one of them. A beta label on the PV is compared with
the node's GA label when the node lacks the beta one. Nodes without any
topology label fit (single-zone clusters). Unbound claims of a
WaitForFirstConsumer class are left to VolumeBinding.

A rejected pod is tried again on a new WaitForFirstConsumer class, a node added or
relabelled, one of its claims added or updated, a PV added or changing its topology labels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..framework import (
    NODE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    FilterPlugin,
    Handle,
    NodeInfo,
    Pod,
    PreFilterPlugin,
    PreFilterResult,
    QueueingHint,
    Status,
)
from ..framework import STORAGE_CLASS as STORAGE_CLASS_EVENT
from ._volume_events import as_existing, as_object, mounts_claim
from ._volume_util import (
    LABEL_REGION,
    LABEL_REGION_BETA,
    LABEL_ZONE,
    LABEL_ZONE_BETA,
    PV,
    PVC,
    STORAGE_CLASS,
    claim_class,
    label_zones_to_set,
    meta,
    spec,
    translate_to_ga_label,
)

NAME = "VolumeZone"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_CONFLICT = "node(s) had no available volume zone"

TOPOLOGY_LABELS = (LABEL_ZONE_BETA, LABEL_REGION_BETA, LABEL_ZONE, LABEL_REGION)


class PVTopology:
    __slots__ = ("key", "pv_name", "values")

    def __init__(self, pv_name: str, key: str, values: set[str]) -> None:
        self.pv_name = pv_name
        self.key = key
        self.values = values

    def __repr__(self) -> str:
        return f"PVTopology({self.pv_name} {self.key}={sorted(self.values)})"


class _State:
    __slots__ = ("topologies",)

    def __init__(self, topologies: list[PVTopology]) -> None:
        self.topologies = topologies

    def clone(self) -> _State:
        return self


class VolumeZone(PreFilterPlugin, FilterPlugin):
    name = NAME

    def __init__(self, args: Any, handle: Handle) -> None:
        self.handle = handle

    # ---- QueueingHints ------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEvent | ClusterEventWithHint]:
        # A class's volumeBindingMode is immutable: only a new WaitForFirstConsumer class helps.
        return [
            ClusterEventWithHint(ClusterEvent(STORAGE_CLASS_EVENT, ActionType.ADD), self.after_storage_class_added),
            ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
            ClusterEventWithHint(ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE),
                                 self.after_pvc_change),
            ClusterEventWithHint(ClusterEvent(PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE),
                                 self.after_pv_change),
        ]

    def after_storage_class_added(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        sc = as_existing(new, "StorageClass")
        if sc.get("volumeBindingMode") != "WaitForFirstConsumer":
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def after_pvc_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """A claim the pod mounts was created or updated (e.g. given its volumeName)."""
        pvc = as_object(new, "PersistentVolumeClaim")
        if pvc is not None and mounts_claim(pod, pvc, ephemeral=False):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def after_pv_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """A new PV, or one whose zone or region labels changed (its nodeAffinity is immutable
        and NodeAffinity's concern)."""
        before = as_object(old, "PersistentVolume")
        after = as_existing(new, "PersistentVolume")
        if before is None:
            return QueueingHint.QUEUE
        if _label_topologies(before) != _label_topologies(after):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def pv_topologies(self, pod: Pod) -> tuple[list[PVTopology], Status | None]:
        """upstream getPVbyPod: the topology constraints of the pod's bound PVs."""
        objects = self.handle.objects
        out: list[PVTopology] = []
        for v in pod.spec.get("volumes") or []:
            ref = v.get("persistentVolumeClaim")
            if ref is None:
                continue
            claim = str(ref.get("claimName") or "")
            if not claim:
                return [], Status.unresolvable("PersistentVolumeClaim had no name")
            pvc = objects.get(PVC, f"{pod.namespace}/{claim}")
            if pvc is None:
                return [], Status.unresolvable(f'persistentvolumeclaim "{claim}" not found')
            pv_name = str(spec(pvc).get("volumeName") or "")
            if not pv_name:
                sc_name = claim_class(pvc)
                if not sc_name:
                    return [], Status.unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
                sc = objects.get(STORAGE_CLASS, sc_name)
                if sc is None:
                    return [], Status.unresolvable(f'storageclass.storage.k8s.io "{sc_name}" not found')
                if sc.get("volumeBindingMode") == "WaitForFirstConsumer":
                    continue
                return [], Status.unresolvable("PersistentVolume had no name")
            pv = objects.get(PV, pv_name)
            if pv is None:
                return [], Status.unresolvable(f'persistentvolume "{pv_name}" not found')
            labels = meta(pv).get("labels") or {}
            for key in TOPOLOGY_LABELS:
                value = labels.get(key)
                if value is not None:
                    out.append(PVTopology(pv_name, key, label_zones_to_set(str(value))))
        return out, None

    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        topologies, status = self.pv_topologies(pod)
        if status is not None:
            return None, status
        if not topologies:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, _State(topologies))
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not pod.spec.get("volumes"):
            return None
        node = node_info.node
        if node is None:
            return Status.error("node not found")
        s = state.get(PRE_FILTER_STATE_KEY)
        if isinstance(s, _State):
            topologies = s.topologies
        else:
            topologies, status = self.pv_topologies(pod)
            if status is not None:
                return status
        labels = node.labels
        if not any(k in labels for k in TOPOLOGY_LABELS):
            return None
        for t in topologies:
            value = labels.get(t.key)
            if value is None:
                value = labels.get(translate_to_ga_label(t.key))
            if value is None or value not in t.values:
                return Status.unresolvable(ERR_REASON_CONFLICT)
        return None


def _label_topologies(pv: Mapping[str, Any]) -> list[tuple[str, frozenset[str]]]:
    """upstream getPVTopologies: the PV's topology labels in order, each as its set of zones;
    a label whose value lists an empty zone is left out."""
    labels = meta(pv).get("labels") or {}
    out: list[tuple[str, frozenset[str]]] = []
    for key in TOPOLOGY_LABELS:
        if key not in labels:
            continue
        zones = [z.strip() for z in str(labels[key]).split("__")]
        if all(zones):
            out.append((key, frozenset(zones)))
    return out


PLUGINS = [VolumeZone]
