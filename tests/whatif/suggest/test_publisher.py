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
    publisher.suggester = lambda p: found
    for detail in (COUNTS, FULL):
        if detail == FULL:
            publisher.objects.put("Namespace", {"metadata": {"name": "team-a", "labels": {DETAIL_LABEL: FULL}}})
        data = publisher.scoped(target, _Explained(x))  # type: ignore[arg-type]
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
