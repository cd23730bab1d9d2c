"""The vectorised filter/score path decides exactly as the per-node path.

Random clusters (resources, labels, taints, unschedulable nodes, images, host ports, extended
resources, running pods) and random pods (requests, tolerations, node selectors, required and
preferred node affinity, host ports, priorities that trigger preemption) go through the real
Scheduler twice with the same seed: once with `Framework.vectorise` off, once forced on for
every cycle. Every pod must end the same (status, node, message, nomination, victims), with
the same events, the same rotating start index and the same random stream afterwards.
"""

from __future__ import annotations

import os
import random
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeberth.cache.snapshot import Snapshot
from kubeberth.framework.types import NodePluginScores
from kubeberth.framework.vector.scores import select_index
from kubeberth.scheduler.algorithm import select_host
from tests.builders import make_node, make_pod, node_dict, pod_dict
from tests.doubles import run_scenario

# KUBEBERTH_VECTOR_EXAMPLES=20 runs 20 times as many random cases (the suite runs a few).
SCALE = int(os.environ.get("KUBEBERTH_VECTOR_EXAMPLES", "1"))
ZONES = ["a", "b", "c"]
TAINT_KEYS = ["dedicated", "gpu", "spot"]
EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
GPU = "example.com/gpu"

# ---- strategies ------------------------------------------------------------------------------

taints = st.lists(st.builds(lambda k, v, e: {"key": k, "value": v, "effect": e},
                            st.sampled_from(TAINT_KEYS), st.sampled_from(["", "x", "y"]), st.sampled_from(EFFECTS)),
                  max_size=2)

tolerations = st.lists(st.one_of(
    st.builds(lambda k, v, e: {"key": k, "operator": "Equal", "value": v, **({"effect": e} if e else {})},
              st.sampled_from(TAINT_KEYS), st.sampled_from(["", "x", "y"]), st.sampled_from(["", *EFFECTS])),
    st.builds(lambda k, e: {"key": k, "operator": "Exists", **({"effect": e} if e else {})},
              st.sampled_from(["", *TAINT_KEYS, "node.kubernetes.io/unschedulable"]),
              st.sampled_from(["", *EFFECTS])),
), max_size=2)


@st.composite
def node_specs(draw: Any, index: int, big: bool) -> dict[str, Any]:
    name = f"n{index:03d}"
    labels: dict[str, str] = {}
    if draw(st.integers(0, 9)) > 0:
        labels["topology.kubernetes.io/zone"] = draw(st.sampled_from(ZONES))
    if draw(st.booleans()):
        labels["disk"] = draw(st.sampled_from(["ssd", "hdd"]))
    if draw(st.booleans()):
        labels["rank"] = draw(st.sampled_from(["1", "5", "10", "20", "x", "-3"]))
    extra: dict[str, Any] = {}
    if not big and draw(st.integers(0, 3)) == 0:
        extra[GPU] = str(draw(st.integers(0, 2)))
    if not big and draw(st.integers(0, 3)) == 0:
        extra["ephemeral-storage"] = draw(st.sampled_from(["0", "1Gi", "10Gi"]))
    images = None
    if not big and draw(st.integers(0, 4)) == 0:
        images = [{"names": [draw(st.sampled_from(["app:1", "app:2", "db:1"]))], "sizeBytes": 300 * 1024 * 1024}]
    return node_dict(
        name,
        cpu=draw(st.sampled_from(["0", "500m", "1", "2", "4"] if not big else ["2", "4"])),
        memory=draw(st.sampled_from(["0", "1Gi", "4Gi", "32Gi"] if not big else ["4Gi", "32Gi"])),
        pods=draw(st.sampled_from(["0", "1", "3", "10", "110"] if not big else ["10", "110"])),
        labels=labels,
        taints=draw(taints) if not big or draw(st.integers(0, 5)) == 0 else None,
        unschedulable=draw(st.integers(0, 7)) == 0,
        extra=extra,
        images=images,
    )


requirement = st.one_of(
    st.builds(lambda op, vs: {"key": "topology.kubernetes.io/zone", "operator": op, "values": vs},
              st.sampled_from(["In", "NotIn"]), st.lists(st.sampled_from([*ZONES, "zz"]), min_size=1, max_size=2)),
    st.builds(lambda k, op: {"key": k, "operator": op},
              st.sampled_from(["disk", "rank", "topology.kubernetes.io/zone"]),
              st.sampled_from(["Exists", "DoesNotExist"])),
    st.builds(lambda op, v: {"key": "rank", "operator": op, "values": [v]},
              st.sampled_from(["Gt", "Lt"]), st.sampled_from(["0", "4", "10", "abc"])),
)


@st.composite
def node_selector_terms(draw: Any, n_nodes: int) -> list[dict[str, Any]]:
    terms = []
    for _ in range(draw(st.integers(1, 2))):
        term: dict[str, Any] = {}
        if draw(st.integers(0, 4)) > 0:
            term["matchExpressions"] = draw(st.lists(requirement, min_size=1, max_size=2))
        if draw(st.integers(0, 5)) == 0:
            names = draw(st.lists(st.integers(0, n_nodes + 1), min_size=1, max_size=3))
            term["matchFields"] = [{"key": "metadata.name", "operator": draw(st.sampled_from(["In", "NotIn"])),
                                    "values": [f"n{i:03d}" for i in names]}]
        terms.append(term)
    return terms


APPS = ["web", "db"]
TOPOLOGY_KEYS = ["topology.kubernetes.io/zone", "kubernetes.io/hostname", "disk"]


@st.composite
def spread_constraints(draw: Any) -> list[dict[str, Any]]:
    out = []
    for _ in range(draw(st.integers(1, 2))):
        c: dict[str, Any] = {
            "maxSkew": draw(st.integers(1, 3)),
            "topologyKey": draw(st.sampled_from(TOPOLOGY_KEYS)),
            "whenUnsatisfiable": draw(st.sampled_from(["DoNotSchedule", "ScheduleAnyway"])),
            "labelSelector": {"matchLabels": {"app": draw(st.sampled_from(APPS))}},
        }
        if draw(st.integers(0, 3)) == 0:
            c["minDomains"] = draw(st.integers(1, 4))
        if draw(st.integers(0, 3)) == 0:
            c["nodeAffinityPolicy"] = draw(st.sampled_from(["Honor", "Ignore"]))
        if draw(st.integers(0, 3)) == 0:
            c["nodeTaintsPolicy"] = draw(st.sampled_from(["Honor", "Ignore"]))
        out.append(c)
    return out


@st.composite
def pod_affinity(draw: Any) -> dict[str, Any]:
    def term() -> dict[str, Any]:
        return {"labelSelector": {"matchLabels": {"app": draw(st.sampled_from(APPS))}},
                "topologyKey": draw(st.sampled_from(TOPOLOGY_KEYS))}

    out: dict[str, Any] = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        if draw(st.integers(0, 2)) == 0:
            continue
        body: dict[str, Any] = {}
        if draw(st.booleans()):
            body["requiredDuringSchedulingIgnoredDuringExecution"] = [term()]
        if draw(st.booleans()):
            body["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": draw(st.integers(1, 100)), "podAffinityTerm": term()}]
        if body:
            out[kind] = body
    return out


@st.composite
def pod_specs(draw: Any, name: str, n_nodes: int, big: bool) -> dict[str, Any]:
    requests: dict[str, Any] = {}
    if draw(st.integers(0, 5)) > 0:
        requests["cpu"] = draw(st.sampled_from(["0", "100m", "500m", "1", "3"]))
    if draw(st.integers(0, 5)) > 0:
        requests["memory"] = draw(st.sampled_from(["0", "200Mi", "1Gi", "8Gi"]))
    if not big and draw(st.integers(0, 5)) == 0:
        requests["ephemeral-storage"] = draw(st.sampled_from(["1Gi", "5Gi"]))
    if not big and draw(st.integers(0, 6)) == 0:
        requests[GPU] = "1"
    spec: dict[str, Any] = {}
    if draw(st.integers(0, 2)) == 0:
        spec["tolerations"] = draw(tolerations)
    if draw(st.integers(0, 4)) == 0:
        spec["nodeSelector"] = {"topology.kubernetes.io/zone": draw(st.sampled_from(ZONES))}
    affinity: dict[str, Any] = {}
    if draw(st.integers(0, 3)) == 0:
        affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": draw(node_selector_terms(n_nodes))}
    if draw(st.integers(0, 3)) == 0:
        affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": draw(st.integers(0, 100)), "preference": t} for t in draw(node_selector_terms(n_nodes))]
    if affinity:
        spec["affinity"] = {"nodeAffinity": affinity}
    if draw(st.integers(0, 3)) == 0:
        spec["topologySpreadConstraints"] = draw(spread_constraints())
    if draw(st.integers(0, 4)) == 0:
        spec.setdefault("affinity", {}).update(draw(pod_affinity()))
    labels = {"app": draw(st.sampled_from(APPS))} if draw(st.integers(0, 3)) > 0 else None
    containers = [{"name": "c", "image": draw(st.sampled_from(["app:1", "app:2", "web:1"])),
                   **({"resources": {"requests": requests}} if requests else {})}]
    if not big and draw(st.integers(0, 6)) == 0:
        containers[0]["ports"] = [{"containerPort": 80, "hostPort": draw(st.sampled_from([80, 8080]))}]
    priority = draw(st.sampled_from([0, 0, 0, 10, 100]))
    if not big and draw(st.integers(0, 10)) == 0:
        spec["nodeName"] = f"n{draw(st.integers(0, n_nodes)):03d}"
    return pod_dict(name, containers=containers, priority=priority, labels=labels, **spec)


profiles = st.sampled_from([
    {},
    {"percentageOfNodesToScore": 10},
    {"percentageOfNodesToScore": 100},
    {"pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]},
    {"pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
        "type": "RequestedToCapacityRatio",
        "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}, {"name": GPU, "weight": 2}],
        "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10}, {"utilization": 60, "score": 3},
                                               {"utilization": 100, "score": 0}]}}}}]},
    {"pluginConfig": [{"name": "NodeResourcesBalancedAllocation", "args": {"resources": [
        {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": "ephemeral-storage", "weight": 1}]}}]},
    {"pluginConfig": [{"name": "NodeAffinity", "args": {"addedAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "disk", "operator": "DoesNotExist"}]},
            {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 7, "preference": {"matchExpressions": [{"key": "topology.kubernetes.io/zone",
                                                               "operator": "In", "values": ["a"]}]}}]}}}]},
])


@st.composite
def scenarios(draw: Any, big: bool = False) -> dict[str, Any]:
    n = draw(st.integers(100, 180)) if big else draw(st.integers(1, 30))
    nodes = [draw(node_specs(i, big)) for i in range(n)]
    running = []
    for i in range(draw(st.integers(0, 2 * n if not big else n))):
        raw = draw(pod_specs(f"run-{i}", n, big))
        raw["spec"]["nodeName"] = f"n{draw(st.integers(0, n - 1)):03d}"
        running.append(raw)
    pending = [draw(pod_specs(f"p-{i}", n, big)) for i in range(draw(st.integers(1, 12 if not big else 25)))]
    return {"nodes": nodes, "running": running, "pending": pending, "profile": draw(profiles),
            "seed": draw(st.integers(0, 2**16)), "start": draw(st.integers(0, 500))}


# ---- running both paths ----------------------------------------------------------------------

def _same_decisions(sc: dict[str, Any]) -> None:
    per_node = run_scenario(sc, vectorise=False)
    vectorised = run_scenario(sc, vectorise=True)
    assert vectorised["outcomes"] == per_node["outcomes"]
    assert vectorised["events"] == per_node["events"]
    assert vectorised["start"] == per_node["start"]
    assert vectorised["rng"] == per_node["rng"]


_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]


@settings(max_examples=60 * SCALE, deadline=None, suppress_health_check=_SLOW_OK)
@given(scenarios())
def test_same_decisions_small_clusters(sc: dict[str, Any]) -> None:
    _same_decisions(sc)


@settings(max_examples=8 * SCALE, deadline=None, suppress_health_check=_SLOW_OK)
@given(scenarios(big=True))
def test_same_decisions_with_adaptive_node_count(sc: dict[str, Any]) -> None:
    """100+ nodes: only some are searched (percentageOfNodesToScore), from a rotating start."""
    _same_decisions(sc)


# ---- pieces ----------------------------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=300), st.integers(0, 2**32))
def test_select_index_draws_as_select_host(totals: list[int], seed: int) -> None:
    a, b = random.Random(seed), random.Random(seed)
    got = select_index(np.asarray(totals, dtype=np.int64), a)
    expected = select_host([NodePluginScores(str(i), total=t) for i, t in enumerate(totals)], b)
    assert str(got) == expected
    assert a.random() == b.random()


def test_snapshot_arrays_follow_replaced_and_reordered_nodes() -> None:
    nodes = [make_node(f"n{i}", cpu="4", labels={"zone": "a" if i % 2 else "b"}) for i in range(4)]
    snap = Snapshot.from_objects(nodes, [])
    a = snap.arrays()
    assert a.alloc[:, 0].tolist() == [4000] * 4
    assert a.label_codes("zone").tolist() == [1, 2, 1, 2]
    ni = snap.node_infos[2].clone()
    ni.add_pod(make_pod("p", cpu="1", node="n2"))
    snap.node_infos[2] = ni
    a = snap.arrays()
    assert a.req[:, 0].tolist() == [0, 0, 1000, 0]
    assert a.changed_since(a.epoch, 0) == [2]
    snap.node_infos = [snap.node_infos[i] for i in (3, 2, 0)]
    a = snap.arrays()
    assert a.names == ["n3", "n2", "n0"]
    assert a.req[:, 0].tolist() == [0, 1000, 0]
    assert a.label_codes("zone").tolist() == [2, 1, 1]


def test_node_view_take_is_not_fooled_by_a_reused_id() -> None:
    from kubeberth.framework.vector import NodeView

    snap = Snapshot.from_objects([make_node(f"n{i}") for i in range(5)], [])
    view = NodeView([snap.node_infos[3], snap.node_infos[1]], snap.arrays(), np.asarray([3, 1]))
    for k in range(50):  # temporaries die at once: CPython hands their memory (and id) to the next
        assert view.take(np.arange(5) * k).tolist() == [3 * k, k]
