"""The scheduling queue (upstream's PriorityQueue): activeQ, backoffQ and unschedulable pods.

- activeQ: pods ready to be tried, ordered by their profile's QueueSort plugin. One queue
  serves every profile: each profile (keyed by schedulerName = pod.spec.schedulerName) has its
  own heap; `pop` takes the best head, comparing heads of different profiles with their
  common QueueSort plugin (or, when they differ, higher priority then earlier timestamp). When
  activeQ is empty, `pop` takes the head of backoffQ (upstream's SchedulerPopFromBackoffQ).
- backoffQ (backoff_queue.py): pods that failed and wait out their backoff.
- unschedulable: pods that failed and wait for a cluster event that may help them: the
  QueueingHints of the plugins that rejected them decide (queue/profile.py), or
  `pod_max_in_unschedulable` (5 minutes) passes. Pods a PreEnqueue plugin rejects ("gated")
  are held here too until an event their gating plugin registered arrives.

In-flight pods (popped, not yet `done`) are tracked with the cluster events that arrive while
they are being scheduled (upstream's inFlightEvents), so that a pod that comes back
unschedulable is requeued at once when such an event may have helped it: nothing is lost.

Time comes from the injectable clock; `flush_backoff_completed` and
`flush_unschedulable_leftover` are plain methods the scheduler's loops call.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..clock import Clock, FakeClock
from ..framework import events as ev
from ..framework.events import ClusterEvent
from ..framework.types import QueuedPodInfo
from ..model import Pod
from .active_queue import ActiveQueue, InFlight
from .backoff_queue import BackoffQueue
from .nominator import Nominator
from .pod_updates import target_pod_events
from .profile import HintObserver, QueueProfile, Strategy, fallback_less, worth_requeuing

if TYPE_CHECKING:
    from ..framework.runtime import Framework

DEFAULT_POD_MAX_IN_UNSCHEDULABLE_SECONDS = 5 * 60.0
BACKOFF_FLUSH_INTERVAL = 1.0
UNSCHEDULABLE_FLUSH_INTERVAL = 30.0

ACTIVE = "active"
BACKOFF = "backoff"
UNSCHEDULABLE = "unschedulable"
GATED = "gated"


class PriorityQueue:
    """Upstream's PriorityQueue. Not thread-safe: call it from the event loop's thread."""

    def __init__(self, profiles: Iterable[Framework | QueueProfile] = (), *, clock: Clock | None = None,
                 nominator: Nominator | None = None,
                 pod_max_in_unschedulable: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE_SECONDS) -> None:
        self.clock: Clock = clock or FakeClock()
        self.nominator = nominator if nominator is not None else Nominator()
        self.pod_max_in_unschedulable = pod_max_in_unschedulable
        self._profiles: dict[str, QueueProfile] = {}
        self._active = ActiveQueue(self._profiles.get)
        self._backoff = BackoffQueue(self.clock, self._profiles.get)
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        self._gating: dict[str, str] = {}        # uid -> plugin that gated it
        self._in_flight = InFlight()
        self._waiters: list[asyncio.Future[None]] = []
        self._closed = False
        # Told (queue, event) whenever a pod enters a queue (scheduler_queue_incoming_pods_total).
        self.on_incoming: Callable[[str, str], None] | None = None
        # Told about each QueueingHint run (scheduler_queueing_hint_execution_duration_seconds).
        self.on_hint: HintObserver | None = None
        for p in profiles:
            self.set_profile(p)

    # ---- profiles ---------------------------------------------------------------
    def set_profile(self, profile: Framework | QueueProfile) -> None:
        """Add or replace a profile (between cycles); pods already queued are re-ordered."""
        qp = profile if isinstance(profile, QueueProfile) else QueueProfile.from_framework(profile)
        self._profiles[qp.scheduler_name] = qp
        self._active.set_profile(qp)
        self._backoff.reorder()

    def remove_profile(self, scheduler_name: str) -> list[QueuedPodInfo]:
        """Drop a profile; its queued pods leave the queue and are returned."""
        self._profiles.pop(scheduler_name, None)
        removed = self._active.drop_profile(scheduler_name)
        for q in list(self._backoff):
            if q.pod.scheduler_name == scheduler_name:
                self._backoff.delete(q.pod.uid)
                removed.append(q)
        for uid, q in list(self._unschedulable.items()):
            if q.pod.scheduler_name == scheduler_name:
                del self._unschedulable[uid]
                self._gating.pop(uid, None)
                removed.append(q)
        for q in removed:
            self.nominator.delete_nominated_pod_if_exists(q.pod)
        return removed

    def profile(self, scheduler_name: str) -> QueueProfile | None:
        return self._profiles.get(scheduler_name)

    # ---- backoff ----------------------------------------------------------------
    def backoff_duration(self, q: QueuedPodInfo) -> float:
        prof = self._profiles.get(q.pod.scheduler_name) or QueueProfile("", fallback_less)
        return prof.backoff_duration(q.consecutive_errors or q.unschedulable_count)

    def is_backing_off(self, q: QueuedPodInfo) -> bool:
        return self._backoff.is_backing_off(q)

    def next_backoff_expiry(self) -> float | None:
        """When the first pod in backoffQ completes its backoff; None when backoffQ is empty."""
        return self._backoff.next_expiry()

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
            if uid in self._active or uid in self._backoff:
                return False
            self._unschedulable[uid] = q
            return False
        if not self._active.serves(q.pod.scheduler_name):
            return False
        if q.initial_attempt_timestamp is None:
            q.initial_attempt_timestamp = self.clock.now()
        self._unschedulable.pop(uid, None)
        self._backoff.delete(uid)
        self._active.add(q)
        if event in (ev.EVENT_UNSCHEDULED_POD_ADD.label, ev.EVENT_UNSCHEDULED_POD_UPDATE.label):
            self.nominator.add_nominated_pod(q.pod)
        self._incoming(ACTIVE, event)
        self._wake()
        return True

    def _incoming(self, queue: str, event: str) -> None:
        if self.on_incoming is not None:
            self.on_incoming(queue, event)

    def _move_to_backoff(self, q: QueuedPodInfo, event: str) -> bool:
        """PreEnqueue runs here, not when backoffQ is popped (v1.37 pops it when activeQ is
        empty); a gated pod goes to (or stays in) the unschedulable pool."""
        self._run_pre_enqueue(q)
        if q.gated:
            self._unschedulable[q.pod.uid] = q
            return False
        self._unschedulable.pop(q.pod.uid, None)
        self._backoff.add(q)
        self._incoming(BACKOFF, event)
        self._wake()  # pop takes from backoffQ when activeQ is empty
        return True

    def _requeue(self, q: QueuedPodInfo, strategy: Strategy, event: str) -> str:
        """Where the pod goes for a strategy; returns the queue's name."""
        if strategy == Strategy.SKIP:
            self._unschedulable[q.pod.uid] = q
            self._incoming(UNSCHEDULABLE, event)
            return UNSCHEDULABLE
        if strategy == Strategy.AFTER_BACKOFF and self.is_backing_off(q):
            return BACKOFF if self._move_to_backoff(q, event) else UNSCHEDULABLE
        if self._move_to_active(q, event):
            return ACTIVE
        return UNSCHEDULABLE

    # ---- events -------------------------------------------------------------------
    def _worth_requeuing(self, q: QueuedPodInfo, event: ClusterEvent, old: Any = None, new: Any = None,
                         target: str = "") -> Strategy:
        return worth_requeuing(self._profiles.get(q.pod.scheduler_name), q, event, old, new, target, self.on_hint)

    def _gate_allows(self, q: QueuedPodInfo, event: ClusterEvent) -> bool:
        """A gated pod moves only on an event its gating plugin registered (or a wildcard)."""
        if event.is_wildcard():
            return True
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
            strategy = self._worth_requeuing(q, event, old, new, target)
            if strategy == Strategy.SKIP:
                continue
            self._unschedulable.pop(q.pod.uid, None)
            self._requeue(q, strategy, event.label)
        self._record_event(event, old, new, target)

    def _record_event(self, event: ClusterEvent, old: Any, new: Any, target: str = "") -> None:
        self._in_flight.record(event, old, new, target)

    def move_all_to_active_or_backoff(self, event: ClusterEvent, old: Any = None, new: Any = None,
                                      pre_check: Callable[[Pod], bool] | None = None) -> None:
        """Upstream's MoveAllToActiveOrBackoffQueue: each unschedulable pod the event may help
        goes to activeQ (or backoffQ while backing off); in-flight pods remember the event."""
        infos = [q for q in self._unschedulable.values() if pre_check is None or pre_check(q.pod)]
        self._move_pods(infos, event, old, new)

    def assigned_pod_added(self, pod: Pod) -> None:
        """A pod was bound (or assumed pods confirmed): the rejecting plugins' hints decide which
        pending pods it may help (affinity, spreading)."""
        self.move_all_to_active_or_backoff(ev.EVENT_ASSIGNED_POD_ADD, None, pod)

    def assigned_pod_updated(self, old: Pod | None, new: Pod, event: ClusterEvent) -> None:
        self.move_all_to_active_or_backoff(event, old, new)

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

    def move_to_active_or_backoff(self, pod: Pod, event: ClusterEvent) -> None:
        """Bring one pending pod to an attempt soon, its backoff respected: from the unschedulable
        pool to activeQ, or to backoffQ while it backs off (what MoveAllToActiveOrBackoffQueue does
        for a wildcard event, for this pod alone; PreEnqueue still gates it). A pod in flight
        records `event` and goes so when it comes back; one in activeQ or backoffQ stays there."""
        uid = pod.uid
        if uid in self._in_flight:
            self._record_event(event, None, pod, uid)
            return
        q = self._unschedulable.get(uid)
        if q is not None:
            self._move_pods([q], event, None, pod, uid)

    # ---- the API the scheduler drives -------------------------------------------------
    def add(self, pod: Pod) -> None:
        """A new pending pod (upstream's Add). A pod already queued is updated instead."""
        if self.get(pod.uid) is not None:
            self.update(None, pod)
            return
        self._move_to_active(self._new_info(pod), ev.EVENT_UNSCHEDULED_POD_ADD.label)

    def update(self, old: Pod | None, new: Pod) -> None:
        """A pending pod changed (upstream's Update). In activeQ or backoffQ it is updated in
        place; in the unschedulable pool the TargetPod events of the change go through the
        rejecting plugins' hints; an in-flight pod records them for when it comes back; an
        unknown pod is added."""
        uid = new.uid
        flying = self._in_flight.pod(uid)
        if flying is not None:
            base = old if old is not None else flying.pod
            for e in target_pod_events(new, base):
                self._record_event(e, base, new, uid)
            return
        for where, q in ((ACTIVE, self._active.get(uid)), (BACKOFF, self._backoff.get(uid)),
                         (UNSCHEDULABLE, self._unschedulable.get(uid))):
            if q is None:
                continue
            base = old or q.pod
            q.pod = new
            self.nominator.update_nominated_pod(base, new)
            if where == ACTIVE:
                self._active.update(q)
            elif where == BACKOFF:
                self._backoff.update(q)
            else:
                for e in target_pod_events(new, base):
                    if q.gated and not self._gate_allows(q, e):
                        continue
                    strategy = self._worth_requeuing(q, e, base, new, uid)
                    if strategy != Strategy.SKIP and self._requeue(q, strategy, e.label) != UNSCHEDULABLE:
                        break
            return
        self._move_to_active(self._new_info(new), ev.EVENT_UNSCHEDULED_POD_UPDATE.label)

    def delete(self, pod: Pod) -> None:
        """The pod was deleted (or bound elsewhere): it leaves every sub-queue."""
        uid = pod.uid
        self.nominator.delete_nominated_pod_if_exists(pod)
        if self._active.delete(uid) is not None:
            return
        if self._backoff.delete(uid) is not None:
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
                q.consecutive_errors = 0
            else:
                q.consecutive_errors += 1
            q.timestamp = self.clock.now()
            q.backoff_expiry = None
            q.flushed = False
            strategy = self._in_flight_strategy(q)
            return self._requeue(q, strategy, ev.SCHEDULE_ATTEMPT_FAILURE)
        finally:
            self.done(uid)

    def _in_flight_strategy(self, q: QueuedPodInfo) -> Strategy:
        if not q.unschedulable_plugins and not q.pending_plugins:
            return Strategy.AFTER_BACKOFF
        if q.pod.uid not in self._in_flight:
            return Strategy.AFTER_BACKOFF
        strategy = Strategy.SKIP
        for event, old, new, target in self._in_flight.events_for(q.pod.uid):
            s = self._worth_requeuing(q, event, old, new, target)
            if s == Strategy.IMMEDIATELY:
                return s
            if s == Strategy.AFTER_BACKOFF:
                strategy = s
                if not q.pending_plugins:
                    return strategy
        return strategy

    def pop_nowait(self, *, from_backoff: bool = True) -> QueuedPodInfo | None:
        """The head of activeQ, now in flight; when activeQ is empty, the head of backoffQ
        (unless `from_backoff` is False); None when there is none."""
        best = self._active.pop()
        if best is None and from_backoff and self._backoff.has_rejected():
            best = self._backoff.pop_rejected()
            if best is None:
                return None
            self._incoming(ACTIVE, ev.POP_FROM_BACKOFF_Q)
        if best is None:
            return None
        best.attempts += 1
        best.unschedulable_plugins = set()
        best.pending_plugins = set()
        self._in_flight.start(best)
        return best

    async def pop(self) -> QueuedPodInfo | None:
        """Wait for a pod in activeQ (or backoffQ) and pop it; None once the queue is closed."""
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
        self._in_flight.done(uid)

    def close(self) -> None:
        self._closed = True
        self._wake()

    @property
    def closed(self) -> bool:
        return self._closed

    # ---- periodic flushes -----------------------------------------------------------
    def flush_backoff_completed(self) -> int:
        """Move the pods whose backoff has expired to activeQ; returns how many moved."""
        moved = 0
        for q in self._backoff.pop_all_completed():
            if self._move_to_active(q, ev.BACKOFF_COMPLETE):
                moved += 1
        return moved

    def flush_unschedulable_leftover(self) -> None:
        """Pods unschedulable for longer than pod_max_in_unschedulable go to backoffQ/activeQ."""
        now = self.clock.now()
        stale = [q for q in self._unschedulable.values()
                 if now - q.timestamp > self.pod_max_in_unschedulable]
        for q in stale:
            q.flushed = True
        if stale:
            self._move_pods(stale, ev.EVENT_UNSCHEDULABLE_TIMEOUT)

    # ---- lookups and metrics -------------------------------------------------------
    @property
    def scheduling_cycle(self) -> int:
        return self._in_flight.scheduling_cycle

    def get(self, uid: str) -> tuple[str, QueuedPodInfo] | None:
        """(sub-queue name, info) of a queued pod; None when not queued (in flight or unknown)."""
        q = self._active.get(uid)
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

    def inflight_events(self) -> dict[str, int]:
        return self._in_flight.counts()

    def pods_in_active(self) -> list[Pod]:
        """activeQ in pop order."""
        return [q.pod for q in self._active.in_pop_order()]

    def pods_in_backoff(self) -> list[Pod]:
        return [q.pod for q in self._backoff.sorted()]

    def pending_pods(self) -> dict[str, list[Pod]]:
        """Pods per sub-queue, for scheduler_pending_pods{queue=active|backoff|unschedulable|gated}."""
        active = [q.pod for q in self._active]
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
        return len(self._active) + len(self._backoff) + len(self._unschedulable)

    # ---- the nominator (upstream's PriorityQueue embeds it) ----------------------------
    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        return self.nominator.nominated_pods_for_node(node_name)
