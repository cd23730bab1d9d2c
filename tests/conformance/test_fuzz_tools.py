"""The differential fuzzer's offline parts: the generator, the judge, the log parser and
tests/conformance/fuzz-known.yaml (the runs themselves need the control plane: tests/cluster)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import pytest

from kubeberth import features
from kubeberth.features import FeatureGates
from kubeberth.whatif.simulate import simulate
from tests.cluster import fuzz_groups
from tests.cluster.fuzz_gen import generate
from tests.cluster.fuzz_groups import Options
from tests.cluster.fuzz_judge import (
    Decision,
    attempts,
    awaiting_flush,
    explain,
    judge,
    judge_group,
    judge_group_victims,
    load_known,
    parse_known,
    plugin_scores,
)

FEATURES: dict[str, Callable[[dict[str, Any]], bool]] = {
    "profile": lambda o: o["kind"] == "SchedulingProfile",
    "LeastAllocated": lambda o: '"LeastAllocated"' in json.dumps(o),
    "MostAllocated": lambda o: '"MostAllocated"' in json.dumps(o),
    "RequestedToCapacityRatio": lambda o: '"RequestedToCapacityRatio"' in json.dumps(o),
    "score weights": lambda o: o["kind"] == "SchedulingProfile" and "enabled" in json.dumps(o),
    "disabled plugins": lambda o: o["kind"] == "SchedulingProfile" and "disabled" in json.dumps(o),
    "percentageOfNodesToScore": lambda o: "percentageOfNodesToScore" in o.get("spec", {}),
    "default constraints": lambda o: "defaultConstraints" in json.dumps(o),
    "taints": lambda o: o["kind"] == "Node" and bool(o["spec"].get("taints")),
    "unschedulable node": lambda o: o["kind"] == "Node" and bool(o["spec"].get("unschedulable")),
    "node not ready": lambda o: o["kind"] == "Node" and '"False"' in json.dumps(o["status"]["conditions"]),
    "images": lambda o: o["kind"] == "Node" and "images" in o["status"],
    "bound pod": lambda o: o["kind"] == "Pod" and "nodeName" in o["spec"],
    "nodeSelector": lambda o: o["kind"] == "Pod" and "nodeSelector" in o["spec"],
    "required node affinity": lambda o: "nodeSelectorTerms" in json.dumps(o.get("spec", {}).get("affinity", {})),
    "preferred node affinity": lambda o: "preference" in json.dumps(o.get("spec", {}).get("affinity", {})),
    "matchFields": lambda o: "matchFields" in json.dumps(o.get("spec", {}).get("affinity", {})),
    "pod affinity": lambda o: "podAffinity" in o.get("spec", {}).get("affinity", {}),
    "pod anti-affinity": lambda o: "podAntiAffinity" in o.get("spec", {}).get("affinity", {}),
    "namespaceSelector": lambda o: "namespaceSelector" in json.dumps(o.get("spec", {}).get("affinity", {})),
    "spread": lambda o: o["kind"] == "Pod" and "topologySpreadConstraints" in o["spec"],
    "minDomains": lambda o: "minDomains" in json.dumps(o.get("spec", {}).get("topologySpreadConstraints", [])),
    "nodeAffinityPolicy": lambda o: "nodeAffinityPolicy" in json.dumps(o.get("spec", {})),
    "nodeTaintsPolicy": lambda o: "nodeTaintsPolicy" in json.dumps(o.get("spec", {})),
    "matchLabelKeys": lambda o: "matchLabelKeys" in json.dumps(o.get("spec", {})),
    "tolerations": lambda o: o["kind"] == "Pod" and "nodeName" not in o["spec"] and "tolerations" in o["spec"],
    "host ports": lambda o: "hostPort" in json.dumps(o.get("spec", {})),
    "priority class": lambda o: o["kind"] == "Pod" and "priorityClassName" in o["spec"],
    "PDB": lambda o: o["kind"] == "PodDisruptionBudget",
    "Service": lambda o: o["kind"] == "Service",
    "ReplicaSet owner": lambda o: "ownerReferences" in o.get("metadata", {}),
    "volume": lambda o: o["kind"] == "Pod" and "volumes" in o["spec"],
    "extended resource": lambda o: "example.com/gpu" in json.dumps(o.get("spec", {})),
    "terminating pod": lambda o: "deletionTimestamp" in o.get("metadata", {}),
    "init containers": lambda o: o["kind"] == "Pod" and "initContainers" in o["spec"],
    "sidecar": lambda o: '"restartPolicy": "Always"' in json.dumps(o.get("spec", {})),
    "overhead": lambda o: o["kind"] == "Pod" and "overhead" in o["spec"],
    "hostNetwork": lambda o: o["kind"] == "Pod" and "hostNetwork" in o["spec"],
    "CSINode": lambda o: o["kind"] == "CSINode",
    "pending pod of another namespace": lambda o: o["kind"] == "Pod" and "nodeName" not in o["spec"]
    and o["metadata"]["namespace"] != "default",
    "ignoredResources": lambda o: "ignoredResources" in json.dumps(o.get("spec", {})),
    "addedAffinity": lambda o: "addedAffinity" in json.dumps(o.get("spec", {})),
}


def test_the_generator_replays_a_case_from_its_seed_and_index() -> None:
    assert generate(7, 3) == generate(7, 3)
    assert generate(7, 3) != generate(7, 4)
    assert generate(7, 3) != generate(8, 3)


def test_sixty_cases_cover_every_feature_the_generator_claims() -> None:
    objects = [o for i in range(60) for o in generate(1, i)["objects"]]
    missing = [name for name, has in FEATURES.items() if not any(has(o) for o in objects)]
    assert missing == []
    pending = [o for o in objects if o["kind"] == "Pod" and "nodeName" not in o["spec"]]
    assert len(pending) >= 300


@pytest.mark.parametrize("index", range(12))
def test_generated_cases_are_taken_by_simulate_without_complaint(index: int) -> None:
    case = generate(1, index)
    warn = io.StringIO()
    outcomes = simulate(case["objects"], seed=1, warn=warn)
    assert warn.getvalue() == ""
    assert {o.pod for o in outcomes} >= {f"default/{o['metadata']['name']}" for o in case["objects"]
                                         if o["kind"] == "Pod" and o["metadata"]["namespace"] == "default"}


FINAL = "I1124 01:00:00.000001 1 schedule_one.go:1052] " \
        "\"Calculated node's final score for pod\" pod=\"{}\" node=\"{}\" score={}"
LOG = "\n".join(FINAL.format(*line) for line in [
    ("default/p1", "n1", 300), ("default/p2", "n1", 7), ("default/p1", "n2", 200),
    ("default/p1", "n1", 100), ("default/p1", "n2", 100)])


def test_attempts_are_split_where_a_node_is_scored_again() -> None:
    assert attempts(LOG, "default/p1") == [{"n1": 300, "n2": 200}, {"n1": 100, "n2": 100}]
    assert attempts(LOG, "default/p2") == [{"n1": 7}]
    assert attempts(LOG, "default/p3") == []


# kube-scheduler v1.37.2's own lines (seed 31, case 33): p7 preempted team-a/b9 on n4, and the
# victim's deletion got QueueSkip from InterPodAffinity's hint (its namespaceSelector is not
# resolved there), so p7 waited among the unschedulable pods until the leftover flush
QUEUE_LOG = [
    'I1127 02:09:37.71 1 active_queue.go:414] "Entity moved to an internal scheduling queue" type="pod" '
    'entity="default/p7" event="UnscheduledPodAdd" queue="Active"',
    'I1127 02:09:37.73 1 schedule_one.go:117] "Attempting to schedule pod" pod="default/p7"',
    'I1127 02:09:37.73 1 scheduling_queue.go:1137] "Pod moved to an internal scheduling queue" pod="default/p7" '
    'event="ScheduleAttemptFailure" queue="Unschedulable" schedulingCycle=5 hint=0 unschedulable plugins='
    '{"InterPodAffinity":{},"NodeAffinity":{}}',
    'I1127 02:09:37.79 1 plugin.go:237] "a scheduled pod was deleted but it doesn\'t match the target pod\'s '
    'anti-affinity, nor vice versa" pod="default/p7" originalPod="team-a/b9"',
    'I1127 02:10:05.90 1 active_queue.go:414] "Entity moved to an internal scheduling queue" type="pod" '
    'entity="default/p7" event="UnschedulableTimeout" queue="Active"',
    'I1127 02:10:05.90 1 schedule_one.go:117] "Attempting to schedule pod" pod="default/p7"',
]


@pytest.mark.parametrize("lines, pod, waits", [
    (QUEUE_LOG[:4], "default/p7", True),  # parked; the victim's deletion moved it nowhere
    (QUEUE_LOG[:4], "default/p1", False),  # another pod's lines
    (QUEUE_LOG[:2], "default/p7", False),  # being tried
    (QUEUE_LOG[:5], "default/p7", False),  # flushed
    (QUEUE_LOG, "default/p7", False),  # flushed and tried
    (QUEUE_LOG + QUEUE_LOG[2:3], "default/p7", False),  # parked again after its flush: not awaited twice
    ([*QUEUE_LOG[:3], QUEUE_LOG[0].replace("UnscheduledPodAdd", "AssignedPodDelete").replace("Active", "Backoff")],
     "default/p7", False),  # an event re-queued it: its backoff, not the flush, brings the retry
    ([QUEUE_LOG[2].replace("Unschedulable", "Backoff")], "default/p7", False),
])
def test_a_preemptor_no_event_requeued_awaits_the_leftover_flush(lines: list[str], pod: str, waits: bool) -> None:
    assert awaiting_flush("\n".join(lines), pod) is waits


def test_attempts_are_split_where_plugin_scores_follow_final_ones() -> None:
    plugin = 'I1124 1 schedule_one.go:984] "Plugin scored node for pod" pod="default/p1" plugin="ImageLocality" ' \
             'node="{}" score=0'
    log = "\n".join([plugin.format("n1"), FINAL.format("default/p1", "n1", 5), plugin.format("n2"),
                     FINAL.format("default/p1", "n2", 9)])
    assert attempts(log, "default/p1") == [{"n1": 5}, {"n2": 9}]


CASES: list[tuple[str, Decision, Decision, Any, str, str]] = [
    ("same node", Decision("Scheduled", "n1"), Decision("Scheduled", "n1"), None, "agree", ""),
    ("tie by upstream's scores", Decision("Scheduled", "n1"), Decision("Scheduled", "n2"),
     {"n1": 100, "n2": 100, "n3": 50}, "tie", "node"),
    ("lower score upstream", Decision("Scheduled", "n1"), Decision("Scheduled", "n3"),
     {"n1": 100, "n2": 100, "n3": 50}, "diff", "node"),
    ("no scores", Decision("Scheduled", "n1"), Decision("Scheduled", "n2"), None, "diff", "node"),
    ("victims", Decision("Scheduled", "n1", ["default/a"]), Decision("Scheduled", "n1", ["default/b"]), None,
     "diff", "victims"),
    ("status", Decision("Scheduled", "n1"), Decision("Unschedulable", None, [], "0/1 nodes"), None, "diff",
     "status"),
    ("message", Decision("Unschedulable", None, [], "a"), Decision("Unschedulable", None, [], "b"), None, "diff",
     "message"),
]


@pytest.mark.parametrize(("up", "ours", "scores", "kind", "field"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_judge(up: Decision, ours: Decision, scores: Any, kind: str, field: str) -> None:
    verdict = judge(up, ours, scores)
    assert (verdict.kind, verdict.field) == (kind, field)


def test_a_preemption_pick_is_a_tie_only_when_kubeberth_makes_it_under_another_seed() -> None:
    up, ours = Decision("Scheduled", "n1", ["default/a"]), Decision("Scheduled", "n2", ["default/b"])
    assert judge(up, ours, None, [ours, Decision("Scheduled", "n1", ["default/a"])]).kind == "tie"
    assert judge(up, ours, None, [ours, Decision("Scheduled", "n1", ["default/c"])]).kind == "diff"


def test_the_known_file_parses_and_explains_by_field_and_pattern() -> None:
    load_known()
    known = parse_known([{"id": "x", "kind": "wording", "why": "a reason long enough to be read as one, truly",
                          "match": {"field": "message", "upstream": "Insufficient"}}])
    up, ours = Decision("Unschedulable", None, [], "1 Insufficient cpu"), Decision("Unschedulable", None, [], "b")
    assert explain(judge(up, ours, None), up, ours, known).explained_by == "x"
    other = Decision("Unschedulable", None, [], "taint")
    assert explain(judge(other, ours, None), other, ours, known).explained_by == ""


@pytest.mark.parametrize(("entry", "error"), [
    ({"id": "x", "kind": "wording", "why": "w" * 50}, "needs exactly"),
    ({"id": "x", "kind": "bug", "why": "w" * 50, "match": {"field": "node"}}, "kind 'bug'"),
    ({"id": "x", "kind": "wording", "why": "short", "match": {"field": "node"}}, "too short"),
    ({"id": "x", "kind": "wording", "why": "w" * 50, "match": {"field": "zone"}}, "match needs field"),
    ({"id": "x", "kind": "wording", "why": "w" * 50, "match": {"field": "node", "upstream": "("}}, "regular"),
])
def test_a_malformed_known_entry_is_refused_with_its_problem(entry: dict[str, Any], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_known([entry])


def test_the_shipped_entries_explain_only_their_own_shapes() -> None:
    known = load_known()
    message = "0/5 nodes are available: 4 Insufficient cpu. preemption: found a potential placement for pod on node n3"
    up = Decision("Unschedulable", None, ["default/b10", "default/b12"], message)
    ours = Decision("Scheduled", "n3", ["default/b10", "default/b12", "default/t11"])
    assert explain(judge(up, ours, None), up, ours, known).explained_by == "terminating-victim-without-kubelet"
    other = Decision("Scheduled", "n3", ["default/b10", "default/t11"])  # not upstream's victims plus t<N>
    assert explain(judge(up, other, None), up, other, known).explained_by == ""

    up = Decision("Scheduled", "n0", ["default/b2", "team-a/b0"])
    ours = Decision("Scheduled", "n1", ["default/b2", "team-a/b0"])
    scores = {"n0": 491, "n4": 404}
    verdict = explain(judge(up, ours, scores), up, ours, known, scores)
    assert verdict.explained_by == "preemptor-retried-while-victims-terminate"
    scored = {"n0": 491, "n1": 300}  # upstream could take the nominated node and scored it lower: not this
    assert explain(judge(up, ours, scored), up, ours, known, scored).explained_by == ""
    assert explain(judge(up, ours, None), up, ours, known).explained_by == "preemptor-retried-while-victims-terminate"
    fewer = Decision("Scheduled", "n1", ["default/b2"])
    assert explain(judge(up, fewer, scores), up, fewer, known, scores).explained_by == ""


def test_a_terminating_victim_whose_leaving_leaves_no_room_is_explained_only_in_that_shape() -> None:
    """Seed 37, case 5 of the workload flavour: both nominated n5 with victims b9 and t10 (already
    terminating); upstream waits for t10's kubelet, simulate ends it and finds no room after."""
    known = load_known()
    filters = ("0/11 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s), {} node(s) didn't "
               "match pod topology spread constraints, 3 node(s) were unschedulable, {} Insufficient memory. ")
    up = Decision("Unschedulable", None, ["default/b9"], filters.format(2, 5) + (
        "preemption: found a potential placement for pod on node n5, preempting 1 victims"))
    after = filters.format(3, 4) + (
        "preemption: 0/11 nodes are available: 1 node(s) didn't match pod topology spread constraints, "
        "3 No preemption victims found for incoming pod, 7 Preemption is not helpful for scheduling.")
    ours = Decision("Unschedulable", None, ["default/b9", "default/t10"], after)
    verdict = explain(judge(up, ours, None), up, ours, known)
    assert (verdict.field, verdict.explained_by) == ("victims", "terminating-victim-without-kubelet-no-room-after")
    not_upstreams = Decision("Unschedulable", None, ["default/b8", "default/t10"], after)
    assert explain(judge(up, not_upstreams, None), up, not_upstreams, known).explained_by == ""
    no_terminating = Decision("Unschedulable", None, ["default/b9", "default/b8"], after)
    assert explain(judge(up, no_terminating, None), up, no_terminating, known).explained_by == ""
    preempting_again = Decision("Unschedulable", None, ["default/b9", "default/t10"], filters.format(2, 5) + (
        "preemption: found a potential placement for pod on node n4, preempting 1 victims"))
    assert explain(judge(up, preempting_again, None), up, preempting_again, known).explained_by == ""
    not_waiting = Decision("Unschedulable", None, ["default/b9"], after)
    assert explain(judge(not_waiting, ours, None), not_waiting, ours, known).explained_by == ""


PREEMPTED_AGAIN = "terminating-victim-without-kubelet-preempted-again"


@pytest.mark.parametrize(("ours_node", "ours_victims", "explained_by"), [
    # seed 2812, case 45: upstream preempted b34, b36 (t33 left to a kubelet), then b35
    ("n11", ["default/b34", "default/b36", "default/t33"], PREEMPTED_AGAIN),
    ("n11", ["default/b34", "default/b35", "default/b36", "default/t33"], ""),  # same-but-terminating shape
    ("n11", ["default/b34", "default/b36"], ""),  # fewer victims and no t<N>: not this
    ("n11", ["default/b34", "default/b37", "default/t33"], ""),  # a victim upstream kept
    ("n11", ["default/t33"], PREEMPTED_AGAIN),  # only the t<N> chosen first, the rest preempted again
])
def test_a_terminating_victim_upstream_preempted_around_is_explained_only_in_that_shape(
        ours_node: str, ours_victims: list[str], explained_by: str) -> None:
    known = load_known()
    up = Decision("Scheduled", "n11", ["default/b34", "default/b35", "default/b36"])
    ours = Decision("Scheduled", ours_node, ours_victims)
    assert explain(judge(up, ours, None), up, ours, known).explained_by == explained_by
    more_terminating = Decision("Scheduled", "n11", ["default/b34", "default/t35", "default/b36"])
    assert explain(judge(more_terminating, ours, None), more_terminating, ours, known).explained_by == ""


# ---- the workload flavour ------------------------------------------------------------------

WORKLOADS = Options("workloads")


def test_the_workload_flavour_changes_only_the_pending_pods_and_names_its_gates() -> None:
    plain, groups = generate(1, 5), generate(1, 5, WORKLOADS)
    assert groups == generate(1, 5, WORKLOADS)
    assert groups["featureGates"] == "GenericWorkload=true" and "featureGates" not in plain
    existing = [o for o in plain["objects"] if o["kind"] != "Pod" or "nodeName" in o["spec"]]
    assert [o for o in groups["objects"] if o["kind"] not in ("Pod", "PodGroup") or "nodeName" in o["spec"]] == existing


def test_forty_workload_cases_cover_what_the_flavour_claims() -> None:
    objects = [o for i in range(40) for o in generate(1, i, WORKLOADS)["objects"]]
    groups = [o for o in objects if o["kind"] == "PodGroup"]
    members: dict[str, list[dict[str, Any]]] = {}
    for o in objects:
        if o["kind"] == "Pod" and o["spec"].get("schedulingGroup"):
            members.setdefault(o["spec"]["schedulingGroup"]["podGroupName"], []).append(o)
    assert len(groups) >= 40
    assert any("basic" in g["spec"]["schedulingPolicy"] for g in groups)
    gangs = [g for g in groups if "gang" in g["spec"]["schedulingPolicy"]]
    assert any(g["spec"]["schedulingPolicy"]["gang"]["minCount"] > 1 for g in gangs)
    assert any(g["spec"].get("priorityClassName") == "high-never" for g in groups)
    # off until group preemption is merged: no group of a priority that could preempt a running pod
    assert {g["spec"].get("priorityClassName") for g in groups} <= {None, "high-never"}
    assert not any("schedulingConstraints" in g["spec"] for g in groups)
    per_case = [generate(1, i, WORKLOADS) for i in range(40)]
    assert any(len({p["spec"].get("priorityClassName") for p in group_pods}) > 1 for case in per_case
               for group_pods in _members(case).values())  # mixed priorities
    assert any(g["spec"]["schedulingPolicy"]["gang"]["minCount"] > len(_members(case)[g["metadata"]["name"]])
               for case in per_case for g in case["objects"] if g["kind"] == "PodGroup"
               and "gang" in g["spec"]["schedulingPolicy"])  # a gang short of pods


def _members(case: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for o in case["objects"]:
        if o["kind"] == "Pod" and o["spec"].get("schedulingGroup"):
            out.setdefault(o["spec"]["schedulingGroup"]["podGroupName"], []).append(o)
    return out


def test_the_options_off_until_merged_are_flags() -> None:
    both = Options("workloads", group_preemption=True, topology=True)
    assert both.gates == "GenericWorkload=true,TopologyAwareWorkloadScheduling=true"
    assert both.flags() == "--flavour workloads --group-preemption --topology"
    objects = [o for i in range(20) for o in generate(1, i, both)["objects"] if o["kind"] == "PodGroup"]
    assert any(o["spec"].get("priorityClassName") in ("low", "mid", "high") for o in objects)
    assert any("schedulingConstraints" in o["spec"] for o in objects)
    with pytest.raises(ValueError, match="options of the workloads flavour"):
        Options("default", topology=True)


@pytest.mark.parametrize("index", [0, 2, 4])
def test_workload_cases_are_taken_by_simulate_with_the_gate(index: int) -> None:
    case = generate(1, index, WORKLOADS)
    warn = io.StringIO()
    with features.override(FeatureGates.parse(case["featureGates"])):
        outcomes = simulate(case["objects"], seed=1, warn=warn)
    assert warn.getvalue() == ""
    assert {o.pod for o in outcomes} >= set(_keys(case))


def _keys(case: dict[str, Any]) -> list[str]:
    return [f"default/{p['metadata']['name']}" for ps in _members(case).values() for p in ps]


def test_a_groups_outcomes_in_another_order_of_its_pods_are_a_tie() -> None:
    keys = ["default/g-0", "default/g-1"]
    up = {"default/g-0": Decision("Unschedulable", message="minCount (2) cannot be satisfied"),
          "default/g-1": Decision("Unschedulable", message="0/2 nodes are available: 2 Insufficient cpu.")}
    ours = {"default/g-0": up["default/g-1"], "default/g-1": up["default/g-0"]}
    verdicts = judge_group(keys, up, ours, {k: None for k in keys})
    assert {v.kind for v in verdicts.values()} == {"tie"} and {v.field for v in verdicts.values()} == {"order"}
    other = {"default/g-0": up["default/g-1"], "default/g-1": up["default/g-1"]}  # not a permutation
    assert {v.kind for v in judge_group(keys, up, other, {k: None for k in keys}).values()} == {"diff", "agree"}


def test_a_group_pod_placed_after_a_tied_one_is_a_tie() -> None:
    keys = ["default/g-0", "default/g-1"]
    up = {"default/g-0": Decision("Scheduled", "n1"), "default/g-1": Decision("Scheduled", "n1")}
    ours = {"default/g-0": Decision("Scheduled", "n2"), "default/g-1": Decision("Scheduled", "n3")}
    scores: dict[str, dict[str, int] | None] = {"default/g-0": {"n1": 50, "n2": 50}, "default/g-1": {"n1": 60,
                                                                                                     "n3": 40}}
    verdicts = judge_group(keys, up, ours, scores)
    assert [verdicts[k].kind for k in keys] == ["tie", "tie"]
    untied = {"default/g-0": {"n1": 50, "n2": 40}, "default/g-1": scores["default/g-1"]}
    assert [v.kind for v in judge_group(keys, up, ours, untied).values()] == ["diff", "diff"]
    # another seed placing the whole group as upstream did makes it a tie
    again = judge_group(keys, up, ours, untied, [dict(up)])
    assert [v.kind for v in again.values()] == ["tie", "tie"]


def test_the_lagging_cache_entry_explains_only_a_partly_bound_group() -> None:
    known = load_known()
    up = Decision("PodGroup", message="False/Unschedulable: pod group is unschedulable, pod group preemption: "
                                      "No preemption victims found for incoming preemptor [1 of 3 pods bound]")
    ours = Decision("PodGroup", message="True/Scheduled:  [1 of 3 pods bound]")
    verdict = judge(up, ours, None)
    verdict.field = "group"
    assert explain(verdict, up, ours, known).explained_by == "podgroup-condition-written-from-a-lagging-cache"
    none_bound = Decision("PodGroup", message=up.message.replace("[1 of", "[0 of"))
    verdict = judge(none_bound, ours, None)
    verdict.field = "group"
    assert explain(verdict, none_bound, ours, known).explained_by == ""


def test_a_groups_placement_domains_and_victims_for_the_judge() -> None:
    from tests.cluster.fuzz_run import Simulated, group_victims, placement_domains

    def node(name: str, **labels: str) -> dict[str, Any]:
        return {"kind": "Node", "metadata": {"name": name, "labels": labels}}

    objects = [node("n0", zone="b"), node("n1"), node("n2", zone="a"), node("n3", zone="b"), {"kind": "Pod"}]
    group = {"kind": "PodGroup", "spec": {"schedulingConstraints": {"topology": [{"key": "zone"}]}}}
    assert placement_domains(objects, group) == ["b", "a"]  # node-list order, each once, unlabelled nodes in none
    assert placement_domains(objects, {"kind": "PodGroup", "spec": {}}) == []
    sim = Simulated({"g-0": Decision("Scheduled", "n0", ["x/b"]), "g-1": Decision("Scheduled", "n0", ["x/a", "x/b"])})
    assert group_victims(sim) == ["x/a", "x/b"]
    assert all(not d.victims for d in sim.pods.values())


def test_the_group_terminating_victim_entry_explains_only_an_extra_terminating_victim() -> None:
    known = load_known()
    waiting = Decision("PodGroup", message="False/Unschedulable: pod group is unschedulable, pod group preemption: "
                                           "found a placement for podgroup, preempting 1 victims [0 of 3 pods bound]")
    placed = Decision("PodGroup", victims=["team-a/t2"], message="True/Scheduled:  [3 of 3 pods bound]")
    assert explain(judge(waiting, placed, None), waiting, placed, known).explained_by == (
        "group-terminating-victim-without-kubelet")
    up = Decision("PodGroup", victims=["default/b1"], message="True/Scheduled:  [2 of 2 pods bound]")
    ours = Decision("PodGroup", victims=["default/b1", "team-a/t2"], message="True/Scheduled:  [2 of 2 pods bound]")
    assert explain(judge(up, ours, None), up, ours, known).explained_by == "group-terminating-victim-without-kubelet"
    other = Decision("PodGroup", victims=["default/b1", "team-a/b2"], message="True/Scheduled:  [2 of 2 pods bound]")
    assert explain(judge(up, other, None), up, other, known).explained_by == ""


def test_the_lagging_message_entry_explains_only_a_true_condition_with_a_failures_message() -> None:
    known = load_known()
    up = Decision("PodGroup", message="True/Scheduled: pod group is unschedulable, pod group preemption: pod group "
                                      "is unschedulable [1 of 2 pods bound]")
    ours = Decision("PodGroup", message="True/Scheduled:  [1 of 2 pods bound]")
    verdict = judge(up, ours, None)
    verdict.field = "group"
    assert explain(verdict, up, ours, known).explained_by == "podgroup-message-patched-from-a-lagging-cache"
    false = Decision("PodGroup", message=up.message.replace("True/Scheduled", "False/Unschedulable").replace(
        "[1 of", "[0 of"))
    verdict = judge(false, ours, None)
    verdict.field = "group"
    assert explain(verdict, false, ours, known).explained_by == ""


def test_group_preemption_gives_some_groups_disruption_mode_all_and_changes_nothing_else(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The side draw leaves the case generator's sequence as it was: the cases with the field
    stripped are those made when the draw never says all."""
    on = Options("workloads", group_preemption=True)
    made = [generate(1, i, on) for i in range(8)]
    for case in made:
        for o in case["objects"]:
            if o["kind"] == "PodGroup":
                o["spec"].pop("disruptionMode", None)
    monkeypatch.setattr(fuzz_groups, "side_draw", lambda rng: 1.0)
    assert [generate(1, i, on) for i in range(8)] == made
    monkeypatch.undo()
    groups = [o for i in range(20) for o in generate(1, i, on)["objects"] if o["kind"] == "PodGroup"]
    modes = [o["spec"].get("disruptionMode") for o in groups]
    assert {"all": {}} in modes and None in modes
    assert all(m in (None, {"all": {}}) for m in modes)
    assert all(o["spec"].get("disruptionMode") is None
               for i in range(5) for o in generate(1, i, WORKLOADS)["objects"] if o["kind"] == "PodGroup")


GROUP_LOG_LINE = ('I1127 01:06:17.471022   11133 schedule_one.go:{line}] "{what}" podGroupType="podgroup" '
                  'podGroup="default/g0" pod="default/g0-2" {rest}')


def test_a_group_pods_scores_are_read_past_its_groups_keys() -> None:
    """kube-scheduler logs a group's pods with the group's keys before the pod's own."""
    log = "\n".join([
        GROUP_LOG_LINE.format(line=984, what="Plugin scored node for pod",
                              rest='plugin="NodeResourcesFit" node="n0" score=84'),
        GROUP_LOG_LINE.format(line=1052, what="Calculated node's final score for pod", rest='node="n0" score=657'),
        GROUP_LOG_LINE.format(line=1052, what="Calculated node's final score for pod", rest='node="n4" score=657'),
    ])
    assert attempts(log, "default/g0-2") == [{"n0": 657, "n4": 657}]
    assert plugin_scores(log, "default/g0-2", {"n0"}) == {"n0": {"NodeResourcesFit": 84}}


# seed 3 case 10 of `--flavour workloads --topology --group-preemption`: group preemption's re-run
# scored default/g0-2's best nodes alike upstream (n0, n4, n5: 657) and each scheduler took one
G0_KEYS = ["default/g0-0", "default/g0-1", "default/g0-2"]
G0_UP = {"default/g0-0": Decision("Scheduled", "n2"), "default/g0-1": Decision("Scheduled", "n2"),
         "default/g0-2": Decision("Scheduled", "n4")}
G0_OURS = {**G0_UP, "default/g0-2": Decision("Scheduled", "n0")}
G0_SCORES: dict[str, dict[str, int] | None] = {
    "default/g0-0": {"n2": 642, "n0": 523}, "default/g0-1": {"n2": 619, "n0": 589},
    "default/g0-2": {"n8": 627, "n0": 657, "n6": 642, "n5": 657, "n4": 657, "n1": 612}}
ON_N2 = ["default/b5", "default/b6", "default/b7", "default/b8", "default/b9"]
SCHEDULED = "True/Scheduled:  [3 of 3 pods bound]"


def _group(victims: list[str], message: str = SCHEDULED) -> Decision:
    return Decision("PodGroup", None, victims, message)


def test_a_groups_victims_are_a_tie_only_on_upstreams_scores_and_another_seeds_reproduction() -> None:
    up_group = _group(["default/b11", "default/b12", "default/b13", *ON_N2])
    ours_group = _group(["default/b2", *ON_N2])
    again = (dict(G0_UP), _group(list(up_group.victims)))

    def verdict(ours: dict[str, Decision] = G0_OURS, scores: dict[str, dict[str, int] | None] = G0_SCORES,
                others: list[tuple[dict[str, Decision], Decision]] | None = None) -> tuple[str, str]:
        v = judge_group_victims(G0_KEYS, G0_UP, ours, scores, up_group, ours_group,
                                [again] if others is None else others)
        return v.kind, v.field

    assert verdict() == ("tie", "victims")
    # kubeberth's node below upstream's best, or no scores: not a tie, whatever another seed does
    assert verdict(scores={**G0_SCORES, "default/g0-2": {**G0_SCORES["default/g0-2"], "n0": 642}}) == (
        "diff", "victims")
    assert verdict(scores={**G0_SCORES, "default/g0-2": None}) == ("diff", "victims")
    # no seed of kubeberth preempting upstream's victims (or writing its condition) with upstream's nodes
    assert verdict(others=[]) == ("diff", "victims")
    assert verdict(others=[(dict(G0_UP), _group(["default/b12", *ON_N2]))]) == ("diff", "victims")
    assert verdict(others=[(dict(G0_UP), _group(list(up_group.victims), "False/Unschedulable: x"))]) == (
        "diff", "victims")
    assert verdict(others=[(G0_OURS, _group(list(up_group.victims)))]) == ("diff", "victims")
    # the same nodes and different victims are no tie of a node pick
    assert verdict(ours=G0_UP) == ("diff", "victims")
    # nor are different outcomes of a pod
    unschedulable = {**G0_OURS, "default/g0-1": Decision("Unschedulable", None, [], "0/10 nodes")}
    assert verdict(ours=unschedulable) == ("diff", "victims")
    # and the same victims agree without evidence
    assert judge_group_victims(G0_KEYS, G0_UP, G0_OURS, G0_SCORES, up_group, _group(list(up_group.victims))
                               ).kind == "agree"


def _group_preemption_cluster() -> list[dict[str, Any]]:
    """Two alike nodes, each full with a low-priority pod; a group of one high-priority pod that
    needs a whole node: group preemption's re-run finds both nodes empty and alike."""
    def pc(name: str, value: int) -> dict[str, Any]:
        return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                "value": value}

    def node(name: str) -> dict[str, Any]:
        cap = {"cpu": "2", "memory": "4Gi", "pods": "110"}
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname":
                                                                                           name}},
                "spec": {}, "status": {"capacity": cap, "allocatable": cap,
                                       "conditions": [{"type": "Ready", "status": "True"}]}}

    def pod(name: str, priority: str, node_name: str | None = None) -> dict[str, Any]:
        spec: dict[str, Any] = {"containers": [{"name": "app", "image": "pause",
                                                "resources": {"requests": {"cpu": "2"}}}],
                                "priorityClassName": priority, "priority": 1000 if priority == "high" else 100}
        if node_name:
            spec["nodeName"] = node_name
        else:
            spec["schedulingGroup"] = {"podGroupName": "g"}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec,
                **({"status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}} if node_name else {})}

    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "g", "namespace": "default"},
             "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}, "priorityClassName": "high", "priority": 1000}}
    return [pc("low", 100), pc("high", 1000), node("n1"), node("n2"), pod("b1", "low", "n1"),
            pod("b2", "low", "n2"), group, pod("g-0", "high")]


def test_another_seeds_group_run_carries_the_groups_victims_on_its_condition() -> None:
    """What the judge compares a group's step with under other seeds: the pods without victims,
    the group's condition with them; kubeberth's re-run picks either alike node by its seed."""
    from tests.cluster.fuzz_run import other_group_run

    runs = {s: other_group_run(_group_preemption_cluster(), ["default/g-0"], s, "GenericWorkload=true", "default/g")
            for s in range(1, 9)}
    assert all(not r.pods["default/g-0"].victims for r in runs.values())
    outcomes = {(r.pods["default/g-0"].node, tuple(r.group.victims)) for r in runs.values() if r.group}
    assert outcomes == {("n1", ("default/b1",)), ("n2", ("default/b2",))}
