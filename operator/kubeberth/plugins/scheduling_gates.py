"""SchedulingGates: keeps pods with spec.schedulingGates out of the active queue."""

from __future__ import annotations

from typing import Any

from ..framework import (
    TARGET_POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Handle,
    Pod,
    PreEnqueuePlugin,
    Status,
)


class SchedulingGates(PreEnqueuePlugin):
    name = "SchedulingGates"

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self.handle = handle

    def events_to_register(self) -> list[ClusterEvent | ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(TARGET_POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED))]

    def pre_enqueue_scope(self, pod: Pod) -> str:
        return self.SCOPE_POD  # its gates

    def pre_enqueue(self, pod: Pod) -> Status | None:
        if not pod.scheduling_gates:
            return None
        # Formatted like Go's %v of a []string: "[a b]".
        gates = " ".join(pod.scheduling_gates)
        return Status.unresolvable(f"waiting for scheduling gates: [{gates}]")


PLUGINS = [SchedulingGates]
