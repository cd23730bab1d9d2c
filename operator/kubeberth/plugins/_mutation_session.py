"""Whether the scheduler is within group preemption (DefaultPreemption's PodGroupPostFilter), which
upstream runs between the snapshot's StartMutations and EndMutations: plugins that read what the
mutable snapshot shows differently from the cycle's read it from here."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_IN_RERUN: ContextVar[bool] = ContextVar("kubeberth_placement_in_preemption_rerun", default=False)


@contextmanager
def preemption_rerun() -> Iterator[None]:
    """The scheduler runs group preemption (its re-runs of the group's algorithm) in the block."""
    token = _IN_RERUN.set(True)
    try:
        yield
    finally:
        _IN_RERUN.reset(token)


def in_preemption_rerun() -> bool:
    return _IN_RERUN.get()
