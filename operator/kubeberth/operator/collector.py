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
counting, and a cycle that dies young is still found by the next young collection (every 20,000
net allocations). But a cycle that dies old waits for a full collection, which such thresholds
leave to chance: a 22-minute churn grew 2.5 MiB a minute. So the running thresholds are (20000,
10, 10), and a full collection also comes every `FULL_COLLECTION_INTERVAL` seconds (a timer on
the event loop): garbage is bounded by what a few minutes make, for a pause of tens of
milliseconds every few minutes.

`kubeberth run` turns the collector off from its first line (`pause_for_start_up`, called by the
console script before the imports): the initial sync turns it on again.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Iterator

_paused_for_start_up = False
# The thresholds once the initial sync is done (CPython's default: 700, 10, 10).
RUNNING_THRESHOLDS = (20_000, 10, 10)
# Seconds between the full collections the running thresholds would make too rarely.
FULL_COLLECTION_INTERVAL = 120.0
_full_collections: tuple[asyncio.AbstractEventLoop, asyncio.TimerHandle] | None = None


def pause_for_start_up() -> None:
    """The collector off until the first `collector_paused` body has run (the initial sync)."""
    global _paused_for_start_up
    _paused_for_start_up = True
    gc.disable()


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection while the body runs; then the survivors frozen and the collector back
    on (if it was on, or was paused for the start-up) with `RUNNING_THRESHOLDS`, and, inside an
    event loop, a full collection every `FULL_COLLECTION_INTERVAL` seconds from then on."""
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
            schedule_full_collections()


def schedule_full_collections(interval: float = FULL_COLLECTION_INTERVAL) -> bool:
    """A full collection every `interval` seconds on the running event loop, once per loop (the
    timer goes with it). False when no loop runs or its timer is already set."""
    global _full_collections
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return False
    if _full_collections is not None and _full_collections[0] is loop:
        return False

    def collect() -> None:
        global _full_collections
        if gc.isenabled():
            gc.collect()
        _full_collections = (loop, loop.call_later(interval, collect))

    _full_collections = (loop, loop.call_later(interval, collect))
    return True
