"""PodTopologySpread over the snapshot's node arrays (the vectorised path; see framework/vector.py).

PreFilter's counts per domain and Filter's verdict for every node. Which nodes and pods count
is decided by the rules of common.py, asked here of every node at once (`ArrayFacts`); the
matching pods per node are kept between cycles and recomputed for the nodes that changed.
tests/framework/test_vectorised.py and tests/plugins compare this path with the per-node one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ...framework import Pod
from ...framework.vector import (
    MaskCache,
    NodeArrays,
    RowCache,
    required_node_affinity_mask,
    selector_key,
    untolerated_free_mask,
)
from .._pod_index import PodIndex
from .common import Constraint, CountedPods, carries_all_keys, passes_inclusion_policies, skew_limit


class ArrayFacts:
    """NodeFacts of every row of a NodeArrays for the incoming pod, as bool masks; the
    affinity mask is shared between cycles (`masks`), the taints mask made at most once."""

    __slots__ = ("_affinity", "_arrays", "_masks", "_pod", "_taints")

    def __init__(self, arrays: NodeArrays, pod: Pod, masks: MaskCache) -> None:
        self._arrays = arrays
        self._pod = pod
        self._masks = masks
        self._affinity: np.ndarray | None = None
        self._taints: np.ndarray | None = None

    def present(self) -> np.ndarray:
        return ~self._arrays.missing

    def has_label(self, key: str) -> np.ndarray:
        return self._arrays.label_codes(key) != 0

    def affinity_matches(self) -> np.ndarray:
        if self._affinity is None:
            arrays, pod = self._arrays, self._pod
            key = (tuple(sorted(pod.node_selector.items())), selector_key(pod.required_node_selector))
            mask = self._masks.get(arrays, key)
            if mask is None:
                mask = self._masks.put(
                    key, required_node_affinity_mask(arrays, pod.node_selector, pod.required_node_selector))
            self._affinity = mask
        return self._affinity

    def taints_tolerated(self) -> np.ndarray:
        if self._taints is None:
            self._taints = untolerated_free_mask(self._arrays, self._pod.tolerations)
        return self._taints


class SpreadVectors:
    """What one PodTopologySpread plugin keeps between cycles for its vectorised path."""

    __slots__ = ("affinity_masks", "counts")

    def __init__(self) -> None:
        self.counts = RowCache(limit=32)
        self.affinity_masks = MaskCache()

    def domain_counts(self, arrays: NodeArrays, pod: Pod, constraints: Sequence[Constraint],
                      index: PodIndex) -> tuple[list[dict[str, int]], list[np.ndarray]]:
        """PreFilter's counts: per constraint, {domain: matching pods} over the nodes it counts;
        every domain of such a node appears, with the pods on those nodes. Also, per constraint,
        the same counts by label code of `arrays` (0 for the domains it does not count)."""
        facts = ArrayFacts(arrays, pod, self.affinity_masks)
        with_keys = carries_all_keys(facts, constraints)
        out: list[dict[str, int]] = []
        by_code: list[np.ndarray] = []
        for c in constraints:
            eligible = passes_inclusion_policies(facts, c, with_keys)
            per_node = self.matching_per_node(arrays, CountedPods(c.selector, pod.namespace), index)
            codes = arrays.label_codes(c.topology_key)[eligible]
            values = arrays.label_values(c.topology_key)
            sums = np.bincount(codes, weights=per_node[eligible], minlength=len(values)).astype(np.int64)
            by_code.append(sums)
            if codes.size == 0:
                out.append({})
                continue
            counted = np.flatnonzero(np.bincount(codes, minlength=len(values))).tolist()
            out.append(dict(zip([values[code] for code in counted], sums[counted].tolist())))
        return out, by_code

    def names_left_out(self, arrays: NodeArrays, pod: Pod,
                       constraints: Sequence[Constraint]) -> tuple[set[str], list[set[str]]]:
        """For PreScore, by node name: the nodes without every topology key, and per constraint
        the nodes its inclusion policies leave out."""
        facts = ArrayFacts(arrays, pod, self.affinity_masks)
        names = arrays.names

        def off(mask: np.ndarray) -> set[str]:
            return {names[i] for i in np.flatnonzero(~mask).tolist()}

        everywhere = np.ones(arrays.n, dtype=bool)
        return (off(carries_all_keys(facts, constraints)),
                [off(passes_inclusion_policies(facts, c, everywhere)) for c in constraints])

    def matching_per_node(self, arrays: NodeArrays, counted: CountedPods, index: PodIndex) -> np.ndarray:
        """`counted.on_node` for every row."""
        key = counted.key()
        if key is None:
            return np.zeros(arrays.n, dtype=np.int64)

        def compute_all(a: NodeArrays) -> np.ndarray:
            out = np.zeros(a.n, dtype=np.int64)
            pos = a.pos
            for name, n in counted.per_node(index).items():
                i = pos.get(name)
                if i is not None:
                    out[i] = n
            return out

        values = self.counts.get(arrays, key, compute_all, counted.on_node)
        assert values is not None
        return values

    def filter_mask(self, arrays: NodeArrays, pod: Pod, constraints: Sequence[Constraint],
                    counts: Sequence[dict[str, int]], min_match: Callable[[int], int],
                    by_code: Sequence[np.ndarray | None] | None = None) -> np.ndarray:
        """PodTopologySpread.filter for every node: present, each constraint's topology label
        present, and its domain's count within `skew_limit`. `by_code[i]`, when given, holds
        constraint i's counts by label code of these arrays (PreFilter's, not changed since)."""
        ok = ArrayFacts(arrays, pod, self.affinity_masks).present()
        for i, c in enumerate(constraints):
            passes = self._passing_codes(arrays, pod, c, counts[i], min_match(i),
                                         by_code[i] if by_code is not None else None)
            ok &= passes[arrays.label_codes(c.topology_key)]
        return ok

    def rejection_kinds(self, arrays: NodeArrays, pod: Pod, constraints: Sequence[Constraint],
                        counts: Sequence[dict[str, int]], min_match: Callable[[int], int],
                        by_code: Sequence[np.ndarray | None] | None, rows: np.ndarray) -> np.ndarray:
        """Per row, what `filter` says of it: the first constraint, in order, whose topology label
        the node lacks (LABEL_MISSING) or whose domain is over the skew (OVER_SKEW); PASSES
        when none is."""
        kinds = np.full(len(rows), PASSES, dtype=np.int8)
        undecided = np.ones(len(rows), dtype=bool)
        for i, c in enumerate(constraints):
            codes = arrays.label_codes(c.topology_key)[rows]
            passes = self._passing_codes(arrays, pod, c, counts[i], min_match(i),
                                         by_code[i] if by_code is not None else None)
            missing = undecided & (codes == 0)
            over = undecided & ~missing & ~passes[codes]
            kinds[missing] = LABEL_MISSING
            kinds[over] = OVER_SKEW
            undecided &= ~(missing | over)
        return kinds

    @staticmethod
    def _passing_codes(arrays: NodeArrays, pod: Pod, c: Constraint, counts: dict[str, int], min_match: int,
                       known: np.ndarray | None) -> np.ndarray:
        """Per label code of c's topology key, whether that domain's count is within the limit
        (code 0, no such label, never passes). `known`: the counts by code, if still valid."""
        key = c.topology_key
        if known is None or known.shape[0] != len(arrays.label_values(key)):
            known = counts_by_code(arrays, key, counts)
        passes = known <= skew_limit(c, pod.labels, min_match)
        passes[0] = False
        return passes


def counts_by_code(arrays: NodeArrays, key: str, counts: dict[str, int]) -> np.ndarray:
    """{domain: count} of topology key `key` as an array by label code of `arrays` (0 for the
    domains not in `counts`, and for those no node has)."""
    out = np.zeros(len(arrays.label_values(key)), dtype=np.int64)
    for value, n in counts.items():
        code = arrays.label_code_of(key, value)
        if code:
            out[code] = n
    return out


PASSES, LABEL_MISSING, OVER_SKEW = 0, 1, 2
