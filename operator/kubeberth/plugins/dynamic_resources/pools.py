"""The resource pools a node can use (upstream's GatherPools): the newest generation of each
pool's slices that reach the node; a pool whose slices are not all published is incomplete, one
with duplicate device names invalid; pools with binding conditions come last."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from ...model import Node
from .devices import Device, DeviceID, Slice


class Pool:
    __slots__ = ("all_slices", "counter_sets", "driver", "incomplete", "invalid", "name", "shared", "size", "slices")

    def __init__(self, driver: str, name: str) -> None:
        self.driver = driver
        self.name = name
        self.slices: list[Slice] = []  # the ones reaching the node, by name
        self.all_slices: list[Slice] = []  # every slice of the current generation
        self.incomplete = False
        self.invalid = False
        self.counter_sets: dict[str, dict[str, int]] = {}
        self.size = 0  # devices in all the pool's slices: when that many are held, none is free
        self.shared = False  # some device allows multiple allocations (not counted as held)

    def devices(self) -> list[Device]:
        return [d for s in self.slices for d in s.devices]

    def has_binding_conditions(self) -> bool:
        return any(d.binding_conditions for s in self.slices for d in s.devices)


class SliceIndex:
    """The slices by the node they name, the ones reaching nodes otherwise, and by pool: what
    GatherPools needs per node without scanning every slice of the cluster."""

    def __init__(self, slices: Sequence[Slice]) -> None:
        self.pools: dict[str, list[Pool]] = {}  # by node name: gather_pools' answers
        self.counts: Any = None  # counts.CountIndex: free devices per node, for filter_all
        # Whether a node's pools may depend on its labels (then they are not memoised per name).
        self.label_dependent = any(s.placement.selector is not None or s.per_device for s in slices
                                   if not s.placement.node_name)
        self.on_node: dict[str, list[Slice]] = defaultdict(list)
        self.shared: list[Slice] = []
        self.by_pool: dict[tuple[str, str], list[Slice]] = defaultdict(list)
        # Devices that consume shared counters (partitionable devices), by id.
        self.counter_devices: dict[DeviceID, Device] = {
            d.id: d for s in slices for d in s.devices if d.consumes_counters}
        for s in slices:
            if s.placement.node_name:
                self.on_node[s.placement.node_name].append(s)
            else:
                self.shared.append(s)
            self.by_pool[(s.driver, s.pool)].append(s)

    def for_node(self, node: Node) -> list[Slice]:
        return [*self.on_node.get(node.name, ()), *self.shared]


def gather_pools(node: Node, index: SliceIndex) -> list[Pool]:
    """Memoised per node for as long as the index (the same slices) lives; a node's labels only
    matter for slices with a node selector, so those nodes are not memoised."""
    hit = index.pools.get(node.name)
    if hit is not None:
        return hit
    pools = _gather(node, index)
    if not index.label_dependent:
        index.pools[node.name] = pools
    return pools


def _gather(node: Node, index: SliceIndex) -> list[Pool]:
    by_pool: dict[tuple[str, str], list[Slice]] = defaultdict(list)
    for s in index.for_node(node):
        if not s.relevant_for(node):
            continue
        current = by_pool.get((s.driver, s.pool))
        if current and s.generation < current[0].generation:
            continue
        if current and s.generation > current[0].generation:
            current.clear()
        by_pool[(s.driver, s.pool)].append(s)
    ready: list[Pool] = []
    with_conditions: list[Pool] = []
    for (driver, name), slices in by_pool.items():
        generation = slices[0].generation
        same_pool = index.by_pool[(driver, name)]
        if any(s.generation > generation for s in same_pool):
            continue  # obsolete: a newer generation is being published
        pool = Pool(driver, name)
        pool.all_slices = [s for s in same_pool if s.generation == generation]
        if len(pool.all_slices) != slices[0].slice_count:
            pool.incomplete = True
            ready.append(pool)
            continue
        pool.slices = sorted(slices, key=lambda s: s.name)
        for s in pool.all_slices:
            pool.counter_sets.update(s.counter_sets)
        names = [d.name for d in pool.devices()]
        pool.size = sum(len(s.devices) for s in pool.all_slices)
        pool.shared = any(d.allow_multiple for s in pool.all_slices for d in s.devices)
        pool.invalid = len(names) != len(set(names))
        (with_conditions if pool.has_binding_conditions() else ready).append(pool)
    ready.sort(key=lambda p: (p.driver, p.name))
    with_conditions.sort(key=lambda p: (p.driver, p.name))
    return ready + with_conditions
