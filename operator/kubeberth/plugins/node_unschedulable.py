"""NodeUnschedulable: filters out nodes with spec.unschedulable unless the pod tolerates it."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..framework import (
    NO_SCHEDULE,
    NODE,
    TARGET_POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    FilterPlugin,
    Handle,
    Node,
    NodeInfo,
    Pod,
    QueueingHint,
    Status,
    Taint,
    tolerated,
)

ERR_REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"

_UNSCHEDULABLE_TAINT = Taint(TAINT_NODE_UNSCHEDULABLE, "", NO_SCHEDULE)


class NodeUnschedulable(FilterPlugin):
    name = "NodeUnschedulable"

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self.handle = handle

    def events_to_register(self) -> list[ClusterEvent | ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                                     self._after_node_change),
                ClusterEventWithHint(ClusterEvent(TARGET_POD, ActionType.UPDATE_POD_TOLERATION),
                                     self._after_toleration_change)]

    def _after_node_change(self, pod: Pod, old: Node | None, new: Node) -> QueueingHint:
        """A schedulable node was added, or a node became schedulable."""
        if (old is None and not new.unschedulable) or (old is not None and old.unschedulable and not new.unschedulable):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _after_toleration_change(self, pod: Pod, old: Pod, new: Pod) -> QueueingHint:
        """Tolerations can only be added: the pod may now tolerate the unschedulable taint."""
        return QueueingHint.QUEUE if tolerated(_UNSCHEDULABLE_TAINT, new.tolerations) else QueueingHint.QUEUE_SKIP

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
