"""Watch events into the scheduler, with upstream's "wait for cache sync".

kube-scheduler does not schedule before its informers have listed every kind it
watches; scheduling on a half-filled cache would overcommit nodes whose pods are not
known yet. kopf gives the same guarantee through indices: no `@kopf.on.event` handler
runs before every indexed resource has been listed and each listed object indexed.

So every watched kind has an index handler that, until the cache is synced, only
*buffers* the latest version of each object (it stores nothing in kopf's index). The
first `@kopf.on.event` call proves that the listing is complete: the buffer is then
applied in dependency order (priority classes and namespaces, profiles, other objects,
nodes, bound pods, pending pods), `synced` is set and the scheduling loop starts. From
then on the event handlers feed the scheduler directly. Replays of a version already
applied (kopf delivers each listed object to both paths) are skipped by resourceVersion.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..cache.objects import object_key
from ..scheduler import Scheduler

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class WatchedKind:
    group: str
    version: str
    plural: str
    kind: str
    order: int  # initial-sync order: lower first

    @property
    def handler_id(self) -> str:
        return f"kubeberth_{self.plural}"


PODS = "Pod"
NODES = "Node"
PROFILES = "SchedulingProfile"

# Everything the scheduler reads. The order is the initial-sync order.
WATCHED: tuple[WatchedKind, ...] = (
    WatchedKind("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", 0),
    WatchedKind("", "v1", "namespaces", "Namespace", 0),
    WatchedKind("kubeberth.io", "v1alpha1", "schedulingprofiles", PROFILES, 1),
    WatchedKind("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", 2),
    WatchedKind("", "v1", "persistentvolumes", "PersistentVolume", 2),
    WatchedKind("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", 2),
    WatchedKind("storage.k8s.io", "v1", "storageclasses", "StorageClass", 2),
    WatchedKind("storage.k8s.io", "v1", "csinodes", "CSINode", 2),
    WatchedKind("", "v1", "services", "Service", 2),
    WatchedKind("", "v1", "replicationcontrollers", "ReplicationController", 2),
    WatchedKind("apps", "v1", "replicasets", "ReplicaSet", 2),
    WatchedKind("apps", "v1", "statefulsets", "StatefulSet", 2),
    WatchedKind("", "v1", "nodes", NODES, 3),
    WatchedKind("", "v1", "pods", PODS, 4),
)

ProfileHook = Callable[[str, Mapping[str, Any] | None], None]


def _uid(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return str(meta.get("uid") or object_key(obj))


def _rv(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class Ingest:
    """The scheduler's side of the watch: idempotent, ordered at start, never raising."""

    def __init__(self, scheduler: Scheduler, on_profile: ProfileHook) -> None:
        self.scheduler = scheduler
        self.on_profile = on_profile  # (name, raw object or None when deleted)
        self.synced = asyncio.Event()
        self.active = False  # anything was received (this replica has been the active one)
        self._buffer: dict[tuple[str, str], tuple[WatchedKind, dict[str, Any]]] = {}
        self._applied: dict[tuple[str, str], str] = {}  # (kind, uid) -> resourceVersion applied
        self.applied_events = 0

    # --- kopf entry points ---

    def indexed(self, kind: WatchedKind, raw: Mapping[str, Any]) -> None:
        """Index handler: before the sync, remember the latest version; after it, nothing."""
        self.active = True
        if self.synced.is_set():
            return
        self._buffer[(kind.kind, _uid(raw))] = (kind, dict(raw))

    def event(self, kind: WatchedKind, event_type: str | None, raw: Mapping[str, Any]) -> None:
        """Event handler (called by kopf only once the listing is complete)."""
        self.active = True
        if not self.synced.is_set():
            self.sync()
        try:
            if event_type == "DELETED":
                self._delete(kind, raw)
            else:
                self._apply(kind, raw)
        except Exception:
            logger.exception("Could not ingest %s %s", kind.kind, object_key(raw))

    def sync(self) -> None:
        """Apply what the listing buffered, dependencies first; then let scheduling start."""
        buffered = sorted(self._buffer.values(), key=lambda kv: (kv[0].order, self._pod_rank(kv)))
        self._buffer.clear()
        for kind, raw in buffered:
            try:
                self._apply(kind, raw)
            except Exception:
                logger.exception("Could not ingest %s %s", kind.kind, object_key(raw))
        logger.info("Scheduler cache synced: %d objects listed", len(buffered))
        self.synced.set()

    @staticmethod
    def _pod_rank(item: tuple[WatchedKind, dict[str, Any]]) -> int:
        kind, raw = item
        if kind.kind != PODS:
            return 0
        return 0 if (raw.get("spec") or {}).get("nodeName") else 1  # bound pods before pending ones

    # --- into the scheduler ---

    def _apply(self, kind: WatchedKind, raw: Mapping[str, Any]) -> None:
        key = (kind.kind, _uid(raw))
        rv = _rv(raw)
        known = self._applied.get(key)
        if rv and known == rv:
            return  # the same version again (listing and event both deliver it)
        self._applied[key] = rv
        self.applied_events += 1
        s = self.scheduler
        if kind.kind == PODS:
            if known is None:
                s.on_pod_add(raw)
            else:
                s.on_pod_update(None, raw)
        elif kind.kind == NODES:
            if known is None:
                s.on_node_add(raw)
            else:
                s.on_node_update(None, raw)
        elif kind.kind == PROFILES:
            self.on_profile(str((raw.get("metadata") or {}).get("name") or ""), raw)
        else:
            s.on_object(kind.kind, raw)

    def _delete(self, kind: WatchedKind, raw: Mapping[str, Any]) -> None:
        self._applied.pop((kind.kind, _uid(raw)), None)
        s = self.scheduler
        if kind.kind == PODS:
            s.on_pod_delete(raw)
        elif kind.kind == NODES:
            s.on_node_delete(raw)
        elif kind.kind == PROFILES:
            self.on_profile(str((raw.get("metadata") or {}).get("name") or ""), None)
        else:
            s.on_object_delete(kind.kind, object_key(raw))
