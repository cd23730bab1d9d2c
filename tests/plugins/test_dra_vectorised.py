"""DynamicResources' vectorised Filter (counts of free devices per node) decides as its per-node
Filter: on random clusters of ResourceSlices (taints, shared and counter-less devices, invalid
and incomplete pools, slices reaching several nodes), DeviceClasses with CEL selectors (one that
fails at runtime on some devices), claims (counts, selectors, tolerations, several requests and
classes, firstAvailable, constraints, admin access, pre-allocated claims) and devices already
held, `filter_all` passes exactly the nodes `filter` passes, `filter_statuses` gives exactly
`filter`'s statuses, and Reserve allocates what Filter would have found. A whole scheduler run
with the vectorised path on and off ends the same (outcomes, events, the claims' allocations).
"""

from __future__ import annotations

import asyncio
import copy
import os
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeberth.cache.objects import ObjectStore
from kubeberth.cache.snapshot import Snapshot
from kubeberth.clock import FakeClock
from kubeberth.config import default_spec
from kubeberth.framework import CycleState
from kubeberth.framework.vector import AllNodes
from kubeberth.model import Node, Pod
from kubeberth.plugins import in_tree_registry
from kubeberth.plugins.dynamic_resources import DynamicResources
from kubeberth.profile import build_framework
from kubeberth.scheduler import Scheduler
from kubeberth.testing import InMemoryClient
from tests.builders import node_dict

SCALE = int(os.environ.get("KUBEBERTH_VECTOR_EXAMPLES", "1"))
DRIVERS = ["d1", "d2"]
_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]


def _cel(expr: str) -> dict[str, Any]:
    return {"cel": {"expression": expr}}


CLASSES = {
    "any": [],
    "d1": [_cel('device.driver == "d1"')],
    "model-a": [_cel('device.driver == "d1"'), _cel('device.attributes["d1"].model == "a"')],
    # fails at runtime on d2's devices (no "d1" domain there: an empty map without `model`)
    "fragile": [_cel('device.attributes["d1"].model == "b"')],
}
REQUEST_SELECTORS = [_cel('device.attributes["d1"].model == "a" || device.driver == "d2"'),
                     _cel('device.driver == "d2"')]


@st.composite
def devices(draw: Any, driver: str, count: int, shared_ok: bool) -> list[dict[str, Any]]:
    out = []
    for k in range(count):
        d: dict[str, Any] = {"name": f"dev-{k}", "attributes": {"model": {"string": draw(st.sampled_from("ab"))}}}
        if draw(st.integers(0, 5)) == 0:
            d["taints"] = [{"key": "bad", "value": draw(st.sampled_from(["", "x"])),
                            "effect": draw(st.sampled_from(["NoSchedule", "NoExecute"]))}]
        if shared_ok and draw(st.integers(0, 9)) == 0:
            d["allowMultipleAllocations"] = True
            d["capacity"] = {"mem": {"value": "4"}}
        out.append(d)
    if out and draw(st.integers(0, 14)) == 0:
        out.append({"name": out[0]["name"]})  # a duplicate name: the pool is invalid
    return out


@st.composite
def clusters(draw: Any, max_nodes: int = 8) -> dict[str, Any]:
    n = draw(st.integers(1, max_nodes))
    nodes = [node_dict(f"n{i:02d}", labels={"zone": draw(st.sampled_from("ab"))}) for i in range(n)]
    slices: list[dict[str, Any]] = []
    for i in range(n):
        for p in range(draw(st.integers(0, 2))):
            driver = draw(st.sampled_from(DRIVERS))
            count = 2 if draw(st.integers(0, 12)) == 0 else 1  # 2: one slice of two published
            slices.append({"kind": "ResourceSlice", "metadata": {"name": f"n{i:02d}-p{p}"}, "spec": {
                "driver": driver, "nodeName": f"n{i:02d}",
                "pool": {"name": f"n{i:02d}-p{p}", "generation": 1, "resourceSliceCount": count},
                "devices": draw(devices(driver, draw(st.integers(0, 4)), True))}})
    if draw(st.integers(0, 6)) == 0:  # devices every node reaches (or, some nodes by label)
        placement = draw(st.sampled_from([{"allNodes": True}, {"nodeSelector": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}]))
        slices.append({"kind": "ResourceSlice", "metadata": {"name": "net"}, "spec": {
            "driver": "d2", **placement, "pool": {"name": "net", "generation": 1, "resourceSliceCount": 1},
            "devices": draw(devices("d2", draw(st.integers(1, 3)), False))}})
    claims = []
    for c in range(draw(st.integers(1, 6))):
        claims.append(draw(claim_specs(f"c{c}")))
    # Devices already held: claims allocated on some node's devices.
    held: list[dict[str, Any]] = []
    for k, sl in enumerate(slices):
        devs = sl["spec"]["devices"]
        if devs and draw(st.integers(0, 2)) == 0:
            node_name = sl["spec"].get("nodeName") or "n00"
            held.append({"kind": "ResourceClaim", "metadata": {"name": f"held-{k}", "namespace": "init",
                                                               "uid": f"uid-held-{k}"},
                         "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "any"}}]}},
                         "status": {"allocation": {
                             "devices": {"results": [{"request": "r", "driver": sl["spec"]["driver"],
                                                      "pool": sl["spec"]["pool"]["name"],
                                                      "device": devs[0]["name"]}]},
                             "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                                 {"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}}}})
    pods: list[dict[str, Any]] = []
    for p in range(draw(st.integers(1, 6))):
        names = draw(st.lists(st.sampled_from([c["metadata"]["name"] for c in claims]), min_size=1, max_size=2,
                              unique=True))
        if held and draw(st.integers(0, 6)) == 0:
            names.append(held[0]["metadata"]["name"])  # a claim allocated already, on one node
        pods.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": f"p{p}", "namespace": "ns" if not names[-1].startswith("held") else "init",
                                  "uid": f"uid-p{p}"},
                     "spec": {"containers": [{"name": "c", "image": "x"}],
                              "resourceClaims": [{"name": f"r{j}", "resourceClaimName": nm}
                                                 for j, nm in enumerate(names)]}})
    for pod in pods:  # a pod names claims of its own namespace
        if pod["metadata"]["namespace"] == "init":
            for ref in pod["spec"]["resourceClaims"]:
                if not ref["resourceClaimName"].startswith("held"):
                    ref["resourceClaimName"] = held[0]["metadata"]["name"]
            pod["spec"]["resourceClaims"] = pod["spec"]["resourceClaims"][:1]
    rules = []
    if draw(st.integers(0, 8)) == 0:
        rules.append({"kind": "DeviceTaintRule", "metadata": {"name": "rule"}, "spec": {
            "deviceSelector": {"driver": "d1"}, "taint": {"key": "rule", "effect": "NoSchedule"}}})
    return {"nodes": nodes, "slices": slices, "claims": claims + held, "pods": pods, "rules": rules,
            "seed": draw(st.integers(0, 2**16))}


@st.composite
def claim_specs(draw: Any, name: str) -> dict[str, Any]:
    requests: list[dict[str, Any]] = []
    for r in range(draw(st.integers(1, 2))):
        kind = draw(st.integers(0, 11))
        exact: dict[str, Any] = {"deviceClassName": draw(st.sampled_from([*CLASSES, *(["missing"] if kind == 0
                                                                                         else [])]))}
        if draw(st.integers(0, 2)) == 0:
            exact["count"] = draw(st.integers(1, 3))
        if draw(st.integers(0, 3)) == 0:
            exact["selectors"] = [draw(st.sampled_from(REQUEST_SELECTORS))]
        if draw(st.integers(0, 3)) == 0:
            exact["tolerations"] = [{"key": "bad", "operator": draw(st.sampled_from(["Exists", "Equal"])),
                                     "value": "x"}]
        if kind == 1:
            exact["adminAccess"] = True
        if kind == 2:
            exact = {"deviceClassName": exact["deviceClassName"], "allocationMode": "All"}
        if kind == 3:
            requests.append({"name": f"r{r}", "firstAvailable": [
                {"name": "big", "deviceClassName": "d1", "count": 2}, {"name": "small", "deviceClassName": "any"}]})
            continue
        requests.append({"name": f"r{r}", "exactly": exact})
    spec: dict[str, Any] = {"requests": requests}
    if draw(st.integers(0, 9)) == 0:
        spec["constraints"] = [{"matchAttribute": "d1/model"}]
    return {"kind": "ResourceClaim", "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
            "spec": {"devices": spec}}


def _store(c: dict[str, Any]) -> ObjectStore:
    objects = ObjectStore()
    for klass, selectors in CLASSES.items():
        objects.put("DeviceClass", {"kind": "DeviceClass", "metadata": {"name": klass},
                                    "spec": {"selectors": selectors}})
    kinds: list[tuple[str, list[dict[str, Any]]]] = [
        ("ResourceSlice", c["slices"]), ("ResourceClaim", c["claims"]), ("DeviceTaintRule", c["rules"])]
    for kind, objs in kinds:
        for o in objs:
            objects.put(kind, copy.deepcopy(o))
    return objects


class _Handle:
    def __init__(self, objects: ObjectStore) -> None:
        self.objects = objects
        self.client = None


def _verdict(st_: Any) -> Any:
    return None if st_ is None else (st_.code, st_.message())


def _strip(alloc: Any) -> Any:
    if isinstance(alloc, dict):
        return {k: _strip(v) for k, v in alloc.items() if k != "shareID"}
    if isinstance(alloc, list):
        return [_strip(v) for v in alloc]
    return alloc


@settings(max_examples=150 * SCALE, deadline=None, suppress_health_check=_SLOW_OK)
@given(clusters())
def test_filter_all_passes_the_nodes_filter_passes_with_filters_statuses(c: dict[str, Any]) -> None:
    objects = _store(c)
    snap = Snapshot.from_objects([Node(n) for n in c["nodes"]], [])
    view = AllNodes(snap.node_infos, snap.arrays())
    for raw in c["pods"]:
        pod = Pod(raw)
        per_node = DynamicResources(None, _Handle(objects))  # type: ignore[arg-type]
        vector = DynamicResources(None, _Handle(objects))  # type: ignore[arg-type]
        s1, s2 = CycleState(), CycleState()
        _, pre1 = per_node.pre_filter(s1, pod, snap.node_infos)
        _, pre2 = vector.pre_filter(s2, pod, snap.node_infos)
        assert _verdict(pre1) == _verdict(pre2)
        if pre1 is not None:
            continue
        want = [_verdict(per_node.filter(s1, pod, ni)) for ni in snap.node_infos]
        mask = vector.filter_all(s2, pod, view)
        if mask is None:
            continue
        assert mask.tolist() == [w is None for w in want]
        rows = np.flatnonzero(~mask)
        statuses = vector.filter_statuses(s2, pod, view.arrays, rows)
        if statuses is not None:
            assert [_verdict(x) for x in statuses] == [want[i] for i in rows.tolist()]
        for i in np.flatnonzero(mask).tolist():
            name = snap.node_infos[i].name
            assert vector.reserve(s2, pod, name) is None
            assert per_node.reserve(s1, pod, name) is None
            assert _strip(vector.in_flight) == _strip(per_node.in_flight)
            vector.unreserve(s2, pod, name)
            per_node.unreserve(s1, pod, name)


def _run(c: dict[str, Any], vectorise: bool) -> dict[str, Any]:
    sched = Scheduler(clock=FakeClock(), seed=c["seed"])
    client = InMemoryClient(sched)
    sched.ctx.client = client
    fw = build_framework(default_spec(), in_tree_registry(), sched.ctx)
    fw.vectorise = vectorise
    fw.vector_min_nodes = 0
    sched.set_profile(fw)
    for klass, selectors in CLASSES.items():
        sched.on_object("DeviceClass", {"kind": "DeviceClass", "metadata": {"name": klass},
                                        "spec": {"selectors": selectors}})
    for kind, objs in (("ResourceSlice", c["slices"]), ("ResourceClaim", c["claims"]),
                       ("DeviceTaintRule", c["rules"])):
        for o in objs:
            sched.on_object(kind, copy.deepcopy(o))
    for raw in c["nodes"]:
        sched.on_node_add(copy.deepcopy(raw))
    for raw in c["pods"]:
        sched.on_pod_add(copy.deepcopy(raw))
    asyncio.run(sched.run_until_idle())
    outcomes = {k: (r.status, r.node, r.message, r.nominated_node) for k, r in sorted(sched.outcomes.items())}
    claims = {o["metadata"]["name"]: _strip(o.get("status")) for o in sched.ctx.objects.list("ResourceClaim")}
    return {"outcomes": outcomes, "events": list(client.events), "claims": claims,
            "start": sched.ctx.next_start_node_index, "rng": sched.ctx.rng.random()}


@settings(max_examples=40 * SCALE, deadline=None, suppress_health_check=_SLOW_OK)
@given(clusters(max_nodes=12))
def test_a_scheduler_run_decides_the_same_with_and_without_the_counts(c: dict[str, Any]) -> None:
    assert _run(c, vectorise=True) == _run(c, vectorise=False)


# ---- the counts' own path, on a fixed cluster ------------------------------------------------------

def _plain_cluster(free: list[int]) -> dict[str, Any]:
    """One pool of 3 d1 devices per node; `3 - free[i]` of node i's held already."""
    nodes = [node_dict(f"n{i:02d}") for i in range(len(free))]
    slices, held = [], []
    for i, f in enumerate(free):
        slices.append({"kind": "ResourceSlice", "metadata": {"name": f"s{i}"}, "spec": {
            "driver": "d1", "nodeName": f"n{i:02d}", "pool": {"name": f"p{i}", "generation": 1,
                                                              "resourceSliceCount": 1},
            "devices": [{"name": f"dev-{k}", "attributes": {"model": {"string": "a"}}} for k in range(3)]}})
        for k in range(3 - f):
            held.append({"kind": "ResourceClaim", "metadata": {"name": f"h{i}-{k}", "namespace": "init",
                                                               "uid": f"uid-h{i}-{k}"},
                         "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "d1"}}]}},
                         "status": {"allocation": {"devices": {"results": [
                             {"request": "r", "driver": "d1", "pool": f"p{i}", "device": f"dev-{k}"}]}}}})
    claim = {"kind": "ResourceClaim", "metadata": {"name": "c0", "namespace": "ns", "uid": "uid-c0"},
             "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "model-a", "count": 2}}]}}}
    pod = {"metadata": {"name": "p", "namespace": "ns", "uid": "uid-p"},
           "spec": {"containers": [{"name": "c"}], "resourceClaims": [{"name": "r", "resourceClaimName": "c0"}]}}
    return {"nodes": nodes, "slices": slices, "claims": [claim, *held], "rules": [], "pods": [pod]}


def test_plain_claims_are_decided_by_the_counts_without_a_search_and_reserve_allocates_on_its_node() -> None:
    c = _plain_cluster([3, 1, 2, 0])
    objects = _store(c)
    snap = Snapshot.from_objects([Node(n) for n in c["nodes"]], [])
    pl = DynamicResources(None, _Handle(objects))  # type: ignore[arg-type]
    state, pod = CycleState(), Pod(c["pods"][0])
    assert pl.pre_filter(state, pod, snap.node_infos)[1] is None
    view = AllNodes(snap.node_infos, snap.arrays())
    mask = pl.filter_all(state, pod, view)
    assert mask is not None and mask.tolist() == [True, False, True, False]
    statuses = pl.filter_statuses(state, pod, view.arrays, np.asarray([1, 3]))
    assert statuses is not None and [x.message() for x in statuses] == ["cannot allocate all claims"] * 2
    assert state.read("DynamicResources").node_allocations == {}  # no search ran
    assert pl.reserve(state, pod, "n02") is None
    results = pl.in_flight["uid-c0"]["status"]["allocation"]["devices"]["results"]
    assert [(r["pool"], r["device"]) for r in results] == [("p2", "dev-1"), ("p2", "dev-2")]


def test_requests_of_two_classes_and_shared_devices_leave_it_to_the_per_node_path() -> None:
    c = _plain_cluster([3, 3])
    c["claims"][0]["spec"]["devices"]["requests"].append({"name": "q", "exactly": {"deviceClassName": "any"}})
    objects = _store(c)
    snap = Snapshot.from_objects([Node(n) for n in c["nodes"]], [])
    pl = DynamicResources(None, _Handle(objects))  # type: ignore[arg-type]
    state, pod = CycleState(), Pod(c["pods"][0])
    pl.pre_filter(state, pod, snap.node_infos)
    assert pl.filter_all(state, pod, AllNodes(snap.node_infos, snap.arrays())) is None
