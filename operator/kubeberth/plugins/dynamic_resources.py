"""DynamicResources (DRA, GA and in v1.37's default profile): the part kubeberth does today.

For a pod without ResourceClaims it does what upstream does: PreFilter records an empty
state and skips the pod, and PostFilter has nothing to deallocate. Upstream's PostFilter runs
before DefaultPreemption and reads that state; when an earlier PreFilter rejected the pod,
the state was never written and the read's error ends upstream's FailedScheduling message
("... pod affinity terms conflict. not found"), with no preemption part: so here.

Allocating devices for a pod that names ResourceClaims is not implemented yet (ResourceClaims,
ResourceSlices and DeviceClasses are not watched): such a pod fails its PreFilter with an
error that says so, and waits, rather than being bound to a node without its devices.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..framework.cycle_state import CycleState
from ..framework.interfaces import PostFilterPlugin, PreFilterPlugin, PreScorePlugin, ScorePlugin
from ..framework.status import Code, Status
from ..framework.types import NodeToStatus, PostFilterResult, PreFilterResult
from ..model import NodeInfo, Pod

NAME = "DynamicResources"
STATE_KEY = NAME
NOT_IMPLEMENTED = ("allocating devices for ResourceClaims is not implemented in kubeberth yet; "
                   "the pod waits for a scheduler that can allocate them")
# What upstream's CycleState.Read says when nothing was written under the key.
STATE_NOT_FOUND = "not found"


class _State:
    """The pod's claims as PreFilter saw them (none, for every pod kubeberth schedules)."""

    __slots__ = ("claims",)

    def __init__(self, claims: Sequence[Any] = ()) -> None:
        self.claims = tuple(claims)

    def clone(self) -> _State:
        return self


def pod_claims(pod: Pod) -> list[Any]:
    return list(pod.spec.get("resourceClaims") or ())


class DynamicResources(PreFilterPlugin, PostFilterPlugin, PreScorePlugin, ScorePlugin):
    name = NAME

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        self.handle = handle

    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        state.write(STATE_KEY, _State())
        if pod_claims(pod):
            return None, Status.error(NOT_IMPLEMENTED)
        return None, Status.skip()

    async def post_filter(self, state: CycleState, pod: Pod,
                          statuses: NodeToStatus) -> tuple[PostFilterResult | None, Status | None]:
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            return None, Status.error(STATE_NOT_FOUND)
        # No claim to deallocate: let the next PostFilter (preemption) try.
        return None, Status(Code.UNSCHEDULABLE)

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        # Upstream's Score gives 0 to every node for a pod without claims: nothing to add.
        return Status.skip()

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return 0


PLUGINS = [DynamicResources]
