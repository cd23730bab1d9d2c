"""Score arrays: default normalisation and select_host's tie-breaking."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..tie_break import RESERVOIR_RULE, TieBreak

_ZERO_BASE = np.zeros(0, dtype=np.int64)


def zero_scores(m: int) -> np.ndarray:
    """m zero scores, read-only: what `score_all` returns when the plugin has nothing to score
    for the pod (DynamicResources for a pod without claims; upstream still calls it for every
    node). The Score runner then adds nothing and checks nothing (see is_zero_scores)."""
    global _ZERO_BASE
    if _ZERO_BASE.shape[0] < m:
        base = np.zeros(max(m, 2 * _ZERO_BASE.shape[0], 1024), dtype=np.int64)
        base.flags.writeable = False
        _ZERO_BASE = base
    return _ZERO_BASE[:m]


def is_zero_scores(scores: np.ndarray) -> bool:
    """Whether `scores` came from zero_scores (all zero: no need to look)."""
    return scores.base is _ZERO_BASE


def default_normalize_all(max_priority: int, reverse: bool, scores: np.ndarray) -> np.ndarray:
    """`default_normalize_score` (framework/scoring.py) on an array."""
    if is_zero_scores(scores):
        return np.full(scores.shape, max_priority, dtype=np.int64) if reverse else scores
    max_count = int(scores.max()) if scores.size else 0
    if max_count <= 0:
        if reverse:
            return np.full(scores.shape, max_priority, dtype=np.int64)
        return scores
    out = max_priority * scores // max_count
    return max_priority - out if reverse else out


def select_index(totals: np.ndarray, rng: Any, tie_break: TieBreak | None = None,
                 name_of: Callable[[int], str] | None = None, nodes: Sequence[Any] | None = None) -> int:
    """The index select_host picks among `totals`: the highest total; among the indexes that
    share it (in order), the one `tie_break` picks (given `name_of`, each index's node name, and
    `nodes`, the NodeView the totals are of, for its faster path), by default upstream's
    reservoir rule: the one `rng.randrange(count)` names."""
    best = totals.max()
    top = np.flatnonzero(totals == best)
    if top.shape[0] == 1:
        return int(top[0])
    rule = tie_break if tie_break is not None else RESERVOIR_RULE
    if nodes is not None:
        got = rule.pick_rows(top, nodes)
        if got is not None:
            return got
    return int(rule.pick(top.tolist(), name_of if name_of is not None else str, rng))
