"""The devices claims hold, kept up to date from one pod to the next (most pods see one claim
change: their predecessor's), and the allocator DynamicResources' PreFilter builds over them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from . import capacity
from .allocator import Allocator
from .claims import DEVICE_CLASS, RESOURCE_CLAIM, RESOURCE_SLICE, allocated_device_ids, allocation
from .devices import DeviceID, parse_slices
from .pools import SliceIndex
from .taint_rules import apply_taint_rules


class AllocationTracker:
    def __init__(self) -> None:
        self._index: tuple[tuple[int, ...], SliceIndex] | None = None
        self._devices: dict[int, tuple[Mapping[str, Any], tuple[DeviceID, ...]]] = {}
        self._versions: dict[int, Mapping[str, Any]] = {}  # the claims in the store, by id()
        self._held: Counter[DeviceID] = Counter()  # devices held by those claims' allocations
        self._shared: dict[DeviceID, capacity.Consumed] = {}  # capacity they consume on shared devices

    def allocator(self, objects: Any, in_flight: Mapping[str, Mapping[str, Any]]) -> Allocator:
        """An allocator over the cluster's slices and the devices held by claims in the store and
        in flight."""
        slices, _ = parse_slices(objects.list(RESOURCE_SLICE))
        slices = apply_taint_rules(slices, list(objects.list("DeviceTaintRule")))
        key = tuple(id(sl) for sl in slices)
        if self._index is None or self._index[0] != key:
            self._index = (key, SliceIndex(slices))
        index = self._index[1]
        self._track_allocations(list(objects.list(RESOURCE_CLAIM)))
        allocated = set(self._held)
        shared = self._shared
        if in_flight:
            shared = {k: dict(v) for k, v in self._shared.items()}
            for claim in in_flight.values():
                allocated.update(self._claim_devices(claim))
                for device_id, used in self._claim_shares(claim):
                    capacity.add(shared, device_id, used)
        consumed = {i: d for i, d in index.counter_devices.items() if i in allocated}
        return Allocator(lambda name: objects.get(DEVICE_CLASS, name), slices, allocated, consumed, index=index,
                         shared=shared)

    def _track_allocations(self, claims: list[Mapping[str, Any]]) -> None:
        """The devices held by the claims in the store, kept up to date by the claim versions that
        came and went since the last pod (most pods see one claim change: their predecessor's)."""
        now = {id(c): c for c in claims}
        gone = self._versions.keys() - now.keys()
        new = now.keys() - self._versions.keys()
        for key in gone:
            claim = self._versions.pop(key)
            for device in self._claim_devices(claim):
                self._held[device] -= 1
                if self._held[device] <= 0:
                    del self._held[device]
            for device_id, used in self._claim_shares(claim):
                capacity.add(self._shared, device_id, used, -1)
        for key in new:
            self._versions[key] = now[key]
            for device in self._claim_devices(now[key]):
                self._held[device] += 1
            for device_id, used in self._claim_shares(now[key]):
                capacity.add(self._shared, device_id, used)

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
