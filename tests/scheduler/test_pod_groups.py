"""Pod groups through the whole scheduler (simulate's in-memory cluster), GenericWorkload on:
a gang bound whole or not at all, the pod-group cycle's messages (checked against kube-scheduler
v1.37.2 by tests/cluster/test_gangs.py), the PodGroupInitiallyScheduled condition, the group's
validation, gangs waiting for their pods or their PodGroup, and the metrics."""

from __future__ import annotations

import io
from typing import Any

import pytest

from kubeberth import features
from kubeberth.features import FeatureGates
from kubeberth.metrics import SchedulerMetrics
from kubeberth.model import Pod
from kubeberth.plugins.gang_scheduling import GangScheduling
from kubeberth.queue.group_gate import KEEP_FROM_MEMBERS
from kubeberth.whatif.engine import run_simulation
from tests.builders import node_dict, pod_dict

GATES = FeatureGates.parse("GenericWorkload=true")


def pod_group(name: str, min_count: int | None, **spec: Any) -> dict[str, Any]:
    policy = {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}}
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default", "generation": 1},
            "spec": {"schedulingPolicy": policy, **spec}}


def member(group: str, i: int, cpu: str, **spec: Any) -> dict[str, Any]:
    p = pod_dict(f"{group}-{i}", cpu=cpu, **spec)
    p["spec"]["schedulingGroup"] = {"podGroupName": group}
    return p


def two_nodes() -> list[dict[str, Any]]:
    return [node_dict("n1", cpu="2"), node_dict("n2", cpu="2")]


def run(objects: list[dict[str, Any]], gates: FeatureGates = GATES) -> tuple[dict[str, Any], Any]:
    with features.override(gates):
        outcomes, sched = run_simulation(objects, warn=io.StringIO())
    return {o.pod.split("/", 1)[1]: o for o in outcomes}, sched


def condition(sched: Any, name: str) -> tuple[str, str, str] | None:
    pg = sched.ctx.objects.get("PodGroup", f"default/{name}")
    conds = [c for c in (pg.get("status") or {}).get("conditions") or [] if c["type"] == "PodGroupInitiallyScheduled"]
    return (conds[0]["status"], conds[0]["reason"], conds[0]["message"]) if conds else None


NO_VICTIMS = "pod group preemption: No preemption victims found for incoming preemptor"


def test_a_gang_that_fits_is_bound_whole() -> None:
    got, sched = run([*two_nodes(), pod_group("g", 3), *(member("g", i, "500m") for i in range(3))])
    assert {n: o.status for n, o in got.items()} == {"g-0": "Scheduled", "g-1": "Scheduled", "g-2": "Scheduled"}
    assert condition(sched, "g") == ("True", "Scheduled", "")


def test_a_gang_that_cannot_reach_min_count_is_bound_not_at_all() -> None:
    # g-0 fits on n1 (1500m), g-1 on n2, g-2 fits nowhere: 2 scheduled, 0 remaining < 3
    got, sched = run([*two_nodes(), pod_group("g", 3), *(member("g", i, "1500m") for i in range(3))])
    assert {o.status for o in got.values()} == {"Unschedulable"}
    group = f"minCount (3) cannot be satisfied: 2 scheduled, 0 remaining, {NO_VICTIMS}"
    # placed pods fail with the group's message; the pod that fit nowhere with its own FitError
    assert got["g-0"].message == f"pod group is unschedulable, {group}"
    assert got["g-1"].message == f"pod group is unschedulable, {group}"
    assert got["g-2"].message == "0/2 nodes are available: 2 Insufficient cpu."
    assert condition(sched, "g") == ("False", "Unschedulable", group)
    assert not sched.cache.assumed_count()  # every placement of the attempts was undone


def test_pods_not_tried_get_the_groups_status_without_the_post_filter() -> None:
    # g-0 fits nowhere: 0 scheduled + 2 remaining < 3 already: g-1 and g-2 are never tried
    objects = [*two_nodes(), pod_group("g", 3), member("g", 0, "3"), member("g", 1, "100m"), member("g", 2, "100m")]
    got, sched = run(objects)
    assert got["g-0"].message == "0/2 nodes are available: 2 Insufficient cpu."
    assert got["g-1"].message == got["g-2"].message == "minCount (3) cannot be satisfied: 0 scheduled, 2 remaining"
    assert condition(sched, "g") == ("False", "Unschedulable",
                                     f"minCount (3) cannot be satisfied: 0 scheduled, 2 remaining, {NO_VICTIMS}")


def test_without_the_gate_the_pods_are_scheduled_one_by_one() -> None:
    got, sched = run([*two_nodes(), pod_group("g", 3), *(member("g", i, "1500m") for i in range(3))],
                     FeatureGates())
    assert sorted(o.status for o in got.values()) == ["Scheduled", "Scheduled", "Unschedulable"]
    assert condition(sched, "g") is None


def test_a_gang_arriving_pod_by_pod_asks_gang_scheduling_once_per_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    # each arrival looks at the gang's entry twice (the pod joins it; its Add event moves it): upstream
    # asks every PreEnqueue plugin for every pod each time (n^2 calls); the queue keeps the answers
    # that cannot have changed and asks GangScheduling, whose answer is the group's, once per look
    calls = []
    real = GangScheduling.pre_enqueue

    def counted(self: GangScheduling, pod: Pod) -> Any:
        calls.append(pod.name)
        return real(self, pod)

    monkeypatch.setattr(GangScheduling, "pre_enqueue", counted)
    n = 40
    nodes = [node_dict(f"n{i}", cpu="4") for i in range(4)]
    got, sched = run([*nodes, pod_group("g", n), *(member("g", i, "100m") for i in range(n))])
    assert {o.status for o in got.values()} == {"Scheduled"} and len(got) == n
    assert condition(sched, "g") == ("True", "Scheduled", "")
    # (an entry of fewer than KEEP_FROM_MEMBERS pods is asked pod by pod)
    assert len(calls) <= 2 * n + 2 * KEEP_FROM_MEMBERS ** 2


def test_a_gang_short_of_pods_waits_without_an_attempt() -> None:
    got, sched = run([*two_nodes(), pod_group("g", 3), *(member("g", i, "100m") for i in range(2))])
    # never tried: simulate says what GangScheduling's PreEnqueue says
    assert all(o.node is None and o.message == "waiting for minCount pods from a gang to appear in scheduling queue"
               for o in got.values())
    assert condition(sched, "g") is None
    assert all(sched.outcomes[f"default/g-{i}"].attempts == 0 for i in range(2))
    assert [p.name for p in sched.queue.pending_pods()["gated"]] == ["g-0", "g-1"]


def test_pods_without_their_pod_group_wait_for_it() -> None:
    got, sched = run([*two_nodes(), *(member("g", i, "100m") for i in range(2))])
    assert all(o.node is None and o.message == 'waiting for pods\'s pod group "g" to appear in scheduling queue'
               for o in got.values())
    assert all(sched.outcomes[f"default/g-{i}"].attempts == 0 for i in range(2))
    assert [p.name for p in sched.queue.pending_pods()["incomplete"]] == ["g-0", "g-1"]


async def test_a_pod_group_that_appears_after_its_pods() -> None:
    from kubeberth.clock import FakeClock
    from kubeberth.scheduler import Scheduler
    from kubeberth.testing import InMemoryClient

    with features.override(GATES):
        sched = Scheduler(clock=FakeClock())
        sched.ctx.client = InMemoryClient(sched)
        sched.add_profile_spec(__import__("kubeberth.config", fromlist=["default_spec"]).default_spec())
        for n in two_nodes():
            sched.on_node_add(n)
        for i in range(2):
            sched.on_pod_add(member("g", i, "100m"))
        await sched.run_until_idle()
        assert [o.attempts for o in sched.outcomes.values()] == [0, 0]
        assert not any(o.node for o in sched.outcomes.values())
        sched.on_object("PodGroup", pod_group("g", 2))
        await sched.run_until_idle()
        await sched.wait_for_bindings()
    assert [o.status for o in sched.outcomes.values()] == ["Scheduled", "Scheduled"]
    assert condition(sched, "g") == ("True", "Scheduled", "")


def test_a_basic_group_is_placed_together_but_without_a_quorum() -> None:
    got, sched = run([*two_nodes(), pod_group("g", None), *(member("g", i, "1500m") for i in range(3))])
    assert sorted(o.status for o in got.values()) == ["Scheduled", "Scheduled", "Unschedulable"]
    assert condition(sched, "g") == ("True", "Scheduled", "")


@pytest.mark.parametrize(("pods", "message"), [
    pytest.param([member("g", 0, "100m"), member("g", 1, "100m", priority=5)],
                 "all pods in a single pod group should have the same priority as the pod group's priority, "
                 "got 5 and 0", id="priority"),
    pytest.param([member("g", 0, "100m"), member("g", 1, "100m", schedulerName="other")],
                 'all pods in a single pod group should have the same .spec.schedulerName set, got: "other" and '
                 '"default-scheduler"', id="scheduler-name"),
    pytest.param([member("g", 0, "100m"), member("g", 1, "100m", preemptionPolicy="Never")],
                 "all pods in a single pod group should have the same preemption policy, got Never and "
                 "PreemptLowerPriority", id="preemption-policy"),
])
def test_an_inconsistent_group_is_a_scheduler_error(pods: list[dict[str, Any]], message: str) -> None:
    objects = [*two_nodes(), pod_group("g", 2), *pods]
    if any(p["spec"].get("schedulerName") == "other" for p in pods):
        objects.append({"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile",
                        "metadata": {"name": "other"}, "spec": {"schedulerName": "other"}})
    got, sched = run(objects)
    assert all(o.node is None and o.message == message for o in got.values())
    assert condition(sched, "g") == ("False", "SchedulerError", message)


def test_a_true_condition_is_never_taken_back() -> None:
    # scheduled once (fits); its later pods cannot reach the quorum alone: the condition stays True
    objects = [*two_nodes(), pod_group("g", 2)]
    objects += [{**member("g", i, "500m"), "spec": {**member("g", i, "500m")["spec"], "nodeName": "n1"}}
                for i in range(2)]
    objects += [member("g", 2, "5")]
    pg = objects[2]
    pg["status"] = {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True", "reason": "Scheduled",
                                    "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    got, sched = run(objects)
    assert got["g-2"].status == "Unschedulable"
    assert condition(sched, "g") == ("True", "Scheduled", "")


def test_pod_group_metrics() -> None:
    with features.override(GATES):
        metrics = SchedulerMetrics()
        from kubeberth.clock import FakeClock  # noqa: F401  (the metrics exist only with the gate)
    assert metrics.podgroup_schedule_attempts_total is not None
    assert SchedulerMetrics().podgroup_schedule_attempts_total is None
    metrics.pod_group_schedule_attempt("scheduled", "default-scheduler", 0.01)
    metrics.pod_group_algorithm_duration(0.002)
    assert metrics.sample("scheduler_podgroup_schedule_attempts_total",
                          {"result": "scheduled", "profile": "default-scheduler"}) == 1
    assert metrics.sample("scheduler_podgroup_scheduling_algorithm_duration_seconds_count") == 1
    metrics.workload_preemption_attempt("Success")
    metrics.workload_preemption_victims(3, 1, 2)
    metrics.workload_preemption_victims(1, 0, 0)
    assert metrics.sample("scheduler_workload_preemption_attempts_total", {"result": "Success"}) == 1
    assert metrics.sample("scheduler_workload_preemption_victims_count") == 2
    assert metrics.sample("scheduler_preemption_workload_disruptions_count", {"preemptor": "podgroup"}) == 1
    assert metrics.sample("scheduler_preemption_pdb_violations_total", {"preemptor": "podgroup"}) == 2
    metrics.queued_entities({("active", "podgroup"): 2})
    assert metrics.sample("scheduler_queued_entities", {"queue": "active", "type": "podgroup"}) == 2


DRA_POST_FILTER = "deallocation and deletion of ResourceClaims completed"


@pytest.mark.parametrize(("extra", "pod_spec", "tail"), [
    pytest.param([], {}, NO_VICTIMS, id="default-profile"),
    # kube-scheduler v1.37.2 said these, word for word, on the same objects (DynamicResources'
    # PodGroupPostFilter first, then DefaultPreemption's, as the default profile orders them)
    pytest.param([{"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": "d"},
                   "spec": {"schedulerName": "default-scheduler",
                            "plugins": {"multiPoint": {"disabled": [{"name": "DefaultPreemption"}]}}}}],
                 {}, DRA_POST_FILTER, id="without-default-preemption"),
    pytest.param([{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "never"},
                   "value": 0, "preemptionPolicy": "Never"}],
                 {"priorityClassName": "never"},
                 f"{DRA_POST_FILTER}, pod group preemption: not eligible due to preemptionPolicy=Never.",
                 id="preemption-policy-never"),
])
def test_the_pod_group_post_filters_say_what_upstreams_say(extra: list[dict[str, Any]], pod_spec: dict[str, Any],
                                                           tail: str) -> None:
    objects = [*two_nodes(), *extra, pod_group("g", 3), *(member("g", i, "1500m", **pod_spec) for i in range(3))]
    got, sched = run(objects)
    group = f"minCount (3) cannot be satisfied: 2 scheduled, 0 remaining, {tail}"
    assert condition(sched, "g") == ("False", "Unschedulable", group)
    assert got["g-0"].message == f"pod group is unschedulable, {group}"


def test_group_preemption_that_cannot_help_says_the_groups_reason_again() -> None:
    """The low pod is taken off, the group's algorithm run again, and still 2 of 3 fit: DefaultPreemption
    says the algorithm's reason, Unschedulable, after DynamicResources' (both reasons add up)."""
    low = pod_dict("low", cpu="100m", node="n1", priority=-1)
    objects = [*two_nodes(), low, pod_group("g", 3), *(member("g", i, "1500m") for i in range(3))]
    got, sched = run(objects)
    reason = "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining"
    assert condition(sched, "g") == ("False", "Unschedulable",
                                     f"{reason}, {DRA_POST_FILTER}, pod group preemption: {reason}")
    assert got["low"].status == "Existing"
    assert not sched.cache.assumed_count()
    # the snapshot holds the low pod again once the preemption gave up
    assert [p.name for p in sched.snapshot.get("n1").pods] == ["low"]


def prioritised(group: str, i: int, cpu: str, priority: int = 100, **spec: Any) -> dict[str, Any]:
    return member(group, i, cpu, priority=priority, **spec)


def preempted_events(sched: Any) -> list[tuple[str, str]]:
    return [(key.split("/", 1)[1], message) for key, _, reason, message in sched.ctx.client.events
            if reason == "Preempted"]


def test_a_gang_preempts_lower_priority_pods_and_is_bound_whole() -> None:
    objects = [*two_nodes(), pod_dict("low-a", cpu="1500m", node="n1", priority=1),
               pod_dict("low-b", cpu="1500m", node="n2", priority=1),
               pod_group("g", 2, priority=100), prioritised("g", 0, "1500m"), prioritised("g", 1, "1500m")]
    got, sched = run(objects)
    assert {n: o.status for n, o in got.items()} == {"low-a": "Evicted", "low-b": "Evicted", "g-0": "Scheduled",
                                                     "g-1": "Scheduled"}
    assert {got["g-0"].node, got["g-1"].node} == {"n1", "n2"}
    assert sorted(preempted_events(sched)) == [("low-a", "Preempted by podgroup default/g on node cluster"),
                                               ("low-b", "Preempted by podgroup default/g on node cluster")]
    assert condition(sched, "g") == ("True", "Scheduled", "")
    # the group's victims are on its pods' outcomes (simulate's "preempted ..."; the fuzzer's victims)
    assert sorted(v for o in (got["g-0"], got["g-1"]) for v in o.victims) == ["default/low-a", "default/low-b"]


def test_only_lower_priority_pods_are_victims() -> None:
    objects = [*two_nodes(), pod_dict("same", cpu="1500m", node="n1", priority=100),
               pod_dict("low", cpu="1500m", node="n2", priority=1),
               pod_group("g", 2, priority=100), prioritised("g", 0, "1500m"), prioritised("g", 1, "1500m")]
    got, sched = run(objects)
    assert got["same"].status == "Existing" and got["low"].status == "Existing"
    reason = "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining"
    # the low pod goes off, and still only one fits
    assert condition(sched, "g") == ("False", "Unschedulable", f"{reason}, {DRA_POST_FILTER}, pod group preemption: "
                                                               "minCount (2) cannot be satisfied: 1 scheduled, "
                                                               "0 remaining")
    assert preempted_events(sched) == []


def test_a_disruption_mode_all_group_is_preempted_as_a_unit_and_a_lone_pod_reprieved() -> None:
    # n1 (2 CPU): vg-0 (1000m) and solo (400m); n2 (1 CPU): vg-1. The preemptor (1500m) fits n1 only.
    vg = pod_group("vg", None, priority=1, disruptionMode={"all": {}})
    objects = [node_dict("n1", cpu="2"), node_dict("n2", cpu="1"), vg,
               member("vg", 0, "1000m", priority=1, node="n1"), member("vg", 1, "500m", priority=1, node="n2"),
               pod_dict("solo", cpu="400m", node="n1", priority=1),
               pod_group("t", 1, priority=100), prioritised("t", 0, "1500m")]
    got, _ = run(objects)
    assert got["vg-0"].status == got["vg-1"].status == "Evicted"
    assert got["solo"].status == "Existing"
    assert got["t-0"].status == "Scheduled" and got["t-0"].node == "n1"


def test_without_disruption_mode_all_a_groups_pods_are_victims_one_by_one() -> None:
    vg = pod_group("vg", None, priority=1)
    objects = [node_dict("n1", cpu="2"), node_dict("n2", cpu="1"), vg,
               member("vg", 0, "1000m", priority=1, node="n1"), member("vg", 1, "500m", priority=1, node="n2"),
               pod_dict("solo", cpu="400m", node="n1", priority=1),
               pod_group("t", 1, priority=100), prioritised("t", 0, "1500m")]
    got, _ = run(objects)
    assert got["vg-0"].status == "Evicted"
    assert got["vg-1"].status == got["solo"].status == "Existing"


def pdb(name: str, app: str, allowed: int) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": app}}}, "status": {"disruptionsAllowed": allowed}}


@pytest.mark.parametrize(("allowed", "evicted"), [
    pytest.param(0, "free", id="the-guarded-pod-is-given-back-first"),
    pytest.param(1, "guarded", id="a-budget-that-allows-it-changes-nothing"),
])
def test_pdb_violating_victims_are_reprieved_first(allowed: int, evicted: str) -> None:
    # n1 holds guarded (priority 1) and free (priority 50, more important): one of them may stay
    guarded = pod_dict("guarded", cpu="900m", node="n1", priority=1, labels={"app": "guarded"})
    objects = [node_dict("n1", cpu="2"), guarded, pod_dict("free", cpu="900m", node="n1", priority=50),
               pdb("guard", "guarded", allowed), pod_group("p", 1, priority=100), prioritised("p", 0, "1100m")]
    got, _ = run(objects)
    assert got[evicted].status == "Evicted"
    kept = {"free", "guarded"} - {evicted}
    assert {got[k].status for k in kept} == {"Existing"}
    assert got["p-0"].status == "Scheduled"


@pytest.mark.parametrize(("gates", "pg_policy", "pod_policy", "preempts", "message"), [
    pytest.param("GenericWorkload=true", None, "Never", False, "pod group preemption: not eligible due to "
                 "preemptionPolicy=Never.", id="gate-off-the-pods-say-never"),
    pytest.param("GenericWorkload=true", "Never", None, True, "", id="gate-off-the-groups-policy-is-ignored"),
    pytest.param("GenericWorkload=true,PodGroupPreemptionPolicy=true", "Never", "Never", False,
                 "pod group preemption: not eligible due to preemptionPolicy=Never.",
                 id="gate-on-the-group-says-never"),
    pytest.param("GenericWorkload=true,PodGroupPreemptionPolicy=true", None, None, True, "",
                 id="gate-on-unset-is-preempt-lower-priority"),
    pytest.param("GenericWorkload=true,PodGroupPreemptionPolicy=true", "Never", None, False,
                 "all pods in a single pod group should have the same preemption policy as the pod group's "
                 "preemption policy, got PreemptLowerPriority and Never", id="gate-on-pods-must-agree"),
])
def test_pod_group_preemption_policy(gates: str, pg_policy: str | None, pod_policy: str | None, preempts: bool,
                                     message: str) -> None:
    spec: dict[str, Any] = {"priority": 100}
    if pg_policy:
        spec["preemptionPolicy"] = pg_policy
    pod_spec: dict[str, Any] = {"preemptionPolicy": pod_policy} if pod_policy else {}
    objects = [node_dict("n1", cpu="2"), pod_dict("low", cpu="1500m", node="n1", priority=1),
               pod_group("g", 1, **spec), prioritised("g", 0, "1500m", **pod_spec)]
    got, sched = run(objects, FeatureGates.parse(gates))
    assert (got["low"].status == "Evicted") is preempts
    if message:
        assert message in condition(sched, "g")[2]
