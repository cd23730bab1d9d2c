"""GangScheduling (upstream's framework/plugins/gangscheduling, in the default profile with
GenericWorkload): a pod that names a PodGroup with the gang policy waits in PreEnqueue until the
PodGroup exists and at least `minCount` of its pods do; Permit holds each pod of the gang until
`minCount` of them are scheduled (bound or assumed), up to five minutes; and, in the pod-group
cycle, the placement stays feasible only while `minCount` can still be reached
(`placement_feasible`, upstream's PlacementFeasible). The basic policy asks nothing of it.

The pod groups' state (the PodGroup objects, their pods) is the scheduler's
(cache/pod_groups.py), read through `handle.shared_indexes`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..framework import (
    ASSIGNED_POD,
    POD_GROUP,
    POD_GROUP_STATES,
    UNSCHEDULED_POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    ModelError,
    PermitPlugin,
    Pod,
    PodGroup,
    PodGroupStates,
    PreEnqueuePlugin,
    QueueingHint,
    Status,
)

NAME = "GangScheduling"
PERMIT_TIMEOUT_SECONDS = 5 * 60.0  # upstream's permitTimeoutDuration

WAITING_FOR_GROUP = 'waiting for pods\'s pod group "{}" to appear in scheduling queue'
WAITING_FOR_MIN_COUNT = "waiting for minCount pods from a gang to appear in scheduling queue"
WAITING_AT_PERMIT = "waiting for minCount pods from a gang to be scheduled"


def _pod_group_of(obj: Any) -> PodGroup | None:
    if isinstance(obj, PodGroup):
        return obj
    if isinstance(obj, Mapping):
        try:
            return PodGroup(obj)
        except ModelError:
            return None
    return None


class GangScheduling(PreEnqueuePlugin, PermitPlugin):
    name = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self.handle = handle

    @property
    def _states(self) -> PodGroupStates | None:
        if self.handle is None:
            return None
        states = self.handle.shared_indexes.get(POD_GROUP_STATES)
        return states if isinstance(states, PodGroupStates) else None

    # ---- queueing ---------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEvent | ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(UNSCHEDULED_POD, ActionType.ADD), self._after_pod_added),
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.ADD), self._after_pod_added),
            ClusterEventWithHint(ClusterEvent(POD_GROUP, ActionType.ADD), self._after_pod_group_added),
            ClusterEventWithHint(ClusterEvent(POD_GROUP, ActionType.UPDATE), self._after_pod_group_updated),
        ]

    def _after_pod_added(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """A pod of the same group appeared (it may complete the quorum)."""
        if not pod.pod_group_name or not isinstance(new, Pod) or not new.pod_group_name:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE if new.pod_group_key == pod.pod_group_key else QueueingHint.QUEUE_SKIP

    def _after_pod_group_added(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        pg = _pod_group_of(new)
        if not pod.pod_group_name or pg is None:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE if pg.key == pod.pod_group_key else QueueingHint.QUEUE_SKIP

    def _after_pod_group_updated(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Only a smaller gang minCount may let the pod through."""
        before, after = _pod_group_of(old), _pod_group_of(new)
        if not pod.pod_group_name or after is None or after.key != pod.pod_group_key:
            return QueueingHint.QUEUE_SKIP
        if before is None or before.min_count is None or after.min_count is None:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE if after.min_count < before.min_count else QueueingHint.QUEUE_SKIP

    def pre_enqueue_scope(self, pod: Pod) -> str:
        # the group's PodGroup and its pods' count: the same answer for every pod of the group
        return self.SCOPE_POD_GROUP if pod.pod_group_name else self.SCOPE_POD

    def pre_enqueue(self, pod: Pod) -> Status | None:
        if not pod.pod_group_name:
            return None
        states = self._states
        pg = states.pod_group(pod.pod_group_key) if states is not None else None
        if states is None or pg is None:
            return Status.unresolvable(WAITING_FOR_GROUP.format(pod.pod_group_name))
        if pg.min_count is None:
            return None
        state = states.get(pg.key)
        count = state.all_pods_count() if state is not None else 0
        if count < pg.min_count:
            return Status.unresolvable(WAITING_FOR_MIN_COUNT)
        return None

    # ---- the pod-group cycle ------------------------------------------------------------
    @staticmethod
    def placement_feasible(pod_group: PodGroup, scheduled: int, remaining: int) -> Status | None:
        """Can `minCount` still be reached with `scheduled` pods placed and `remaining` to try?
        Unschedulable when it cannot, Wait while it is not reached yet (upstream's PlacementFeasible)."""
        min_count = pod_group.min_count if pod_group.min_count is not None else 1
        if remaining + scheduled < min_count:
            return Status.unschedulable(
                f"minCount ({min_count}) cannot be satisfied: {scheduled} scheduled, {remaining} remaining")
        if scheduled < min_count:
            return Status(Code.WAIT,
                          f"minCount ({min_count}) is not yet satisfied: {scheduled} scheduled, {remaining} remaining")
        return None

    # ---- permit -------------------------------------------------------------------------
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        if not pod.pod_group_name:
            return None, 0.0
        states = self._states
        pg = states.pod_group(pod.pod_group_key) if states is not None else None
        group_state = states.get(pod.pod_group_key) if states is not None else None
        if pg is None or group_state is None:
            return Status.error(f'failed to get podGroup {pod.pod_group_key}: podgroup.scheduling.k8s.io '
                                f'"{pod.pod_group_name}" not found'), 0.0
        if pg.min_count is None:
            return None, 0.0
        assert self.handle is not None
        if group_state.scheduled_pods_count() < pg.min_count:
            self.handle.activate(group_state.unscheduled_pods())
            return Status(Code.WAIT, WAITING_AT_PERMIT), PERMIT_TIMEOUT_SECONDS
        for uid in group_state.assumed_uids():
            waiting = self.handle.waiting_pods.get(uid)
            if waiting is not None:
                waiting.allow(NAME)
        return None, 0.0


PLUGINS = [GangScheduling]
