"""DefaultPreemption: the PostFilter plugin that evicts lower-priority pods so a pod
no node fits can run. The logic lives in kubeberth.preemption."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from ..framework.cycle_state import CycleState
from ..framework.handle import Handle
from ..framework.interfaces import PostFilterPlugin
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


class DefaultPreemption(PostFilterPlugin):
    name = NAME
    args_model = DefaultPreemptionArgs

    def __init__(self, args: DefaultPreemptionArgs | None, handle: Handle) -> None:
        self.args = args if args is not None else DefaultPreemptionArgs()
        self.handle = handle
        self.evaluator = Evaluator(
            handle, NAME,
            min_candidate_nodes_percentage=self.args.minCandidateNodesPercentage,
            min_candidate_nodes_absolute=self.args.minCandidateNodesAbsolute)

    async def post_filter(self, state: CycleState, pod: Pod,
                          statuses: NodeToStatus) -> tuple[PostFilterResult | None, Status | None]:
        self.handle.metrics.preemption_attempt()
        result, status = await self.evaluator.preempt(state, pod, statuses)
        msg = status.message()
        if msg:
            return result, Status(status.code, "preemption: " + msg, plugin=NAME)
        return result, status


PLUGINS = [DefaultPreemption]
