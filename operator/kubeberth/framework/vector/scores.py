"""Score arrays: default normalisation and select_host's tie-breaking, drawing as it does."""

from __future__ import annotations

import random
from typing import Any

import numpy as np

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
    """plugins/_helper.default_normalize_score on an array."""
    if is_zero_scores(scores):
        return np.full(scores.shape, max_priority, dtype=np.int64) if reverse else scores
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
