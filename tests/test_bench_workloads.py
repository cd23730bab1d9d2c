"""The benchmark workloads added after upstream's CI-gated scheduler_perf cases run through the
real scheduler at upstream's integration-test sizes (its "5Nodes" variants): every init and
measured pod is scheduled where the workload means it to go. No timing is asserted."""

from __future__ import annotations

from typing import Any

import pytest
from benchmarks import workloads as wl
from benchmarks.run import Bench

# (workload id, nodes, init pods, measured pods): upstream's small variants
SMALL = [
    ("PreemptionAsync/5000Nodes", 5, 20, 5),
    ("SchedulingDaemonset/15000Nodes", 5, 0, 10),
    ("SchedulingPreferredPodAffinity/5000Nodes_5000Pods", 5, 5, 10),
    ("SchedulingPreferredPodAntiAffinity/5000Nodes_5000Pods", 5, 5, 10),
    ("PreferredTopologySpreading/5000Nodes_5000Pods", 5, 10, 10),
    ("SchedulingWithNodeInclusionPolicy/5000Nodes", 5, 0, 4),
    ("SchedulingPreferredAntiAffinityWithNSSelector/5000Nodes_2000Pods", 10, 4, 10),
    ("SchedulingPreferredAffinityWithNSSelector/5000Nodes_5000Pods", 10, 4, 10),
]


def _run(workload_id: str, nodes: int, init: int, measured: int) -> Bench:
    w = wl.find(workload_id).resized(nodes=nodes, init_pods=init, measure_pods=measured)
    b = Bench(w, loop="sim")
    b.setup()
    b.measure()
    return b


def _placed(b: Bench, prefix: str) -> dict[str, Any]:
    return {k: r.node for k, r in b.sched.outcomes.items() if k.split("/", 1)[1].startswith(prefix)}


@pytest.mark.parametrize(("workload_id", "nodes", "init", "measured"), SMALL, ids=[s[0] for s in SMALL])
def test_small_variant_schedules_every_pod(workload_id: str, nodes: int, init: int, measured: int) -> None:
    b = _run(workload_id, nodes, init, measured)
    init_placed = _placed(b, "init-")
    measured_placed = _placed(b, "pod-")
    assert len(measured_placed) == measured and all(measured_placed.values())
    if "Preemption" not in workload_id:  # preemptors may evict init pods
        assert len(init_placed) == init and all(init_placed.values())


def test_daemonset_pods_all_go_to_the_named_node() -> None:
    b = _run("SchedulingDaemonset/15000Nodes", 5, 0, 10)
    assert set(_placed(b, "pod-").values()) == {"scheduler-perf-node"}


def test_node_inclusion_policy_taints_the_last_fifth() -> None:
    w = wl.find("SchedulingWithNodeInclusionPolicy/5000Nodes").resized(nodes=5, init_pods=0, measure_pods=4)
    tainted = [n["metadata"]["name"] for n in w.node_objects() if n["spec"].get("taints")]
    assert tainted == ["scheduler-perf-00004"]
    b = _run("SchedulingWithNodeInclusionPolicy/5000Nodes", 5, 0, 4)
    assert "scheduler-perf-00004" not in set(_placed(b, "pod-").values())


def test_ns_selector_workloads_spread_init_pods_over_labelled_namespaces() -> None:
    w = wl.find("SchedulingPreferredAffinityWithNSSelector/5000Nodes_5000Pods")
    assert w.init_pods == 5000 and w.init_namespaces == 100
    assert {w.init_namespace_of(i) for i in range(w.init_pods)} == {f"init-ns-{i}" for i in range(100)}
    assert dict(w.namespace_labels) == {"team": "devops"}
    assert "measure-ns-0" in w.all_namespaces()
