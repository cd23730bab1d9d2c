"""The resource pools a node can use (upstream's GatherPools): the newest generation of each
pool's slices that reach the node; a pool whose slices are not all published is incomplete, one
with duplicate device names invalid; pools with binding conditions come last."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from ...model import Node
from .devices import Device, Slice


class Pool:
    __slots__ = ("all_slices", "counter_sets", "driver", "incomplete", "invalid", "name", "slices")

    def __init__(self, driver: str, name: str) -> None:
        self.driver = driver
        self.name = name
        self.slices: list[Slice] = []  # the ones reaching the node, by name
        self.all_slices: list[Slice] = []  # every slice of the current generation
        self.incomplete = False
        self.invalid = False
        self.counter_sets: dict[str, dict[str, int]] = {}

    def devices(self) -> list[Device]:
        return [d for s in self.slices for d in s.devices]

    def has_binding_conditions(self) -> bool:
        return any(d.binding_conditions for s in self.slices for d in s.devices)


def gather_pools(node: Node, all_slices: Sequence[Slice]) -> list[Pool]:
    by_pool: dict[tuple[str, str], list[Slice]] = defaultdict(list)
    for s in all_slices:
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
        same_pool = [s for s in all_slices if s.driver == driver and s.pool == name]
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
        pool.invalid = len(names) != len(set(names))
        (with_conditions if pool.has_binding_conditions() else ready).append(pool)
    ready.sort(key=lambda p: (p.driver, p.name))
    with_conditions.sort(key=lambda p: (p.driver, p.name))
    return ready + with_conditions
