"""Explanations published into a namespace (report/scope.py, operator/explain_publisher.py) name
no object of another namespace, and say nothing per node beyond the FailedScheduling counts unless
the namespace allows full detail. The three leaks of issue 29's trial, each as a case: a victim in
another namespace, an anti-affinity match locating another tenant's pod, per-node scores."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubeberth.cache.objects import ObjectStore
from kubeberth.operator.explain_publisher import DETAIL_LABEL, ExplainPublisher, namespace_detail
from kubeberth.report.scope import COUNTS, FULL, OTHER_NAMESPACE, scoped
from kubeberth.report.summary import event_message, summary
from kubeberth.report.text import render_attempt
from kubeberth.whatif.simulate import simulate
from tests.builders import make_pod, node_dict, pod_dict

from .helpers import with_time

NAMESPACES = ["tenant-a", "tenant-b", "tenant-c"]


def explanations(objects: list[dict[str, Any]], pod: str) -> list[dict[str, Any]]:
    (out,) = [o for o in simulate(objects, explain=[pod]) if o.pod == pod]
    return [dict(x) for x in out.explanations]


def published(x: dict[str, Any], pod: str, detail: str) -> tuple[dict[str, Any], str, str]:
    """(the scoped structure, the annotation, the Event's message) as written into pod's namespace."""
    s = scoped(x, pod.split("/")[0], detail, NAMESPACES)
    return s, summary(s), event_message(pod, s)


def preemption_cluster() -> list[dict[str, Any]]:
    """tenant-a/web needs a whole node; node-1 holds tenant-b/payroll-db2, node-2 tenant-c/ledger,
    node-3 tenant-a's own batch: every node is a candidate."""
    return [node_dict("node-1", cpu="2"), node_dict("node-2", cpu="2"), node_dict("node-3", cpu="2"),
            with_time(pod_dict("payroll-db2", "tenant-b", cpu="2", node="node-1", priority=1), 1),
            with_time(pod_dict("ledger", "tenant-c", cpu="2", node="node-2", priority=2), 2),
            with_time(pod_dict("batch", "tenant-a", cpu="1", node="node-3", priority=1), 3),
            with_time(pod_dict("batch2", "tenant-a", cpu="1", node="node-3", priority=1), 4),
            with_time(pod_dict("web", "tenant-a", cpu="2", priority=1000), 5)]


def anti_affinity_cluster() -> list[dict[str, Any]]:
    """tenant-c's app=secret-db runs on node-2; tenant-a/web avoids app=secret-db in every namespace."""
    avoid = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "secret-db"}}, "namespaceSelector": {},
         "topologyKey": "kubernetes.io/hostname"}]}}
    return [node_dict("node-1", cpu="4"), node_dict("node-2", cpu="4"), node_dict("node-3", cpu="4"),
            with_time(pod_dict("db", "tenant-c", cpu="1", node="node-2", labels={"app": "secret-db"}), 1),
            with_time(pod_dict("web", "tenant-a", cpu="1", affinity=avoid), 2)]


def scores_cluster() -> list[dict[str, Any]]:
    """Four nodes of which tenant-b fills some: the per-node scores would say how much."""
    return [*[node_dict(f"node-{i}", cpu="8") for i in range(1, 5)],
            with_time(pod_dict("big", "tenant-b", cpu="6", node="node-2"), 1),
            with_time(pod_dict("mid", "tenant-b", cpu="3", node="node-3"), 2),
            with_time(pod_dict("web", "tenant-a", cpu="1"), 3)]


def other_tenants_named(text: str) -> list[str]:
    return [w for w in ("tenant-b", "tenant-c", "payroll-db2", "ledger", "secret-db", "/db", "big", "mid")
            if w in text]


def nodes_named(text: str, but: set[str]) -> list[str]:
    return [n for n in ("node-1", "node-2", "node-3", "node-4") if n not in but and n in text]


def test_victims_of_other_namespaces_are_counted_never_named() -> None:
    first = explanations(preemption_cluster(), "tenant-a/web")[0]
    assert first["postFilter"]["candidates"], "the cluster must make candidates"
    raw = json.dumps(first)
    assert "tenant-b/payroll-db2" in raw and "tenant-c/ledger" in raw  # simulate keeps everything
    for detail in (COUNTS, FULL):
        s, annotation, event = published(first, "tenant-a/web", detail)
        assert other_tenants_named(json.dumps(s)) == [], detail
        assert other_tenants_named(annotation) == [] and other_tenants_named(event) == [], detail
    chosen = first["postFilter"]["chosen"]
    s, annotation, event = published(first, "tenant-a/web", FULL)
    by_node = {c["node"]: c for c in s["postFilter"]["candidates"]}
    assert by_node["node-1"]["victims"] == [] and by_node["node-1"]["victimsInOtherNamespaces"] == 1
    assert by_node["node-3"]["victims"] == ["tenant-a/batch", "tenant-a/batch2"]  # its own: named
    assert by_node["node-3"]["victimsInOtherNamespaces"] == 0
    assert "candidate node-1: victims 1 pod in another namespace" in event
    assert "candidate node-3: victims tenant-a/batch, tenant-a/batch2" in event
    s, annotation, event = published(first, "tenant-a/web", COUNTS)
    pre = json.loads(annotation)["preemption"]
    assert pre["node"] == chosen["node"]
    assert len(pre["victims"]) + pre["victimsInOtherNamespaces"] == len(chosen["victims"])
    assert s["postFilter"]["candidates"] == len(first["postFilter"]["candidates"])
    assert "candidate node-" not in event and "3 candidate node(s), 0 node(s) not candidates" in event
    assert nodes_named(event + annotation, {chosen["node"]}) == []


def test_victims_in_other_namespaces_are_counted_in_the_text() -> None:
    x = {"node": "n", "victims": ["tenant-a/x"], "victimsInOtherNamespaces": 2}
    lines = render_attempt("tenant-a/web", {
        "attempt": 1, "profile": "p", "result": {"status": "Unschedulable", "node": "", "message": "m"},
        "nodes": {"total": 1, "feasible": 0, "filtered": 1, "excludedByPreFilter": 0, "notEvaluated": 0},
        "preFilter": {"plugins": [], "skipped": [], "restrictedBy": [], "nodes": None, "status": None},
        "filter": {"plugins": [], "skipped": [], "nominatedNodeFirst": None,
                   "filteredOut": [{"reason": "r", "nodes": 1}]},
        "postFilter": {"message": "", "nominatedNode": "n", "candidates": 1, "rejected": 0, "chosen": x},
        "score": None, "selection": {"tied": 0, "selected": None},
        "scope": {"namespace": "tenant-a", "detail": COUNTS}}, 10)
    assert "    nominated to n, evicting tenant-a/x, 2 pods in other namespaces" in lines
    assert "    1 node(s): r" in lines


def test_an_anti_affinity_match_does_not_locate_another_tenants_pod() -> None:
    (x,) = explanations(anti_affinity_cluster(), "tenant-a/web")
    node = x["result"]["node"]
    assert x["result"]["status"] == "Scheduled" and node in ("node-1", "node-3")
    assert any("node-2" in g["nodes"] for g in x["filter"]["filteredOut"])  # what leaked
    s, annotation, event = published(x, "tenant-a/web", COUNTS)
    assert nodes_named(json.dumps(s), {node}) == []
    assert nodes_named(annotation, {node}) == [] and nodes_named(event, {node}) == []
    reason = "node(s) didn't match pod anti-affinity rules [InterPodAffinity]"
    assert json.loads(annotation)["filtered"] == [[reason, 1]]
    assert f"    1 node(s): {reason}" in event.splitlines()
    assert "not shown in namespace tenant-a" in event
    assert other_tenants_named(annotation + event) == []
    # Allowed by the administrator: node-2's verdict is shown, the pod that causes it still is not.
    s, annotation, event = published(x, "tenant-a/web", FULL)
    assert "node-2: InterPodAffinity: node(s) didn't match pod anti-affinity rules" in event
    assert other_tenants_named(annotation + event) == []


def test_per_node_scores_are_not_published_by_default() -> None:
    (x,) = explanations(scores_cluster(), "tenant-a/web")
    node = x["result"]["node"]
    assert len(x["score"]["nodes"]) == 4
    s, annotation, event = published(x, "tenant-a/web", COUNTS)
    out = json.loads(annotation)
    assert "top" not in out and out["detail"] == COUNTS and out["nodes"]["feasible"] == 4
    assert "nodes" not in s["score"] and "nodes" not in s["filter"]
    assert s["selection"]["tied"] == len(x["selection"]["tied"])
    assert nodes_named(annotation + event + json.dumps(s), {node}) == []
    assert "TOTAL" not in event and "NodeResourcesFit (weight 1)" in event
    s, annotation, event = published(x, "tenant-a/web", FULL)
    out = json.loads(annotation)
    assert len(out["top"]) == 4 and out["detail"] == FULL
    assert nodes_named(event, set()) == ["node-1", "node-2", "node-3", "node-4"]


def test_references_to_other_namespaces_are_hidden_in_free_text() -> None:
    x = explanations(preemption_cluster(), "tenant-a/web")[0]
    x["result"]["message"] = ("pod tenant-b/payroll-db2 not found; tenant-a/batch here; "
                              "topology.kubernetes.io/zone and node affinity/selector stay")
    s = scoped(x, "tenant-a", FULL, NAMESPACES)
    assert s["result"]["message"] == (f"pod {OTHER_NAMESPACE} not found; tenant-a/batch here; "
                                      "topology.kubernetes.io/zone and node affinity/selector stay")


def test_a_bad_detail_is_refused() -> None:
    x = explanations(scores_cluster(), "tenant-a/web")[0]
    with pytest.raises(ValueError, match="explanation detail 'all': expected one of counts, full"):
        scoped(x, "tenant-a", "all")


@pytest.mark.parametrize("labels, detail, problem", [
    (None, COUNTS, None),                       # no Namespace object known: the least
    ({}, COUNTS, None),
    ({DETAIL_LABEL: "counts"}, COUNTS, None),
    ({DETAIL_LABEL: "full"}, FULL, None),
    ({DETAIL_LABEL: "Full"}, COUNTS, "namespace tenant-a: label kubeberth.io/explain-detail='Full' is not one of "
                                     "counts, full; its explanations give counts only"),
])
def test_the_namespace_label_decides(labels: dict[str, str] | None, detail: str, problem: str | None) -> None:
    objects = ObjectStore()
    if labels is not None:
        objects.put("Namespace", {"metadata": {"name": "tenant-a", "labels": labels}})
    assert namespace_detail(objects, "tenant-a") == (detail, problem)


class _Explained:
    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def to_dict(self) -> dict[str, Any]:
        return self.data


def test_the_publisher_scopes_by_the_pods_namespace() -> None:
    x = explanations(preemption_cluster(), "tenant-a/web")[0]
    publisher = ExplainPublisher(client=None)  # type: ignore[arg-type]
    for ns in NAMESPACES:
        publisher.objects.put("Namespace", {"metadata": {"name": ns}})
    pod = make_pod("web", "tenant-a")
    s = publisher.scoped(pod, _Explained(x))  # type: ignore[arg-type]
    assert s["scope"] == {"namespace": "tenant-a", "detail": COUNTS}
    publisher.objects.put("Namespace", {"metadata": {"name": "tenant-a", "labels": {DETAIL_LABEL: "full"}}})
    s = publisher.scoped(pod, _Explained(x))  # type: ignore[arg-type]
    assert s["scope"]["detail"] == FULL and other_tenants_named(json.dumps(s)) == []
    # Another namespace's full detail is not this one's.
    s = publisher.scoped(make_pod("web", "tenant-b"), _Explained(x))  # type: ignore[arg-type]
    assert s["scope"] == {"namespace": "tenant-b", "detail": COUNTS}
    assert "tenant-a/batch" not in json.dumps(s)


def test_a_groups_placements_are_not_published_by_default() -> None:
    """A gang's attempt placed its first pod before the second fit nowhere: counts only, the node
    it was placed on is not named (full detail names it)."""
    from kubeberth import features
    from kubeberth.features import FeatureGates

    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "g", "namespace": "tenant-a"},
             "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}
    pods = [pod_dict(f"g-{i}", "tenant-a", cpu="1500m", schedulingGroup={"podGroupName": "g"}) for i in range(2)]
    with features.override(FeatureGates.parse("GenericWorkload=true")):
        (x, *_) = explanations([node_dict("secret-node", cpu="2"), group, *pods], "tenant-a/g-1")
    assert x["podGroup"]["pods"][0]["node"] == "secret-node"
    counts, annotation, event = published(x, "tenant-a/g-1", COUNTS)
    assert [p["node"] for p in counts["podGroup"]["pods"]] == [None, None]
    text = "\n".join(render_attempt("tenant-a/g-1", counts, 10))
    assert "tenant-a/g-0: placed" in text and "secret-node" not in text + annotation + event
    full, _, _ = published(x, "tenant-a/g-1", FULL)
    assert full["podGroup"]["pods"][0]["node"] == "secret-node"
