"""Explanations (scheduler/explain.py): what each extension point said, per node and plugin,
captured without changing any decision or random draw."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from kubeberth.clock import FakeClock
from kubeberth.config import default_spec
from kubeberth.plugins import in_tree_registry
from kubeberth.profile import build_framework
from kubeberth.scheduler import Scheduler
from kubeberth.testing import InMemoryClient
from kubeberth.whatif.engine import UnknownPods
from kubeberth.whatif.outcomes import PodOutcome
from kubeberth.whatif.simulate import simulate
from tests.builders import node_dict, pod_dict

from .helpers import TAINT, many_nodes, small_cluster, with_time


def explained(objects: list[dict[str, Any]], pod: str, **kw: Any) -> dict[str, Any]:
    """The last explanation of `pod`."""
    outcomes = simulate(objects, explain=[pod], **kw)
    (out,) = [o for o in outcomes if o.pod == pod]
    assert out.explanations, f"{pod} was not explained"
    return dict(out.explanations[-1])


def by_node(x: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n["node"]: n for n in x["filter"]["nodes"]}


def random_cluster(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    objs: list[dict[str, Any]] = []
    for i in range(130):  # over 100 nodes: percentageOfNodesToScore and the vectorised walk apply
        taints = [TAINT] if rng.random() < 0.2 else None
        objs.append(node_dict(f"n{i:03d}", cpu=rng.choice(["2", "4", "8"]), taints=taints,
                              labels={"zone": rng.choice("abc")}))
    for i in range(60):
        selector = {"nodeSelector": {"zone": rng.choice("abc")}} if rng.random() < 0.3 else {}
        objs.append(with_time(pod_dict(f"p{i:02d}", cpu=rng.choice(["1", "2", "3"]),
                                       priority=rng.choice([0, 100]), **selector), i % 60))
    return objs


def strip(outcomes: list[PodOutcome]) -> list[tuple[Any, ...]]:
    return [(o.pod, o.status, o.node, o.nominatedNode, o.victims, o.message) for o in outcomes]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_explaining_changes_no_decision(seed: int) -> None:
    objects = random_cluster(seed)
    plain = simulate(objects, seed=seed)
    told = simulate(objects, seed=seed, explain=[])
    assert strip(told) == strip(plain)
    assert all(o.explanations for o in told if o.status in ("Scheduled", "Unschedulable"))
    assert not any(o.explanations for o in plain)
    # Over 64 nodes the cycle's walk is vectorised; the per-node verdicts agree with it: a filtered
    # node's recorded reason is its plugin's own, the first failing one in filter order.
    for o in told:
        for x in o.explanations:
            order = x["filter"]["plugins"]
            for n in x["filter"]["nodes"]:
                failing = [p for p in order if n["plugins"][p] != "pass"]
                if n["verdict"] == "Filtered":
                    assert failing and failing[0] == n["plugin"] and n["plugins"][n["plugin"]] == n["reason"]
                elif n["verdict"] == "Passed":
                    assert not failing


def _run(objects: list[dict[str, Any]], explain: bool) -> tuple[dict[str, str], Any]:
    sched = Scheduler(clock=FakeClock(), seed=5)
    sched.ctx.client = InMemoryClient(sched)
    sched.set_profile(build_framework(default_spec(), in_tree_registry(), sched.ctx))
    if explain:
        sched.explain_pods = lambda pod: True
    for obj in objects:
        if obj["kind"] == "Node":
            sched.on_node_add(obj)
    for obj in objects:
        if obj["kind"] == "Pod":
            sched.on_pod_add(obj)
    asyncio.run(sched.run_until_idle())
    return {k: r.node for k, r in sched.outcomes.items()}, sched.ctx.rng.getstate()


def test_explaining_draws_no_random_number() -> None:
    objects = many_nodes(30) + [pod_dict(f"p{i}", cpu="1") for i in range(20)]  # ties everywhere
    assert _run(objects, True) == _run(objects, False)


def test_every_filter_plugin_is_asked_about_every_node() -> None:
    x = explained(small_cluster(), "default/web")
    nodes = by_node(x)
    tainted = nodes["tainted"]
    # The cycle stopped at TaintToleration; the explanation also has NodeResourcesFit's verdict.
    assert (tainted["verdict"], tainted["plugin"]) == ("Filtered", "TaintToleration")
    assert tainted["reason"] == "node(s) had untolerated taint(s)"
    assert tainted["plugins"]["NodeResourcesFit"] == "Insufficient cpu"
    assert tainted["plugins"]["TaintToleration"] == "node(s) had untolerated taint(s)"
    small = nodes["small"]
    assert (small["verdict"], small["reason"], small["plugin"]) == ("Filtered", "Insufficient cpu", "NodeResourcesFit")
    assert small["plugins"]["TaintToleration"] == "pass"
    assert {nodes[n]["verdict"] for n in ("big-1", "big-2")} == {"Passed"}
    assert set(nodes["big-1"]["plugins"].values()) == {"pass"}
    assert x["filter"]["plugins"] == list(nodes["big-1"]["plugins"])
    assert x["filter"]["filteredOut"] == [
        {"reason": "Insufficient cpu [NodeResourcesFit]", "nodes": ["small"]},
        {"reason": "node(s) had untolerated taint(s) [TaintToleration]", "nodes": ["tainted"]}]
    assert x["nodes"] == {"total": 4, "feasible": 2, "filtered": 2, "excludedByPreFilter": 0, "notEvaluated": 0}


def test_scores_add_up_and_the_pick_is_among_the_tied() -> None:
    x = explained(small_cluster(), "default/web")
    score = x["score"]
    weights = {p["name"]: p["weight"] for p in score["plugins"]}
    assert weights["TaintToleration"] == 3 and weights["NodeResourcesFit"] == 1
    totals = [line["total"] for line in score["nodes"]]
    assert totals == sorted(totals, reverse=True) and [n["node"] for n in score["nodes"]] == ["big-1", "big-2"]
    for line in score["nodes"]:
        for name, s in line["plugins"].items():
            assert s["weight"] == weights[name]
            assert s["weighted"] == s["normalized"] * s["weight"]
            assert s["raw"] is not None
        assert line["total"] == sum(s["weighted"] for s in line["plugins"].values()) + line["extenders"]
    assert x["selection"]["tied"] == ["big-1", "big-2"]  # the same nodes: the draw decided
    assert x["selection"]["selected"] == x["result"]["node"] in ("big-1", "big-2")
    assert x["result"]["status"] == "Scheduled"


def test_nodes_left_out_by_percentage_of_nodes_to_score() -> None:
    objects = [*many_nodes(120), pod_dict("p", cpu="1")]
    x = explained(objects, "default/p", percentage_of_nodes_to_score=10)
    # 10% of 120 is below the minimum of 100 feasible nodes to find: 100 are found, 20 never looked at.
    assert x["nodes"]["feasible"] == 100 and x["nodes"]["notEvaluated"] == 20
    assert len(x["score"]["nodes"]) == 100
    not_evaluated = [n for n in x["filter"]["nodes"] if n["verdict"] == "NotEvaluated"]
    assert all(set(n["plugins"].values()) == {"pass"} for n in not_evaluated)


def test_pre_filter_node_subset_and_skips() -> None:
    pin = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["big-2"]}]}]}}}
    objects = [*small_cluster()[:-1], pod_dict("pinned", cpu="1", affinity=pin)]
    x = explained(objects, "default/pinned")
    pf = x["preFilter"]
    assert pf["nodes"] == ["big-2"] and pf["restrictedBy"] == ["NodeAffinity"]
    assert "NodePorts" in pf["skipped"] and "NodePorts" in x["filter"]["skipped"]
    assert "NodePorts" not in x["filter"]["plugins"]
    verdicts = {n: v["verdict"] for n, v in by_node(x).items()}
    assert verdicts == {"tainted": "ExcludedByPreFilter", "small": "ExcludedByPreFilter",
                        "big-1": "ExcludedByPreFilter", "big-2": "Passed"}
    assert by_node(x)["big-1"]["reason"] == "node(s) didn't satisfy plugin(s) [NodeAffinity]"
    assert x["score"] is None and x["selection"] == {"tied": ["big-2"], "selected": "big-2"}


def test_pre_filter_rejection() -> None:
    volumes = [{"name": "v", "persistentVolumeClaim": {"claimName": "missing"}}]
    objects = [*small_cluster()[:-1], pod_dict("claims", cpu="1", volumes=volumes)]
    x = explained(objects, "default/claims")
    st = x["preFilter"]["status"]
    assert (st["code"], st["plugin"]) == ("UnschedulableAndUnresolvable", "VolumeRestrictions")
    assert 'persistentvolumeclaim "missing" not found' in st["reason"]
    assert x["nodes"]["excludedByPreFilter"] == 4 and x["score"] is None
    assert {n["reason"] for n in x["filter"]["nodes"]} == {st["reason"]}
    assert x["result"]["status"] == "Unschedulable" and st["reason"] in x["result"]["message"]


def test_preemption_candidates_victims_and_rejections() -> None:
    objects = [node_dict("a", cpu="2"), node_dict("b", cpu="2"), node_dict("c", cpu="2"),
               with_time(pod_dict("low-a", cpu="2", node="a", priority=1), 1),
               with_time(pod_dict("high-b", cpu="2", node="b", priority=1000), 2),
               with_time(pod_dict("low-c", cpu="1", node="c", priority=1), 3),
               with_time(pod_dict("low-c2", cpu="1", node="c", priority=1), 4),
               with_time(pod_dict("vip", cpu="2", priority=500), 5)]
    outcomes = simulate(objects, explain=["vip"])
    (vip,) = [o for o in outcomes if o.pod == "default/vip"]
    first, last = vip.explanations[0], vip.explanations[-1]
    pf = first["postFilter"]
    assert first["result"]["status"] == "Unschedulable"
    assert {c["node"]: c["victims"] for c in pf["candidates"]} == {"a": ["default/low-a"],
                                                                     "c": ["default/low-c", "default/low-c2"]}
    assert pf["rejected"] == [{"node": "b", "reason": "No preemption victims found for incoming pod"}]
    assert pf["chosen"] == {"node": "a", "victims": ["default/low-a"]} and pf["nominatedNode"] == "a"
    assert last["result"] == {"status": "Scheduled", "node": "a", "message": ""}
    assert last["postFilter"] is None
    assert [o.explanations for o in outcomes if o.pod != "default/vip"] == [[]] * 4


def test_unknown_pods_are_named() -> None:
    with pytest.raises(UnknownPods, match="no pod nope, x/web in the input"):
        simulate(small_cluster(), explain=["web", "nope", "x/web"])


def test_only_the_named_pods_are_explained() -> None:
    objects = [*small_cluster(), pod_dict("other", cpu="1")]
    outcomes = {o.pod: o for o in simulate(objects, explain=["default/web"])}
    assert outcomes["default/web"].explanations and not outcomes["default/other"].explanations
