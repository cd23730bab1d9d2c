"""activeQ and the pods in flight (upstream's activeQueue): the pods ready to be tried, one heap
per profile, and the cluster events that arrive while popped pods are being scheduled."""

from __future__ import annotations

import functools
from collections import Counter, deque
from collections.abc import Callable, Iterator
from typing import Any

from ..framework.events import ClusterEvent
from ..framework.types import QueuedPodInfo
from .heap import Heap
from .profile import QueueProfile, fallback_less

POD_POPPED = "PodPopped"  # scheduler_inflight_events' label for the pods themselves


def _key(q: QueuedPodInfo) -> str:
    return q.key


class ActiveQueue:
    """One heap per profile; `pop` takes the best head, comparing heads of different profiles
    with their common QueueSort plugin (or, when they differ, higher priority then earlier
    timestamp), and equal ones in the order they entered."""

    def __init__(self, profile_of: Callable[[str], QueueProfile | None]) -> None:
        self._profile_of = profile_of
        self._heaps: dict[str, Heap[QueuedPodInfo]] = {}
        self._entered: dict[str, int] = {}  # uid -> when it entered (ties across profiles)
        self._seq = 0

    def set_profile(self, prof: QueueProfile) -> None:
        heap = self._heaps.get(prof.scheduler_name)
        if heap is None:
            self._heaps[prof.scheduler_name] = Heap(_key, prof.less)
        else:
            heap.set_less(prof.less)

    def drop_profile(self, scheduler_name: str) -> list[QueuedPodInfo]:
        removed = list(self._heaps.pop(scheduler_name, ()))
        for q in removed:
            self._entered.pop(q.key, None)
        return removed

    def serves(self, scheduler_name: str) -> bool:
        return scheduler_name in self._heaps

    def add(self, q: QueuedPodInfo) -> None:
        self._seq += 1
        self._entered[q.key] = self._seq
        self._heaps[q.pod.scheduler_name].add_or_update(q)

    def update(self, q: QueuedPodInfo) -> bool:
        """Re-place a pod already here after it changed; False when it is not here."""
        heap = self._heaps.get(q.pod.scheduler_name)
        if heap is None or q.key not in heap:
            return False
        heap.add_or_update(q)
        return True

    def get(self, uid: str) -> QueuedPodInfo | None:
        for h in self._heaps.values():
            q = h.get(uid)
            if q is not None:
                return q
        return None

    def delete(self, uid: str) -> QueuedPodInfo | None:
        for h in self._heaps.values():
            q = h.delete(uid)
            if q is not None:
                self._entered.pop(uid, None)
                return q
        return None

    def pop(self) -> QueuedPodInfo | None:
        best_heap: Heap[QueuedPodInfo] | None = None
        best: QueuedPodInfo | None = None
        for name, h in self._heaps.items():
            head = h.peek()
            if head is None:
                continue
            if best is None or self.less(head, best, name):
                best, best_heap = head, h
        if best is None or best_heap is None:
            return None
        best_heap.pop()
        self._entered.pop(best.key, None)
        return best

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo, a_profile: str) -> bool:
        pa = self._profile_of(a_profile)
        pb = self._profile_of(b.pod.scheduler_name)
        if pa is not None and pb is not None and (pa is pb or (pa.queue_sort_name and
                                                               pa.queue_sort_name == pb.queue_sort_name)):
            less = pa.less
        else:
            less = fallback_less
        if less(a, b):
            return True
        if less(b, a):
            return False
        return self._entered.get(a.key, 0) < self._entered.get(b.key, 0)

    def in_pop_order(self) -> list[QueuedPodInfo]:
        def cmp(a: QueuedPodInfo, b: QueuedPodInfo) -> int:
            if self.less(a, b, a.pod.scheduler_name):
                return -1
            if self.less(b, a, b.pod.scheduler_name):
                return 1
            return 0

        return sorted(self, key=functools.cmp_to_key(cmp))

    def __contains__(self, uid: str) -> bool:
        return any(uid in h for h in self._heaps.values())

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        for h in self._heaps.values():
            yield from h

    def __len__(self) -> int:
        return sum(len(h) for h in self._heaps.values())


class _Each(tuple[Any, ...]):
    """The new objects of events recorded together (InFlight.record_each)."""

    __slots__ = ()


class InFlight:
    """Popped pods not `done` yet, and the events seen meanwhile (upstream's inFlightPods and
    inFlightEvents): a pod that comes back unschedulable is checked against each of them."""

    def __init__(self) -> None:
        self._pods: dict[str, tuple[int, QueuedPodInfo]] = {}  # uid -> (log position when popped, info)
        # (position, event, old, new, target uid or "")
        self._events: deque[tuple[int, ClusterEvent, Any, Any, str]] = deque()
        self._pos = 0
        self.scheduling_cycle = 0

    def start(self, q: QueuedPodInfo) -> None:
        self.scheduling_cycle += 1
        self._pos += 1
        self._pods[q.key] = (self._pos, q)

    def record(self, event: ClusterEvent, old: Any, new: Any, target: str = "") -> None:
        if self._pods:
            self._pos += 1
            self._events.append((self._pos, event, old, new, target))

    def record_each(self, event: ClusterEvent, old: Any, news: list[Any], target: str = "") -> None:
        """`record(event, old, new, target)` for each of `news` in turn, kept as one entry (the
        positions it takes are consecutive: no pod is popped in between)."""
        if self._pods and news:
            self._pos += len(news)
            self._events.append((self._pos, event, old, _Each(news), target))

    def pod(self, uid: str) -> QueuedPodInfo | None:
        entry = self._pods.get(uid)
        return entry[1] if entry is not None else None

    def events_for(self, uid: str) -> Iterator[tuple[ClusterEvent, Any, Any, str]]:
        """The events that arrived since the pod was popped and may concern it."""
        entry = self._pods.get(uid)
        if entry is None:
            return
        for pos, event, old, new, target in self._events:
            if pos > entry[0] and (not target or target == uid):
                if type(new) is _Each:
                    for one in new:
                        yield event, old, one, target
                else:
                    yield event, old, new, target

    def done(self, uid: str) -> bool:
        if self._pods.pop(uid, None) is None:
            return False
        if not self._pods:
            self._events.clear()
            return True
        oldest = min(pos for pos, _ in self._pods.values())
        while self._events and self._events[0][0] < oldest:
            self._events.popleft()
        return True

    def counts(self) -> dict[str, int]:
        """scheduler_inflight_events: the pods being scheduled (PodPopped) and the events kept for them."""
        counts: Counter[str] = Counter()
        for _, event, _, new, _ in self._events:
            counts[event.label] += len(new) if type(new) is _Each else 1
        counts[POD_POPPED] = len(self._pods)
        return dict(counts)

    def __contains__(self, uid: str) -> bool:
        return uid in self._pods

    def __bool__(self) -> bool:
        return bool(self._pods)

    def has_events(self) -> bool:
        return bool(self._events)
