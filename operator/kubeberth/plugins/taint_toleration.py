"""TaintToleration: filter on NoSchedule/NoExecute taints, prefer fewer PreferNoSchedule ones."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..framework import (
    MAX_NODE_SCORE,
    NODE,
    PREFER_NO_SCHEDULE,
    TARGET_POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    FilterPlugin,
    Handle,
    Node,
    NodeInfo,
    NodeScore,
    PluginError,
    Pod,
    PreScorePlugin,
    QueueingHint,
    ScorePlugin,
    Status,
    Toleration,
    default_normalize_score,
    find_untolerated,
    tolerated,
)
from ..framework.vector import default_normalize_all, untolerated_free_mask

NAME = "TaintToleration"
PRE_SCORE_STATE_KEY = "PreScore" + NAME
# Since v1.34 one reason for every untolerated taint: no key or value, so nodes count under one reason.
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"


class _PreScoreState:
    __slots__ = ("tolerations_prefer_no_schedule",)

    def __init__(self, tolerations: list[Toleration]) -> None:
        self.tolerations_prefer_no_schedule = tolerations

    def clone(self) -> _PreScoreState:
        return self


def tolerations_prefer_no_schedule(tolerations: Sequence[Toleration]) -> list[Toleration]:
    """Tolerations that may tolerate a PreferNoSchedule taint (an empty effect means all)."""
    return [t for t in tolerations if not t.effect or t.effect == PREFER_NO_SCHEDULE]


def count_intolerable_prefer_no_schedule(node_info: NodeInfo, tolerations: Sequence[Toleration]) -> int:
    node = node_info.node
    if node is None:
        return 0
    return sum(1 for taint in node.taints
               if taint.effect == PREFER_NO_SCHEDULE and not tolerated(taint, tolerations))


class TaintToleration(FilterPlugin, PreScorePlugin, ScorePlugin):
    name = NAME
    has_normalize = True

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self.handle = handle

    def events_to_register(self) -> list[ClusterEvent | ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                                     self._after_node_change),
                ClusterEventWithHint(ClusterEvent(TARGET_POD, ActionType.UPDATE_POD_TOLERATION))]

    def _after_node_change(self, pod: Pod, old: Node | None, new: Node) -> QueueingHint:
        """The node's taints went from untolerated (or the node is new) to tolerated."""
        was_untolerated = old is None or find_untolerated(old.taints, pod.tolerations) is not None
        if was_untolerated and find_untolerated(new.taints, pod.tolerations) is None:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status.error("invalid nodeInfo")
        if find_untolerated(node.taints, pod.tolerations) is None:
            return None
        return Status.unresolvable(ERR_REASON_UNTOLERATED)

    def filter_all(self, state: CycleState, pod: Pod, nodes: Any) -> np.ndarray:
        """`filter` for every node of a NodeView: decided once per distinct list of taints."""
        a = nodes.arrays
        return nodes.take(~a.missing & untolerated_free_mask(a, pod.tolerations))

    def filter_statuses(self, state: CycleState, pod: Pod, arrays: Any, rows: np.ndarray) -> list[Status] | None:
        """One status for every rejected node (the reason names no taint); rows without a node
        are `filter`'s error."""
        if arrays.missing[rows].any():
            return None
        return [Status.unresolvable(ERR_REASON_UNTOLERATED)] * len(rows)

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        if not nodes:
            return None
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(tolerations_prefer_no_schedule(pod.tolerations)))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            raise PluginError(f"reading {PRE_SCORE_STATE_KEY!r} from cycleState: not found", NAME)
        return count_intolerable_prefer_no_schedule(node_info, s.tolerations_prefer_no_schedule)

    def score_all(self, state: CycleState, pod: Pod, nodes: Any) -> np.ndarray | None:
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            return None
        a = nodes.arrays
        prefer = nodes.take(a.prefer_taints)
        if not prefer.any():
            return np.zeros(len(nodes), dtype=np.int64)
        ids = nodes.take(a.taint_id)
        lut = np.zeros(len(a.taint_sets), dtype=np.int64)
        tolerations = s.tolerations_prefer_no_schedule
        for tid in np.unique(ids[prefer]).tolist():
            lut[tid] = sum(1 for taint in a.taint_sets[tid]
                           if taint.effect == PREFER_NO_SCHEDULE and not tolerated(taint, tolerations))
        return lut[ids]

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, True, scores)
        return None

    def normalize_all(self, state: CycleState, pod: Pod, nodes: Any, scores: np.ndarray) -> np.ndarray:
        return default_normalize_all(MAX_NODE_SCORE, True, scores)


PLUGINS = [TaintToleration]
