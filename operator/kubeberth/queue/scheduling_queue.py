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

The queue is three layers of one class: `SubQueues` (subqueues.py: the state, the sub-queues,
moves between them, lookups), `PodGroupQueue` (pod_group_queue.py: pod groups' entries), and
`PriorityQueue` here: profiles, cluster events (upstream's moveAllToActiveOrBackoffQueue and
isPodWorthRequeuing through queue/profile.py), and the API the scheduler drives (add, update,
delete, pop, requeue after an attempt).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..clock import Clock
from ..framework import events as ev
from ..framework.events import ClusterEvent
from ..framework.types import POD_GROUP_ENTRY_PREFIX, QueuedPodGroupInfo, QueuedPodInfo
from ..model import Pod
from .nominator import Nominator
from .pod_group_queue import PodGroupQueue
from .pod_updates import target_pod_events
from .profile import QueueProfile, Strategy, worth_requeuing
from .subqueues import (
    ACTIVE,
    BACKOFF,
    DEFAULT_POD_MAX_IN_UNSCHEDULABLE_SECONDS,
    PENDING,
    UNSCHEDULABLE,
    members_of,
)

if TYPE_CHECKING:
    from ..framework.runtime import Framework

BACKOFF_FLUSH_INTERVAL = 1.0
UNSCHEDULABLE_FLUSH_INTERVAL = 30.0


class PriorityQueue(PodGroupQueue):
    """Upstream's PriorityQueue. Not thread-safe: call it from the event loop's thread."""

    def __init__(self, profiles: Iterable[Framework | QueueProfile] = (), *, clock: Clock | None = None,
                 nominator: Nominator | None = None,
                 pod_max_in_unschedulable: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE_SECONDS) -> None:
        super().__init__(clock=clock, nominator=nominator, pod_max_in_unschedulable=pod_max_in_unschedulable)
        for p in profiles:
            self.set_profile(p)

    # ---- profiles ---------------------------------------------------------------
    def set_profile(self, profile: Framework | QueueProfile) -> None:
        """Add or replace a profile (between cycles); pods already queued are re-ordered. A
        profile that replaces another for its schedulerName is a SchedulingProfile Update event
        for that profile's pods: its unschedulable and gated pods (and pod group entries) move
        as on a wildcard event (activeQ, or backoffQ while backing off; PreEnqueue asked again,
        of the new version), and its pods in flight that come back rejected are requeued the
        same way."""
        qp = profile if isinstance(profile, QueueProfile) else QueueProfile.from_framework(profile)
        old = self._profiles.get(qp.scheduler_name)
        self._profiles[qp.scheduler_name] = qp
        self._active.set_profile(qp)
        self._backoff.reorder()
        if old is not None and old is not qp:
            self.move_all_to_active_or_backoff(ev.EVENT_SCHEDULING_PROFILE_UPDATE, old, qp,
                                               pre_check=lambda pod: pod.scheduler_name == qp.scheduler_name)

    def remove_profile(self, scheduler_name: str) -> list[QueuedPodInfo]:
        """Drop a profile; its queued pods leave the queue and are returned."""
        self._profiles.pop(scheduler_name, None)
        removed = self._active.drop_profile(scheduler_name)
        for q in list(self._backoff):
            if q.pod.scheduler_name == scheduler_name:
                self._backoff.delete(q.key)
                removed.append(q)
        for key, q in list(self._unschedulable.items()):
            if q.pod.scheduler_name == scheduler_name:
                del self._unschedulable[key]
                self._gating.pop(key, None)
                removed.append(q)
        removed = [m for q in removed for m in members_of(q)]
        for pods in (*self._incomplete.values(), *self._pending_members.values()):
            for uid, m in list(pods.items()):
                if m.pod.scheduler_name == scheduler_name:
                    del pods[uid]
                    removed.append(m)
        for q in removed:
            self._member_of.pop(q.pod.uid, None)
            self.nominator.delete_nominated_pod_if_exists(q.pod)
        return removed

    # ---- events -------------------------------------------------------------------
    def _worth_requeuing(self, q: QueuedPodInfo, event: ClusterEvent, old: Any = None, new: Any = None,
                         target: str = "") -> Strategy:
        concerns = ev.profile_event_concerns(event, new, q.pod)
        if concerns is not None:  # a new version of a profile: its pods (a group's, its first pod's) only
            return Strategy.AFTER_BACKOFF if concerns else Strategy.SKIP
        if isinstance(q, QueuedPodGroupInfo):
            # The group moves when the event may help any of its pods (with the group's rejectors).
            if not q.unschedulable_plugins and not q.pending_plugins:
                return Strategy.AFTER_BACKOFF  # what worth_requeuing says of each pod then
            best = Strategy.SKIP
            for m in q.members:
                probe = QueuedPodInfo(m.pod, q.timestamp)
                probe.unschedulable_plugins, probe.pending_plugins = q.unschedulable_plugins, q.pending_plugins
                s = worth_requeuing(self._profiles.get(m.pod.scheduler_name), probe, event, old, new,
                                    target if target != m.pod.uid else "", self.on_hint)
                best = max(best, s)
            return best
        return worth_requeuing(self._profiles.get(q.pod.scheduler_name), q, event, old, new, target, self.on_hint)

    def _move_pods(self, infos: Iterable[QueuedPodInfo], event: ClusterEvent, old: Any = None,
                   new: Any = None, target: str = "") -> None:
        for q in infos:
            if q.gated and not self._gate_allows(q, event, new):
                continue
            strategy = self._worth_requeuing(q, event, old, new, target)
            if strategy == Strategy.SKIP:
                continue
            self._unschedulable.pop(q.key, None)
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
        groups = self.pod_groups_enabled
        flying = ""  # the group whose entry is in flight, for whose pods the event is being recorded
        run: list[Pod] = []
        for pod in pods:
            uid = pod.uid
            if groups and pod.pod_group_name:
                group = pod.pod_group_key
                if group == flying:
                    run.append(pod)  # nothing has moved since its previous pod: recorded as it was
                    continue
                uid = POD_GROUP_ENTRY_PREFIX + group  # the whole group is activated
            if run:
                self._in_flight.record_each(ev.EVENT_FORCE_ACTIVATE, None, run, POD_GROUP_ENTRY_PREFIX + flying)
                flying, run = "", []
            q = self._unschedulable.get(uid)
            if q is None:
                q = self._backoff.get(uid)
            if q is not None:
                self._move_to_active(q, ev.FORCE_ACTIVATE)
            elif uid in self._in_flight:
                flown = self._in_flight.pod(uid)
                if isinstance(flown, QueuedPodGroupInfo):
                    flying, run = flown.group_key, [pod]
                else:
                    self._record_event(ev.EVENT_FORCE_ACTIVATE, None, pod, uid)
        if run:
            self._in_flight.record_each(ev.EVENT_FORCE_ACTIVATE, None, run, POD_GROUP_ENTRY_PREFIX + flying)

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
        if self._is_member(pod):
            self._add_member(self._new_info(pod), ev.EVENT_UNSCHEDULED_POD_ADD.label)
            return
        self._move_to_active(self._new_info(pod), ev.EVENT_UNSCHEDULED_POD_ADD.label)

    def update(self, old: Pod | None, new: Pod) -> None:
        """A pending pod changed (upstream's Update). In activeQ or backoffQ it is updated in
        place; in the unschedulable pool the TargetPod events of the change go through the
        rejecting plugins' hints; an in-flight pod records them for when it comes back; an
        unknown pod is added."""
        uid = new.uid
        if self._is_member(new) or uid in self._member_of:
            self._update_member(old, new)
            return
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
        if self._delete_member(pod):
            return
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
        if self._is_member(q.pod) and not isinstance(q, QueuedPodGroupInfo):
            # A pod of a pod group's attempt: it waits for its group to be requeued whole
            # (add_attempted_pod_group).
            self.done(uid)
            self._in_flight_members.pop(uid, None)
            if self.get(uid) is not None:
                return ""
            if q.pod.pod_group_key in self._in_flight_groups:
                self._pending_members.setdefault(q.pod.pod_group_key, {})[uid] = q
                self._member_of[uid] = q.pod.pod_group_key
                return PENDING
            # failed after its group's attempt (in its binding cycle): back into its group's entry
            self._add_member(q, ev.SCHEDULE_ATTEMPT_FAILURE)
            found = self.get(uid)
            return found[0] if found is not None else ""
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
        if q.key not in self._in_flight:
            return Strategy.AFTER_BACKOFF
        strategy = Strategy.SKIP
        for event, old, new, target in self._in_flight.events_for(q.key):
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
        if isinstance(best, QueuedPodGroupInfo):
            best.gate_state = None  # its pods' answers are asked afresh when they come back
            for m in best.members:
                m.attempts += 1
                m.unschedulable_plugins = set()
                m.pending_plugins = set()
                self._member_of.pop(m.pod.uid, None)
                self._in_flight_members[m.pod.uid] = best.group_key
            self._in_flight_groups.add(best.group_key)
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

    def next_unschedulable_timeout(self, tried_by: float | None = None) -> float | None:
        """The earliest moment a pod held unschedulable has been so for longer than
        pod_max_in_unschedulable (flush_unschedulable_leftover would move it then); None when
        none is held. Gated pods wait for their events only. `tried_by`: only the pods last
        tried at or before that moment (a replay leaves out those tried since the cluster last
        changed: trying them again could only fail the same way)."""
        stamps = [q.timestamp for q in self._unschedulable.values() if tried_by is None or q.timestamp <= tried_by]
        return min(stamps) + self.pod_max_in_unschedulable if stamps else None

    def flush_unschedulable_leftover(self) -> None:
        """Pods unschedulable for longer than pod_max_in_unschedulable go to backoffQ/activeQ."""
        now = self.clock.now()
        stale = [q for q in self._unschedulable.values()
                 if now - q.timestamp > self.pod_max_in_unschedulable]
        for q in stale:
            q.flushed = True
        if stale:
            self._move_pods(stale, ev.EVENT_UNSCHEDULABLE_TIMEOUT)

