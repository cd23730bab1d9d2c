"""Node selectors, label sets and taints as per-node masks over the label columns."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ...cache.node_arrays import NodeArrays
from ...model import LabelSelector, NodeSelector, NodeSelectorTerm, Requirement
from ...model.selectors import OBJECT_NAME_FIELD, _parse_int64
from ...model.taints import find_untolerated


class _Columns:
    """The label columns of a NodeArrays, or its annotation columns, under one interface."""

    __slots__ = ("code_of", "codes", "values")

    def __init__(self, arrays: NodeArrays, annotations: bool) -> None:
        if annotations:
            self.codes, self.values, self.code_of = (
                arrays.annotation_codes, arrays.annotation_values, arrays.annotation_code_of)
        else:
            self.codes, self.values, self.code_of = arrays.label_codes, arrays.label_values, arrays.label_code_of


def _lut_mask(cols: _Columns, key: str, when_absent: bool, pick: Any) -> np.ndarray:
    """A per-node mask from a per-value verdict: `pick(value) -> bool` for each known value."""
    codes = cols.codes(key)
    values = cols.values(key)
    lut = np.empty(len(values), dtype=bool)
    lut[0] = when_absent
    for c in range(1, len(values)):
        lut[c] = pick(values[c])
    result: np.ndarray = lut[codes]
    return result


def _requirement_mask(arrays: NodeArrays, r: Requirement, cols: _Columns) -> np.ndarray:
    n = arrays.n
    if r.invalid:
        return np.zeros(n, dtype=bool)
    op = r.operator
    if op == "Exists" or op == "DoesNotExist":
        present: np.ndarray = cols.codes(r.key) != 0
        return present if op == "Exists" else ~present
    if op == "In" or op == "NotIn":
        codes = cols.codes(r.key)
        size = len(cols.values(r.key))
        lut = np.zeros(size, dtype=bool) if op == "In" else np.ones(size, dtype=bool)
        for v in r.values:
            c = cols.code_of(r.key, v)
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
    return _lut_mask(cols, r.key, False, pick)


def requirement_mask(arrays: NodeArrays, r: Requirement) -> np.ndarray:
    """Requirement.matches(node labels) for every node."""
    return _requirement_mask(arrays, r, _Columns(arrays, False))


def annotation_requirement_mask(arrays: NodeArrays, r: Requirement) -> np.ndarray:
    """Requirement.matches(node.annotations) for every node (a node-less row has none)."""
    return _requirement_mask(arrays, r, _Columns(arrays, True))


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


def _all_pairs_mask(n: int, pairs: Mapping[str, str], code_of: Callable[[str, str], int],
                    codes: Callable[[str], np.ndarray]) -> np.ndarray:
    """Every node whose column of each key holds that key's value (code 0: no node has it)."""
    mask = np.ones(n, dtype=bool)
    for k, v in pairs.items():
        c = code_of(k, v)
        if not c:
            return np.zeros(n, dtype=bool)
        mask &= codes(k) == c
    return mask


def labels_mask(arrays: NodeArrays, labels: Mapping[str, str]) -> np.ndarray:
    """Every node whose labels include all of `labels` (a nodeSelector)."""
    return _all_pairs_mask(arrays.n, labels, arrays.label_code_of, arrays.label_codes)


def annotations_mask(arrays: NodeArrays, annotations: Mapping[str, str]) -> np.ndarray:
    """Every node whose annotations include all of `annotations` (key and value)."""
    return _all_pairs_mask(arrays.n, annotations, arrays.annotation_code_of, arrays.annotation_codes)


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


def requirement_key(r: Requirement) -> tuple[Any, ...]:
    """A hashable form of a Requirement (to key a MaskCache by): equal keys, equal matches."""
    return (r.key, r.operator, tuple(sorted(r.values)), r.int_value, r.invalid)


def term_key(t: NodeSelectorTerm) -> tuple[Any, ...]:
    """A hashable form of a NodeSelectorTerm: equal keys, equal matches."""
    return (tuple(requirement_key(r) for r in t.requirements), tuple(requirement_key(f) for f in t.fields))


def selector_key(selector: NodeSelector | None) -> tuple[Any, ...] | None:
    """A hashable form of a NodeSelector (None for None): equal keys, equal matches."""
    if selector is None:
        return None
    return tuple(term_key(t) for t in selector.terms)
