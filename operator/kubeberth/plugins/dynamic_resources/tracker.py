"""The devices claims hold, kept up to date from one pod to the next (most pods see one claim
change: their predecessor's), and the allocator DynamicResources' PreFilter builds over them.

With an ObjectStore that logs changes (`ObjectStore.changes`), a pod's PreFilter costs what
changed since the previous one: the claims put and deleted, and the slices only when a
ResourceSlice or DeviceTaintRule changed; otherwise every claim is looked at again."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ...cache.objects import object_key
from . import capacity
from .allocator import Allocator
from .claims import DEVICE_CLASS, RESOURCE_CLAIM, RESOURCE_SLICE, allocated_device_ids, allocation
from .devices import DeviceID, Slice, parse_slices
from .pools import SliceIndex
from .taint_rules import apply_taint_rules

DEVICE_TAINT_RULE = "DeviceTaintRule"
LOG_MAX = 65536


class HeldDevices:
    """The devices held (by the claims in the store, and `extra`: in flight), as a read-only set;
    valid until the tracker's next `allocator` call. `log[k]` is the k-th change of the held set
    since position `log_base` (device, +1 added / -1 released): readers keep counts current."""

    __slots__ = ("extra", "held", "log", "log_base", "source")

    def __init__(self, source: object, held: Mapping[DeviceID, int], extra: set[DeviceID],
                 log: list[tuple[DeviceID, int]], log_base: int) -> None:
        self.source = source
        self.held = held
        self.extra = extra
        self.log = log
        self.log_base = log_base

    def __contains__(self, device_id: object) -> bool:
        return device_id in self.held or device_id in self.extra

    def __iter__(self) -> Iterator[DeviceID]:
        yield from self.held
        for d in self.extra:
            if d not in self.held:
                yield d

    def __len__(self) -> int:
        return len(self.held) + sum(1 for d in self.extra if d not in self.held)


class _PlusExtra(Mapping[tuple[str, str], int]):
    """Devices held per pool: the tracker's counts plus those of the devices in flight."""

    __slots__ = ("base", "extra")

    def __init__(self, base: Mapping[tuple[str, str], int], extra: Mapping[tuple[str, str], int]) -> None:
        self.base = base
        self.extra = extra

    def __getitem__(self, key: tuple[str, str]) -> int:
        value = self.base.get(key, 0) + self.extra.get(key, 0)
        if not value:
            raise KeyError(key)
        return value

    def __iter__(self) -> Iterator[tuple[str, str]]:
        yield from self.base
        yield from (k for k in self.extra if k not in self.base)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class AllocationTracker:
    def __init__(self) -> None:
        self._store: object | None = None
        self._slice_pos: tuple[int, int] | None = None  # ResourceSlice, DeviceTaintRule positions
        self._slices: list[Slice] = []
        self._index: tuple[tuple[int, ...], SliceIndex] | None = None
        self._claim_pos: int | None = None
        self._devices: dict[int, tuple[Mapping[str, Any], tuple[DeviceID, ...]]] = {}
        self._versions: dict[str, Mapping[str, Any]] = {}  # the claims in the store, by key
        self._held: Counter[DeviceID] = Counter()  # devices held by those claims' allocations
        self._per_pool: Counter[tuple[str, str]] = Counter()  # devices held per pool
        self._shared: dict[DeviceID, capacity.Consumed] = {}  # capacity they consume on shared devices
        self.log: list[tuple[DeviceID, int]] = []  # changes of the held set (see HeldDevices)
        self.log_base = 0

    def allocator(self, objects: Any, in_flight: Mapping[str, Mapping[str, Any]]) -> Allocator:
        """An allocator over the cluster's slices and the devices held by claims in the store and
        in flight."""
        if objects is not self._store:
            self._store = objects
            self._slice_pos = self._claim_pos = None
        changes = getattr(objects, "changes", None)
        slices = self._slices
        if not self._slices_unchanged(changes) or self._index is None:
            slices = self._current_slices(objects)
            key = tuple(id(sl) for sl in slices)
            if self._index is None or self._index[0] != key:
                self._index = (key, SliceIndex(slices))
        index = self._index[1]
        delta = None
        if changes is not None:
            self._claim_pos, delta = changes(RESOURCE_CLAIM, self._claim_pos)
        if delta is None:
            self._track_allocations(list(objects.list(RESOURCE_CLAIM)))
        else:
            for key, new in delta:
                old = self._versions.get(key)
                if old is new:
                    continue
                if old is not None:
                    self._forget(key)
                if new is not None:
                    self._add(key, new)
        extra: set[DeviceID] = set()
        shared = self._shared
        per_pool: Mapping[tuple[str, str], int] = self._per_pool
        if in_flight:
            shared = {k: dict(v) for k, v in self._shared.items()}
            for claim in in_flight.values():
                extra.update(self._claim_devices(claim))
                for device_id, used in self._claim_shares(claim):
                    capacity.add(shared, device_id, used)
            held = self._held
            extra = {d for d in extra if d not in held}
            if extra:
                per_pool = _PlusExtra(self._per_pool, Counter((driver, pool) for driver, pool, _ in extra))
        allocated = HeldDevices(self, self._held, extra, self.log, self.log_base)
        consumed = {i: d for i, d in index.counter_devices.items() if i in allocated}
        return Allocator(lambda name: objects.get(DEVICE_CLASS, name), slices, allocated, consumed, index=index,
                         shared=shared, held_per_pool=per_pool)

    def _slices_unchanged(self, changes: Any) -> bool:
        """Whether no ResourceSlice or DeviceTaintRule changed since the last call."""
        if changes is None:
            return False
        pos_s, delta_s = changes(RESOURCE_SLICE, self._slice_pos[0] if self._slice_pos else None)
        pos_r, delta_r = changes(DEVICE_TAINT_RULE, self._slice_pos[1] if self._slice_pos else None)
        self._slice_pos = (pos_s, pos_r)
        return delta_s is not None and delta_r is not None and not delta_s and not delta_r

    def _current_slices(self, objects: Any) -> list[Slice]:
        slices, _ = parse_slices(objects.list(RESOURCE_SLICE))
        self._slices = apply_taint_rules(slices, list(objects.list(DEVICE_TAINT_RULE)))
        return self._slices

    def _track_allocations(self, claims: Sequence[Mapping[str, Any]]) -> None:
        """The devices held by the claims in the store, from the claim versions that came and
        went since the last pod."""
        now = {object_key(c): c for c in claims}
        for key in [k for k, c in self._versions.items() if now.get(k) is not c]:
            self._forget(key)
        for key, claim in now.items():
            if key not in self._versions:
                self._add(key, claim)

    def _add(self, key: str, claim: Mapping[str, Any]) -> None:
        self._versions[key] = claim
        for device in self._claim_devices(claim):
            self._held[device] += 1
            if self._held[device] == 1:
                self._per_pool[device[:2]] += 1
                self._log(device, 1)
        for device_id, used in self._claim_shares(claim):
            capacity.add(self._shared, device_id, used)

    def _forget(self, key: str) -> None:
        claim = self._versions.pop(key)
        for device in self._claim_devices(claim):
            self._held[device] -= 1
            if self._held[device] <= 0:
                del self._held[device]
                self._per_pool[device[:2]] -= 1
                if self._per_pool[device[:2]] <= 0:
                    del self._per_pool[device[:2]]
                self._log(device, -1)
        for device_id, used in self._claim_shares(claim):
            capacity.add(self._shared, device_id, used, -1)

    def _log(self, device: DeviceID, sign: int) -> None:
        if len(self.log) >= LOG_MAX:  # readers this far behind count again
            self.log_base += len(self.log)
            self.log = []
        self.log.append((device, sign))

    def _claim_shares(self, claim: Mapping[str, Any]) -> list[tuple[DeviceID, capacity.Consumed]]:
        alloc = allocation(claim)
        return capacity.shared_consumption(alloc) if alloc is not None else []

    def _claim_devices(self, claim: Mapping[str, Any]) -> tuple[DeviceID, ...]:
        """The devices a claim's allocation holds, memoised per version of the claim."""
        key = id(claim)
        hit = self._devices.get(key)
        if hit is not None and hit[0] is claim:
            return hit[1]
        alloc = allocation(claim)
        ids = tuple(allocated_device_ids(alloc)) if alloc is not None else ()
        if len(self._devices) > 100_000:
            self._devices.clear()
        self._devices[key] = (claim, ids)
        return ids
