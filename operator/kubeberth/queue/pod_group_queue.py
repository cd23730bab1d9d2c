"""Pod groups in the queue (GenericWorkload): a pod that names a PodGroup waits, incomplete,
until its PodGroup is observed (upstream's workloadForest), then joins its group's one entry,
which is queued, popped and requeued whole; pods that arrive while the group is being scheduled
wait as pending (upstream's pendingPodGroupPods) and are requeued with it when its attempt ends
(`add_attempted_pod_group`, upstream's AddAttemptedPodGroupIfNeeded)."""

from __future__ import annotations

from ..framework import events as ev
from ..framework.types import POD_GROUP_ENTRY_PREFIX, QueuedPodGroupInfo, QueuedPodInfo
from ..model import Pod
from .pod_updates import target_pod_events
from .subqueues import ACTIVE, BACKOFF, INCOMPLETE, UNSCHEDULABLE, SubQueues, members_of


class PodGroupQueue(SubQueues):
    """The pod group entries of a `PriorityQueue` (scheduling_queue.py)."""

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
            moved += members_of(found[1])
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
