"""simulate --suggest (whatif/suggest/): hand-made clusters, one per kind, with the suggestion
worked out by hand; every printed suggestion applied to the input by this test (not by the code)
and simulated again places the pod; tenant scoping; and the coverage on generated clusters."""

from __future__ import annotations

import copy
import io
from typing import Any

import pytest

from kubeberth import features
from kubeberth.report.scope import COUNTS, FULL
from kubeberth.report.suggestions import describe, scoped
from kubeberth.whatif.engine import run_simulation
from kubeberth.whatif.policy_tests import parse_case, prepare_case
from kubeberth.whatif.suggest import attach, suggest
from tests.cluster.fuzz_gen import generate
from tests.cluster.fuzz_groups import Options


def node(name: str, cpu: str = "2", labels: dict[str, str] | None = None,
         taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": {"taints": taints or []},
            "status": {"allocatable": {"cpu": cpu, "memory": "4Gi", "pods": "10"}}}


def pod(name: str, cpu: str, ns: str = "default", node_name: str | None = None, **spec: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
                           "spec": {"containers": [{"name": "c", "image": "x",
                                                    "resources": {"requests": {"cpu": cpu}}}], **spec}}
    if node_name:
        out["spec"]["nodeName"] = node_name
    return out


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def run(objects: list[dict[str, Any]]) -> dict[str, Any]:
    outcomes, _ = run_simulation(copy.deepcopy(objects), warn=io.StringIO())
    return {o.pod: o for o in outcomes}


def suggestions_of(objects: list[dict[str, Any]], key: str, kind: str) -> list[dict[str, Any]]:
    outcomes, _ = run_simulation(copy.deepcopy(objects), warn=io.StringIO())
    attach(objects, outcomes, limit=10)
    got = next(o for o in outcomes if o.pod == key)
    return [s for s in got.suggestions or [] if s["kind"] == kind]


def by_key(objects: list[dict[str, Any]], key: str) -> dict[str, Any]:
    return next(o for o in objects if o.get("kind") == "Pod" and
                f"{o['metadata'].get('namespace', 'default')}/{o['metadata']['name']}" == key)


def apply(objects: list[dict[str, Any]], key: str, s: dict[str, Any]) -> list[dict[str, Any]]:
    """The suggestion made by hand on a copy of the input (independent of the code's own edits)."""
    out = copy.deepcopy(objects)
    target = by_key(out, key)
    spec = target["spec"]
    if s["kind"] == "AddNodes":
        template = next(o for o in out if o.get("kind") == "Node" and o["metadata"]["name"] == s["nodeGroup"])
        for name in s["newNodes"]:
            new = copy.deepcopy(template)
            new["metadata"]["name"] = name
            new["metadata"]["labels"]["kubernetes.io/hostname"] = name
            out.append(new)
    elif s["kind"] == "Evict":
        gone = {e["pod"] for e in s["evict"]}
        out = [o for o in out if o.get("kind") != "Pod" or
               f"{o['metadata'].get('namespace', 'default')}/{o['metadata']['name']}" not in gone]
    elif s["kind"] == "RaisePriority":
        spec["priorityClassName"] = s["priorityClass"]
        spec.pop("priority", None)
    elif s["kind"] == "LowerRequests":
        for r in s["requests"]:
            spec["containers"][0]["resources"]["requests"][r["resource"]] = r["to"]
    elif s["kind"] == "Relax":
        for t in s.get("terms") or [s]:
            if t["constraint"] == "toleration":
                spec.setdefault("tolerations", []).append(t["to"])
            elif t["constraint"] == "nodeSelector" and "[" in t["path"]:
                del spec["nodeSelector"][t["path"].split("[", 1)[1].rstrip("]")]
            elif t["constraint"] == "topologySpreadConstraint":
                field = t["path"].rsplit(".", 1)[1]
                spec["topologySpreadConstraints"][int(t["path"].split("[")[1][0])][field] = t["to"]
            else:
                raise AssertionError(f"the test cannot apply {t}")
    return out


def placed(objects: list[dict[str, Any]], key: str) -> bool:
    return run(objects)[key].status == "Scheduled"


def test_add_nodes_counts_the_copies_needed() -> None:
    # Two pods of 1500m, each node (2 cpu) full: one new node holds one pod, so each pod needs one.
    objects = [node("a", labels={"pool": "x"}), pod("busy", "2", node_name="a"),
               node("b", cpu="8", labels={"pool": "y"}, taints=[{"key": "t", "value": "v", "effect": "NoSchedule"}]),
               pod("busy2", "8", node_name="b"), pod("web", "1500m")]
    got = suggestions_of(objects, "default/web", "AddNodes")
    assert [(s["nodeGroup"], s["count"], s["newNodes"]) for s in got] == [("a", 1, ["a-suggested-1"])]
    assert got[0]["places"] == [{"pod": "default/web", "node": "a-suggested-1"}]
    assert placed(apply(objects, "default/web", got[0]), "default/web")


def test_evict_the_smallest_set_lowest_priority_first() -> None:
    # Node a (2 cpu) holds 500m (priority 10) and 1 cpu (priority 0): the pod (1 cpu) needs one evicted:
    # the lowest priority one, which frees 1 cpu; a PDB on it is reported.
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
           "metadata": {"name": "keep", "namespace": "default"},
           "spec": {"selector": {"matchLabels": {"app": "low"}}, "minAvailable": 1},
           "status": {"disruptionsAllowed": 0}}
    objects = [node("a"), priority_class("ten", 10), pdb, pod("mid", "500m", node_name="a", priorityClassName="ten"),
               pod("low", "1", node_name="a"), pod("web", "1")]
    got = suggestions_of(objects, "default/web", "Evict")
    assert [e for s in got for e in s["evict"]] == [
        {"pod": "default/low", "node": "a", "priority": 0, "pdb": "default/keep", "pdbBlocks": True}]
    assert placed(apply(objects, "default/web", got[0]), "default/web")


def test_raise_priority_names_the_lowest_class_that_preempts() -> None:
    objects = [node("a"), priority_class("five", 5), priority_class("fifty", 50), priority_class("ten", 10),
               pod("victim", "2", node_name="a", priorityClassName="ten"), pod("web", "1")]
    got = suggestions_of(objects, "default/web", "RaisePriority")
    assert [(s["priorityClass"], s["priority"], s["from"], s["preempts"]) for s in got] == [
        ("fifty", 50, 0, [{"pod": "default/victim", "priority": 10}])]
    assert placed(apply(objects, "default/web", got[0]), "default/web")


@pytest.mark.parametrize(("spec", "node_args", "want"), [
    ({"nodeSelector": {"disk": "ssd", "zone": "z1"}}, {"labels": {"zone": "z1"}},
     {"constraint": "nodeSelector", "path": "spec.nodeSelector[disk]", "from": "disk=ssd", "to": None}),
    ({}, {"taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]},
     {"constraint": "toleration", "path": "spec.tolerations", "from": None,
      "to": {"key": "gpu", "effect": "NoSchedule", "operator": "Equal", "value": "yes"},
      "taint": {"key": "gpu", "value": "yes", "effect": "NoSchedule"}}),
])
def test_relax_one_term(spec: dict[str, Any], node_args: dict[str, Any], want: dict[str, Any]) -> None:
    objects = [node("a", **node_args), pod("web", "1", **spec)]
    got = suggestions_of(objects, "default/web", "Relax")
    assert [{k: s[k] for k in want} for s in got] == [want]
    assert placed(apply(objects, "default/web", got[0]), "default/web")


def test_relax_spread_to_the_smallest_max_skew() -> None:
    # Zone z1 has 3 app=s pods, z2 none and no room: the pod fits only in z1, skew 4 - 0: maxSkew 1 -> 4.
    spread = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "s"}}}]
    objects = [node("a", cpu="8", labels={"zone": "z1"}), node("b", cpu="1", labels={"zone": "z2"}),
               pod("busy", "1", node_name="b")]
    for i in range(3):
        p = pod(f"s{i}", "100m", node_name="a")
        p["metadata"]["labels"] = {"app": "s"}
        objects.append(p)
    web = pod("web", "1", topologySpreadConstraints=spread)
    web["metadata"]["labels"] = {"app": "s"}
    objects.append(web)
    got = suggestions_of(objects, "default/web", "Relax")
    assert [(s["path"], s["from"], s["to"]) for s in got] == [
        ("spec.topologySpreadConstraints[0].maxSkew", 1, 4)]
    assert placed(apply(objects, "default/web", got[0]), "default/web")


def test_lower_requests_to_the_largest_value_that_fits() -> None:
    objects = [node("a"), pod("busy", "800m", node_name="a"), pod("web", "1500m")]
    got = suggestions_of(objects, "default/web", "LowerRequests")
    assert [s["requests"] for s in got] == [[{"resource": "cpu", "from": "1500m", "to": "1200m"}]]
    assert placed(apply(objects, "default/web", got[0]), "default/web")


def test_ranking_least_disruption_first() -> None:
    objects = [node("a"), priority_class("high", 100), pod("busy", "2", node_name="a"), pod("web", "1")]
    outcomes, _ = run_simulation(copy.deepcopy(objects), warn=io.StringIO())
    attach(objects, outcomes, limit=10)
    kinds = [s["kind"] for s in next(o for o in outcomes if o.pod == "default/web").suggestions or []]
    assert kinds == ["AddNodes", "RaisePriority", "Evict"]
    assert all(o.suggestions == [] for o in outcomes if o.pod != "default/web")


def test_scoping_hides_other_namespaces_pods() -> None:
    objects = [node("a"), priority_class("high", 100), pod("busy", "2", ns="team-b", node_name="a"),
               pod("web", "1", ns="team-a")]
    outcomes, _ = run_simulation(copy.deepcopy(objects), warn=io.StringIO())
    attach(objects, outcomes)
    found = next(o for o in outcomes if o.pod == "team-a/web").suggestions or []
    assert {s["kind"] for s in found} >= {"Evict", "RaisePriority"}
    for detail in (COUNTS, FULL):
        shown = scoped(found, "team-a", detail, ["team-a", "team-b"])
        text = repr(shown) + " ".join(describe(s) for s in shown)
        assert "busy" not in text and "team-b" not in text
        evict = next(s for s in shown if s["kind"] == "Evict")
        assert evict["evict"] == [] and evict["evictInOtherNamespaces"] == [{"priority": 0, "pdbBlocks": False}]
        assert ("a-suggested-1" in text) == (detail == FULL)
    assert "team-b/busy" in " ".join(describe(s) for s in found)  # unscoped (simulate): named


def _units(seed: int, index: int, options: Options) -> list[tuple[list[dict[str, Any]], Any]]:
    doc = generate(seed, index, options)
    doc["expect"] = [{"pod": "-/-", "unschedulable": False}]
    case = parse_case(doc, str(doc["name"]))
    sim = prepare_case(case, io.StringIO())
    with features.override(case.gates):
        outcomes, _ = run_simulation(sim.objects, seed=case.seed, warn=io.StringIO())
        return [(sim.objects, u) for u in suggest(sim.objects, outcomes, seed=case.seed)]


def test_generated_clusters_every_suggestion_places_the_pod() -> None:
    """Each suggestion of the AddNodes, Evict, RaisePriority, LowerRequests and one-term Relax
    kinds, applied here by hand to the input, places its pod (gangs are left to test_gangs.py)."""
    checked = 0
    for index in range(4):
        for objects, u in _units(5, index, Options()):
            for s in u.suggestions:
                assert s["verified"] is True
                key = u.unit.pods[0]
                if u.unit.group is not None or s["kind"] == "Combined" or (
                        s["kind"] == "Relax" and s.get("constraint") not in ("toleration", "topologySpreadConstraint")):
                    continue
                if s["kind"] == "LowerRequests" and len(by_key(objects, key)["spec"]["containers"]) > 1:
                    continue
                got = run_simulation(apply(objects, key, s), seed=5, warn=io.StringIO())[0]
                assert next(o for o in got if o.pod == key).status == "Scheduled", (s, key)
                checked += 1
    assert checked >= 5


def test_cli_json_table_and_html(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    import yaml

    from kubeberth.cli import main

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump_all([node("a"), pod("busy", "1500m", node_name="a"), pod("web", "1")]))
    assert main(["simulate", str(path), "--suggest", "-o", "json"]) == 0
    pods = {p["pod"]: p for p in json.loads(capsys.readouterr().out)["pods"]}
    assert pods["default/busy"]["suggestions"] == []
    assert [s["kind"] for s in pods["default/web"]["suggestions"]] == ["LowerRequests", "AddNodes", "Evict"]
    assert all(s["verified"] is True for s in pods["default/web"]["suggestions"])
    assert main(["simulate", str(path), "--suggest", "--suggest-limit", "1"]) == 0
    out = capsys.readouterr().out
    assert "1. LowerRequests: lower requests: cpu 1 -> 500m; places default/web on a" in out
    assert "2. " not in out
    assert main(["simulate", str(path), "--suggest", "-o", "html"]) == 0
    assert "Suggestions for default/web" in capsys.readouterr().out
    assert main(["simulate", str(path), "-o", "json"]) == 0
    assert "suggestions" not in capsys.readouterr().out


def test_generated_clusters_coverage() -> None:
    """A small sample of benchmarks/suggest_coverage.py (20 clusters: 36 unschedulable pods, 31 with
    a suggestion when measured): most unschedulable pods get a verified suggestion."""
    units = [u for i in range(20) for _, u in _units(41, i, Options())]
    assert len(units) >= 20
    helped = sum(1 for u in units if u.suggestions)
    assert helped / len(units) >= 0.85


def test_combined_when_no_single_change_places_it() -> None:
    # The only node is tainted and full: tolerating the taint leaves no room, room leaves the taint.
    taint = {"key": "gpu", "value": "yes", "effect": "NoSchedule"}
    tolerate = [{"key": "gpu", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}]
    objects = [node("a", taints=[taint]), pod("busy", "1500m", node_name="a", tolerations=tolerate), pod("web", "1")]
    outcomes, _ = run_simulation(copy.deepcopy(objects), warn=io.StringIO())
    attach(objects, outcomes)
    got = next(o for o in outcomes if o.pod == "default/web").suggestions or []
    assert [s["kind"] for s in got] == ["Combined"]
    first, second = got[0]["steps"]
    assert first == {"kind": "Relax", "terms": [{"constraint": "toleration", "path": "spec.tolerations", "from": None,
                                                 "to": {"key": "gpu", "effect": "NoSchedule", "operator": "Equal",
                                                        "value": "yes"}, "taint": taint}]}
    assert (second["kind"], second["requests"]) == ("LowerRequests", [{"resource": "cpu", "from": "1", "to": "500m"}])
    edited = copy.deepcopy(objects)
    edited[2]["spec"]["tolerations"] = tolerate
    edited[2]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "500m"
    assert placed(edited, "default/web")
    assert got[0]["changes"] == 2


def test_cli_defaults_are_the_searchs() -> None:
    from kubeberth.cli import build_parser
    from kubeberth.whatif.suggest import DEFAULT_LIMIT
    from kubeberth.whatif.suggest.core import DEFAULT_BUDGET

    args = build_parser().parse_args(["simulate", "x.yaml", "--suggest"])
    assert (args.suggest_limit, args.suggest_budget) == (DEFAULT_LIMIT, DEFAULT_BUDGET)


def test_a_failing_search_is_reported_and_the_others_go_on(monkeypatch: pytest.MonkeyPatch) -> None:
    from kubeberth.whatif.suggest import search

    def broken(rerun: Any, unit: Any) -> list[dict[str, Any]]:
        raise ValueError("no such thing")

    monkeypatch.setattr(search, "FINDERS", ((broken, 0.5), *search.FINDERS))
    objects = [node("a"), pod("busy", "2", node_name="a"), pod("web", "1")]
    outcomes, _ = run_simulation(copy.deepcopy(objects), warn=io.StringIO())
    (got,) = suggest(objects, outcomes)
    assert got.errors == ["broken: ValueError: no such thing"]
    assert [s["kind"] for s in got.suggestions] == ["AddNodes", "Evict"]
