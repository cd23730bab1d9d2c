"""Upstream's reprieve, shared by a pod's victims and a group's units (SelectVictimsOnNode): with
every candidate removed and the preemptor fitting, each candidate is put back in turn, the ones
whose eviction would break a PodDisruptionBudget first, each list most important first; one the
preemptor still fits beside stays, any other is removed again and becomes a victim."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..framework.status import Status

T = TypeVar("T")


def _failed(status: Status | None) -> bool:
    return status is not None and not status.is_success()


def reprieve_in_order(violating: Sequence[tuple[T, int]], non_violating: Sequence[T], *,
                      add: Callable[[T], Status | None], remove: Callable[[T], Status | None],
                      fits: Callable[[], Status | None],
                      key: Callable[[T], Any]) -> tuple[list[T], int, Status | None]:
    """The victims (sorted by `key` when both lists had candidates, else in the order found), how
    many PDB violations they make (a violating candidate counts as its given number), and the
    first error of `add`/`remove` (then no victims)."""
    victims: list[T] = []

    def reprieved(candidate: T) -> tuple[bool, Status | None]:
        s = add(candidate)
        if _failed(s):
            return False, s
        if not _failed(fits()):
            return True, None
        s = remove(candidate)
        if _failed(s):
            return False, s
        victims.append(candidate)
        return False, None

    num_violating = 0
    for candidate, count in violating:
        kept, err = reprieved(candidate)
        if err is not None:
            return [], 0, err
        if not kept:
            num_violating += count
    for candidate in non_violating:
        _, err = reprieved(candidate)
        if err is not None:
            return [], 0, err
    if violating and non_violating:
        victims.sort(key=key)
    return victims, num_violating, None
