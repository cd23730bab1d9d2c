"""PodTopologySpread's soft constraints (ScheduleAnyway): PreScore, Score, NormalizeScore
(upstream's scoring.go).

PreScore counts the matching pods per domain of each constraint (per node for
`kubernetes.io/hostname`, read in Score); Score is `sum(count * log(domains + 2) + maxSkew - 1)`,
and NormalizeScore maps it so that fewer matching pods give a higher score.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from ...framework import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    Node,
    NodeInfo,
    NodeScore,
    PluginError,
    Pod,
    PreScorePlugin,
    ScorePlugin,
    Status,
)
from ...framework.vector import NodeView, snapshot_arrays
from .._pod_index import PodIndex, index_for
from .common import (
    LABEL_HOSTNAME,
    NAME,
    PRE_SCORE_KEY,
    SCHEDULE_ANYWAY,
    Constraint,
    ConstraintSource,
    CountedPods,
    OneNode,
    carries_all_keys,
    passes_inclusion_policies,
)
from .vector import SpreadVectors, counts_by_code

_INVALID_SCORE = -1


class PreScoreState:
    __slots__ = ("constraints", "host_counts", "ignored_nodes", "pair_counts", "weights")

    def __init__(self) -> None:
        self.constraints: list[Constraint] = []
        # Per hostname constraint: node name -> matching pods (what upstream counts in Score).
        self.host_counts: list[dict[str, int]] = []
        self.ignored_nodes: set[str] = set()
        # Per constraint: domain value -> matching pods (non-hostname constraints only).
        self.pair_counts: list[dict[str, int]] = []
        self.weights: list[float] = []

    def clone(self) -> PreScoreState:
        return self


def topology_normalizing_weight(size: int) -> float:
    return math.log(size + 2)


def _round_half_away(x: float) -> int:
    """Go's math.Round for the non-negative scores here."""
    r = math.floor(x)
    return r + 1 if x - r >= 0.5 else r


def score_for_count(cnt: int, max_skew: int, weight: float) -> float:
    return cnt * weight + (max_skew - 1)


class Scoring(PreScorePlugin, ScorePlugin):
    """PodTopologySpread's PreScore, Score and NormalizeScore (mixed into the plugin)."""

    has_normalize = True
    handle: Handle
    source: ConstraintSource
    _index: PodIndex
    _vectors: SpreadVectors

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        if not self.handle.snapshot.node_infos:
            return Status.skip()
        try:
            constraints = self.source.constraints(pod, SCHEDULE_ANYWAY)
        except ValueError as exc:
            return Status.error(f"calculating preScoreState: {exc}")
        if not constraints:
            return Status.skip()
        require_all = self.source.require_all_keys(pod)
        carries, included = self._node_rules(pod, constraints)
        s = PreScoreState()
        s.constraints = constraints
        s.pair_counts = [{} for _ in constraints]
        topo_size = [0] * len(constraints)
        for ni in nodes:
            node = ni.node
            if node is None:
                continue
            if require_all and not carries(node):
                s.ignored_nodes.add(node.name)
                continue
            labels = node.labels
            for i, c in enumerate(constraints):
                if c.topology_key == LABEL_HOSTNAME:
                    continue
                value = labels.get(c.topology_key, "")
                pairs = s.pair_counts[i]
                if value not in pairs:
                    pairs[value] = 0
                    topo_size[i] += 1
        for i, c in enumerate(constraints):
            size = topo_size[i]
            if c.topology_key == LABEL_HOSTNAME:
                size = len(nodes) - len(s.ignored_nodes)
            s.weights.append(topology_normalizing_weight(size))

        # Matching pods count on every node of the snapshot (not only `nodes`) whose domain
        # is one of the above and that the constraint counts.
        index = index_for(self.handle)
        snapshot = self.handle.snapshot
        for i, c in enumerate(constraints):
            per_node = CountedPods(c.selector, pod.namespace).per_node(index)
            if c.topology_key == LABEL_HOSTNAME:
                s.host_counts.append(per_node)
                continue
            s.host_counts.append({})
            pairs = s.pair_counts[i]
            if not pairs:
                continue
            for name, n in per_node.items():
                found = snapshot.get(name)
                node = found.node if found is not None else None
                if node is None:
                    continue
                if require_all and not carries(node):
                    continue
                value = node.labels.get(c.topology_key, "")
                if value not in pairs or not included(i, node):
                    continue
                pairs[value] += n
        state.write(PRE_SCORE_KEY, s)
        return None

    def _node_rules(self, pod: Pod, constraints: Sequence[Constraint]) -> tuple[
            Callable[[Node], bool], Callable[[int, Node], bool]]:
        """common.py's node rules as per-node predicates: whether a node carries every topology
        key, and whether it passes constraint i's inclusion policies. With the node arrays,
        decided for every node at once (PreScore runs them for most of the snapshot)."""
        arrays = snapshot_arrays(self.handle)
        if arrays is not None:
            lacking, left_out = self._vectors.names_left_out(arrays, pod, constraints)
            return (lambda node: node.name not in lacking), (lambda i, node: node.name not in left_out[i])
        one = OneNode(pod)
        return ((lambda node: carries_all_keys(one.at(node), constraints)),
                (lambda i, node: passes_inclusion_policies(one.at(node), constraints[i], True)))

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        s: PreScoreState | None = state.get(PRE_SCORE_KEY)
        if s is None:
            raise PluginError(f"reading {PRE_SCORE_KEY!r} from cycleState: not found", NAME)
        node = node_info.node
        if node is None or node.name in s.ignored_nodes:
            return 0
        labels = node.labels
        total = 0.0
        for i, c in enumerate(s.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                continue
            if c.topology_key == LABEL_HOSTNAME:
                cnt = s.host_counts[i].get(node.name, 0)
            else:
                cnt = s.pair_counts[i].get(value, 0)
            total += score_for_count(cnt, c.max_skew, s.weights[i])
        return _round_half_away(total)

    def score_all(self, state: CycleState, pod: Pod, nodes: NodeView) -> np.ndarray | None:
        """`score` for every node of a NodeView: the same float sums, constraint by constraint,
        and the same rounding."""
        s: PreScoreState | None = state.get(PRE_SCORE_KEY)
        if s is None:
            return None
        arrays = nodes.arrays
        total = np.zeros(len(nodes), dtype=np.float64)
        for i, c in enumerate(s.constraints):
            key = c.topology_key
            codes = nodes.take(arrays.label_codes(key))
            if key == LABEL_HOSTNAME:
                per_node = self._vectors.matching_per_node(arrays, CountedPods(c.selector, pod.namespace),
                                                           index_for(self.handle))
                counts = nodes.take(per_node)
            else:
                counts = counts_by_code(arrays, key, s.pair_counts[i])[codes]
            # A node without the label adds nothing (x + 0.0 is x).
            total += np.where(codes != 0, counts * s.weights[i] + (c.max_skew - 1), 0.0)
        floor = np.floor(total)
        out = (floor + (total - floor >= 0.5)).astype(np.int64)
        out[nodes.take(arrays.missing) | self._ignored(s, nodes)] = 0
        return out

    def normalize_all(self, state: CycleState, pod: Pod, nodes: NodeView,
                      scores: np.ndarray) -> np.ndarray | None:
        """`normalize_score` on an array."""
        s: PreScoreState | None = state.get(PRE_SCORE_KEY)
        if s is None:
            return None
        ignored = self._ignored(s, nodes)
        counted = scores[~ignored]
        if not counted.size:
            return np.zeros(scores.shape, dtype=np.int64)
        lo, hi = int(counted.min()), max(0, int(counted.max()))
        if hi == 0:
            out = np.full(scores.shape, MAX_NODE_SCORE, dtype=np.int64)
        else:
            out = MAX_NODE_SCORE * (hi + lo - scores) // hi
        out[ignored] = 0
        return out

    @staticmethod
    def _ignored(s: PreScoreState, nodes: NodeView) -> np.ndarray:
        """Per node of the view, whether PreScore left it out (it lacks a topology key)."""
        ignored = s.ignored_nodes
        if not ignored:
            return np.zeros(len(nodes), dtype=bool)
        return np.fromiter((ni.name in ignored for ni in nodes), dtype=bool, count=len(nodes))

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        s: PreScoreState | None = state.get(PRE_SCORE_KEY)
        if s is None:
            return Status.error(f"reading {PRE_SCORE_KEY!r} from cycleState: not found")
        ignored = s.ignored_nodes
        lo: int | None = None
        hi = 0
        for ns in scores:
            if ns.name in ignored:
                ns.score = _INVALID_SCORE
                continue
            if lo is None or ns.score < lo:
                lo = ns.score
            if ns.score > hi:
                hi = ns.score
        for ns in scores:
            if ns.score == _INVALID_SCORE:
                ns.score = 0
                continue
            if hi == 0:
                ns.score = MAX_NODE_SCORE
                continue
            assert lo is not None
            ns.score = MAX_NODE_SCORE * (hi + lo - ns.score) // hi
        return None
