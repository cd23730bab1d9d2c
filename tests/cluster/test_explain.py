"""Explanations on a real API server: the summary annotation and the SchedulingExplained Event
(longer than the 1 KiB note limit of events.k8s.io, which a core/v1 Event without eventTime is
not held to) are accepted, with the ServiceAccount's ClusterRole; other pods get nothing.

What a tenant reads is scoped to its namespace (issue 29's three leaks: a victim of another
namespace, an anti-affinity match locating another tenant's pod, per-node scores), per-node
detail only where a cluster administrator labelled the namespace; and a pod annotated while
long unschedulable is explained within seconds."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from kubeberth.operator.explain_publisher import DETAIL_LABEL
from kubeberth.report.summary import EVENT_REASON, SUMMARY_ANNOTATION

from .conftest import Operators
from .control_plane import ControlPlane, kubectl
from .kube import ApiError, Kube, eventually, node, pod

pytestmark = pytest.mark.cluster

# A tenant: pods and events of its namespace, all verbs (no kube-controller-manager here to
# aggregate the `admin` ClusterRole's rules, so the Role says them).
TENANT_RBAC = """
apiVersion: v1
kind: ServiceAccount
metadata: {name: tenant, namespace: default}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: tenant, namespace: default}
rules:
  - {apiGroups: [""], resources: [pods, events], verbs: ["*"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: tenant, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: tenant}
subjects: [{kind: ServiceAccount, name: tenant, namespace: default}]
"""


@pytest_asyncio.fixture
async def full_detail(kube: Kube) -> AsyncIterator[None]:
    """The default namespace allowed full detail by the administrator, for one test."""
    await kube.patch("namespaces", "default", {"metadata": {"labels": {DETAIL_LABEL: "full"}}})
    yield
    await kube.patch("namespaces", "default", {"metadata": {"labels": {DETAIL_LABEL: None}}})


@pytest_asyncio.fixture
async def tenant(kube: Kube, control_plane: ControlPlane) -> AsyncIterator[Kube]:
    """A client as a tenant of default: its pods and events, nothing cluster-wide."""
    kubectl(control_plane, "apply", "-f", "-", input=TENANT_RBAC)
    token = kubectl(control_plane, "create", "token", "tenant", "-n", "default").stdout.strip()
    async with Kube(control_plane.url, token, control_plane.ssl_context()) as client:
        yield client


async def summary_of(kube: Kube, name: str) -> dict[str, Any] | None:
    p = await kube.get("pods", name, "default")
    text = (p["metadata"].get("annotations") or {}).get(SUMMARY_ANNOTATION)
    return json.loads(text) if text else None


async def explained_events(kube: Kube, name: str) -> list[dict[str, Any]]:
    return [e for e in await kube.list("events", "default", fieldSelector=f"involvedObject.name={name}")
            if e["reason"] == EVENT_REASON]


async def test_explanations_reach_the_pod(kube: Kube, operators: Operators, full_detail: None) -> None:
    for i in range(12):
        await kube.create("nodes", node(f"n{i:02d}", cpu="1" if i < 4 else "4"))
    asked = pod("asked", cpu="2")
    asked["metadata"]["annotations"] = {"kubeberth.io/explain": "true"}
    await kube.create("pods", asked)
    await kube.create("pods", pod("quiet", cpu="2"))
    operators.start()

    summary = await eventually(lambda: summary_of(kube, "asked"), what="the summary annotation")
    p = await kube.get("pods", "asked", "default")
    assert summary["result"] == "Scheduled"
    assert summary["filtered"] == [["Insufficient cpu [NodeResourcesFit]", 4]]
    assert len(summary["top"]) == 5 and summary["nodes"]["feasible"] == 8
    [event] = await eventually(lambda: explained_events(kube, "asked"), what="the SchedulingExplained event")
    assert event["involvedObject"]["uid"] == p["metadata"]["uid"]
    assert len(event["message"]) > 1024
    assert "4 node(s): Insufficient cpu [NodeResourcesFit]: n00, n01, n02, n03" in event["message"]

    await eventually(lambda: _bound(kube, "quiet"), what="quiet bound")
    assert await summary_of(kube, "quiet") is None and await explained_events(kube, "quiet") == []


async def _bound(kube: Kube, name: str) -> str | None:
    return (await kube.get("pods", name, "default"))["spec"].get("nodeName")


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


AVOID_SECRET_DB = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "secret-db"}}, "namespaceSelector": {},
     "topologyKey": "kubernetes.io/hostname"}]}}


def leaks(text: str, *, but: str | None = None) -> list[str]:
    """What of team-a, or of the nodes other than `but`, `text` names."""
    words = ["team-a", "payroll-db2", "secret-db", "node-1", "node-2", "node-3", "node-4"]
    return [w for w in words if w in text and w != but]


async def test_a_tenant_reads_counts_not_other_tenants(kube: Kube, tenant: Kube, operators: Operators) -> None:
    """default is tenant A; team-a runs payroll-db2 on node-1 and app=secret-db on node-2."""
    await kube.create("priorityclasses", priority_class("low", 10))
    await kube.create("priorityclasses", priority_class("high", 1000))
    await kube.create("nodes", node("node-1", cpu="2"))
    await kube.create("nodes", node("node-2", cpu="4"))
    await kube.create("pods", pod("payroll-db2", namespace="team-a", cpu="2", priority_class="low",
                                  node_name="node-1"))
    await kube.create("pods", pod("secret-db", namespace="team-a", cpu="1", priority_class="high",
                                  node_name="node-2", labels={"app": "secret-db"}))
    operators.start()
    # A tenant cannot allow itself more detail: only a cluster administrator labels namespaces.
    with pytest.raises(ApiError) as refused:
        await tenant.patch("namespaces", "default", {"metadata": {"labels": {DETAIL_LABEL: "full"}}})
    assert refused.value.status == 403

    # Preemption: the victim, of team-a, is counted; node-2 (the anti-affinity match) is not named.
    web = pod("web", cpu="2", priority_class="high", affinity=AVOID_SECRET_DB)
    web["metadata"]["annotations"] = {"kubeberth.io/explain": "true"}
    await tenant.create("pods", web)

    async def preempting() -> list[dict[str, Any]]:
        return [e for e in await explained_events(kube, "web") if "PostFilter (preemption)" in e["message"]
                and "nominated to node-1" in e["message"]]

    [event, *_] = await eventually(preempting, what="web's SchedulingExplained with its preemption")
    message = event["message"]
    assert "evicting 1 pod in another namespace" in message
    assert "    1 node(s): node(s) didn't match pod anti-affinity rules [InterPodAffinity]" in message.splitlines()
    summary = await summary_of(tenant, "web")
    assert summary is not None and summary["detail"] == "counts" and "top" not in summary
    # The PATCH response holds the annotation: what the tenant reads there.
    patched = await tenant.patch("pods", "web", {"metadata": {"labels": {"read": "back"}}}, "default")
    texts = [patched["metadata"]["annotations"][SUMMARY_ANNOTATION],
             *(e["message"] for e in await explained_events(kube, "web"))]
    assert [leaks(t, but="node-1") for t in texts] == [[]] * len(texts)  # node-1: its own nominated node

    # Per-node scores: a pod that fits three nodes is told where it went, and counts.
    for name in ("node-3", "node-4"):
        await kube.create("nodes", node(name, cpu="8"))
    fits = pod("fits", cpu="1")
    fits["metadata"]["annotations"] = {"kubeberth.io/explain": "true"}
    await tenant.create("pods", fits)
    summary = await eventually(lambda: summary_of(kube, "fits"), what="fits' summary")
    assert summary["result"] == "Scheduled" and "top" not in summary and summary["nodes"]["feasible"] >= 2
    [event] = await eventually(lambda: explained_events(kube, "fits"), what="fits' SchedulingExplained")
    assert leaks(json.dumps(summary) + event["message"], but=summary["node"]) == []
    assert "TOTAL" not in event["message"]


async def test_full_detail_where_the_administrator_allows_it(kube: Kube, operators: Operators,
                                                            full_detail: None) -> None:
    for name in ("node-1", "node-2", "node-3"):
        await kube.create("nodes", node(name, cpu="4"))
    await kube.create("pods", pod("secret-db", namespace="team-a", cpu="1", node_name="node-2",
                                  labels={"app": "secret-db"}))
    web = pod("web", cpu="1", affinity=AVOID_SECRET_DB)
    web["metadata"]["annotations"] = {"kubeberth.io/explain": "true"}
    await kube.create("pods", web)
    operators.start()
    summary = await eventually(lambda: summary_of(kube, "web"), what="web's summary")
    assert summary["result"] == "Scheduled" and summary["node"] in ("node-1", "node-3")
    assert summary["detail"] == "full" and sorted(n["node"] for n in summary["top"]) == ["node-1", "node-3"]
    [event] = await eventually(lambda: explained_events(kube, "web"), what="web's SchedulingExplained")
    assert "node-2: InterPodAffinity: node(s) didn't match pod anti-affinity rules" in event["message"]
    assert "team-a" not in event["message"] + json.dumps(summary) and "secret-db" not in event["message"]


async def test_a_long_pending_pod_is_explained_within_seconds_of_asking(kube: Kube, operators: Operators) -> None:
    """README's `kubectl annotate pod web-0 kubeberth.io/explain=true`, for a pod unschedulable
    past its backoff: no cluster event will move it, the five-minute flush is far."""
    await kube.create("nodes", node("n1", cpu="1"))
    await kube.create("pods", pod("web-0", cpu="2"))
    operators.start()

    async def failed() -> list[dict[str, Any]]:
        return [e for e in await kube.list("events", "default", fieldSelector="involvedObject.name=web-0")
                if e["reason"] == "FailedScheduling"]

    await eventually(failed, what="FailedScheduling")
    await asyncio.sleep(3)  # past its backoff (1 s): it sits with the unschedulable pods
    assert await summary_of(kube, "web-0") is None
    kubectl(operators.plane, "annotate", "pod", "web-0", "kubeberth.io/explain=true")
    asked = time.monotonic()
    summary = await eventually(lambda: summary_of(kube, "web-0"), timeout=5, interval=0.05,
                               what="the explanation within seconds")
    assert time.monotonic() - asked < 5
    assert summary["result"] == "Unschedulable" and summary["message"].startswith("0/1 nodes are available")
    assert len(await failed()) >= 1
