"""backoffQ (upstream's backoffQueue): pods waiting out their backoff before another try.

Two heaps: pods rejected by plugins, ordered by backoff expiry and then as activeQ orders them
(so that popping from backoffQ when activeQ is empty takes the right one), and pods that failed
with an error, ordered by expiry and never popped early. Expiries are aligned to one-second
windows (upstream's backoffQOrderingWindowDuration): a pod is backing off while its expiry is at
or after the start of the current window.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

from ..clock import Clock
from ..framework.types import QueuedPodInfo
from .heap import Heap
from .profile import QueueProfile, fallback_less

ORDERING_WINDOW_SECONDS = 1.0


def _key(q: QueuedPodInfo) -> str:
    return q.key


def align_to_window(t: float) -> float:
    return math.floor(t / ORDERING_WINDOW_SECONDS) * ORDERING_WINDOW_SECONDS


class BackoffQueue:
    def __init__(self, clock: Clock, profile_of: Callable[[str], QueueProfile | None]) -> None:
        self.clock = clock
        self._profile_of = profile_of
        self._rejected: Heap[QueuedPodInfo] = Heap(_key, self._less_with_priority)
        self._errors: Heap[QueuedPodInfo] = Heap(_key, self._less)

    # ---- backoff time ------------------------------------------------------------
    def expiry(self, q: QueuedPodInfo) -> float | None:
        """When the pod's backoff completes (cached on the info until it fails again); None: no
        backoff (never failed, or the profile's podMaxBackoffSeconds is 0)."""
        if q.backoff_expiry is not None:
            return q.backoff_expiry if q.backoff_expiry >= 0 else None
        prof = self._profile_of(q.pod.scheduler_name) or QueueProfile("", fallback_less)
        count = q.consecutive_errors or q.unschedulable_count
        if prof.max_backoff == 0 or count == 0:
            q.backoff_expiry = -1.0
            return None
        q.backoff_expiry = align_to_window(q.timestamp + prof.backoff_duration(count))
        return q.backoff_expiry

    def is_backing_off(self, q: QueuedPodInfo) -> bool:
        expiry = self.expiry(q)
        return expiry is not None and expiry >= align_to_window(self.clock.now())

    def _less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return (self.expiry(a) or 0.0) < (self.expiry(b) or 0.0)

    def _less_with_priority(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        ea, eb = self.expiry(a) or 0.0, self.expiry(b) or 0.0
        if ea != eb:
            return ea < eb
        pa = self._profile_of(a.pod.scheduler_name)
        pb = self._profile_of(b.pod.scheduler_name)
        same_sort = pa is not None and pb is not None and (
            pa is pb or (bool(pa.queue_sort_name) and pa.queue_sort_name == pb.queue_sort_name))
        return pa.less(a, b) if same_sort and pa is not None else fallback_less(a, b)

    # ---- contents ----------------------------------------------------------------
    def add(self, q: QueuedPodInfo) -> None:
        """Into the error heap when no plugin rejected the pod (it failed with an error)."""
        uid = q.key
        if q.unschedulable_plugins or q.pending_plugins:
            self._errors.delete(uid)
            self._rejected.add_or_update(q)
        else:
            self._rejected.delete(uid)
            self._errors.add_or_update(q)

    def delete(self, uid: str) -> QueuedPodInfo | None:
        got = self._rejected.delete(uid)
        return got if got is not None else self._errors.delete(uid)

    def get(self, uid: str) -> QueuedPodInfo | None:
        got = self._rejected.get(uid)
        return got if got is not None else self._errors.get(uid)

    def update(self, q: QueuedPodInfo) -> None:
        """The pod changed in place (its order may have)."""
        if q.key in self._rejected:
            self._rejected.add_or_update(q)
        elif q.key in self._errors:
            self._errors.add_or_update(q)

    def reorder(self) -> None:
        """A profile's order or backoff settings changed."""
        for heap in (self._rejected, self._errors):
            for q in list(heap):
                q.backoff_expiry = None
                heap.add_or_update(q)

    def pop_rejected(self) -> QueuedPodInfo | None:
        """The head of the rejected pods, backing off or not (upstream's popBackoff, used when
        activeQ is empty)."""
        return self._rejected.pop()

    def pop_all_completed(self) -> list[QueuedPodInfo]:
        out: list[QueuedPodInfo] = []
        for heap in (self._rejected, self._errors):
            while True:
                head = heap.peek()
                if head is None or self.is_backing_off(head):
                    break
                heap.pop()
                out.append(head)
        return out

    def next_expiry(self) -> float | None:
        """The earliest moment a pod here stops backing off; None when empty."""
        times = [t for t in (self._head_done(self._rejected), self._head_done(self._errors)) if t is not None]
        return min(times) if times else None

    def _head_done(self, heap: Heap[QueuedPodInfo]) -> float | None:
        head = heap.peek()
        if head is None:
            return None
        expiry = self.expiry(head)
        # Backing off while the expiry is at or after the start of the current window.
        return expiry + ORDERING_WINDOW_SECONDS if expiry is not None else self.clock.now()

    def has_rejected(self) -> bool:
        return len(self._rejected) > 0

    def sorted(self) -> list[QueuedPodInfo]:
        return sorted([*self._rejected.sorted(), *self._errors.sorted()],
                      key=lambda q: self.expiry(q) or 0.0)

    def __contains__(self, uid: str) -> bool:
        return uid in self._rejected or uid in self._errors

    def __len__(self) -> int:
        return len(self._rejected) + len(self._errors)

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        yield from self._rejected
        yield from self._errors
