"""The scheduling queue (upstream's PriorityQueue): activeQ, backoffQ and unschedulable pods.

- activeQ: pods ready to be tried, ordered by their profile's QueueSort plugin. One queue
  serves every profile: each profile (keyed by schedulerName = pod.spec.schedulerName) has its
  own heap; `pop` takes the best head, comparing heads of different profiles with their
  common QueueSort plugin (or, when they differ, higher priority then earlier timestamp).
- backoffQ: pods that failed and wait out their backoff (podInitialBackoffSeconds doubling per
  attempt up to podMaxBackoffSeconds, per profile), ordered by backoff expiry.
- unschedulable: pods that failed and wait for a cluster event that may help them (their
  rejecting plugins' `events_to_register()`; an empty list means any event), or for
  `pod_max_in_unschedulable` (5 minutes) to pass. Pods a PreEnqueue plugin rejects ("gated")
  are held here too until an event their gating plugin registered arrives (or they change).

In-flight pods (popped, not yet `done`) are tracked with the cluster events that arrive while
they are being scheduled (upstream's inFlightEvents), so that a pod that comes back
unschedulable is requeued at once when such an event may have helped it: nothing is lost.

Time comes from the injectable clock; `flush_backoff_completed` and
`flush_unschedulable_leftover` are plain methods, and `run()` is the asyncio task that calls
them periodically in the operator.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..clock import Clock, FakeClock
from ..framework import events as ev
from ..framework.events import ClusterEvent
from ..framework.types import QueuedPodInfo
from ..model import Pod
from ..model.selectors import LabelSelector
from .heap import Heap
from .nominator import Nominator

if TYPE_CHECKING:
    from ..framework.runtime import Framework

DEFAULT_POD_MAX_IN_UNSCHEDULABLE_SECONDS = 5 * 60.0
DEFAULT_POD_INITIAL_BACKOFF_SECONDS = 1.0
DEFAULT_POD_MAX_BACKOFF_SECONDS = 10.0
BACKOFF_FLUSH_INTERVAL = 1.0
UNSCHEDULABLE_FLUSH_INTERVAL = 30.0
POD_TOPOLOGY_SPREAD = "PodTopologySpread"

ACTIVE = "active"
BACKOFF = "backoff"
UNSCHEDULABLE = "unschedulable"
GATED = "gated"


class Strategy(enum.IntEnum):
    """How a pod leaves the unschedulable pool (upstream's queueingStrategy)."""

    SKIP = 0
    AFTER_BACKOFF = 1
    IMMEDIATELY = 2


class QueueProfile:
    """What the queue needs of one profile: its order, PreEnqueue, backoff and plugin events."""

    __slots__ = ("_events", "initial_backoff", "less", "max_backoff", "plugins", "pre_enqueue",
                 "queue_sort_name", "scheduler_name")

    def __init__(self, scheduler_name: str, less: Callable[[QueuedPodInfo, QueuedPodInfo], bool], *,
                 queue_sort_name: str = "", pre_enqueue: Callable[[Pod], Any] | None = None,
                 initial_backoff: float = DEFAULT_POD_INITIAL_BACKOFF_SECONDS,
                 max_backoff: float = DEFAULT_POD_MAX_BACKOFF_SECONDS,
                 plugins: Mapping[str, Any] | None = None) -> None:
        self.scheduler_name = scheduler_name
        self.less = less
        self.queue_sort_name = queue_sort_name
        self.pre_enqueue = pre_enqueue
        self.initial_backoff = float(initial_backoff)
        self.max_backoff = float(max_backoff)
        self.plugins = dict(plugins or {})
        self._events: dict[str, list[ClusterEvent] | None] = {}

    @classmethod
    def from_framework(cls, fw: Framework) -> QueueProfile:
        sort = fw.queue_sort_plugins[0] if fw.queue_sort_plugins else None
        return cls(fw.scheduler_name, fw.queue_sort_less, queue_sort_name=sort.name if sort else "",
                   pre_enqueue=fw.run_pre_enqueue, initial_backoff=fw.spec.podInitialBackoffSeconds,
                   max_backoff=fw.spec.podMaxBackoffSeconds, plugins=fw.plugins)

    def events_for(self, plugin: str) -> list[ClusterEvent] | None:
        """The events the plugin registered; None: any event (no list, or an unknown plugin)."""
        if plugin not in self._events:
            p = self.plugins.get(plugin)
            registered = None
            if p is not None:
                try:
                    got = p.events_to_register()
                except Exception:
                    got = None
                registered = [e for e in got or () if isinstance(e, ClusterEvent)] or None
            self._events[plugin] = registered
        return self._events[plugin]

    def backoff_duration(self, attempts: int) -> float:
        """0 before any attempt, then initial * 2^(attempts-1), capped at max (upstream's formula)."""
        if attempts <= 0:
            return 0.0
        duration = self.initial_backoff
        for _ in range(1, attempts):
            if duration > self.max_backoff - duration:
                return self.max_backoff
            duration += duration
        return min(duration, self.max_backoff)


def _fallback_less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    pa, pb = a.pod.priority, b.pod.priority
    return pa > pb or (pa == pb and a.timestamp < b.timestamp)


def _key(q: QueuedPodInfo) -> str:
    return q.pod.uid


class PriorityQueue:
    """Upstream's PriorityQueue. Not thread-safe: call it from the event loop's thread."""

    def __init__(self, profiles: Iterable[Framework | QueueProfile] = (), *, clock: Clock | None = None,
                 nominator: Nominator | None = None,
                 pod_max_in_unschedulable: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE_SECONDS) -> None:
        self.clock: Clock = clock or FakeClock()
        self.nominator = nominator or Nominator()
        self.pod_max_in_unschedulable = pod_max_in_unschedulable
        self._profiles: dict[str, QueueProfile] = {}
        self._active: dict[str, Heap[QueuedPodInfo]] = {}
        self._active_seq: dict[str, int] = {}   # uid -> when it entered activeQ (cross-profile ties)
        self._seq = 0
        self._backoff_expiry: dict[str, float] = {}
        self._backoff: Heap[QueuedPodInfo] = Heap(_key, self._backoff_less)
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        self._gating: dict[str, str] = {}        # uid -> plugin that gated it
        # In-flight pods: uid -> (position in the event log when popped, the popped info).
        self._in_flight: dict[str, tuple[int, QueuedPodInfo]] = {}
        # (position, event, old, new, target uid or "") for events seen while pods are in flight.
        self._events: deque[tuple[int, ClusterEvent, Any, Any, str]] = deque()
        self._event_pos = 0
        self._scheduling_cycle = 0
        self._waiters: list[asyncio.Future[None]] = []
        self._closed = False
        # Set by the scheduler so that namespaceSelector affinity terms can be evaluated.
        self.namespace_labels: Callable[[str], Mapping[str, str]] | None = None
        # Told (queue, event) whenever a pod enters a queue (scheduler_queue_incoming_pods_total).
        self.on_incoming: Callable[[str, str], None] | None = None
        for p in profiles:
            self.set_profile(p)

    # ---- profiles ---------------------------------------------------------------
    def set_profile(self, profile: Framework | QueueProfile) -> None:
        """Add or replace a profile (between cycles); pods already queued are re-ordered."""
        qp = profile if isinstance(profile, QueueProfile) else QueueProfile.from_framework(profile)
        self._profiles[qp.scheduler_name] = qp
        heap = self._active.get(qp.scheduler_name)
        if heap is None:
            self._active[qp.scheduler_name] = Heap(_key, qp.less)
        else:
            heap.set_less(qp.less)
        for info in list(self._backoff):
            if info.pod.scheduler_name == qp.scheduler_name:
                self._backoff_expiry[info.pod.uid] = self._expiry(info)
                self._backoff.add_or_update(info)

    def remove_profile(self, scheduler_name: str) -> list[QueuedPodInfo]:
        """Drop a profile; its queued pods leave the queue and are returned."""
        self._profiles.pop(scheduler_name, None)
        removed = list(self._active.pop(scheduler_name, ()))
        for q in list(self._backoff):
            if q.pod.scheduler_name == scheduler_name:
                self._backoff.delete(q.pod.uid)
                self._backoff_expiry.pop(q.pod.uid, None)
                removed.append(q)
        for uid, q in list(self._unschedulable.items()):
            if q.pod.scheduler_name == scheduler_name:
                del self._unschedulable[uid]
                self._gating.pop(uid, None)
                removed.append(q)
        for q in removed:
            self._active_seq.pop(q.pod.uid, None)
            self.nominator.delete_nominated_pod_if_exists(q.pod)
        return removed

    def profile(self, scheduler_name: str) -> QueueProfile | None:
        return self._profiles.get(scheduler_name)

    # ---- backoff ----------------------------------------------------------------
    def _backoff_less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return self._backoff_expiry.get(a.pod.uid, 0.0) < self._backoff_expiry.get(b.pod.uid, 0.0)

    def backoff_duration(self, q: QueuedPodInfo) -> float:
        prof = self._profiles.get(q.pod.scheduler_name)
        if prof is None:
            prof = QueueProfile("", _fallback_less)
        return prof.backoff_duration(q.attempts)

    def _expiry(self, q: QueuedPodInfo) -> float:
        return q.timestamp + self.backoff_duration(q)

    def is_backing_off(self, q: QueuedPodInfo) -> bool:
        return self._expiry(q) > self.clock.now()

    def next_backoff_expiry(self) -> float | None:
        """When the first pod in backoffQ completes its backoff; None when backoffQ is empty."""
        head = self._backoff.peek()
        return self._backoff_expiry[head.pod.uid] if head is not None else None

    # ---- moving between sub-queues --------------------------------------------------
    def _new_info(self, pod: Pod) -> QueuedPodInfo:
        return QueuedPodInfo(pod, self.clock.now())

    def _run_pre_enqueue(self, q: QueuedPodInfo) -> None:
        prof = self._profiles.get(q.pod.scheduler_name)
        status = prof.pre_enqueue(q.pod) if prof is not None and prof.pre_enqueue is not None else None
        if status is not None and not status.is_success():
            plugin = status.plugin or "PreEnqueue"
            q.gated = True
            q.unschedulable_plugins.add(plugin)
            self._gating[q.pod.uid] = plugin
        else:
            q.gated = False
            self._gating.pop(q.pod.uid, None)

    def _move_to_active(self, q: QueuedPodInfo, event: str) -> bool:
        """PreEnqueue, then activeQ; a gated pod goes to (or stays in) the unschedulable pool."""
        self._run_pre_enqueue(q)
        uid = q.pod.uid
        if q.gated:
            if self._in_active(uid) or uid in self._backoff:
                return False
            self._unschedulable[uid] = q
            return False
        heap = self._active.get(q.pod.scheduler_name)
        if heap is None:
            return False
        if q.initial_attempt_timestamp is None:
            q.initial_attempt_timestamp = self.clock.now()
        self._unschedulable.pop(uid, None)
        if self._backoff.delete(uid) is not None:
            self._backoff_expiry.pop(uid, None)
        self._seq += 1
        self._active_seq[uid] = self._seq
        heap.add_or_update(q)
        if event in (ev.EVENT_UNSCHEDULED_POD_ADD.label, ev.EVENT_UNSCHEDULED_POD_UPDATE.label):
            self.nominator.add_nominated_pod(q.pod)
        self._incoming(ACTIVE, event)
        self._wake()
        return True

    def _incoming(self, queue: str, event: str) -> None:
        if self.on_incoming is not None:
            self.on_incoming(queue, event)

    def _move_to_backoff(self, q: QueuedPodInfo) -> None:
        uid = q.pod.uid
        self._unschedulable.pop(uid, None)
        self._backoff_expiry[uid] = self._expiry(q)
        self._backoff.add_or_update(q)

    def _requeue(self, q: QueuedPodInfo, strategy: Strategy, event: str) -> str:
        """Where the pod goes for a strategy; returns the queue's name."""
        if strategy == Strategy.SKIP:
            self._unschedulable[q.pod.uid] = q
            self._incoming(UNSCHEDULABLE, event)
            return UNSCHEDULABLE
        if strategy == Strategy.AFTER_BACKOFF and self.is_backing_off(q):
            self._move_to_backoff(q)
            self._incoming(BACKOFF, event)
            return BACKOFF
        if self._move_to_active(q, event):
            return ACTIVE
        return UNSCHEDULABLE

    def _in_active(self, uid: str) -> bool:
        return any(uid in h for h in self._active.values())

    def _active_get(self, uid: str) -> QueuedPodInfo | None:
        for h in self._active.values():
            q = h.get(uid)
            if q is not None:
                return q
        return None

    def _active_delete(self, uid: str) -> QueuedPodInfo | None:
        for h in self._active.values():
            q = h.delete(uid)
            if q is not None:
                self._active_seq.pop(uid, None)
                return q
        return None

    # ---- events -------------------------------------------------------------------
    def _worth_requeuing(self, q: QueuedPodInfo, event: ClusterEvent, target: str = "") -> Strategy:
        """Upstream's isPodWorthRequeuing with registered events instead of hint functions."""
        rejectors = q.unschedulable_plugins | q.pending_plugins
        if not rejectors:
            return Strategy.AFTER_BACKOFF
        if event.is_wildcard():
            if target and target != q.pod.uid:
                return Strategy.SKIP
            return Strategy.AFTER_BACKOFF
        prof = self._profiles.get(q.pod.scheduler_name)
        if prof is None:
            return Strategy.AFTER_BACKOFF
        strategy = Strategy.SKIP
        for plugin in rejectors:
            registered = prof.events_for(plugin)
            if registered is not None and not ev.match_any(event, registered):
                continue
            if plugin in q.pending_plugins:
                return Strategy.IMMEDIATELY
            strategy = Strategy.AFTER_BACKOFF
            if not q.pending_plugins:
                return strategy
        return strategy

    def _gate_allows(self, q: QueuedPodInfo, event: ClusterEvent) -> bool:
        """A gated pod moves only on an event its gating plugin registered."""
        plugin = self._gating.get(q.pod.uid)
        prof = self._profiles.get(q.pod.scheduler_name)
        if plugin is None or prof is None:
            return True
        registered = prof.events_for(plugin)
        return registered is None or ev.match_any(event, registered)

    def _move_pods(self, infos: Iterable[QueuedPodInfo], event: ClusterEvent, old: Any = None,
                   new: Any = None, target: str = "") -> None:
        for q in infos:
            if q.gated and not self._gate_allows(q, event):
                continue
            strategy = self._worth_requeuing(q, event, target)
            if strategy == Strategy.SKIP:
                continue
            self._unschedulable.pop(q.pod.uid, None)
            self._requeue(q, strategy, event.label)
        self._record_event(event, old, new, target)

    def _record_event(self, event: ClusterEvent, old: Any, new: Any, target: str = "") -> None:
        if self._in_flight:
            self._event_pos += 1
            self._events.append((self._event_pos, event, old, new, target))

    def move_all_to_active_or_backoff(self, event: ClusterEvent, old: Any = None, new: Any = None,
                                      pre_check: Callable[[Pod], bool] | None = None) -> None:
        """Upstream's MoveAllToActiveOrBackoffQueue: each unschedulable pod the event may help
        goes to activeQ (or backoffQ while backing off); in-flight pods remember the event."""
        infos = [q for q in self._unschedulable.values() if pre_check is None or pre_check(q.pod)]
        self._move_pods(infos, event, old, new)

    def assigned_pod_added(self, pod: Pod) -> None:
        """A pod was bound (or assumed pods confirmed): only pods with a required affinity term
        it matches, or rejected by PodTopologySpread in its namespace, may now fit."""
        self._move_pods(self._cross_topology(pod), ev.EVENT_ASSIGNED_POD_ADD, None, pod)

    def assigned_pod_updated(self, old: Pod | None, new: Pod, event: ClusterEvent) -> None:
        if event.action & ev.ActionType.UPDATE_POD_SCALE_DOWN:
            self.move_all_to_active_or_backoff(event, old, new)
        else:
            self._move_pods(self._cross_topology(new), event, old, new)

    def _cross_topology(self, pod: Pod) -> list[QueuedPodInfo]:
        out = []
        for q in self._unschedulable.values():
            if POD_TOPOLOGY_SPREAD in q.unschedulable_plugins and q.pod.namespace == pod.namespace:
                out.append(q)
            elif _affinity_terms_match(q.pod, pod, self.namespace_labels):
                out.append(q)
        return out

    def activate(self, pods: Iterable[Pod]) -> None:
        """Move pods from backoffQ / unschedulable to activeQ (upstream's Activate); an
        in-flight pod is requeued at once when it comes back."""
        for pod in pods:
            uid = pod.uid
            q = self._unschedulable.get(uid)
            if q is None:
                q = self._backoff.get(uid)
            if q is not None:
                self._move_to_active(q, ev.FORCE_ACTIVATE)
            elif uid in self._in_flight:
                self._record_event(ev.EVENT_FORCE_ACTIVATE, None, pod, uid)

    # ---- the API the scheduler drives -------------------------------------------------
    def add(self, pod: Pod) -> None:
        """A new pending pod (upstream's Add). A pod already queued is updated instead."""
        if self.get(pod.uid) is not None:
            self.update(None, pod)
            return
        self._move_to_active(self._new_info(pod), ev.EVENT_UNSCHEDULED_POD_ADD.label)

    def update(self, old: Pod | None, new: Pod) -> None:
        """A pending pod changed. In activeQ or backoffQ it is updated in place; in the
        unschedulable pool a real change (spec or metadata, not status) moves it to backoffQ or
        activeQ; an in-flight pod records the change for when it comes back; an unknown pod is
        added."""
        uid = new.uid
        if uid in self._in_flight:
            base = old if old is not None else self._in_flight[uid][1].pod
            if is_pod_updated(base, new):
                for e in ev.pod_scheduling_properties_change(new, base):
                    self._record_event(e, base, new, uid)
            return
        for h in self._active.values():
            q = h.get(uid)
            if q is not None:
                old_pod = q.pod
                q.pod = new
                h.add_or_update(q)
                self.nominator.update_nominated_pod(old or old_pod, new)
                return
        q = self._backoff.get(uid)
        if q is not None:
            old_pod = q.pod
            q.pod = new
            self._backoff_expiry[uid] = self._expiry(q)
            self._backoff.add_or_update(q)
            self.nominator.update_nominated_pod(old or old_pod, new)
            return
        q = self._unschedulable.get(uid)
        if q is not None:
            old_pod = q.pod
            q.pod = new
            self.nominator.update_nominated_pod(old or old_pod, new)
            if is_pod_updated(old or old_pod, new):
                if self.is_backing_off(q) and not q.gated:
                    self._move_to_backoff(q)
                    self._incoming(BACKOFF, ev.EVENT_UNSCHEDULED_POD_UPDATE.label)
                else:
                    self._move_to_active(q, ev.EVENT_UNSCHEDULED_POD_UPDATE.label)
            return
        self._move_to_active(self._new_info(new), ev.EVENT_UNSCHEDULED_POD_UPDATE.label)

    def delete(self, pod: Pod) -> None:
        """The pod was deleted (or bound elsewhere): it leaves every sub-queue."""
        uid = pod.uid
        self.nominator.delete_nominated_pod_if_exists(pod)
        if self._active_delete(uid) is not None:
            return
        if self._backoff.delete(uid) is not None:
            self._backoff_expiry.pop(uid, None)
            return
        self._unschedulable.pop(uid, None)
        self._gating.pop(uid, None)

    def add_unschedulable_if_not_present(self, q: QueuedPodInfo) -> str:
        """A popped pod failed: back to activeQ / backoffQ / unschedulable as upstream's
        AddUnschedulableIfNotPresent, looking at the events seen while it was in flight.
        Set q.unschedulable_plugins / pending_plugins first (empty: an error, retried after
        backoff). Calls `done`. Returns the queue it went to ("" when it was already queued)."""
        uid = q.pod.uid
        try:
            if self.get(uid) is not None:
                return ""
            if q.unschedulable_plugins or q.pending_plugins:
                q.unschedulable_count += 1
            q.timestamp = self.clock.now()
            strategy = self._in_flight_strategy(q)
            return self._requeue(q, strategy, ev.SCHEDULE_ATTEMPT_FAILURE)
        finally:
            self.done(uid)

    def _in_flight_strategy(self, q: QueuedPodInfo) -> Strategy:
        if not q.unschedulable_plugins and not q.pending_plugins:
            return Strategy.AFTER_BACKOFF
        entry = self._in_flight.get(q.pod.uid)
        if entry is None:
            return Strategy.AFTER_BACKOFF
        start = entry[0]
        strategy = Strategy.SKIP
        for pos, event, _old, _new, target in self._events:
            if pos <= start:
                continue
            if target and target != q.pod.uid:
                continue
            s = self._worth_requeuing(q, event, target)
            if s == Strategy.IMMEDIATELY:
                return s
            if s == Strategy.AFTER_BACKOFF:
                strategy = s
                if not q.pending_plugins:
                    return strategy
        return strategy

    def pop_nowait(self) -> QueuedPodInfo | None:
        """The head of activeQ, now in flight; None when activeQ is empty."""
        best_heap: Heap[QueuedPodInfo] | None = None
        best: QueuedPodInfo | None = None
        for name, h in self._active.items():
            head = h.peek()
            if head is None:
                continue
            if best is None or self._cross_less(head, best, name):
                best, best_heap = head, h
        if best is None or best_heap is None:
            return None
        best_heap.pop()
        uid = best.pod.uid
        self._active_seq.pop(uid, None)
        best.attempts += 1
        best.unschedulable_plugins = set()
        best.pending_plugins = set()
        self._scheduling_cycle += 1
        self._event_pos += 1
        self._in_flight[uid] = (self._event_pos, best)
        return best

    def _cross_less(self, a: QueuedPodInfo, b: QueuedPodInfo, a_profile: str) -> bool:
        pa = self._profiles.get(a_profile)
        pb = self._profiles.get(b.pod.scheduler_name)
        if pa is not None and pb is not None and (pa is pb or (pa.queue_sort_name and
                                                               pa.queue_sort_name == pb.queue_sort_name)):
            less = pa.less
        else:
            less = _fallback_less
        if less(a, b):
            return True
        if less(b, a):
            return False
        return self._active_seq.get(a.pod.uid, 0) < self._active_seq.get(b.pod.uid, 0)

    async def pop(self) -> QueuedPodInfo | None:
        """Wait for a pod in activeQ and pop it; None once the queue is closed."""
        while True:
            q = self.pop_nowait()
            if q is not None or self._closed:
                return q
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            finally:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(fut)

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    def done(self, uid: str) -> None:
        """The pod's scheduling attempt is over (bound, requeued or dropped)."""
        if self._in_flight.pop(uid, None) is None:
            return
        if not self._in_flight:
            self._events.clear()
            return
        oldest = min(pos for pos, _ in self._in_flight.values())
        while self._events and self._events[0][0] < oldest:
            self._events.popleft()

    def close(self) -> None:
        self._closed = True
        self._wake()

    @property
    def closed(self) -> bool:
        return self._closed

    # ---- periodic flushes -----------------------------------------------------------
    def flush_backoff_completed(self) -> int:
        """Move the pods whose backoff has expired to activeQ; returns how many moved."""
        now = self.clock.now()
        moved = 0
        while True:
            head = self._backoff.peek()
            if head is None or self._backoff_expiry[head.pod.uid] > now:
                break
            self._backoff.pop()
            self._backoff_expiry.pop(head.pod.uid, None)
            if self._move_to_active(head, ev.BACKOFF_COMPLETE):
                moved += 1
        return moved

    def flush_unschedulable_leftover(self) -> None:
        """Pods unschedulable for longer than pod_max_in_unschedulable go to backoffQ/activeQ."""
        now = self.clock.now()
        stale = [q for q in self._unschedulable.values()
                 if now - q.timestamp > self.pod_max_in_unschedulable]
        if stale:
            self._move_pods(stale, ev.EVENT_UNSCHEDULABLE_TIMEOUT)

    # ---- lookups and metrics -------------------------------------------------------
    @property
    def scheduling_cycle(self) -> int:
        return self._scheduling_cycle

    def get(self, uid: str) -> tuple[str, QueuedPodInfo] | None:
        """(sub-queue name, info) of a queued pod; None when not queued (in flight or unknown)."""
        q = self._active_get(uid)
        if q is not None:
            return ACTIVE, q
        q = self._backoff.get(uid)
        if q is not None:
            return BACKOFF, q
        q = self._unschedulable.get(uid)
        if q is not None:
            return (GATED if q.gated else UNSCHEDULABLE), q
        return None

    def in_flight(self, uid: str) -> bool:
        return uid in self._in_flight

    def pods_in_active(self) -> list[Pod]:
        """activeQ in pop order."""
        items: list[QueuedPodInfo] = []
        for h in self._active.values():
            items.extend(h)
        import functools

        def cmp(a: QueuedPodInfo, b: QueuedPodInfo) -> int:
            if self._cross_less(a, b, a.pod.scheduler_name):
                return -1
            if self._cross_less(b, a, b.pod.scheduler_name):
                return 1
            return 0

        return [q.pod for q in sorted(items, key=functools.cmp_to_key(cmp))]

    def pods_in_backoff(self) -> list[Pod]:
        return [q.pod for q in self._backoff.sorted()]

    def pending_pods(self) -> dict[str, list[Pod]]:
        """Pods per sub-queue, for scheduler_pending_pods{queue=active|backoff|unschedulable|gated}."""
        active: list[Pod] = []
        for h in self._active.values():
            active.extend(q.pod for q in h)
        unsched = [q.pod for q in self._unschedulable.values() if not q.gated]
        gated = [q.pod for q in self._unschedulable.values() if q.gated]
        return {ACTIVE: active, BACKOFF: [q.pod for q in self._backoff], UNSCHEDULABLE: unsched, GATED: gated}

    def unschedulable_by_plugin(self) -> dict[tuple[str, str], int]:
        """(plugin, profile) -> pods waiting in the unschedulable pool that the plugin rejected."""
        counts: dict[tuple[str, str], int] = {}
        for q in self._unschedulable.values():
            if q.gated:
                continue
            for plugin in q.unschedulable_plugins | q.pending_plugins:
                key = (plugin, q.pod.scheduler_name)
                counts[key] = counts.get(key, 0) + 1
        return counts

    def __len__(self) -> int:
        return sum(len(h) for h in self._active.values()) + len(self._backoff) + len(self._unschedulable)

    # ---- the nominator (upstream's PriorityQueue embeds it) ----------------------------
    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        return self.nominator.nominated_pods_for_node(node_name)


def is_pod_updated(old: Pod, new: Pod) -> bool:
    """Whether anything but status (and bookkeeping metadata) changed (upstream's isPodUpdated)."""
    return _strip(old.raw) != _strip(new.raw)


_META_IGNORED = ("resourceVersion", "generation", "managedFields", "finalizers")


def _strip(raw: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in raw.items() if k != "status"}
    # The claims the resourceclaim controller made for the pod count (DynamicResources waits for them).
    out["resourceClaimStatuses"] = (raw.get("status") or {}).get("resourceClaimStatuses")
    meta = out.get("metadata")
    if isinstance(meta, Mapping):
        out["metadata"] = {k: v for k, v in meta.items() if k not in _META_IGNORED}
    return out


def _required_affinity_terms(pod: Pod) -> list[tuple[LabelSelector, frozenset[str] | None, LabelSelector | None]]:
    cached: list[tuple[LabelSelector, frozenset[str] | None, LabelSelector | None]] | None = pod.cache.get(
        "queue.requiredAffinityTerms")
    if cached is not None:
        return cached
    terms = []
    raw_terms = ((pod.affinity.get("podAffinity") or {})
                 .get("requiredDuringSchedulingIgnoredDuringExecution") or [])
    for t in raw_terms:
        try:
            selector = LabelSelector.from_dict(t.get("labelSelector"))
            ns_sel_raw = t.get("namespaceSelector")
            ns_sel = LabelSelector.from_dict(ns_sel_raw) if ns_sel_raw is not None else None
        except Exception:
            continue
        namespaces = frozenset(str(n) for n in t.get("namespaces") or ())
        if t.get("labelSelector") is None:
            continue  # a nil selector matches no pod
        terms.append((selector, namespaces or None, ns_sel))
    pod.cache["queue.requiredAffinityTerms"] = terms
    return terms


def _affinity_terms_match(pending: Pod, pod: Pod,
                          namespace_labels: Callable[[str], Mapping[str, str]] | None) -> bool:
    for selector, namespaces, ns_sel in _required_affinity_terms(pending):
        if namespaces is None and ns_sel is None:
            in_ns = pod.namespace == pending.namespace
        else:
            in_ns = namespaces is not None and pod.namespace in namespaces
            if not in_ns and ns_sel is not None:
                labels = (namespace_labels(pod.namespace) if namespace_labels is not None
                          else {"kubernetes.io/metadata.name": pod.namespace})
                in_ns = ns_sel.matches(labels)
        if in_ns and selector.matches(pod.labels):
            return True
    return False
