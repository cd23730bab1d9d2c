"""The in-cluster explanation's suggestions (ExplainPublisher.suggester): scoped as the
explanation, by the pod's namespace and its detail label."""

from __future__ import annotations

import copy
import io
import json
from typing import Any

from kubeberth.operator.explain_publisher import DETAIL_LABEL, ExplainPublisher
from kubeberth.report.scope import COUNTS, FULL
from kubeberth.whatif.engine import run_simulation
from kubeberth.whatif.suggest import attach
from tests.builders import make_pod
from tests.whatif.suggest.test_suggest import node, pod, priority_class

NAMESPACES = ["team-a", "team-b"]


class _Explained:
    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def to_dict(self) -> dict[str, Any]:
        return self.data


def _suggestions() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    objects = [node("a"), priority_class("high", 100), pod("payroll", "2", ns="team-b", node_name="a"),
               pod("web", "1", ns="team-a")]
    outcomes, _ = run_simulation(copy.deepcopy(objects), warn=io.StringIO(), explain=["team-a/web"])
    attach(objects, outcomes)
    web = next(o for o in outcomes if o.pod == "team-a/web")
    return dict(web.explanations[-1]), list(web.suggestions or [])


def test_published_suggestions_never_name_other_namespaces_pods() -> None:
    x, found = _suggestions()
    assert "team-b/payroll" in json.dumps(found)
    publisher = ExplainPublisher(client=None)  # type: ignore[arg-type]
    for ns in NAMESPACES:
        publisher.objects.put("Namespace", {"metadata": {"name": ns}})
    target = make_pod("web", "team-a")
    assert "suggestions" not in publisher.scoped(target, _Explained(x))  # type: ignore[arg-type]
    for detail in (COUNTS, FULL):
        if detail == FULL:
            publisher.objects.put("Namespace", {"metadata": {"name": "team-a", "labels": {DETAIL_LABEL: FULL}}})
        data = publisher.scoped(target, _Explained(x), found)  # type: ignore[arg-type]
        text = json.dumps(data["suggestions"])
        assert "payroll" not in text and "team-b" not in text
        kinds = {s["kind"]: s for s in data["suggestions"]}
        assert kinds["Evict"]["evictInOtherNamespaces"] == [{"priority": 0, "pdbBlocks": False}]
        assert kinds["RaisePriority"]["preemptsInOtherNamespaces"] == [{"priority": 0}]
        assert ('"node": "a"' in text) == (detail == FULL)


def test_a_combined_suggestions_steps_are_scoped() -> None:
    from kubeberth.report.suggestions import describe, scoped

    taint = {"key": "gpu", "value": "yes", "effect": "NoSchedule"}
    tolerate = [{"key": "gpu", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}]
    objects = [node("a", taints=[taint]), pod("payroll", "2", ns="team-b", node_name="a", tolerations=tolerate),
               pod("web", "1", ns="team-a")]
    outcomes, _ = run_simulation(copy.deepcopy(objects), warn=io.StringIO())
    attach(objects, outcomes)
    found = next(o for o in outcomes if o.pod == "team-a/web").suggestions or []
    assert [s["kind"] for s in found] == ["Combined"]
    assert [step["kind"] for step in found[0]["steps"]] == ["Relax", "AddNodes"]
    shown = scoped(found, "team-a", COUNTS, NAMESPACES)
    assert "nodeGroup" not in shown[0]["steps"][1] and "newNodes" not in shown[0]["steps"][1]
    assert "a-suggested-1" not in json.dumps(shown) + describe(shown[0])
    assert describe(shown[0]).startswith("Combined: Relax: relax: tolerate the taint gpu=yes:NoSchedule + AddNodes: ")


def test_the_live_suggester_reads_the_schedulers_state() -> None:
    """live_objects gives back what the scheduler holds: its suggestions are simulate's on the
    input it was fed; only pods annotated kubeberth.io/suggest get any; one search per interval."""
    import asyncio

    from kubeberth.plugins import plugin_registry
    from kubeberth.whatif.engine import load_objects, new_scheduler, run_settled
    from kubeberth.whatif.suggest.live import SUGGEST_ANNOTATION, LiveSuggester, live_objects

    objects = [node("a"), priority_class("high", 100), pod("busy", "1500m", ns="team-b", node_name="a"),
               pod("web", "1", ns="team-a"), pod("quiet", "1", ns="team-a")]
    objects[3]["metadata"]["annotations"] = {SUGGEST_ANNOTATION: "true"}
    sched, clock = new_scheduler()
    load_objects(sched, copy.deepcopy(objects), plugin_registry(), warn=io.StringIO())
    asyncio.run(run_settled(sched, clock))
    live = live_objects(sched)
    assert sorted(o["kind"] for o in live) == ["Node", "Pod", "Pod", "Pod", "PriorityClass", "SchedulingProfile"]
    assert {o["metadata"]["name"]: o["spec"].get("nodeName") for o in live if o["kind"] == "Pod"} == {
        "busy": "a", "web": None, "quiet": None}
    outcomes, _ = run_simulation(copy.deepcopy(objects), warn=io.StringIO())
    attach(objects, outcomes)
    want = next(o for o in outcomes if o.pod == "team-a/web").suggestions

    suggester = LiveSuggester(sched, clock, interval=60.0)
    web = next(p for p in sched.all_pods() if p.key == "team-a/web")
    quiet = next(p for p in sched.all_pods() if p.key == "team-a/quiet")
    assert asyncio.run(suggester(quiet)) is None
    got = asyncio.run(suggester(web))
    assert got == want and got
    assert asyncio.run(suggester(web)) == want and suggester.searches == 1
    clock.advance(61.0)
    asyncio.run(suggester(web))
    assert suggester.searches == 2


def test_the_event_and_the_annotation_carry_the_scoped_suggestions() -> None:
    from kubeberth.report.summary import event_message, summary

    x, found = _suggestions()
    publisher = ExplainPublisher(client=None)  # type: ignore[arg-type]
    for ns in NAMESPACES:
        publisher.objects.put("Namespace", {"metadata": {"name": ns}})
    data = publisher.scoped(make_pod("web", "team-a"), _Explained(x), found)  # type: ignore[arg-type]
    message = event_message("team-a/web", data)
    assert "Suggestions (each verified by simulating the change):" in message
    assert "1 pod(s) of other namespaces (priorities 0)" in message and "payroll" not in message
    assert json.loads(summary(data))["suggestions"] == [s["kind"] for s in found]
    assert "Suggestions" not in event_message("team-a/web", publisher.scoped(make_pod("web", "team-a"),
                                                                            _Explained(x)))  # type: ignore[arg-type]


def test_the_live_suggester_suggests_for_pods_not_created_yet() -> None:
    """for_pods (the Kueue admission check's): the pods join the scheduler's view as pending; the
    answer is the first suggestion simulate gives for the first of them it leaves unplaced, in
    words, scoped to their namespace; None when they all fit."""
    import asyncio

    from kubeberth.plugins import plugin_registry
    from kubeberth.report.suggestions import describe, scoped
    from kubeberth.whatif.engine import load_objects, new_scheduler, run_settled
    from kubeberth.whatif.suggest.live import LiveSuggester

    objects = [node("a"), pod("busy", "1500m", ns="team-b", node_name="a")]
    sched, clock = new_scheduler()
    load_objects(sched, copy.deepcopy(objects), plugin_registry(), warn=io.StringIO())
    asyncio.run(run_settled(sched, clock))
    suggester = LiveSuggester(sched, clock)
    small, big = pod("wl-main-0", "100m", ns="team-a"), pod("wl-main-1", "1", ns="team-a")
    assert asyncio.run(suggester.for_pods([small])) is None
    got = asyncio.run(suggester.for_pods([small, big]))
    outcomes, _ = run_simulation(copy.deepcopy([*objects, small, big]), warn=io.StringIO())
    attach([*objects, small, big], outcomes)
    want = next(o for o in outcomes if o.pod == "team-a/wl-main-1").suggestions
    assert want and got == describe(scoped(want, "team-a", COUNTS)[0])
    assert "busy" not in got  # another namespace's pod is counted, never named
