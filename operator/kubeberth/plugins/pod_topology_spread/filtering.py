"""PodTopologySpread's hard constraints (DoNotSchedule): PreFilter, AddPod/RemovePod, Filter
(upstream's filtering.go).

PreFilter counts the matching pods per domain of each constraint over the nodes the constraint
counts (common.py's rules); Filter checks `count(domain of node) + self-match - global minimum
<= maxSkew`, with the global minimum taken as 0 while fewer than `minDomains` domains exist.

Where this differs from kube-scheduler, on purpose: the global minimum kept for AddPod/RemovePod
is exact, where upstream keeps two "critical paths" that can miss the true minimum after several
updates (and depend on map order).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...framework import (
    CycleState,
    FilterPlugin,
    Handle,
    NodeInfo,
    Pod,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    Status,
)
from ...framework.vector import arrays_for
from .._pod_index import PodIndex, index_for
from .common import (
    DO_NOT_SCHEDULE,
    ERR_CONSTRAINTS_NOT_MATCH,
    ERR_NODE_LABEL_NOT_MATCH,
    PRE_FILTER_KEY,
    Constraint,
    ConstraintSource,
    CountedPods,
    OneNode,
    carries_all_keys,
    passes_inclusion_policies,
    skew_limit,
)
from .vector import LABEL_MISSING, PASSES, SpreadVectors


class PreFilterState:
    """Per hard constraint: matching pods per eligible domain, and the global minimum. The
    vectorised PreFilter also keeps each constraint's counts by label code of its node arrays
    (`by_code`, for Filter's mask); an update drops that constraint's array."""

    __slots__ = ("_mins", "arrays", "by_code", "constraints", "counts")

    def __init__(self, constraints: list[Constraint], counts: list[dict[str, int]],
                 mins: list[int | None] | None = None, *, arrays: Any = None,
                 by_code: list[np.ndarray | None] | None = None) -> None:
        self.constraints = constraints
        self.counts = counts
        self._mins: list[int | None] = mins if mins is not None else [None] * len(constraints)
        self.arrays = arrays
        self.by_code: list[np.ndarray | None] = by_code if by_code is not None else [None] * len(constraints)

    def clone(self) -> PreFilterState:
        return PreFilterState(self.constraints, [dict(c) for c in self.counts], list(self._mins),
                              arrays=self.arrays, by_code=list(self.by_code))

    def by_code_for(self, arrays: Any) -> list[np.ndarray | None] | None:
        """`by_code` when it was counted over `arrays`, else None."""
        return self.by_code if self.arrays is arrays else None

    def min_match_num(self, i: int) -> int:
        """The global minimum of matching pods over the eligible domains of constraint i (the
        minDomains rule, for both paths)."""
        counts = self.counts[i]
        if len(counts) < self.constraints[i].min_domains:
            # Fewer eligible domains than minDomains: the global minimum is 0.
            return 0
        m = self._mins[i]
        if m is None:
            m = min(counts.values()) if counts else 0
            self._mins[i] = m
        return m

    def update(self, i: int, value: str, delta: int) -> None:
        self.by_code[i] = None
        counts = self.counts[i]
        old = counts.get(value, 0)
        new = counts[value] = old + delta
        m = self._mins[i]
        if m is None:
            return
        if new < m:
            self._mins[i] = new
        elif old == m and new > old:
            self._mins[i] = None


def domain_counts(nodes: Sequence[NodeInfo], pod: Pod, constraints: Sequence[Constraint],
                  index: PodIndex) -> list[dict[str, int]]:
    """PreFilter's counts node by node: per constraint, {domain: matching pods} over the nodes
    it counts; every domain of such a node appears, with the pods on those nodes."""
    counts: list[dict[str, int]] = [{} for _ in constraints]
    # Per constraint: counted node name -> its domain (topology value).
    domains: list[dict[str, str]] = [{} for _ in constraints]
    one = OneNode(pod)
    for ni in nodes:
        node = ni.node
        if node is None:
            continue
        facts = one.at(node)
        if not carries_all_keys(facts, constraints):
            continue
        labels = node.labels
        for i, c in enumerate(constraints):
            if not passes_inclusion_policies(facts, c, True):
                continue
            value = labels[c.topology_key]
            domains[i][node.name] = value
            counts[i].setdefault(value, 0)
    for i, c in enumerate(constraints):
        dom, cnt = domains[i], counts[i]
        for name, n in CountedPods(c.selector, pod.namespace).per_node(index).items():
            domain = dom.get(name)
            if domain is not None:
                cnt[domain] += n
    return counts


def update_with_pod(state: CycleState, updated: Pod, preemptor: Pod, node_info: NodeInfo,
                    delta: int) -> Status | None:
    """AddPod (+1) / RemovePod (-1): `updated` counts by upstream's updateWithPod rule (see
    common.py) on a node the constraint counts."""
    s: PreFilterState | None = state.get(PRE_FILTER_KEY)
    if s is None:
        return Status.error(f"reading {PRE_FILTER_KEY!r} from cycleState: not found")
    node = node_info.node
    if node is None or updated.namespace != preemptor.namespace:
        return None
    facts = OneNode(preemptor, node)
    if not carries_all_keys(facts, s.constraints):
        return None
    labels = node.labels
    for i, c in enumerate(s.constraints):
        if not c.selector.matches(updated.labels):
            continue
        if not passes_inclusion_policies(facts, c, True):
            continue
        s.update(i, labels[c.topology_key], delta)
    return None


class Filtering(PreFilterPlugin, FilterPlugin, PreFilterExtensions):
    """PodTopologySpread's PreFilter, its extensions and Filter (mixed into the plugin)."""

    handle: Handle
    source: ConstraintSource
    _index: PodIndex
    _vectors: SpreadVectors

    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        try:
            constraints = self.source.constraints(pod, DO_NOT_SCHEDULE)
        except ValueError as exc:
            return None, Status.error(f"get constraints from pod: {exc}")
        if not constraints:
            return None, Status.skip()
        index = index_for(self.handle)
        arrays = arrays_for(self.handle, nodes)
        if arrays is not None:
            counts, by_code = self._vectors.domain_counts(arrays, pod, constraints, index)
            state.write(PRE_FILTER_KEY, PreFilterState(constraints, counts, arrays=arrays, by_code=[*by_code]))
        else:
            state.write(PRE_FILTER_KEY, PreFilterState(constraints, domain_counts(nodes, pod, constraints, index)))
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self

    def add_pod(self, state: CycleState, pod_to_schedule: Pod, pod_to_add: Pod,
                node_info: NodeInfo) -> Status | None:
        return update_with_pod(state, pod_to_add, pod_to_schedule, node_info, 1)

    def remove_pod(self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: Pod,
                   node_info: NodeInfo) -> Status | None:
        return update_with_pod(state, pod_to_remove, pod_to_schedule, node_info, -1)

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s: PreFilterState | None = state.get(PRE_FILTER_KEY)
        if s is None:
            return Status.error(f"reading {PRE_FILTER_KEY!r} from cycleState: not found")
        if not s.constraints:
            return None
        node = node_info.node
        if node is None:
            return Status.error("node not found")
        labels = node.labels
        pod_labels = pod.labels
        for i, c in enumerate(s.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                return Status.unresolvable(ERR_NODE_LABEL_NOT_MATCH)
            if s.counts[i].get(value, 0) > skew_limit(c, pod_labels, s.min_match_num(i)):
                return Status.unschedulable(ERR_CONSTRAINTS_NOT_MATCH)
        return None

    def filter_all(self, state: CycleState, pod: Pod, nodes: Any) -> np.ndarray | None:
        """`filter` for every node of a NodeView (the vectorised path)."""
        s: PreFilterState | None = state.get(PRE_FILTER_KEY)
        if s is None:
            return None
        if not s.constraints:
            return np.ones(len(nodes), dtype=bool)
        arrays = nodes.arrays
        return nodes.take(self._vectors.filter_mask(arrays, pod, s.constraints, s.counts, s.min_match_num,
                                                    s.by_code_for(arrays)))

    def filter_statuses(self, state: CycleState, pod: Pod, arrays: Any, rows: np.ndarray) -> list[Status] | None:
        """`filter`'s two rejections, one shared status each, for rows `filter_all` rejected."""
        s: PreFilterState | None = state.get(PRE_FILTER_KEY)
        if s is None or not s.constraints or arrays.missing[rows].any():
            return None
        kinds = self._vectors.rejection_kinds(arrays, pod, s.constraints, s.counts, s.min_match_num,
                                              s.by_code_for(arrays), rows)
        if (kinds == PASSES).any():
            return None  # the mask and this disagree: `filter` row by row tells
        missing = Status.unresolvable(ERR_NODE_LABEL_NOT_MATCH)
        over = Status.unschedulable(ERR_CONSTRAINTS_NOT_MATCH)
        return [missing if k == LABEL_MISSING else over for k in kinds.tolist()]
