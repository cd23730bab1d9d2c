"""Explanations on a real API server: the summary annotation and the SchedulingExplained Event
(longer than the 1 KiB note limit of events.k8s.io, which a core/v1 Event without eventTime is
not held to) are accepted, with the ServiceAccount's ClusterRole; other pods get nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubeberth.report.summary import EVENT_REASON, SUMMARY_ANNOTATION

from .conftest import Operators
from .kube import Kube, eventually, node, pod

pytestmark = pytest.mark.cluster


async def summary_of(kube: Kube, name: str) -> dict[str, Any] | None:
    p = await kube.get("pods", name, "default")
    text = (p["metadata"].get("annotations") or {}).get(SUMMARY_ANNOTATION)
    return json.loads(text) if text else None


async def explained_events(kube: Kube, name: str) -> list[dict[str, Any]]:
    return [e for e in await kube.list("events", "default", fieldSelector=f"involvedObject.name={name}")
            if e["reason"] == EVENT_REASON]


async def test_explanations_reach_the_pod(kube: Kube, operators: Operators) -> None:
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
