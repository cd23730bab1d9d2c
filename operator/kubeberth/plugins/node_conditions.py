"""The older node-condition predicates, as filter plugins outside the default set.

- CheckNodeMemoryPressure: a BestEffort pod does not go to a node whose
  MemoryPressure condition is True ("node(s) had memory pressure").
- CheckNodeDiskPressure: no pod goes to a node whose DiskPressure condition is
  True ("node(s) had disk pressure").
- CheckNodePIDPressure: no pod goes to a node whose PIDPressure condition is
  True ("node(s) had pid pressure").
- CheckNodeCondition: no pod goes to a node that is not Ready ("node(s) were
  not ready"), whose NetworkUnavailable is not False ("node(s) had unavailable
  network"), or that is cordoned ("node(s) were unschedulable").

Upstream replaced these (v1.17+) by the node lifecycle controller's taints
(`node.kubernetes.io/memory-pressure`, `disk-pressure`, `pid-pressure`,
`not-ready`, `network-unavailable`, `unschedulable`), which TaintToleration
already handles; these plugins are for profiles that still name the old
predicates. As in the old scheduler, their failures are unresolvable:
preemption does not relieve a node condition.
"""

from __future__ import annotations

from typing import Any

from ..framework import CycleState, FilterPlugin, Handle, NodeInfo, Pod, Status
from ._volume_util import is_best_effort

ERR_NODE_UNDER_MEMORY_PRESSURE = "node(s) had memory pressure"
ERR_NODE_UNDER_DISK_PRESSURE = "node(s) had disk pressure"
ERR_NODE_UNDER_PID_PRESSURE = "node(s) had pid pressure"
ERR_NODE_NOT_READY = "node(s) were not ready"
ERR_NODE_NETWORK_UNAVAILABLE = "node(s) had unavailable network"
ERR_NODE_UNSCHEDULABLE = "node(s) were unschedulable"
ERR_NODE_UNKNOWN_CONDITION = "node(s) had unknown conditions"


def _best_effort(pod: Pod) -> bool:
    cached = pod.cache.get("CheckNodeMemoryPressure")
    if cached is None:
        cached = pod.cache["CheckNodeMemoryPressure"] = is_best_effort(pod)
    return bool(cached)


class _PressureFilter(FilterPlugin):
    """Rejects pods (those `affected`) from nodes whose `condition` is True."""

    condition = ""
    reason = ""

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self.handle = handle

    def affected(self, pod: Pod) -> bool:
        return True

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status.error("node not found")
        if node.conditions.get(self.condition) == "True" and self.affected(pod):
            return Status.unresolvable(self.reason)
        return None


class CheckNodeMemoryPressure(_PressureFilter):
    name = "CheckNodeMemoryPressure"
    condition = "MemoryPressure"
    reason = ERR_NODE_UNDER_MEMORY_PRESSURE

    def affected(self, pod: Pod) -> bool:
        return _best_effort(pod)


class CheckNodeDiskPressure(_PressureFilter):
    name = "CheckNodeDiskPressure"
    condition = "DiskPressure"
    reason = ERR_NODE_UNDER_DISK_PRESSURE


class CheckNodePIDPressure(_PressureFilter):
    name = "CheckNodePIDPressure"
    condition = "PIDPressure"
    reason = ERR_NODE_UNDER_PID_PRESSURE


class CheckNodeCondition(FilterPlugin):
    name = "CheckNodeCondition"

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self.handle = handle

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status.unresolvable(ERR_NODE_UNKNOWN_CONDITION)
        reasons = []
        ready = node.conditions.get("Ready")
        if ready is not None and ready != "True":
            reasons.append(ERR_NODE_NOT_READY)
        network = node.conditions.get("NetworkUnavailable")
        if network is not None and network != "False":
            reasons.append(ERR_NODE_NETWORK_UNAVAILABLE)
        if node.unschedulable:
            reasons.append(ERR_NODE_UNSCHEDULABLE)
        return Status.unresolvable(*reasons) if reasons else None


PLUGINS = [CheckNodeMemoryPressure, CheckNodeDiskPressure, CheckNodePIDPressure, CheckNodeCondition]
