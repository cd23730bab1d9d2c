"""The differential fuzzer's offline parts: the generator, the judge, the log parser and
tests/conformance/fuzz-known.yaml (the runs themselves need the control plane: tests/cluster)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import pytest

from kubeberth.simulate import simulate
from tests.cluster.fuzz_gen import generate
from tests.cluster.fuzz_judge import Decision, attempts, explain, judge, load_known, parse_known

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
