"""The cyclic garbage collector around the initial sync.

The initial lists allocate the whole cache at once (at 5000 nodes and 5000 pods: the parsed JSON,
the Pod and Node views, the NodeInfos): hundreds of thousands of objects that live as long as the
process. Each burst of allocations sets off a collection, and every older-generation collection
walks all of them again, finding nothing to free: it more than doubled the time from the first
list to the synced cache (benchmarks/PROFILE.md, "Start-up"). So the collector is off while the
lists are applied, and what exists once they are is frozen (`gc.freeze`: moved to a generation the
collector no longer walks); later garbage is collected as before, with higher thresholds
(`RUNNING_THRESHOLDS`).

Why higher: while the scheduler binds, every pod it stores (the parsed JSON of its watch events,
its views) is a net allocation of tracked objects, so CPython's default thresholds (700, 10, 10)
set off a collection every few pods and a full one every 100 young ones. Against a real API
server at 500 nodes (2,000 pods pending at start, 3,000 more created) that was 1,500 young, 140
middle and 12 full collections, 1.2-1.7 s of 6.7-7.8 CPU seconds (the full ones 80-95 ms each,
walking every pod bound since the sync). With (20000, 20, 100): 25-29 young, 1 middle, no full
one, 0.3-0.35 s, and the CPU per pod 0.96-1.08 ms instead of 1.27-1.39
(benchmarks/PROFILE.md, "The collector's thresholds"). Most garbage is freed by reference
counting; a cycle that dies young is still found by the next young collection (every 20,000 net
allocations), and one that outlives it by a later one: the churn run keeps its plateau.

`kubeberth run` turns the collector off from its first line (`pause_for_start_up`, called by the
console script before the imports): the initial sync turns it on again.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

_paused_for_start_up = False
# The thresholds once the initial sync is done (CPython's default: 700, 10, 10).
RUNNING_THRESHOLDS = (20_000, 20, 100)


def pause_for_start_up() -> None:
    """The collector off until the first `collector_paused` body has run (the initial sync)."""
    global _paused_for_start_up
    _paused_for_start_up = True
    gc.disable()


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection while the body runs; then the survivors frozen and the collector back
    on (if it was on, or was paused for the start-up) with `RUNNING_THRESHOLDS`."""
    global _paused_for_start_up
    was_enabled = gc.isenabled() or _paused_for_start_up
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        _paused_for_start_up = False
        if was_enabled:
            gc.set_threshold(*RUNNING_THRESHOLDS)
            gc.enable()
