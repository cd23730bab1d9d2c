"""Watch events into the scheduler, with upstream's "wait for cache sync".

kube-scheduler does not schedule before its informers have listed every kind it
watches; scheduling on a half-filled cache would overcommit nodes whose pods are not
known yet. The reflectors (`reflector.Informers`) list every kind first and hand the
lists over in dependency order (priority classes and namespaces, profiles, other
objects, nodes, bound pods, pending pods), page by page as they arrive; `synced` is set
after the last, and the scheduling loop waits for it. From then on watch events arrive in batches, already
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


def _uid(raw: Mapping[str, Any]) -> str:
    return str((raw.get("metadata") or {}).get("uid") or object_key(raw))


def _bound(event: Event) -> bool:
    return bool((event[1].get("spec") or {}).get("nodeName"))


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
        # The initial list's pending pods, by uid, held until its last page: every bound pod goes in
        # first.
        self._held: dict[str, Event] = {}

    def apply(self, kind: WatchedKind, events: list[Event]) -> None:
        if not self.synced.is_set() and kind.kind == POD:
            events = self._hold_pending(events)
        self._apply_all(kind, events)

    def _hold_pending(self, events: list[Event]) -> list[Event]:
        """A page of the initial pod list: its bound pods (and deletions) go in now; its pending pods
        once every bound pod of the list is in (`listed`), as when the whole list was sorted at once.
        A held pod seen again (a list started over) is held or applied as what it is now, never as
        what it was, and as a first sight: the scheduler has not seen it; deleted, it is dropped."""
        now: list[Event] = []
        held = self._held
        for event in events:
            key = _uid(event[1])
            if key in held:
                del held[key]
                if event[0] == DELETED:
                    continue
                event = (ADDED, event[1])
            if event[0] == DELETED or _bound(event):
                now.append(event)
            else:
                held[key] = event
        return now

    def listed(self, kind: WatchedKind) -> None:
        """The initial list of `kind` is in: for pods, the pending ones held back go in now."""
        if kind.kind == POD and self._held:
            held, self._held = list(self._held.values()), {}
            self._apply_all(kind, held)

    def _apply_all(self, kind: WatchedKind, events: list[Event]) -> None:
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
