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

from .. import features
from ..clock import Clock, FakeClock
from ..framework import events as ev
from ..framework.events import ClusterEvent
from ..framework.types import POD_GROUP_ENTRY_PREFIX, QueuedPodGroupInfo, QueuedPodInfo
from ..model import Pod
from . import group_gate
from .active_queue import ActiveQueue, InFlight
from .backoff_queue import BackoffQueue
from .group_gate import GroupGate
from .nominator import Nominator
from .pod_updates import target_pod_events
from .profile import HintObserver, QueueProfile, Strategy, fallback_less, worth_requeuing

if TYPE_CHECKING:
    from ..framework.runtime import Framework

DEFAULT_POD_MAX_IN_UNSCHEDULABLE_SECONDS = 5 * 60.0
BACKOFF_FLUSH_INTERVAL = 1.0
UNSCHEDULABLE_FLUSH_INTERVAL = 30.0

ACTIVE = "active"
INCOMPLETE = "incomplete"
PENDING = "pending"
BACKOFF = "backoff"
UNSCHEDULABLE = "unschedulable"
GATED = "gated"


def _members(q: QueuedPodInfo) -> list[QueuedPodInfo]:
    """A pod group entry's pods; a pod's entry is itself."""
    return q.members if isinstance(q, QueuedPodGroupInfo) else [q]


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
        self._gating: dict[str, str] = {}        # entry key (pod uid) -> plugin that gated it
        # Pod groups (GenericWorkload; upstream's workloadForest, incompletePodGroupPods, pendingPodGroupPods):
        self.pod_groups_enabled = features.current().generic_workload
        self._pod_groups: dict[str, int] = {}  # observed PodGroups: key -> priority
        self._incomplete: dict[str, dict[str, QueuedPodInfo]] = {}  # group -> its pods, PodGroup not observed
        self._pending_members: dict[str, dict[str, QueuedPodInfo]] = {}  # group in flight -> pods arrived meanwhile
        self._in_flight_groups: set[str] = set()
        self._in_flight_members: dict[str, str] = {}  # uid -> group, for pods of a group being scheduled
        self._member_of: dict[str, str] = {}  # uid -> group key, for pods of a queued group entry
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
        removed = [m for q in removed for m in _members(q)]
        for pods in (*self._incomplete.values(), *self._pending_members.values()):
            for uid, m in list(pods.items()):
                if m.pod.scheduler_name == scheduler_name:
                    del pods[uid]
                    removed.append(m)
        for q in removed:
            self._member_of.pop(q.pod.uid, None)
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
        """A pod group's entry runs PreEnqueue for each of its pods; one gated pod gates it all.
        Its answers are kept between passes where they cannot have changed (group_gate.py)."""
        gating = ""
        if isinstance(q, QueuedPodGroupInfo) and self._run_group_gate(q):
            return
        for m in _members(q):
            prof = self._profiles.get(m.pod.scheduler_name)
            status = prof.pre_enqueue(m.pod) if prof is not None and prof.pre_enqueue is not None else None
            if status is not None and not status.is_success():
                plugin = status.plugin or "PreEnqueue"
                m.unschedulable_plugins.add(plugin)
                m.gated = True
                gating = plugin
            else:
                m.gated = False
        if gating:
            q.gated = True
            if not isinstance(q, QueuedPodGroupInfo):
                # upstream records the gating plugin as a rejector of the pod only: a group's
                # entry keeps no rejector, so any event its gate lets through requeues it
                q.unschedulable_plugins.add(gating)
            self._gating[q.key] = gating
        else:
            q.gated = False
            self._gating.pop(q.key, None)

    def _run_group_gate(self, entry: QueuedPodGroupInfo) -> bool:
        """PreEnqueue for a pod group's entry from its kept answers; False when they cannot be
        kept (a profile without its plugins listed, pods of another profile) or are not worth it
        (a few pods): then every pod is asked."""
        prof = self._profiles.get(entry.pod.scheduler_name)
        steps = prof.pre_enqueue_steps if prof is not None else None
        if prof is None or steps is None or len(entry.members) < group_gate.KEEP_FROM_MEMBERS:
            entry.gate_state = None
            entry.changed.clear()
            return False
        gate = entry.gate_state
        if not isinstance(gate, GroupGate) or gate.steps is not steps:
            gate = entry.gate_state = GroupGate(prof.scheduler_name, steps, entry)
        gate.take_changes(entry)
        if gate.foreign:
            entry.gate_state = None  # made afresh, every pod in question, when it can be kept again
            return False
        gating = gate.run(entry)
        if gating:
            entry.gated = True
            self._gating[entry.key] = gating
        else:
            entry.gated = False
            self._gating.pop(entry.key, None)
        return True

    def _move_to_active(self, q: QueuedPodInfo, event: str) -> bool:
        """PreEnqueue, then activeQ; a gated pod goes to (or stays in) the unschedulable pool."""
        self._run_pre_enqueue(q)
        uid = q.key
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
        if event in (ev.EVENT_UNSCHEDULED_POD_ADD.label, ev.EVENT_UNSCHEDULED_POD_UPDATE.label) \
                and not isinstance(q, QueuedPodGroupInfo):
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
            self._unschedulable[q.key] = q
            return False
        self._unschedulable.pop(q.key, None)
        self._backoff.add(q)
        self._incoming(BACKOFF, event)
        self._wake()  # pop takes from backoffQ when activeQ is empty
        return True

    def _requeue(self, q: QueuedPodInfo, strategy: Strategy, event: str) -> str:
        """Where the pod goes for a strategy; returns the queue's name."""
        if strategy == Strategy.SKIP:
            self._unschedulable[q.key] = q
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

    def _gate_allows(self, q: QueuedPodInfo, event: ClusterEvent, new: Any = None) -> bool:
        """A gated pod moves only on an event its gating plugin registered (or a wildcard, or a
        new version of its profile: its PreEnqueue plugins may differ)."""
        if event.is_wildcard():
            return True
        concerns = ev.profile_event_concerns(event, new, q.pod)
        if concerns is not None:
            return concerns
        plugin = self._gating.get(q.key)
        prof = self._profiles.get(q.pod.scheduler_name)
        if plugin is None or prof is None:
            return True
        registered = prof.events_for(plugin)
        return registered is None or ev.match_any(event, registered)

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

    # ---- pod groups (GenericWorkload) ---------------------------------------------------
    def _is_member(self, pod: Pod) -> bool:
        """upstream's isPodGroupMember: with GenericWorkload, a pod that names a PodGroup."""
        return self.pod_groups_enabled and bool(pod.pod_group_name)

    def _add_member(self, q: QueuedPodInfo, event: str) -> None:
        """upstream's addPodGroupMember: incomplete until its PodGroup is observed; else into its
        group's entry (which keeps its place: active, backoff or unschedulable), or to the pending
        pods while the group is being scheduled, or a new entry in activeQ."""
        group = q.pod.pod_group_key
        uid = q.pod.uid
        self._member_of[uid] = group
        if group not in self._pod_groups:
            self._incomplete.setdefault(group, {})[uid] = q
            return
        key = POD_GROUP_ENTRY_PREFIX + group
        found = self._get_entry(key)
        if found is not None:
            where, entry = found
            assert isinstance(entry, QueuedPodGroupInfo)
            entry.add_member(q)
            if where == ACTIVE:
                self._active.update(entry)
                self._run_pre_enqueue(entry)
                if entry.gated:
                    self._active.delete(key)
                    self._unschedulable[key] = entry
            elif where == BACKOFF:
                self._backoff.update(entry)
            else:
                # upstream requeues it with its strategy (unschedulable: it stays; gated: PreEnqueue again)
                self._unschedulable.pop(key, None)
                if entry.gated:
                    self._move_to_active(entry, event)
                else:
                    self._unschedulable[key] = entry
            return
        if group in self._in_flight_groups:
            self._pending_members.setdefault(group, {})[uid] = q
            return
        entry = QueuedPodGroupInfo(group, self._pod_groups[group], [q], self.clock.now())
        self._move_to_active(entry, event)

    def _update_member(self, old: Pod | None, new: Pod) -> None:
        uid = new.uid
        if uid in self._in_flight_members:
            return  # its group is being scheduled: the attempt ends with the latest version (the scheduler's)
        group = self._member_of.get(uid)
        if group is None:
            if self.get(uid) is None and not self._in_flight.pod(uid):
                self._add_member(self._new_info(new), ev.EVENT_UNSCHEDULED_POD_UPDATE.label)
            return
        for pods in (self._incomplete.get(group), self._pending_members.get(group)):
            if pods and uid in pods:
                pods[uid].pod = new
                return
        found = self._get_entry(POD_GROUP_ENTRY_PREFIX + group)
        if found is None:
            return
        where, entry = found
        assert isinstance(entry, QueuedPodGroupInfo)
        m = entry.member(uid)
        if m is None:
            return
        self.nominator.update_nominated_pod(old or m.pod, new)
        m.pod = new
        entry.add_member(m)  # re-sorted
        if where == ACTIVE:
            self._active.update(entry)
        elif where == BACKOFF:
            self._backoff.update(entry)
        elif entry.gated:
            # a change may ungate it (its scheduling gates removed...): PreEnqueue again
            for e in target_pod_events(new, old or m.pod):
                if self._gate_allows(entry, e):
                    self._move_to_active(entry, e.label)
                    break

    def _delete_member(self, pod: Pod) -> bool:
        uid = pod.uid
        group = self._member_of.pop(uid, None)
        if group is None:
            return False
        for pods in (self._incomplete.get(group), self._pending_members.get(group)):
            if pods is not None and pods.pop(uid, None) is not None:
                return True
        key = POD_GROUP_ENTRY_PREFIX + group
        found = self._get_entry(key)
        if found is not None and isinstance(found[1], QueuedPodGroupInfo):
            entry = found[1]
            entry.remove_member(uid)
            if not entry.members:
                self._active.delete(key)
                self._backoff.delete(key)
                self._unschedulable.pop(key, None)
                self._gating.pop(key, None)
        return True

    def add_pod_group(self, key: str, priority: int) -> None:
        """A PodGroup was observed (upstream's AddPodGroup): its incomplete pods join the queue."""
        self._pod_groups[key] = priority
        for q in list((self._incomplete.pop(key, None) or {}).values()):
            self._add_member(q, ev.EVENT_UNSCHEDULED_POD_ADD.label)

    def update_pod_group(self, key: str, priority: int) -> None:
        if key not in self._pod_groups:
            self.add_pod_group(key, priority)
            return
        self._pod_groups[key] = priority
        found = self._get_entry(POD_GROUP_ENTRY_PREFIX + key)
        if found is not None and isinstance(found[1], QueuedPodGroupInfo):
            where, entry = found[0], found[1]
            entry.group_priority = priority
            if where == ACTIVE:
                self._active.update(entry)
            elif where == BACKOFF:
                self._backoff.update(entry)

    def delete_pod_group(self, key: str) -> None:
        """The PodGroup was deleted (upstream's DeletePodGroup): its queued pods become incomplete."""
        self._pod_groups.pop(key, None)
        entry_key = POD_GROUP_ENTRY_PREFIX + key
        found = self._get_entry(entry_key)
        moved: list[QueuedPodInfo] = list((self._pending_members.pop(key, None) or {}).values())
        if found is not None:
            self._active.delete(entry_key)
            self._backoff.delete(entry_key)
            self._unschedulable.pop(entry_key, None)
            self._gating.pop(entry_key, None)
            moved += _members(found[1])
        for q in moved:
            self._incomplete.setdefault(key, {})[q.pod.uid] = q
            self._member_of[q.pod.uid] = key

    def add_attempted_pod_group(self, entry: QueuedPodGroupInfo, result: str) -> str:
        """The group's attempt is over (upstream's AddAttemptedPodGroupIfNeeded): the pods that
        came back (failed, or arrived meanwhile) are requeued as one entry. `result`: "scheduled",
        "unschedulable" or "error".
        After a success the rest go straight to activeQ (keeping their place when some failed);
        otherwise to backoffQ while backing off. Returns the queue ("" when nothing is left)."""
        group = entry.group_key
        attempted = {m.pod.uid for m in entry.members}  # those back among the pending failed in it
        self._in_flight_groups.discard(group)
        for m in entry.members:
            self._in_flight_members.pop(m.pod.uid, None)
        self.done(entry.key)
        pending = list((self._pending_members.pop(group, None) or {}).values())
        if not pending:
            return ""
        if group not in self._pod_groups:
            for q in pending:
                self._incomplete.setdefault(group, {})[q.pod.uid] = q
            return INCOMPLETE
        entry.clear_members()
        for q in pending:
            entry.add_member(q)
        entry.group_priority = self._pod_groups[group]
        without_backoff = preserve_timestamp = False
        if result == "scheduled":
            without_backoff = True
            preserve_timestamp = any(q.pod.uid in attempted for q in pending)
            entry.consecutive_errors = entry.unschedulable_count = 0
        elif result == "unschedulable":
            entry.unschedulable_count += 1
            entry.consecutive_errors = 0
        else:
            entry.consecutive_errors += 1
        # As upstream, the group's entry names no rejecting plugin: in backoffQ it waits out its
        # whole backoff (it is not popped early when activeQ is empty), and no hint moves it.
        entry.unschedulable_plugins = set()
        entry.pending_plugins = set()
        entry.backoff_expiry = None
        if not preserve_timestamp:
            entry.timestamp = self.clock.now()
        entry.flushed = False
        for q in pending:
            self._member_of[q.pod.uid] = group
        if not without_backoff and self.is_backing_off(entry):
            return BACKOFF if self._move_to_backoff(entry, ev.SCHEDULE_ATTEMPT_FAILURE) else UNSCHEDULABLE
        return ACTIVE if self._move_to_active(entry, ev.SCHEDULE_ATTEMPT_FAILURE) else UNSCHEDULABLE

    def group_members_pending(self, group: str) -> list[Pod]:
        """The pods of `group` waiting for its attempt to end (arrived or failed meanwhile)."""
        return [q.pod for q in (self._pending_members.get(group) or {}).values()]

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
        """(sub-queue name, info) of a queued pod; None when not queued (in flight or unknown).
        A pod of a pod group: the sub-queue of its group's entry (or incomplete / pending), its own info."""
        group = self._member_of.get(uid)
        if group is not None:
            for where, pods in ((INCOMPLETE, self._incomplete.get(group)), (PENDING, self._pending_members.get(group))):
                if pods and uid in pods:
                    return where, pods[uid]
            found = self._get_entry(POD_GROUP_ENTRY_PREFIX + group)
            if found is not None:
                m = found[1].member(uid) if isinstance(found[1], QueuedPodGroupInfo) else None
                if m is not None:
                    return found[0], m
            return None
        return self._get_entry(uid)

    def _get_entry(self, uid: str) -> tuple[str, QueuedPodInfo] | None:
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
        return uid in self._in_flight or uid in self._in_flight_members

    def inflight_events(self) -> dict[str, int]:
        return self._in_flight.counts()

    def pods_in_active(self) -> list[Pod]:
        """activeQ in pop order (a pod group's pods in their order)."""
        return [m.pod for q in self._active.in_pop_order() for m in _members(q)]

    def pods_in_backoff(self) -> list[Pod]:
        return [m.pod for q in self._backoff.sorted() for m in _members(q)]

    def pending_pods(self) -> dict[str, list[Pod]]:
        """Pods per sub-queue, for scheduler_pending_pods{queue=active|backoff|unschedulable|gated}
        (and, with GenericWorkload, incomplete|pending: pods waiting for their PodGroup to be
        observed, and for their group's attempt to end)."""
        active = [m.pod for q in self._active for m in _members(q)]
        unsched = [m.pod for q in self._unschedulable.values() if not q.gated for m in _members(q)]
        gated = [m.pod for q in self._unschedulable.values() if q.gated for m in _members(q)]
        out = {ACTIVE: active, BACKOFF: [m.pod for q in self._backoff for m in _members(q)],
               UNSCHEDULABLE: unsched, GATED: gated}
        if self.pod_groups_enabled:
            out[INCOMPLETE] = [m.pod for pods in self._incomplete.values() for m in pods.values()]
            out[PENDING] = [m.pod for pods in self._pending_members.values() for m in pods.values()]
        return out

    def entity_counts(self) -> dict[tuple[str, str], int]:
        """(queue, "pod" | "podgroup") -> entries, for scheduler_queued_entities."""
        counts = {(queue, kind): 0 for queue in (ACTIVE, BACKOFF, UNSCHEDULABLE, GATED) for kind in ("pod", "podgroup")}
        for queue, entries in ((ACTIVE, list(self._active)), (BACKOFF, list(self._backoff)),
                               (UNSCHEDULABLE, [q for q in self._unschedulable.values() if not q.gated]),
                               (GATED, [q for q in self._unschedulable.values() if q.gated])):
            for q in entries:
                counts[queue, "podgroup" if isinstance(q, QueuedPodGroupInfo) else "pod"] += 1
        return counts

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
        return (len(self._active) + len(self._backoff) + len(self._unschedulable)
                + sum(len(p) for p in self._incomplete.values()) + sum(len(p) for p in self._pending_members.values()))

    # ---- the nominator (upstream's PriorityQueue embeds it) ----------------------------
    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        return self.nominator.nominated_pods_for_node(node_name)
