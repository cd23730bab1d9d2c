"""The scheduling cycle's own failures, besides FitError (no node fits, framework/types.py)."""

from __future__ import annotations

from ..framework import Status


class SchedulingError(Exception):
    """The cycle failed for a reason other than no node fitting (a plugin Error)."""

    def __init__(self, status: Status) -> None:
        self.status = status
        super().__init__(status.message())


class NoNodesAvailable(SchedulingError):
    """upstream's ErrNoNodesAvailable: the snapshot (or the placement tried) has no node."""

    def __init__(self) -> None:
        super().__init__(Status.error("no nodes available to schedule pods"))
