"""The cyclic garbage collector around the initial sync.

The initial lists allocate the whole cache at once (at 5000 nodes and 5000 pods: the parsed JSON,
the Pod and Node views, the NodeInfos): hundreds of thousands of objects that live as long as the
process. Each burst of allocations sets off a collection, and every older-generation collection
walks all of them again, finding nothing to free: it more than doubled the time from the first
list to the synced cache (benchmarks/PROFILE.md, "Start-up"). So the collector is off while the
lists are applied, and what exists once they are is frozen (`gc.freeze`: moved to a generation the
collector no longer walks); later garbage is collected as before.

`kubeberth run` turns the collector off from its first line (`pause_for_start_up`, called by the
console script before the imports): the initial sync turns it on again.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

_paused_for_start_up = False


def pause_for_start_up() -> None:
    """The collector off until the first `collector_paused` body has run (the initial sync)."""
    global _paused_for_start_up
    _paused_for_start_up = True
    gc.disable()


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection while the body runs; then the survivors frozen and the collector back
    on (if it was on, or was paused for the start-up)."""
    global _paused_for_start_up
    was_enabled = gc.isenabled() or _paused_for_start_up
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        _paused_for_start_up = False
        if was_enabled:
            gc.enable()
