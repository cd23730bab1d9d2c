"""The vectorised filter/score path: node views over the snapshot's arrays and shared helpers.

A plugin may implement, next to its per-node methods:

- `filter_all(state, pod, nodes: NodeView) -> np.ndarray | None`: a bool array, True where
  `filter` would return success, for every node of the view (None: not vectorisable for this
  pod; the runner then calls `filter` per node). Statuses are never built here: for the nodes
  that fail, the runner calls `filter` to get the exact status upstream reports.
- `score_all(state, pod, nodes: NodeView) -> np.ndarray | None`: the raw `score` of every node
  (int64), or None for the per-node path.
- `normalize_all(state, pod, nodes: NodeView, scores: np.ndarray) -> np.ndarray | None`: what
  `normalize_score` would make of `scores`, or None to go through `normalize_score`.

They must decide exactly as the per-node methods do; tests/framework/test_vectorised.py
compares both paths on random clusters and pods.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ..cache.node_arrays import NodeArrays
from ..model import LabelSelector, NodeInfo, NodeSelector, NodeSelectorTerm, Requirement
from ..model.selectors import _parse_int64
from ..model.taints import find_untolerated
from .types import NodePluginScores

OBJECT_NAME_FIELD = "metadata.name"


class NodeView(list):
    """NodeInfos (a list, as the per-node methods expect) that also know their rows in the
    snapshot's NodeArrays: `idx[k]` is the row of `self[k]`, or `idx` is None when the view is
    the whole snapshot in order."""

    __slots__ = ("_taken", "arrays", "idx")

    def __init__(self, items: Iterable[NodeInfo], arrays: NodeArrays, idx: np.ndarray | None = None) -> None:
        super().__init__(items)
        self.arrays = arrays
        self.idx = idx
        self._taken: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def take(self, column: np.ndarray) -> np.ndarray:
        """`column` (one entry per snapshot node) restricted to this view, in its order
        (taken once per column: plugins share it and must not write to it)."""
        if self.idx is None:
            return column
        got = self._taken.get(id(column))
        if got is None or got[0] is not column:
            # The entry holds the column itself, so that its id cannot be reused meanwhile.
            got = self._taken[id(column)] = (column, column[self.idx])
        return got[1]


class AllNodes:
    """The whole snapshot, in order, as filter_all sees it: like a NodeView with `idx` None,
    without copying the node list (len, indexing and iteration go to the snapshot's list)."""

    __slots__ = ("arrays", "idx", "items")

    def __init__(self, items: Sequence[NodeInfo], arrays: NodeArrays) -> None:
        self.items = items
        self.arrays = arrays
        self.idx = None

    def take(self, column: np.ndarray) -> np.ndarray:
        return column

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, k: int) -> NodeInfo:
        return self.items[k]

    def __iter__(self) -> Iterator[NodeInfo]:
        return iter(self.items)


class ScoreTable:
    """The scores of a vectorised Score phase: totals and weighted per-plugin arrays, aligned
    with `nodes`. `to_list()` gives the NodePluginScores the per-node path returns."""

    __slots__ = ("_list", "nodes", "per_plugin", "totals")

    def __init__(self, nodes: Sequence[NodeInfo], totals: np.ndarray, per_plugin: dict[str, np.ndarray]) -> None:
        self.nodes = nodes
        self.totals = totals
        self.per_plugin = per_plugin
        self._list: list[NodePluginScores] | None = None

    def name(self, k: int) -> str:
        return self.nodes[k].name

    def to_list(self) -> list[NodePluginScores]:
        if self._list is None:
            cols = {name: arr.tolist() for name, arr in self.per_plugin.items()}
            totals = self.totals.tolist()
            out = []
            for k, ni in enumerate(self.nodes):
                out.append(NodePluginScores(ni.name, {p: col[k] for p, col in cols.items()}, totals[k]))
            self._list = out
        return self._list

    def __len__(self) -> int:
        return len(self.nodes)


class RowCache:
    """Per-node values of functions of one node's state (say, a plugin's score for a given pod
    request), for every row of a NodeArrays, kept current by recomputing only the rows updated
    since: `compute_all(arrays)` fills a whole column (vectorised), `compute_row(node_info)` one
    value (the per-node code). At most `limit` keys are kept."""

    __slots__ = ("_arrays", "_entries", "limit")

    def __init__(self, limit: int = 16) -> None:
        self._arrays: Any = None
        self._entries: dict[Any, list[Any]] = {}  # key -> [values, epoch, seen]
        self.limit = limit

    def get(self, arrays: NodeArrays, key: Any, compute_all: Any, compute_row: Any) -> np.ndarray | None:
        if self._arrays is not arrays:
            self._arrays = arrays
            self._entries = {}
        entry = self._entries.get(key)
        if entry is not None:
            rows = arrays.changed_since(entry[1], entry[2])
            if rows is not None:
                values = entry[0]
                if rows:
                    infos = arrays.infos
                    for i in set(rows):
                        values[i] = compute_row(infos[i])
                    entry[2] = len(arrays.changes)
                return values  # type: ignore[no-any-return]
        values = compute_all(arrays)
        if values is None:
            return None
        if len(self._entries) >= self.limit:
            self._entries.pop(next(iter(self._entries)))
        self._entries[key] = [values, arrays.epoch, len(arrays.changes)]
        return values  # type: ignore[no-any-return]


# ---- scores --------------------------------------------------------------------------------

def default_normalize_all(max_priority: int, reverse: bool, scores: np.ndarray) -> np.ndarray:
    """plugins/_helper.default_normalize_score on an array."""
    max_count = int(scores.max()) if scores.size else 0
    if max_count <= 0:
        if reverse:
            return np.full(scores.shape, max_priority, dtype=np.int64)
        return scores
    out = max_priority * scores // max_count
    return max_priority - out if reverse else out


_BIT_LENGTHS = np.zeros(1, dtype=np.int64)


def _bit_lengths(upto: int) -> np.ndarray:
    """int.bit_length of 0..upto (at least), as an array."""
    global _BIT_LENGTHS
    if _BIT_LENGTHS.shape[0] <= upto:
        size = max(upto + 1, 2 * _BIT_LENGTHS.shape[0], 1024)
        _BIT_LENGTHS = np.array([i.bit_length() for i in range(size)], dtype=np.int64)
    return _BIT_LENGTHS


def _zero_draws_words(rng: random.Random, ties: list[int], bits: list[int]) -> list[bool]:
    """For each c in `ties`, whether rng.randrange(c) would return 0, drawing exactly as it does.

    CPython's randrange(c) is _randbelow_with_getrandbits: getrandbits(c.bit_length()), retried
    while >= c; getrandbits(b) for b <= 32 is the next 32-bit Mersenne Twister output shifted
    right by 32 - b, and getrandbits(32 * k) is the next k outputs, first one lowest. So the
    outputs can be fetched k at a time (k = draws still to do, never more than are used)."""
    total = len(ties)
    out = [False] * total
    j = 0
    getrandbits = rng.getrandbits
    while j < total:
        need = total - j
        words = np.frombuffer(getrandbits(32 * need).to_bytes(4 * need, "little"), dtype="<u4").tolist()
        p = 0
        while p < need and j < total:
            c = ties[j]
            shift = 32 - bits[j]
            r = words[p] >> shift
            p += 1
            while r >= c:
                if p < need:
                    r = words[p] >> shift
                    p += 1
                else:
                    r = getrandbits(bits[j])
            out[j] = r == 0
            j += 1
    return out


def _zero_draws_randrange(rng: Any, ties: list[int]) -> list[bool]:
    randrange = rng.randrange
    return [randrange(c) == 0 for c in ties]


def _words_match_randrange() -> bool:
    """Whether _zero_draws_words agrees with randrange on this Python (checked once)."""
    ties = [2 + (i * 7919) % 600 for i in range(3000)] + [2, 3, 1 << 20, (1 << 31) - 1]
    bits = [c.bit_length() for c in ties]
    for seed in (1, 20240601):
        a, b = random.Random(seed), random.Random(seed)
        if _zero_draws_words(a, ties, bits) != _zero_draws_randrange(b, ties) or a.random() != b.random():
            return False
    return True


_WORDS_OK = _words_match_randrange()


def _is_plain_random(rng: Any) -> bool:
    return _WORDS_OK and type(rng) is random.Random


def select_index(totals: np.ndarray, rng: Any) -> int:
    """The index select_host would pick among `totals`, drawing exactly the same random numbers.

    select_host keeps the best so far and, for each later node equal to it, draws
    `rng.randrange(ties)`; the k-th node tying with the running maximum replaces the best when
    that draw is 0. The draws happen at the positions equal to the running maximum of the
    nodes before them, with `ties` = how many nodes so far equal that maximum."""
    m = int(totals.shape[0])
    if m == 1:
        return 0
    running = np.maximum.accumulate(totals)
    tie_pos = np.flatnonzero(totals[1:] == running[:-1]) + 1
    best = int(np.argmax(totals))  # first node with the final maximum
    if tie_pos.size == 0:
        return best
    vals = running[tie_pos]
    t = tie_pos.size
    new_group = np.empty(t, dtype=bool)
    new_group[0] = True
    np.not_equal(vals[1:], vals[:-1], out=new_group[1:])
    k = np.arange(t)
    group_start = np.maximum.accumulate(np.where(new_group, k, 0))
    ties_arr = k - group_start + 2
    final = totals[best]
    first_final = int(np.searchsorted(vals, final)) if vals[-1] == final else t
    ties = ties_arr.tolist()
    top = int(ties_arr.max())
    if _is_plain_random(rng) and top < (1 << 31):
        zeros = _zero_draws_words(rng, ties, _bit_lengths(top)[ties_arr].tolist())
    else:
        zeros = _zero_draws_randrange(rng, ties)
    for j in range(t - 1, first_final - 1, -1):
        if zeros[j]:
            return int(tie_pos[j])
    return best


# ---- node selectors over label columns -------------------------------------------------------

def _lut_mask(arrays: NodeArrays, key: str, when_absent: bool, pick: Any) -> np.ndarray:
    """A per-node mask from a per-value verdict: `pick(value) -> bool` for each known value."""
    codes = arrays.label_codes(key)
    values = arrays.label_values(key)
    lut = np.empty(len(values), dtype=bool)
    lut[0] = when_absent
    for c in range(1, len(values)):
        lut[c] = pick(values[c])
    result: np.ndarray = lut[codes]
    return result


def requirement_mask(arrays: NodeArrays, r: Requirement) -> np.ndarray:
    """Requirement.matches(node labels) for every node."""
    n = arrays.n
    if r.invalid:
        return np.zeros(n, dtype=bool)
    op = r.operator
    if op == "Exists" or op == "DoesNotExist":
        present: np.ndarray = arrays.label_codes(r.key) != 0
        return present if op == "Exists" else ~present
    if op == "In" or op == "NotIn":
        codes = arrays.label_codes(r.key)
        size = len(arrays.label_values(r.key))
        lut = np.zeros(size, dtype=bool) if op == "In" else np.ones(size, dtype=bool)
        for v in r.values:
            c = arrays.label_code_of(r.key, v)
            if c:
                lut[c] = op == "In"
        matched: np.ndarray = lut[codes]
        return matched
    bound = r.int_value
    assert bound is not None
    if op == "Gt":
        def pick(v: str) -> bool:
            have = _parse_int64(v)
            return have is not None and have > bound
    else:
        def pick(v: str) -> bool:
            have = _parse_int64(v)
            return have is not None and have < bound
    return _lut_mask(arrays, r.key, False, pick)


def name_field_mask(arrays: NodeArrays, f: Requirement) -> np.ndarray:
    """A matchFields requirement on metadata.name (In / NotIn) for every node."""
    mask = np.zeros(arrays.n, dtype=bool)
    pos = arrays.pos
    for v in f.values:
        i = pos.get(v)
        if i is not None:
            mask[i] = True
    if f.operator == "In":
        return mask
    return ~mask


def term_mask(arrays: NodeArrays, term: NodeSelectorTerm) -> np.ndarray:
    """NodeSelectorTerm.matches for every node (an empty term matches nothing)."""
    n = arrays.n
    if not term.requirements and not term.fields:
        return np.zeros(n, dtype=bool)
    mask = np.ones(n, dtype=bool)
    for r in term.requirements:
        mask &= requirement_mask(arrays, r)
    for f in term.fields:
        if f.key != OBJECT_NAME_FIELD:
            # Only metadata.name is supported (NodeSelectorTerm.from_dict refuses the rest).
            return np.zeros(n, dtype=bool)
        if f.invalid:
            return np.zeros(n, dtype=bool)
        mask &= name_field_mask(arrays, f)
    return mask


def selector_mask(arrays: NodeArrays, selector: NodeSelector) -> np.ndarray:
    """NodeSelector.matches (terms ORed) for every node."""
    mask = np.zeros(arrays.n, dtype=bool)
    for t in selector.terms:
        mask |= term_mask(arrays, t)
    return mask


def labels_mask(arrays: NodeArrays, labels: Mapping[str, str]) -> np.ndarray:
    """Every node whose labels include all of `labels` (a nodeSelector)."""
    mask = np.ones(arrays.n, dtype=bool)
    for k, v in labels.items():
        c = arrays.label_code_of(k, v)
        if not c:
            return np.zeros(arrays.n, dtype=bool)
        mask &= arrays.label_codes(k) == c
    return mask


def label_selector_key(selector: LabelSelector | None) -> tuple[Any, ...] | None:
    """A hashable form of a LabelSelector: equal keys, equal matches."""
    if selector is None:
        return None
    return (tuple(sorted(selector.match_labels.items())), tuple(requirement_key(r) for r in selector.requirements))


def untolerated_free_mask(arrays: NodeArrays, tolerations: Sequence[Any]) -> np.ndarray:
    """Per node: no NoSchedule/NoExecute taint that `tolerations` leave untolerated
    (find_untolerated(node.taints, tolerations) is None); decided once per distinct taint list."""
    hard = arrays.hard_taints
    if not hard.any():
        return np.ones(arrays.n, dtype=bool)
    ids = arrays.taint_id
    lut = np.ones(len(arrays.taint_sets), dtype=bool)
    for tid in np.unique(ids[hard]).tolist():
        lut[tid] = find_untolerated(arrays.taint_sets[tid], tolerations) is None
    return lut[ids]


def required_node_affinity_mask(arrays: NodeArrays, node_selector: Mapping[str, str],
                                required: NodeSelector | None) -> np.ndarray:
    """Per node: nodeaffinity.GetRequiredNodeAffinity(pod).Match(node) (nodeSelector and the
    required terms), for nodes that exist."""
    mask = labels_mask(arrays, node_selector)
    if required is not None:
        mask &= selector_mask(arrays, required)
    return mask


def arrays_for(handle: Any, nodes: Sequence[NodeInfo]) -> NodeArrays | None:
    """The snapshot's NodeArrays when a plugin may take its vectorised path over `nodes` (the
    whole snapshot, on a framework that vectorises), else None."""
    if not getattr(handle, "vectorise", False) or len(nodes) < getattr(handle, "vector_min_nodes", 0):
        return None
    snapshot = getattr(handle, "snapshot", None)
    if snapshot is None or getattr(snapshot, "node_infos", None) is not nodes:
        return None
    arrays = getattr(snapshot, "arrays", None)
    return arrays() if arrays is not None else None


def snapshot_arrays(handle: Any) -> NodeArrays | None:
    """The snapshot's NodeArrays when the framework vectorises this cycle, else None (for
    plugins whose PreFilter/PreScore read the whole snapshot whatever nodes they are given)."""
    snapshot = getattr(handle, "snapshot", None)
    if snapshot is None or not getattr(handle, "vectorise", False):
        return None
    if len(snapshot) < getattr(handle, "vector_min_nodes", 0):
        return None
    arrays = getattr(snapshot, "arrays", None)
    return arrays() if arrays is not None else None


def requirement_key(r: Requirement) -> tuple[Any, ...]:
    return (r.key, r.operator, tuple(sorted(r.values)), r.int_value, r.invalid)


def term_key(t: NodeSelectorTerm) -> tuple[Any, ...]:
    return (tuple(requirement_key(r) for r in t.requirements), tuple(requirement_key(f) for f in t.fields))


def selector_key(selector: NodeSelector | None) -> tuple[Any, ...] | None:
    if selector is None:
        return None
    return tuple(term_key(t) for t in selector.terms)


class MaskCache:
    """Masks keyed by a structural key, valid for one `label_version` of one NodeArrays."""

    __slots__ = ("_arrays", "_masks", "_version", "limit")

    def __init__(self, limit: int = 256) -> None:
        self._arrays: Any = None
        self._version = -1
        self._masks: dict[Any, np.ndarray] = {}
        self.limit = limit

    def get(self, arrays: NodeArrays, key: Any) -> np.ndarray | None:
        if self._arrays is not arrays or self._version != arrays.label_version:
            self._arrays = arrays
            self._version = arrays.label_version
            self._masks = {}
            return None
        return self._masks.get(key)

    def put(self, key: Any, mask: np.ndarray) -> np.ndarray:
        if len(self._masks) >= self.limit:
            self._masks.clear()
        mask.flags.writeable = False
        self._masks[key] = mask
        return mask
