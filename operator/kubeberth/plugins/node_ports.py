"""NodePorts: the pod's host ports must be free on the node."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..framework import (
    ASSIGNED_POD,
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    FilterPlugin,
    Handle,
    HostPort,
    NodeInfo,
    Pod,
    PreFilterPlugin,
    PreFilterResult,
    QueueingHint,
    Status,
)

NAME = "NodePorts"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"


class _PreFilterState:
    __slots__ = ("ports",)

    def __init__(self, ports: list[HostPort]) -> None:
        self.ports = ports

    def clone(self) -> _PreFilterState:
        # Never mutated after PreFilter.
        return self


def fits_ports(want: Sequence[HostPort], node_info: NodeInfo) -> bool:
    used = node_info.used_ports
    if not used:
        return True
    for hp in want:
        for u in used:
            if hp.conflicts(u):
                return False
    return True


class NodePorts(PreFilterPlugin, FilterPlugin):
    name = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self.handle = handle

    def events_to_register(self) -> list[ClusterEvent | ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.DELETE), self._after_assigned_pod_deleted),
                ClusterEvent(NODE, ActionType.ADD)]

    def _after_assigned_pod_deleted(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Only the deletion of a placed pod holding one of the ports this pod wants may help."""
        deleted: Pod = old
        if not deleted.node_name and not deleted.nominated_node_name:
            return QueueingHint.QUEUE_SKIP
        if not deleted.host_ports:
            return QueueingHint.QUEUE_SKIP
        if any(hp.conflicts(u) for hp in pod.host_ports for u in deleted.host_ports):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.host_ports:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(list(pod.host_ports)))
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return Status.error(f"reading {PRE_FILTER_STATE_KEY!r} from cycleState: not found")
        if not fits_ports(s.ports, node_info):
            return Status.unschedulable(ERR_REASON)
        return None

    def filter_all(self, state: CycleState, pod: Pod, nodes: Any) -> np.ndarray | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return None
        used = nodes.take(nodes.arrays.ports)
        ok = np.ones(len(nodes), dtype=bool)
        for k in np.flatnonzero(used).tolist():
            ok[k] = fits_ports(s.ports, nodes[k])
        return ok


def fits(pod: Pod, node_info: NodeInfo) -> bool:
    """Whether the pod's host ports are free on the node (used outside the framework)."""
    return fits_ports(pod.host_ports, node_info)


PLUGINS = [NodePorts]
