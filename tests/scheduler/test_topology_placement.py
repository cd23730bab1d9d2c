"""Topology-aware placement (TopologyAwareWorkloadScheduling) through the whole scheduler
(simulate's in-memory cluster): a group placed in one domain of its topology key, the fuller
domain first (NodeResourcesFit's placement score), pinned to the domain of its pods already
placed, unschedulable with upstream's words when no single domain holds it, and the generator's
errors. tests/cluster/test_gangs.py checks the same against kube-scheduler v1.37.2."""

from __future__ import annotations

import io
from typing import Any

import pytest

from kubeberth import features
from kubeberth.features import FeatureGates
from kubeberth.whatif.engine import run_simulation
from tests.builders import node_dict, pod_dict

TAWS = FeatureGates.parse("GenericWorkload=true,TopologyAwareWorkloadScheduling=true")
GANGS_ONLY = FeatureGates.parse("GenericWorkload=true")
RACK = "example.com/rack"
NO_VICTIMS = "pod group preemption: No preemption victims found for incoming preemptor"
RACKS = {"n1": "a", "n2": "a", "n3": "b", "n4": "b"}


def pod_group(name: str, min_count: int | None, key: str | None = RACK) -> dict[str, Any]:
    policy = {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}}
    spec: dict[str, Any] = {"schedulingPolicy": policy}
    if key is not None:
        spec["schedulingConstraints"] = {"topology": [{"key": key}]}
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default", "generation": 1}, "spec": spec}


def member(group: str, i: int, cpu: str, node: str = "") -> dict[str, Any]:
    p = pod_dict(f"{group}-{i}", cpu=cpu, node=node)
    p["spec"]["schedulingGroup"] = {"podGroupName": group}
    return p


def racks(cpu: str = "2", labelled: bool = True) -> list[dict[str, Any]]:
    return [node_dict(n, cpu=cpu, labels={RACK: r} if labelled else {}) for n, r in RACKS.items()]


def run(objects: list[dict[str, Any]], gates: FeatureGates = TAWS, seed: int = 0) -> tuple[dict[str, Any], Any]:
    with features.override(gates):
        outcomes, sched = run_simulation(objects, seed=seed, warn=io.StringIO())
    return {o.pod.split("/", 1)[1]: o for o in outcomes}, sched


def condition(sched: Any, name: str) -> tuple[str, str, str] | None:
    pg = sched.ctx.objects.get("PodGroup", f"default/{name}")
    conds = [c for c in (pg.get("status") or {}).get("conditions") or [] if c["type"] == "PodGroupInitiallyScheduled"]
    return (conds[0]["status"], conds[0]["reason"], conds[0]["message"]) if conds else None


def rack_of(outcome: Any) -> str:
    return RACKS[outcome.node]


@pytest.mark.parametrize(("busy", "rack"), [("n1", "a"), ("n3", "b")])
def test_a_group_goes_to_one_rack_the_fuller_one(busy: str, rack: str) -> None:
    # `busy` already runs 1 CPU: NodeResourcesFit's placement score (MostAllocated over the rack)
    # prefers its rack; PodGroupPodsCount ties (3 pods in either)
    objects = [*racks(), pod_dict("busy", cpu="1", node=busy), pod_group("g", 3),
               *(member("g", i, "500m") for i in range(3))]
    got, sched = run(objects)
    assert {rack_of(got[f"g-{i}"]) for i in range(3)} == {rack}
    assert condition(sched, "g") == ("True", "Scheduled", "")


def test_the_rack_that_holds_more_of_a_basic_group_wins() -> None:
    # rack a holds two 1500m pods, rack b (n3 has 4 CPU) three: equally full after them, so
    # PodGroupPodsCount decides (2 -> 66, 3 -> 100)
    nodes = racks()
    nodes[2] = node_dict("n3", cpu="4", labels={RACK: "b"})
    got, _ = run([*nodes, pod_group("g", None), *(member("g", i, "1500m") for i in range(3))])
    assert {o.status for o in got.values()} == {"Scheduled"}
    assert {rack_of(o) for o in got.values()} == {"b"}


def test_without_the_gate_the_same_group_spreads_over_racks() -> None:
    objects = [*racks(), pod_dict("busy", cpu="1", node="n1"), pod_group("g", 3),
               *(member("g", i, "500m") for i in range(3))]
    got, _ = run(objects, GANGS_ONLY)
    assert {rack_of(got[f"g-{i}"]) for i in range(3)} == {"a", "b"}


@pytest.mark.parametrize("seed", range(6))
def test_equal_racks_tie_and_either_is_taken_whole(seed: int) -> None:
    got, _ = run([*racks(), pod_group("g", 2), *(member("g", i, "500m") for i in range(2))], seed=seed)
    assert len({rack_of(o) for o in got.values()}) == 1


def test_ties_are_broken_at_random_not_by_order() -> None:
    seen = set()
    for seed in range(12):
        got, _ = run([*racks(), pod_group("g", 2), *(member("g", i, "500m") for i in range(2))], seed=seed)
        seen.add(rack_of(got["g-0"]))
    assert seen == {"a", "b"}


def test_a_group_is_pinned_to_the_rack_of_its_placed_pods() -> None:
    # g-0 is bound in rack b; rack a is the fuller (it would win a free choice)
    objects = [*racks(), pod_dict("busy", cpu="1", node="n1"), pod_group("g", 2),
               member("g", 0, "500m", node="n3"), *(member("g", i, "500m") for i in (1, 2))]
    got, sched = run(objects)
    assert {rack_of(got[f"g-{i}"]) for i in (1, 2)} == {"b"}
    assert condition(sched, "g") == ("True", "Scheduled", "")


def test_a_group_no_single_rack_holds_is_unschedulable() -> None:
    # each rack holds two 1500m pods; three fit the cluster but no rack
    objects = [*racks(), pod_group("g", 3), *(member("g", i, "1500m") for i in range(3))]
    got, sched = run(objects)
    assert {o.status for o in got.values()} == {"Unschedulable"}
    group = ("pod group is unschedulable, 0/2 placements are available, first placement status: minCount (3) "
             f"cannot be satisfied: 2 scheduled, 0 remaining, {NO_VICTIMS}")
    assert condition(sched, "g") == ("False", "Unschedulable", group)
    # the first placement's results: two placed (the group's message), the third with its FitError
    # over the placement's two nodes
    assert got["g-0"].message == got["g-1"].message == f"pod group is unschedulable, {group}"
    assert got["g-2"].message == "0/2 nodes are available: 2 Insufficient cpu."
    assert not sched.cache.assumed_count()
    assert sched.snapshot.placement is None  # the parent placement is back


def test_the_first_placement_offered_is_the_one_reported() -> None:
    # rack b first: n3 already runs 1 CPU there, so only one of the group fits its first placement
    from kubeberth.plugins.topology_placement_generator import offered_first
    objects = [*racks(), pod_dict("busy", cpu="1", node="n3"), pod_group("g", 3),
               *(member("g", i, "1500m") for i in range(3))]
    _, sched = run(objects)
    assert "first placement status: minCount (3) cannot be satisfied: 2 scheduled, 0 remaining" in condition(
        sched, "g")[2]
    with offered_first("b"):
        _, sched = run(objects)
    assert "first placement status: minCount (3) cannot be satisfied: 1 scheduled, 1 remaining" in condition(
        sched, "g")[2]
    with offered_first("c"):  # no such domain: node-list order
        _, sched = run(objects)
    assert "2 scheduled, 0 remaining" in condition(sched, "g")[2]


def test_group_preemptions_rerun_offers_its_own_first_placement() -> None:
    # a low pod on n1 makes group preemption run the group's algorithm again: each walk of the
    # placements (upstream's map) has its own first placement
    from kubeberth.plugins.topology_placement_generator import offered_first
    objects = [*racks(), pod_dict("busy", cpu="1", node="n3"), pod_dict("low", cpu="100m", node="n1", priority=-1),
               pod_group("g", 3), *(member("g", i, "1500m") for i in range(3))]
    with offered_first("a", "b"):
        _, sched = run(objects)
    main, rerun = condition(sched, "g")[2].split("pod group preemption: ")
    assert "first placement status: minCount (3) cannot be satisfied: 2 scheduled, 0 remaining" in main
    assert "first placement status: minCount (3) cannot be satisfied: 1 scheduled, 1 remaining" in rerun
    with offered_first("b", "a"):
        _, sched = run(objects)
    main, rerun = condition(sched, "g")[2].split("pod group preemption: ")
    assert "1 scheduled, 1 remaining" in main and "2 scheduled, 0 remaining" in rerun


@pytest.mark.parametrize(("key", "dra_says"), [(RACK, False), (None, True)], ids=["topology", "no-constraints"])
def test_dynamic_resources_says_nothing_for_a_topology_aware_group(key: str | None, dra_says: bool) -> None:
    # the low pod goes off for the group's preemption and the algorithm runs again, in vain; upstream's
    # DynamicResources PodGroupPostFilter gives no reason for a group with schedulingConstraints
    low = pod_dict("low", cpu="100m", node="n1", priority=-1)
    objects = [*racks(), low, pod_group("g", 5, key), *(member("g", i, "1500m") for i in range(5))]
    _, sched = run(objects)
    message = condition(sched, "g")[2]
    assert "pod group preemption: " in message
    assert ("deallocation and deletion of ResourceClaims completed, pod group preemption: " in message) is dra_says


def test_without_the_gate_the_cluster_holds_it() -> None:
    objects = [*racks(), pod_group("g", 3), *(member("g", i, "1500m") for i in range(3))]
    got, _ = run(objects, GANGS_ONLY)
    assert {o.status for o in got.values()} == {"Scheduled"}


def test_no_node_has_the_key() -> None:
    objects = [*racks(labelled=False), pod_group("g", 2), *(member("g", i, "100m") for i in range(2))]
    got, sched = run(objects)
    assert {o.message for o in got.values()} == {"no feasible placements found"}
    assert condition(sched, "g") == ("False", "Unschedulable", f"no feasible placements found, {NO_VICTIMS}")


def test_a_group_without_a_topology_key_uses_every_node() -> None:
    objects = [*racks(), pod_group("g", 3, key=None), *(member("g", i, "1500m") for i in range(3))]
    got, _ = run(objects)
    assert {o.status for o in got.values()} == {"Scheduled"}


def test_placed_pods_in_two_racks_are_a_scheduler_error() -> None:
    objects = [*racks(), pod_group("g", 2), member("g", 0, "100m", node="n1"), member("g", 1, "100m", node="n3"),
               member("g", 2, "100m")]
    got, sched = run(objects)
    message = "cannot determine domain for already scheduled pods: more than 1 domain found for pod group: "
    status, reason, text = condition(sched, "g") or ("", "", "")
    assert (status, reason) == ("False", "SchedulerError")
    assert text in (message + "a, b", message + "b, a")
    assert got["g-2"].message == text



def run_with_metrics(objects: list[dict[str, Any]], gates: FeatureGates, monkeypatch: pytest.MonkeyPatch) -> Any:
    """simulate's run with a scheduler that records the scheduler_* metrics (made under `gates`)."""
    import kubeberth.whatif.engine as sim
    from kubeberth.metrics import SchedulerMetrics
    from kubeberth.scheduler import Scheduler

    with features.override(gates):
        metrics = SchedulerMetrics()
    monkeypatch.setattr(sim, "Scheduler", lambda **kw: Scheduler(metrics=metrics, **kw))
    run(objects, gates)
    return metrics


def test_placement_metrics(monkeypatch: pytest.MonkeyPatch) -> None:
    profile = {"profile": "default-scheduler"}
    fits = run_with_metrics([*racks(), pod_dict("busy", cpu="1", node="n1"), pod_group("g", 3),
                             *(member("g", i, "500m") for i in range(3))], TAWS, monkeypatch)
    assert fits.sample("scheduler_generated_placements_total", profile) == 2
    assert fits.sample("scheduler_placement_evaluations_total", {"result": "feasible", **profile}) == 2
    assert fits.sample("scheduler_placement_evaluation_duration_seconds_count", {"result": "feasible", **profile}) == 2
    nowhere = run_with_metrics([*racks(), pod_group("g", 3), *(member("g", i, "1500m") for i in range(3))], TAWS,
                               monkeypatch)
    attempts = nowhere.sample("scheduler_podgroup_schedule_attempts_total", {"result": "unschedulable", **profile})
    assert attempts is not None and attempts >= 1
    assert nowhere.sample("scheduler_placement_evaluations_total", {"result": "infeasible", **profile}) == 2 * attempts
    assert not nowhere.sample("scheduler_placement_evaluations_total", {"result": "feasible", **profile})


def test_without_the_gate_no_placement_metrics(monkeypatch: pytest.MonkeyPatch) -> None:
    metrics = run_with_metrics([*racks(), pod_group("g", 2), *(member("g", i, "100m") for i in range(2))],
                               GANGS_ONLY, monkeypatch)
    assert metrics.generated_placements_total is None
    assert metrics.sample("scheduler_generated_placements_total", {"profile": "default-scheduler"}) is None
