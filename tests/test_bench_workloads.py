"""The benchmark workloads added after upstream's CI-gated scheduler_perf cases run through the
real scheduler at upstream's integration-test sizes (its "5Nodes" variants): every init and
measured pod is scheduled where the workload means it to go. No timing is asserted."""

from __future__ import annotations

from dataclasses import replace
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


# ---- upstream's podgroup/ cases (GenericWorkload) -------------------------------------------------

def test_gang_workloads_mirror_upstreams_shapes() -> None:
    w = wl.find("GangScheduling/5000Nodes_1000Gangs_3000Pods")
    assert (w.nodes, w.init_pods, w.measure_pods, w.pod_groups, w.pods_per_group) == (5000, 0, 3000, 1000, 3)
    assert w.feature_gates == "GenericWorkload=true"
    groups = list(w.pod_group_objects())
    assert [g["metadata"]["name"] for g in groups[:2]] == ["gang-0", "gang-1"]
    assert groups[0]["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
    assert groups[0]["metadata"]["namespace"] == "gang-ns-0"
    # pods 0-2 in gang-0, 3-5 in gang-1 (upstream's DivideInt .Index .podsPerGroup)
    assert [w.measured_pod(i)["spec"]["schedulingGroup"]["podGroupName"] for i in range(7)] == \
        ["gang-0"] * 3 + ["gang-1"] * 3 + ["gang-2"]
    big = wl.find("GangScheduling/5000Nodes_3Gangs_3000Pods_1000PerGroup")
    assert (big.pod_groups, big.pods_per_group) == (3, 1000)
    assert next(iter(big.pod_group_objects()))["spec"]["schedulingPolicy"]["gang"]["minCount"] == 1000
    basic = wl.find("BasicScheduling/5000Nodes_1000Groups_3000Pods")
    assert next(iter(basic.pod_group_objects()))["spec"]["schedulingPolicy"] == {"basic": {}}
    assert basic.measured_pod(3)["spec"]["schedulingGroup"] == {"podGroupName": "basic-group-1"}


def test_resizing_a_gang_workload_keeps_whole_groups() -> None:
    w = wl.find("GangScheduling/5000Nodes_1000Gangs_3000Pods").resized(nodes=10, measure_pods=9)
    assert (w.pod_groups, w.pods_per_group) == (3, 3)
    assert w.id == "GangScheduling/10Nodes_3Groups_3PerGroup"  # the groups in the name: sizes of two cases differ
    with pytest.raises(ValueError, match="not a whole number of groups of 3"):
        w.resized(measure_pods=10)


@pytest.mark.parametrize("workload_id", ["GangScheduling/100Nodes_10Gangs", "BasicScheduling/100Nodes_10Groups"])
def test_pod_group_workloads_schedule_every_pod_with_the_gate_on(workload_id: str) -> None:
    b = _run(workload_id, 10, 0, 9)
    placed = _placed(b, "pod-")
    assert len(placed) == 9 and all(placed.values())
    # the scheduler saw the PodGroups (gang: PodGroupInitiallyScheduled set by the pod-group cycle)
    pg = b.sched.ctx.objects.get("PodGroup", f"{b.w.measure_namespace}/{b.w.group_prefix}-0")
    assert pg is not None
    if b.w.group_policy == "gang":
        conds = {c["type"]: c["status"] for c in pg.get("status", {}).get("conditions", [])}
        assert conds == {"PodGroupInitiallyScheduled": "True"}


def test_a_gang_too_big_for_the_cluster_binds_none_of_its_pods() -> None:
    # 10 nodes of 4 cpu take 400 pods of 100m; a gang of 500 cannot reach its minCount
    w = replace(wl.find("GangScheduling/5000Nodes_3Gangs_3000Pods_1000PerGroup"), nodes=10, measure_pods=500,
                pods_per_group=500, pod_groups=1)
    b = Bench(w, loop="sim")
    b.setup()
    b.measure()
    assert _placed(b, "pod-") and not any(_placed(b, "pod-").values())


def test_a_resized_gang_workloads_child_resizes_the_case_of_its_group_size() -> None:
    import argparse

    from benchmarks.run import _child_args

    w = wl.find("GangScheduling/5000Nodes_3Gangs_3000Pods_1000PerGroup").resized(nodes=1000)
    args = argparse.Namespace(seed=0, per_node=False, loop="operator", profile=None, plugins=None,
                              scheduling_profile=None)
    argv = _child_args(w, args)
    child = wl.find(argv[argv.index("--child") + 1])
    assert child.pods_per_group == 1000
    assert child.resized(nodes=1000).id == w.id
