"""Score helpers for plugins (upstream's plugins/helper DefaultNormalizeScore)."""

from __future__ import annotations

from .types import NodeScore


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> None:
    """Scale scores to 0..max_priority by the highest one, in place; `reverse` flips them.

    All zero: unchanged, or all max_priority when reversed (upstream's
    helper.DefaultNormalizeScore, with its integer division). `default_normalize_all` is the
    same on an array of scores.
    """
    max_count = 0
    for s in scores:
        if s.score > max_count:
            max_count = s.score
    if max_count == 0:
        if reverse:
            for s in scores:
                s.score = max_priority
        return
    for s in scores:
        score = max_priority * s.score // max_count
        s.score = max_priority - score if reverse else score
