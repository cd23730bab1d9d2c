"""PodTopologySpread over the snapshot's node arrays (the vectorised path; see framework/vector.py).

PreFilter's counts per domain and Filter's verdict for every node, computed from label columns,
per-node matching-pod counts (kept between cycles, recomputed for the nodes that changed) and
the node inclusion policies as masks. They must equal what the per-node code computes;
tests/framework/test_vectorised.py and tests/plugins compare both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..cache.node_arrays import NodeArrays
from ..framework.vector import (
    MaskCache,
    RowCache,
    label_selector_key,
    required_node_affinity_mask,
    selector_key,
    untolerated_free_mask,
)
from ..model import NodeInfo, Pod

HONOR = "Honor"


class SpreadVectors:
    """What one PodTopologySpread plugin keeps between cycles for its vectorised path."""

    __slots__ = ("affinity_masks", "counts")

    def __init__(self) -> None:
        self.counts = RowCache(limit=32)
        self.affinity_masks = MaskCache()

    # ---- per-node matching pods -----------------------------------------------------------
    def matching_per_node(self, arrays: NodeArrays, selector: Any, namespace: str, index: Any,
                          matching_counts: Any) -> np.ndarray:
        """Per node, the pods of `namespace` that `selector` (a PodTopologySpread Selector)
        matches, terminating pods excluded (matching_counts for every node)."""
        sel = selector.selector
        if sel is None or sel.is_empty():
            return np.zeros(arrays.n, dtype=np.int64)
        key = (namespace, label_selector_key(sel))

        def compute_all(a: NodeArrays) -> np.ndarray:
            out = np.zeros(a.n, dtype=np.int64)
            pos = a.pos
            for name, n in matching_counts(index, selector, namespace).items():
                i = pos.get(name)
                if i is not None:
                    out[i] = n
            return out

        def compute_row(ni: NodeInfo) -> int:
            return sum(1 for p in ni.pods
                       if p.namespace == namespace and p.deletion_timestamp is None and sel.matches(p.labels))

        values = self.counts.get(arrays, key, compute_all, compute_row)
        assert values is not None
        return values

    # ---- PreFilter ---------------------------------------------------------------------------
    def eligible(self, arrays: NodeArrays, pod: Pod, constraints: Sequence[Any]) -> list[np.ndarray]:
        """Per constraint, the nodes PreFilter counts: with a node, every constraint's topology
        key, and passing the constraint's node inclusion policies."""
        ok = ~arrays.missing
        for c in constraints:
            ok = ok & (arrays.label_codes(c.topology_key) != 0)
        affinity: np.ndarray | None = None
        taints: np.ndarray | None = None
        out = []
        for c in constraints:
            m = ok
            if c.node_affinity_policy == HONOR:
                if affinity is None:
                    affinity = self._affinity(arrays, pod)
                m = m & affinity
            if c.node_taints_policy == HONOR:
                if taints is None:
                    taints = untolerated_free_mask(arrays, pod.tolerations)
                m = m & taints
            out.append(m)
        return out

    def _affinity(self, arrays: NodeArrays, pod: Pod) -> np.ndarray:
        key = (tuple(sorted(pod.node_selector.items())), selector_key(pod.required_node_selector))
        mask = self.affinity_masks.get(arrays, key)
        if mask is None:
            mask = self.affinity_masks.put(
                key, required_node_affinity_mask(arrays, pod.node_selector, pod.required_node_selector))
        return mask

    def domain_counts(self, arrays: NodeArrays, key: str, eligible: np.ndarray,
                      per_node: np.ndarray) -> dict[str, int]:
        """{domain: matching pods} over the eligible nodes: every domain of an eligible node
        appears, with the pods on its eligible nodes."""
        codes = arrays.label_codes(key)[eligible]
        if codes.size == 0:
            return {}
        values = arrays.label_values(key)
        sums = np.bincount(codes, weights=per_node[eligible], minlength=len(values))
        return {values[c]: int(sums[c]) for c in np.unique(codes).tolist()}


def filter_mask(arrays: NodeArrays, pod: Pod, constraints: Sequence[Any], counts: Sequence[dict[str, int]],
                min_match: Any) -> np.ndarray:
    """PodTopologySpread.filter for every node: each constraint's topology label present and
    `count(domain) + self-match - min <= maxSkew`."""
    ok = ~arrays.missing
    for i, c in enumerate(constraints):
        key = c.topology_key
        codes = arrays.label_codes(key)
        self_match = 1 if c.selector.matches(pod.labels) else 0
        limit = c.max_skew - self_match + min_match(i)
        lut = np.full(len(arrays.label_values(key)), 0 <= limit, dtype=bool)
        for value, n in counts[i].items():
            code = arrays.label_code_of(key, value)
            if code:
                lut[code] = n <= limit
        lut[0] = False  # no such label: unresolvable
        ok &= lut[codes]
    return ok
