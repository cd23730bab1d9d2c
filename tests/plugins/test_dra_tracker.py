"""The allocation tracker kept from pod to pod through the store's change log holds what a fresh
one counts from scratch: the same held devices (with those in flight), per pool, the same
capacity consumed on shared devices and the same slices (and the free devices per node kept from
its log are those counted from the whole held set), over random sequences of claims put,
re-allocated and deleted, slices replaced and taint rules added."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubeberth.cache.objects import ObjectStore
from kubeberth.cache.snapshot import Snapshot
from kubeberth.plugins.dynamic_resources import counts
from kubeberth.plugins.dynamic_resources.allocator import Allocator
from kubeberth.plugins.dynamic_resources.requests import Request
from kubeberth.plugins.dynamic_resources.tracker import AllocationTracker
from tests.builders import make_node


def _slice(pool: int, gen: int) -> dict[str, Any]:
    return {"metadata": {"name": f"s{pool}"}, "spec": {
        "driver": "d", "nodeName": f"n{pool}", "pool": {"name": f"p{pool}", "generation": gen,
                                                        "resourceSliceCount": 1},
        "devices": [{"name": f"dev{k}", **({"allowMultipleAllocations": True,
                                            "capacity": {"mem": {"value": "8"}}} if k == 0 == pool else {})}
                    for k in range(3)]}}


def _claim(name: str, devices: list[tuple[int, int]], shared: bool) -> dict[str, Any]:
    results = []
    for pool, dev in devices:
        r: dict[str, Any] = {"request": "r", "driver": "d", "pool": f"p{pool}", "device": f"dev{dev}"}
        if shared and dev == 0:
            r["shareID"] = "x"
            r["consumedCapacity"] = {"mem": "2"}
        results.append(r)
    status = {"allocation": {"devices": {"results": results}}} if devices else {}
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"}, "spec": {}, "status": status}


ops = st.lists(st.one_of(
    st.tuples(st.just("put"), st.integers(0, 5), st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)),
                                                          max_size=2), st.booleans()),
    st.tuples(st.just("delete"), st.integers(0, 5)),
    st.tuples(st.just("slice"), st.integers(0, 2), st.integers(1, 3)),
    st.tuples(st.just("rule"), st.integers(0, 2)),
    st.tuples(st.just("flight"), st.integers(0, 2), st.integers(0, 2)),
    st.tuples(st.just("pod")),
), max_size=30)


def _view(a: Allocator) -> tuple[Any, ...]:
    return (sorted(a.allocated), len(a.allocated), {k: v for k, v in a.held_per_pool.items() if v},
            {k: v for k, v in a.shared.items() if any(v.values())}, [(s.name, s.generation) for s in a.slices],
            [d.taints and [t.key for t in d.taints] for s in a.slices for d in s.devices])


@settings(max_examples=150, deadline=None)
@given(ops)
def test_the_tracker_kept_by_the_change_log_counts_as_a_fresh_one(steps: list[tuple[Any, ...]]) -> None:
    store = ObjectStore()
    for pool in range(3):
        store.put("ResourceSlice", _slice(pool, 1))
    snap = Snapshot.from_objects([make_node(f"n{i}") for i in range(3)], [])
    pred = counts.Predicate({"metadata": {"name": "any"}}, Request("r", {"deviceClassName": "any"}))
    kept = AllocationTracker()
    in_flight: dict[str, Any] = {}
    kept.allocator(store, in_flight)
    for step in steps:
        if step[0] == "put":
            store.put("ResourceClaim", _claim(f"c{step[1]}", step[2], step[3]))
        elif step[0] == "delete":
            store.delete("ResourceClaim", f"ns/c{step[1]}")
        elif step[0] == "slice":
            store.put("ResourceSlice", _slice(step[1], step[2]))
        elif step[0] == "rule":
            store.put("DeviceTaintRule", {"metadata": {"name": f"r{step[1]}"}, "spec": {
                "deviceSelector": {"pool": f"p{step[1]}"}, "taint": {"key": f"k{step[1]}", "effect": "NoSchedule"}}})
        elif step[0] == "flight":
            in_flight = {"f": _claim("f", [(step[1], step[2])], True)}
        else:
            in_flight = {}
        allocator = kept.allocator(store, in_flight)
        assert _view(allocator) == _view(AllocationTracker().allocator(store, in_flight))
        # the free devices per node kept from the held set's log, as counted from the whole set
        names = snap.arrays().names
        counted = counts.free_counts(allocator.index, pred, snap.node_infos, names, 0, set(allocator.allocated),
                                     allocator.shared)
        kept_counts = counts.free_counts(allocator.index, pred, snap.node_infos, names, 0, allocator.allocated,
                                         allocator.shared)
        assert counted[0].tolist() == kept_counts[0].tolist()
