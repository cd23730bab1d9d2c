"""NodeUnschedulable: filters out nodes with spec.unschedulable unless the pod tolerates it."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..framework.cycle_state import CycleState
from ..framework.events import NODE, POD, ActionType, ClusterEvent
from ..framework.handle import Handle
from ..framework.interfaces import FilterPlugin
from ..framework.status import Status
from ..model import NodeInfo, Pod
from ..model.taints import NO_SCHEDULE, Taint, tolerated

ERR_REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"

_UNSCHEDULABLE_TAINT = Taint(TAINT_NODE_UNSCHEDULABLE, "", NO_SCHEDULE)


class NodeUnschedulable(FilterPlugin):
    name = "NodeUnschedulable"

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self.handle = handle

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                ClusterEvent(POD, ActionType.UPDATE_POD_TOLERATION)]

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status.unresolvable(ERR_REASON_UNKNOWN_CONDITION)
        if not node.unschedulable:
            return None
        # A pod tolerating the unschedulable taint also tolerates spec.unschedulable.
        if tolerated(_UNSCHEDULABLE_TAINT, pod.tolerations):
            return None
        return Status.unresolvable(ERR_REASON_UNSCHEDULABLE)

    def filter_all(self, state: CycleState, pod: Pod, nodes: Any) -> np.ndarray:
        a = nodes.arrays
        ok = ~nodes.take(a.missing)
        if tolerated(_UNSCHEDULABLE_TAINT, pod.tolerations):
            return ok
        return ok & ~nodes.take(a.unschedulable)


PLUGINS = [NodeUnschedulable]
