"""DefaultPreemption: the PostFilter plugin that evicts lower-priority pods so a pod
no node fits can run. The logic lives in kubeberth.preemption.

As v1.37 (SchedulerAsyncPreemption), the victims are preempted in the background; meanwhile the
plugin's PreEnqueue keeps the preemptor out of activeQ, and the victims' deletions requeue it
through the hints of the plugins that rejected it (this plugin's own hint always skips)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from ..framework.cycle_state import CycleState
from ..framework.events import ASSIGNED_POD, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from ..framework.handle import Handle
from ..framework.interfaces import PostFilterPlugin, PreEnqueuePlugin
from ..framework.status import Status
from ..framework.types import NodeToStatus, PostFilterResult
from ..model import Pod
from ..preemption import Evaluator

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

    def pre_enqueue(self, pod: Pod) -> Status | None:
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


PLUGINS = [DefaultPreemption]
