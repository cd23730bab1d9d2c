"""The scheduling queue's state and its three sub-queues, the base of `PriorityQueue`
(scheduling_queue.py): activeQ (active_queue.py), backoffQ (backoff_queue.py) and the
unschedulable pods (upstream's unschedulablePods: pods that failed and wait for an event, and
pods a PreEnqueue plugin gated), the moves of an entry between them (PreEnqueue first, upstream's
moveToActiveQ / moveToBackoffQ), and the lookups and counts the scheduler and the metrics read.
The pod groups' state (GenericWorkload) is kept here too; what is done with it is
pod_group_queue.py's."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

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
from .profile import HintObserver, QueueProfile, Strategy, fallback_less

DEFAULT_POD_MAX_IN_UNSCHEDULABLE_SECONDS = 5 * 60.0

# Where a queued pod is (`get`).
ACTIVE = "active"
INCOMPLETE = "incomplete"
PENDING = "pending"
BACKOFF = "backoff"
UNSCHEDULABLE = "unschedulable"
GATED = "gated"


def members_of(q: QueuedPodInfo) -> list[QueuedPodInfo]:
    """A pod group entry's pods; a pod's entry is itself."""
    return q.members if isinstance(q, QueuedPodGroupInfo) else [q]


class SubQueues:
    """activeQ, backoffQ and the unschedulable pods of a `PriorityQueue`. Not thread-safe."""

    def __init__(self, *, clock: Clock | None = None,
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
        for m in members_of(q):
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

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    def done(self, uid: str) -> None:
        """The pod's scheduling attempt is over (bound, requeued or dropped)."""
        self._in_flight.done(uid)

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
        return [m.pod for q in self._active.in_pop_order() for m in members_of(q)]

    def pods_in_backoff(self) -> list[Pod]:
        return [m.pod for q in self._backoff.sorted() for m in members_of(q)]

    def pending_pods(self) -> dict[str, list[Pod]]:
        """Pods per sub-queue, for scheduler_pending_pods{queue=active|backoff|unschedulable|gated}
        (and, with GenericWorkload, incomplete|pending: pods waiting for their PodGroup to be
        observed, and for their group's attempt to end)."""
        active = [m.pod for q in self._active for m in members_of(q)]
        unsched = [m.pod for q in self._unschedulable.values() if not q.gated for m in members_of(q)]
        gated = [m.pod for q in self._unschedulable.values() if q.gated for m in members_of(q)]
        out = {ACTIVE: active, BACKOFF: [m.pod for q in self._backoff for m in members_of(q)],
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

    def active_count(self) -> int:
        """The pods ready to be popped now (activeQ): whether the scheduler has work at hand."""
        return len(self._active)

    def __len__(self) -> int:
        return (len(self._active) + len(self._backoff) + len(self._unschedulable)
                + sum(len(p) for p in self._incomplete.values()) + sum(len(p) for p in self._pending_members.values()))

    # ---- the nominator (upstream's PriorityQueue embeds it) ----------------------------
    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        return self.nominator.nominated_pods_for_node(node_name)
