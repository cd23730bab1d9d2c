"""A keyed binary heap (upstream's backend/heap): O(log n) add, update, delete and pop by key."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class Heap(Generic[T]):
    """Items ordered by `less`; `key` identifies an item for update/delete.

    Items that `less` does not order either way keep their insertion order (a
    sequence number taken when added; an update keeps it), so a heap of equal
    items is FIFO and the order is deterministic.
    """

    __slots__ = ("_index", "_items", "_key", "_less", "_seq", "_seqs")

    def __init__(self, key: Callable[[T], str], less: Callable[[T, T], bool]) -> None:
        self._key = key
        self._less = less
        self._items: list[T] = []
        self._seqs: list[int] = []
        self._index: dict[str, int] = {}
        self._seq = 0

    # ---- ordering ----------------------------------------------------------------
    def set_less(self, less: Callable[[T, T], bool]) -> None:
        """Change the order and re-heapify (a profile's QueueSort was replaced)."""
        self._less = less
        for i in range(len(self._items) // 2 - 1, -1, -1):
            self._down(i)

    def _lt(self, i: int, j: int) -> bool:
        a, b = self._items[i], self._items[j]
        if self._less(a, b):
            return True
        if self._less(b, a):
            return False
        return self._seqs[i] < self._seqs[j]

    def _swap(self, i: int, j: int) -> None:
        items, seqs = self._items, self._seqs
        items[i], items[j] = items[j], items[i]
        seqs[i], seqs[j] = seqs[j], seqs[i]
        self._index[self._key(items[i])] = i
        self._index[self._key(items[j])] = j

    def _up(self, i: int) -> None:
        while i > 0:
            parent = (i - 1) // 2
            if not self._lt(i, parent):
                break
            self._swap(i, parent)
            i = parent

    def _down(self, i: int) -> None:
        n = len(self._items)
        while True:
            left = 2 * i + 1
            if left >= n:
                return
            smallest = left
            right = left + 1
            if right < n and self._lt(right, left):
                smallest = right
            if not self._lt(smallest, i):
                return
            self._swap(i, smallest)
            i = smallest

    # ---- operations ----------------------------------------------------------------
    def add_or_update(self, item: T) -> None:
        k = self._key(item)
        i = self._index.get(k)
        if i is not None:
            # Updated in place: it keeps its place among equals.
            self._items[i] = item
            self._up(i)
            self._down(self._index[k])
            return
        self._seq += 1
        self._items.append(item)
        self._seqs.append(self._seq)
        i = len(self._items) - 1
        self._index[k] = i
        self._up(i)

    def delete(self, key: str) -> T | None:
        i = self._index.pop(key, None)
        if i is None:
            return None
        item = self._items[i]
        last = len(self._items) - 1
        if i != last:
            self._items[i] = self._items[last]
            self._seqs[i] = self._seqs[last]
            self._index[self._key(self._items[i])] = i
        self._items.pop()
        self._seqs.pop()
        if i < len(self._items):
            moved = self._key(self._items[i])
            self._up(i)
            self._down(self._index[moved])
        return item

    def peek(self) -> T | None:
        return self._items[0] if self._items else None

    def pop(self) -> T | None:
        if not self._items:
            return None
        return self.delete(self._key(self._items[0]))

    def get(self, key: str) -> T | None:
        i = self._index.get(key)
        return self._items[i] if i is not None else None

    def __contains__(self, key: str) -> bool:
        return key in self._index

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[T]:
        """In no particular order."""
        return iter(list(self._items))

    def sorted(self) -> list[T]:
        """Items in pop order (O(n log n); for tests and debugging)."""

        def cmp(i: int, j: int) -> int:
            return -1 if self._lt(i, j) else 1 if self._lt(j, i) else 0

        order = sorted(range(len(self._items)), key=functools.cmp_to_key(cmp))
        return [self._items[i] for i in order]
