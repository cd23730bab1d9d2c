"""Shadow mode against a real API server: kubeberth evaluates another scheduler's pending pods,
binds none of them, annotates its choice (opt-in) and counts agreement once they are bound."""

from __future__ import annotations

import json
import re

import pytest

from .conftest import Operators
from .kube import Kube, eventually, node, pod

pytestmark = pytest.mark.cluster

ANNOTATION = "shadow.kubeberth.io/bin-pack"
SHADOW = {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": "bin-pack"},
          "spec": {"mode": "Shadow", "shadow": {"schedulerNames": ["other"], "annotate": True},
                   "pluginConfig": [{"name": "NodeResourcesFit",
                                     "args": {"scoringStrategy": {"type": "MostAllocated"}}}]}}


def shadow_counts(metrics: str) -> dict[str, float]:
    out = {}
    for m in re.finditer(r'^kubeberth_shadow_decisions_total\{(.*?)\} (\S+)$', metrics, re.M):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        if labels.get("profile") == "bin-pack":
            out[labels["outcome"]] = float(m.group(2))
    return out


async def bind(kube: Kube, name: str, node_name: str) -> None:
    await kube.request("POST", f"/api/v1/namespaces/default/pods/{name}/binding",
                       body={"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                             "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}})


async def test_shadow_profile_compares_with_the_real_scheduler(kube: Kube, operators: Operators) -> None:
    await kube.create("nodes", node("small", cpu="2"))
    await kube.create("nodes", node("large", cpu="8"))
    await kube.create("schedulingprofiles", SHADOW)
    op = operators.start()
    for name, cpu in (("a", "1"), ("b", "1"), ("c", "16")):
        await kube.create("pods", pod(name, cpu=cpu, scheduler="other"))

    async def annotation(name: str) -> dict[str, str] | None:
        value = ((await kube.get("pods", name, "default"))["metadata"].get("annotations") or {}).get(ANNOTATION)
        return json.loads(value) if value else None

    assert await eventually(lambda: annotation("a"), what="a annotated") == {"node": "small"}
    assert await eventually(lambda: annotation("b"), what="b annotated") == {"node": "small"}
    assert "Insufficient cpu" in (await eventually(lambda: annotation("c"), what="c annotated"))["unschedulable"]
    profile = await kube.get("schedulingprofiles", "bin-pack")
    assert [c["status"] for c in profile["status"]["conditions"] if c["type"] == "Accepted"] == ["True"]
    # the test is "other": a where the shadow would put it, b and c elsewhere
    await bind(kube, "a", "small")
    await bind(kube, "b", "large")
    await bind(kube, "c", "large")

    async def counted() -> dict[str, float] | None:
        got = shadow_counts(op.metrics())
        return got if sum(got.values()) == 3 else None

    assert await eventually(counted, what="3 shadow decisions counted") == {
        "same_node": 1.0, "other_node": 1.0, "we_unschedulable": 1.0}
    assert "Shadow profile bin-pack: pod default/b: we chose small, other bound it to large" in op.log()
    # kubeberth wrote nothing else about these pods: no Scheduled/FailedScheduling event, no condition
    for name in ("a", "b", "c"):
        events = await kube.list("events", "default", fieldSelector=f"involvedObject.name={name}")
        assert [e["reason"] for e in events if e["reason"] in ("Scheduled", "FailedScheduling")] == []
        conditions = (await kube.get("pods", name, "default")).get("status", {}).get("conditions") or []
        assert not [c for c in conditions if c["type"] == "PodScheduled" and c["status"] == "False"]
