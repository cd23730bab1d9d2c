"""DefaultPreemption: the PostFilter plugin that evicts lower-priority pods so a pod
no node fits can run. The logic lives in kubeberth.preemption.

As v1.37 (SchedulerAsyncPreemption), the victims are preempted in the background; meanwhile the
plugin's PreEnqueue keeps the preemptor out of activeQ, and the victims' deletions requeue it
through the hints of the plugins that rejected it (this plugin's own hint always skips)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from .. import features
from ..cache.pod_groups import POD_GROUP_STATES, PodGroupStates
from ..framework.cycle_state import CycleState
from ..framework.events import ASSIGNED_POD, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from ..framework.interfaces import Handle, PostFilterPlugin, PreEnqueuePlugin
from ..framework.status import Code, Status
from ..framework.types import NodeToStatus, PostFilterResult
from ..model import Pod, PodGroup
from ..preemption import Evaluator
from ..preemption.evaluator import terminating_by_preemption
from ..preemption.pdb import list_pdbs
from ..preemption.pod_group import (
    MSG_NOT_ELIGIBLE_NEVER,
    MSG_ONGOING,
    PREEMPT_NEVER,
    Assignment,
    GroupRunner,
    SnapshotEdits,
    domain_victims,
    found_placement_message,
    no_victims_status,
    pod_priority,
    resolve_preemption_policy,
    select_victims,
)

NAME = "DefaultPreemption"
MAX_INT32 = 2**31 - 1


class DefaultPreemptionArgs(BaseModel):
    """Upstream's DefaultPreemptionArgs, defaults and validation as upstream."""

    model_config = ConfigDict(extra="forbid")

    # Declared before the percentage so its validator can see both.
    minCandidateNodesAbsolute: int = Field(
        default=100, ge=0, le=MAX_INT32,
        description="at least this many candidate nodes are dry-run (when the cluster has them)")
    minCandidateNodesPercentage: int = Field(
        default=10, ge=0, le=100,
        description="at least this percentage of the nodes are dry-run as candidates")

    @field_validator("minCandidateNodesPercentage")
    @classmethod
    def _not_both_zero(cls, v: int, info: ValidationInfo) -> int:
        if v == 0 and info.data.get("minCandidateNodesAbsolute") == 0:
            raise ValueError("cannot be zero at the same time as minCandidateNodesAbsolute")
        return v


class DefaultPreemption(PreEnqueuePlugin, PostFilterPlugin):
    name = NAME
    args_model = DefaultPreemptionArgs

    def __init__(self, args: DefaultPreemptionArgs | None, handle: Handle) -> None:
        self.args = args if args is not None else DefaultPreemptionArgs()
        self.handle = handle
        self.evaluator = Evaluator(
            handle, NAME,
            min_candidate_nodes_percentage=self.args.minCandidateNodesPercentage,
            min_candidate_nodes_absolute=self.args.minCandidateNodesAbsolute)

    def _pod_groups(self) -> PodGroupStates | None:
        groups = self.handle.shared_indexes.get(POD_GROUP_STATES)
        return groups if isinstance(groups, PodGroupStates) else None

    def pre_enqueue_scope(self, pod: Pod) -> str:
        # a pod of a group waits on its group's preemption, the same for every pod of the group
        if pod.pod_group_name and features.current().enabled(features.GENERIC_WORKLOAD):
            return self.SCOPE_POD_GROUP
        return self.SCOPE_ANY

    def pre_enqueue(self, pod: Pod) -> Status | None:
        if pod.pod_group_name and features.current().enabled(features.GENERIC_WORKLOAD):
            # a pod of a group waits for its group's preemption (a group not found is not ours to hold)
            groups = self._pod_groups()
            pg = groups.pod_group(pod.pod_group_key) if groups is not None else None
            if pg is not None and self.evaluator.executor.is_pod_running_preemption(pg.uid):
                return Status.unresolvable("waiting for the preemption for this pod group to be finished")
            return None
        if self.evaluator.executor.is_pod_running_preemption(pod.uid):
            return Status.unresolvable("waiting for the preemption for this pod to be finished")
        return None

    def events_to_register(self) -> list[ClusterEvent | ClusterEventWithHint]:
        # Registered so that a pod this plugin gates is looked at again when a pod goes; whether
        # it is requeued is for the plugins whose rejection the preemption resolves.
        return [ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.DELETE), self._skip)]

    @staticmethod
    def _skip(pod: Pod, old: object, new: object) -> QueueingHint:
        return QueueingHint.QUEUE_SKIP

    async def post_filter(self, state: CycleState, pod: Pod,
                          statuses: NodeToStatus) -> tuple[PostFilterResult | None, Status | None]:
        self.handle.metrics.preemption_attempt()
        result, status = await self.evaluator.preempt(state, pod, statuses)
        msg = status.message()
        if msg:
            return result, Status(status.code, "preemption: " + msg, plugin=NAME)
        return result, status


    async def pod_group_post_filter(
            self, fw: GroupRunner, pg: PodGroup, members: Sequence[Pod], edits: SnapshotEdits,
            schedule_group: Callable[[], Awaitable[tuple[list[Assignment], Status | None]]],
    ) -> tuple[dict[str, str] | None, Status]:
        """upstream's PodGroupPostFilter (PodGroupEvaluator.Preempt): the nominations (pod uid ->
        node) and the status, its message prefixed "pod group preemption: ". The caller undoes
        `edits` afterwards (upstream's EndMutations)."""
        nominations, status = await self._preempt_pod_group(fw, pg, members, edits, schedule_group)
        msg = status.message()
        if msg:
            status = Status(status.code, "pod group preemption: " + msg, plugin=NAME)
        self.handle.metrics.workload_preemption_attempt(status.code.upstream_name)
        return nominations, status

    async def _preempt_pod_group(
            self, fw: GroupRunner, pg: PodGroup, members: Sequence[Pod], edits: SnapshotEdits,
            schedule_group: Callable[[], Awaitable[tuple[list[Assignment], Status | None]]],
    ) -> tuple[dict[str, str] | None, Status]:
        gate = features.current().enabled(features.POD_GROUP_PREEMPTION_POLICY)
        if resolve_preemption_policy(pg, members, gate) == PREEMPT_NEVER:
            return None, Status.unschedulable(MSG_NOT_ELIGIBLE_NEVER)
        groups = self._pod_groups()
        snapshot = self.handle.snapshot
        if self._ongoing_preemption(pg, members, groups):
            return {m.uid: m.nominated_node_name for m in members}, Status(Code.SUCCESS, MSG_ONGOING)
        started = self.handle.clock.now()
        potential = [v for v in domain_victims(snapshot.node_infos, groups, started) if v.priority < pg.priority]
        if not potential:
            return None, no_victims_status()
        result, status = await select_victims(fw, edits, potential, list_pdbs(self.handle.objects), schedule_group)
        if result is None:
            assert status is not None
            return None, status
        self.handle.metrics.workload_preemption_victims(len(result.victims), result.num_pod_group_disruptions,
                                                        result.num_pdb_violations)
        record = self.handle.record_victims
        if record is not None and members:  # the scheduler's records (simulate's outcomes): on the first member
            record(members[0], list(result.victims))
        self.evaluator.executor.prepare_pod_group_async(result.victims, pg.uid, members,
                                                        members[0].scheduler_name if members else "")
        return result.nominations, Status(Code.SUCCESS, found_placement_message(len(result.victims)))

    def _ongoing_preemption(self, pg: PodGroup, members: Sequence[Pod], groups: PodGroupStates | None) -> bool:
        """upstream's isOngoingPreemption: a pod of lower priority terminating by preemption on a
        node some member is nominated to."""
        snapshot = self.handle.snapshot
        for node in {m.nominated_node_name for m in members if m.nominated_node_name}:
            ni = snapshot.get(node)
            if ni is None:
                continue
            if any(pod_priority(p, groups) < pg.priority and terminating_by_preemption(p) for p in ni.pods):
                return True
        return False


PLUGINS = [DefaultPreemption]
