"""NodeName: a pod naming spec.nodeName fits only that node."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..framework import (
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    FilterPlugin,
    Handle,
    NodeInfo,
    Pod,
    Status,
)

ERR_REASON = "node(s) didn't match the requested node name"


def fits(pod: Pod, node_info: NodeInfo) -> bool:
    return not pod.node_name or pod.node_name == node_info.name


class NodeName(FilterPlugin):
    name = "NodeName"

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self.handle = handle

    def events_to_register(self) -> list[ClusterEvent | ClusterEventWithHint]:
        # No hint: a pod rejected here is retried after its backoff whenever a node is added.
        return [ClusterEvent(NODE, ActionType.ADD)]

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if node_info.node is None:
            return Status.error("node not found")
        if not fits(pod, node_info):
            return Status.unresolvable(ERR_REASON)
        return None

    def filter_all(self, state: CycleState, pod: Pod, nodes: Any) -> np.ndarray:
        a = nodes.arrays
        ok = ~nodes.take(a.missing)
        if not pod.node_name:
            return ok
        only = np.zeros(a.n, dtype=bool)
        i = a.pos.get(pod.node_name)
        if i is not None:
            only[i] = True
        return ok & nodes.take(only)


PLUGINS = [NodeName]
