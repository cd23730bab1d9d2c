"""Watch events into the scheduler, with upstream's "wait for cache sync".

kube-scheduler does not schedule before its informers have listed every kind it
watches; scheduling on a half-filled cache would overcommit nodes whose pods are not
known yet. The reflectors (`reflector.Informers`) list every kind first and hand the
lists over in dependency order (priority classes and namespaces, profiles, other
objects, nodes, bound pods, pending pods); `synced` is set after that, and the
scheduling loop waits for it. From then on watch events arrive in batches, already
deduplicated by resourceVersion and classified (a first sight is ADDED, a later one
MODIFIED, relists replaced into deletions and updates).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

from ..cache.objects import object_key
from ..scheduler import Scheduler
from ..scheduler.watched import NODE, POD, SCHEDULING_PROFILE, WatchedKind
from .reflector import ADDED, DELETED, Event

logger = logging.getLogger(__name__)


ProfileHook = Callable[[str, Mapping[str, Any] | None], None]
PodHook = Callable[[Mapping[str, Any]], None]


def _bound_first(event: Event) -> int:
    return 0 if (event[1].get("spec") or {}).get("nodeName") else 1


class Ingest:
    """The scheduler's side of the watch: applies batches of events, never raising."""

    def __init__(self, scheduler: Scheduler, on_profile: ProfileHook, *, on_pod: PodHook | None = None,
                 on_pod_delete: PodHook | None = None) -> None:
        self.scheduler = scheduler
        self.on_profile = on_profile  # (name, raw object or None when deleted)
        self.on_pod = on_pod  # every pod added or changed, after the scheduler saw it (shadow profiles)
        self.on_pod_delete = on_pod_delete
        self.synced = asyncio.Event()
        self.applied_events = 0

    def apply(self, kind: WatchedKind, events: list[Event]) -> None:
        if not self.synced.is_set() and kind.kind == POD:
            events = sorted(events, key=_bound_first)  # the initial list: bound pods before pending ones
        for etype, raw in events:
            try:
                if etype == DELETED:
                    self._delete(kind, raw)
                else:
                    self._apply(kind, raw, added=etype == ADDED)
            except Exception:
                logger.exception("Could not ingest %s %s", kind.kind, object_key(raw))
        self.applied_events += len(events)

    def _apply(self, kind: WatchedKind, raw: Mapping[str, Any], *, added: bool) -> None:
        s = self.scheduler
        if kind.kind == POD:
            if added:
                s.on_pod_add(raw)
            else:
                s.on_pod_update(raw)
            if self.on_pod is not None:
                self.on_pod(raw)
        elif kind.kind == NODE:
            if added:
                s.on_node_add(raw)
            else:
                s.on_node_update(raw)
        elif kind.kind == SCHEDULING_PROFILE:
            self.on_profile(str((raw.get("metadata") or {}).get("name") or ""), raw)
        else:
            s.on_object(kind.store_key, raw)

    def _delete(self, kind: WatchedKind, raw: Mapping[str, Any]) -> None:
        s = self.scheduler
        if kind.kind == POD:
            s.on_pod_delete(raw)
            if self.on_pod_delete is not None:
                self.on_pod_delete(raw)
        elif kind.kind == NODE:
            s.on_node_delete(raw)
        elif kind.kind == SCHEDULING_PROFILE:
            self.on_profile(str((raw.get("metadata") or {}).get("name") or ""), None)
        else:
            s.on_object_delete(kind.store_key, object_key(raw))
