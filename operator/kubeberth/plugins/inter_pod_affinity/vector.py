"""InterPodAffinity over the snapshot's node arrays (the vectorised path; see framework/vector.py).

PreFilter's and PreScore's counts per topology pair, and Filter's and Score's verdicts for every
node, computed from label columns and per-node pod counts kept between cycles:

- `_Groups`: per node, how many of its pods (of NodeInfo.pods_with_required_anti_affinity, or
  .pods_with_affinity) share each parsed set of terms (replicas share one); per set, an array
  over the nodes. Updated for the nodes that changed since the last cycle.
- per-node counts of the existing pods an incoming pod's term matches (a RowCache per term).

Which pods and terms count is decided by rules.py, as on the per-node path. Counts per
(topology key, value) are then bincounts of those arrays over the key's label codes.
The dicts built from them equal the per-node code's (same entries, same values); the arrays
they came from are kept in CycleState (for the state object they were built for) so that
filter_all / score_all need no dict walk.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from operator import itemgetter
from typing import Any

import numpy as np

from ...framework import AffinityTerm, NodeInfo, NsLabels, Pod, PodAffinityTerms, pod_affinity_terms
from ...framework.vector import NodeArrays, RowCache, label_selector_key
from .._pod_index import PodIndex
from .common import Counts
from .rules import existing_anti_keys, first_of_group, incoming_preferred, matches_all, sigs_matching_all
from .state import PreFilterState, PreScoreState


class _Groups:
    """Per node row, the count of pods of each terms object in NodeInfo.<attr>; per terms
    object, an int64 array over the rows (dropped when it falls to zero)."""

    __slots__ = ("_arrays", "_epoch", "_seen", "attr", "groups", "rows", "totals")

    def __init__(self, attr: str) -> None:
        self.attr = attr
        self._arrays: NodeArrays | None = None
        self._epoch = -1
        self._seen = 0
        self.rows: list[dict[PodAffinityTerms, int] | None] = []
        self.groups: dict[PodAffinityTerms, np.ndarray] = {}
        self.totals: dict[PodAffinityTerms, int] = {}

    def sync(self, arrays: NodeArrays) -> dict[PodAffinityTerms, np.ndarray]:
        rows = None
        if self._arrays is arrays:
            rows = arrays.changed_since(self._epoch, self._seen)
        if rows is None:
            self._arrays = arrays
            self.rows = [None] * arrays.n
            self.groups = {}
            self.totals = {}
            for i, ni in enumerate(arrays.infos):
                self._set_row(i, ni)
        else:
            infos = arrays.infos
            for i in set(rows):
                self._set_row(i, infos[i])
        self._epoch, self._seen = arrays.epoch, len(arrays.changes)
        return self.groups

    def _set_row(self, i: int, ni: NodeInfo) -> None:
        old = self.rows[i]
        if old:
            for g, c in old.items():
                self.groups[g][i] -= c
                left = self.totals[g] - c
                if left:
                    self.totals[g] = left
                else:
                    del self.totals[g], self.groups[g]
        new: dict[PodAffinityTerms, int] = {}
        if ni.node is not None:
            for p in getattr(ni, self.attr):
                g = pod_affinity_terms(p)
                new[g] = new.get(g, 0) + 1
        for g, c in new.items():
            arr = self.groups.get(g)
            if arr is None:
                arr = self.groups[g] = np.zeros(len(self.rows), dtype=np.int64)
                self.totals[g] = 0
            arr[i] += c
            self.totals[g] += c
        self.rows[i] = new or None


def _term_key(t: AffinityTerm, objects_generation: int) -> tuple[Any, ...]:
    """A hashable form of an AffinityTerm's pod matching (not its topology key or weight)."""
    ns_sel = label_selector_key(t.ns_selector)
    return (tuple(sorted(t.namespaces)), ns_sel, label_selector_key(t.selector),
            objects_generation if t.ns_selector is not None else None)


class _KeySums:
    """Per topology key: the sum of per-node values over the nodes of each label value (by
    label code), and which codes got any contribution (an entry in the per-node code's dict)."""

    __slots__ = ("present", "rows_present", "rows_sum")

    def __init__(self) -> None:
        self.rows_sum: dict[str, np.ndarray] = {}
        self.rows_present: dict[str, np.ndarray] = {}
        self.present: dict[str, np.ndarray] = {}

    def add(self, key: str, per_node: np.ndarray, present: np.ndarray | None = None) -> None:
        cur = self.rows_sum.get(key)
        self.rows_sum[key] = per_node if cur is None else cur + per_node
        if present is not None:
            p = self.rows_present.get(key)
            self.rows_present[key] = present if p is None else p | present

    def by_code(self, arrays: NodeArrays) -> tuple[Counts, dict[str, np.ndarray], dict[str, np.ndarray]]:
        """(the counts dict, per key the sums by label code, per key the codes with an entry).
        Without presence rows, a value has an entry when its sum is not zero."""
        counts: Counts = {}
        sums_by_code: dict[str, np.ndarray] = {}
        entries_by_code: dict[str, np.ndarray] = {}
        for key, rows in self.rows_sum.items():
            codes = arrays.label_codes(key)
            values = arrays.label_values(key)
            sums = np.bincount(codes, weights=rows, minlength=len(values)).astype(np.int64)
            sums[0] = 0
            present_rows = self.rows_present.get(key)
            if present_rows is None:
                entries = sums != 0
            else:
                entries = np.zeros(len(values), dtype=bool)
                entries[codes[present_rows]] = True
                entries[0] = False
            picked = np.flatnonzero(entries)
            if picked.size:
                names = itemgetter(*picked.tolist())(values) if picked.size > 1 else (values[int(picked[0])],)
                counts[key] = dict(zip(names, sums[picked].tolist()))
            sums_by_code[key] = np.where(entries, sums, 0)
            entries_by_code[key] = entries
        return counts, sums_by_code, entries_by_code


class FilterVectors:
    """What filter_all needs, for the PreFilter state object `state` it was computed with."""

    __slots__ = ("affinity", "anti", "existing", "state")

    def __init__(self, state: PreFilterState, existing: dict[str, np.ndarray], affinity: dict[str, np.ndarray],
                 anti: dict[str, np.ndarray]) -> None:
        self.state = state
        self.existing = existing
        self.affinity = affinity
        self.anti = anti


class ScoreVectors:
    __slots__ = ("state", "sums")

    def __init__(self, state: PreScoreState, sums: dict[str, np.ndarray]) -> None:
        self.state = state
        self.sums = sums


class AffinityVectors:
    """What one InterPodAffinity plugin keeps between cycles for its vectorised path."""

    __slots__ = ("anti_groups", "counts", "groups")

    def __init__(self) -> None:
        self.anti_groups = _Groups("pods_with_required_anti_affinity")
        self.groups = _Groups("pods_with_affinity")
        self.counts = RowCache(limit=64)

    # ---- existing pods matching a term -------------------------------------------------------
    def matching(self, arrays: NodeArrays, terms: Sequence[AffinityTerm], ns_labels: NsLabels, index: PodIndex,
                 objects_generation: int) -> np.ndarray:
        """Per node, the pods (terminating ones too) that every one of `terms` matches."""
        key = tuple(_term_key(t, objects_generation) for t in terms)

        def compute_all(a: NodeArrays) -> np.ndarray:
            out = np.zeros(a.n, dtype=np.int64)
            pos = a.pos
            for _sig, nodes in sigs_matching_all(index, terms, ns_labels):
                for name, n in nodes.items():
                    i = pos.get(name)
                    if i is not None:
                        out[i] += n
            return out

        def compute_row(ni: NodeInfo) -> int:
            if ni.node is None:
                return 0
            return sum(1 for p in ni.pods if matches_all(terms, p, ns_labels))

        values = self.counts.get(arrays, key, compute_all, compute_row)
        assert values is not None
        return values

    # ---- PreFilter ------------------------------------------------------------------------------
    def pre_filter_counts(self, arrays: NodeArrays, pod: Pod, s: PreFilterState, ns_labels: NsLabels,
                          const_ns: NsLabels, index_of: Callable[[], PodIndex],
                          objects_generation: int) -> FilterVectors:
        """Fill s.existing_anti_affinity_counts, s.affinity_counts, s.anti_affinity_counts."""
        existing = _KeySums()
        for g, per_node in self.anti_groups.sync(arrays).items():
            for key in existing_anti_keys(g, pod, const_ns):
                existing.add(key, per_node)
        s.existing_anti_affinity_counts, existing_sums, _ = existing.by_code(arrays)
        affinity_sums: dict[str, np.ndarray] = {}
        anti_sums: dict[str, np.ndarray] = {}
        req_aff = s.terms.required_affinity
        req_anti = s.terms.required_anti
        if req_aff or req_anti:
            index = index_of()
            if req_aff and req_aff[0].selector is not None:
                per_node = self.matching(arrays, req_aff, ns_labels, index, objects_generation)
                aff = _KeySums()
                for t in req_aff:
                    aff.add(t.topology_key, per_node)
                s.affinity_counts, affinity_sums, _ = aff.by_code(arrays)
            anti = _KeySums()
            for t in req_anti:
                if t.selector is None:
                    continue
                anti.add(t.topology_key, self.matching(arrays, [t], ns_labels, index, objects_generation))
            s.anti_affinity_counts, anti_sums, _ = anti.by_code(arrays)
        return FilterVectors(s, existing_sums, affinity_sums, anti_sums)

    # ---- PreScore -------------------------------------------------------------------------------
    def pre_score_topology(self, arrays: NodeArrays, terms: PodAffinityTerms, has_constraints: bool,
                           ns_labels: NsLabels, contributions: Callable[[PodAffinityTerms], list[tuple[str, int]]],
                           index_of: Callable[[], PodIndex], objects_generation: int
                           ) -> tuple[Counts, dict[str, np.ndarray]]:
        """(topology_score, per key its values by label code)."""
        topo = _KeySums()
        if has_constraints:
            index = index_of()
            for t, weight in incoming_preferred(terms):
                per_node = self.matching(arrays, [t], ns_labels, index, objects_generation)
                topo.add(t.topology_key, weight * per_node, per_node > 0)
        for g, per_node in self.groups.sync(arrays).items():
            contrib = contributions(g)
            if not contrib:
                continue
            has = per_node > 0
            for key, w in contrib:
                topo.add(key, w * per_node, has)
        counts, sums, _ = topo.by_code(arrays)
        return counts, sums


# Why `filter` rejects a row, in the order it checks: the pod's affinity, its anti-affinity, the
# existing pods' anti-affinity.
PASSES, AFFINITY_UNMET, ANTI_AFFINITY_UNMET, EXISTING_ANTI_AFFINITY_UNMET = 0, 1, 2, 3


def _failing(arrays: NodeArrays, s: PreFilterState, vec: FilterVectors,
             rows: np.ndarray | None) -> Iterator[tuple[int, np.ndarray]]:
    """`filter`'s checks in its order, over every node (`rows` None) or over `rows`: each as
    (the rejection kind, True where the check fails)."""
    n = arrays.n if rows is None else len(rows)

    def codes_of(key: str) -> np.ndarray:
        codes = arrays.label_codes(key)
        return codes if rows is None else codes[rows]

    req = s.terms.required_affinity
    if req:
        all_present = np.ones(n, dtype=bool)
        pods_exist = np.ones(n, dtype=bool)
        for t in req:
            codes = codes_of(t.topology_key)
            all_present &= codes != 0
            sums = vec.affinity.get(t.topology_key)
            if sums is None:
                pods_exist[:] = False
            else:
                pods_exist &= sums[codes] > 0
        met = all_present if first_of_group(s.affinity_counts, req, s.pod, s.ns_labels) else all_present & pods_exist
        yield AFFINITY_UNMET, ~met
    if s.anti_affinity_counts:
        for t in s.terms.required_anti:
            sums = vec.anti.get(t.topology_key)
            if sums is not None:
                yield ANTI_AFFINITY_UNMET, sums[codes_of(t.topology_key)] > 0
    for key, sums in vec.existing.items():
        yield EXISTING_ANTI_AFFINITY_UNMET, sums[codes_of(key)] > 0


def filter_mask(arrays: NodeArrays, s: PreFilterState, vec: FilterVectors) -> np.ndarray:
    """InterPodAffinity.filter for every node, from the sums PreFilter computed."""
    ok = ~arrays.missing
    for _, fails in _failing(arrays, s, vec, None):
        ok &= ~fails
    return ok


def rejection_kinds(arrays: NodeArrays, s: PreFilterState, vec: FilterVectors, rows: np.ndarray) -> np.ndarray:
    """For each of `rows`, the first check of `filter` that fails it (PASSES where none does)."""
    kinds = np.zeros(len(rows), dtype=np.int8)
    undecided = np.ones(len(rows), dtype=bool)
    for kind, fails in _failing(arrays, s, vec, rows):
        first = undecided & fails
        kinds[first] = kind
        undecided &= ~first
    return kinds


def score_values(arrays: NodeArrays, sums: Mapping[str, np.ndarray]) -> np.ndarray:
    """InterPodAffinity.score for every node: the sum of its values' topology scores."""
    total = np.zeros(arrays.n, dtype=np.int64)
    for key, by_code in sums.items():
        total += by_code[arrays.label_codes(key)]
    return total
