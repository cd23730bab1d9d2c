"""In the cluster: a pod annotated kubeberth.io/explain: "true" gets its explanation after each
attempt (summary annotation + SchedulingExplained Event, bounded); other pods get nothing. Here
the namespace allows full detail (kubeberth.io/explain-detail: full); tests/explain/test_scope.py
holds what is shown without it."""

from __future__ import annotations

import json
from typing import Any

from kubeberth.operator.explain_publisher import DETAIL_LABEL
from kubeberth.report.summary import EVENT_LIMIT, EVENT_REASON, SUMMARY_ANNOTATION, SUMMARY_LIMIT

from .conftest import stays, wait_for
from .emulator import events_for, make_node, make_pod


def explained_pod(name: str, cpu: str) -> dict[str, Any]:
    pod = make_pod(name, cpu=cpu)
    pod["metadata"]["annotations"] = {"kubeberth.io/explain": "true"}
    return pod


def annotation(api: Any, name: str) -> dict[str, Any] | None:
    pod = api.get("pods", name, "default") or {}
    text = ((pod.get("metadata") or {}).get("annotations") or {}).get(SUMMARY_ANNOTATION)
    return json.loads(text) if text else None


async def test_explained_pods_get_a_summary_and_an_event_others_nothing(cluster, start_operator):
    api = cluster.api
    api.patch("namespaces", "default", {"metadata": {"labels": {DETAIL_LABEL: "full"}}})
    api.create("nodes", make_node("small", cpu="1"))
    for i in range(7):
        api.create("nodes", make_node(f"big-{i}", cpu="8"))
    api.create("pods", explained_pod("web", cpu="2"))
    api.create("pods", explained_pod("huge", cpu="64"))
    api.create("pods", make_pod("plain", cpu="2"))
    await start_operator()

    web = await wait_for(lambda: annotation(api, "web"), message="web's summary")
    assert web["result"] == "Scheduled" and web["node"].startswith("big-")
    assert web["nodes"]["total"] == 8 and web["nodes"]["feasible"] == 7
    assert len(web["top"]) == 5  # the top 5 of 7 feasible nodes, each with its plugins' scores
    assert web["top"][0]["total"] >= web["top"][-1]["total"]
    assert web["top"][0]["scores"]["TaintToleration"] == 300
    assert web["filtered"] == [["Insufficient cpu [NodeResourcesFit]", 1]]
    [event] = await wait_for(lambda: events_for(api, "web", EVENT_REASON))
    assert event["type"] == "Normal" and event["involvedObject"]["uid"] == api.get("pods", "web", "default")[
        "metadata"]["uid"]
    message = event["message"]
    assert message.startswith(f"=== default/web: Scheduled on {web['node']}")
    assert "1 node(s): Insufficient cpu [NodeResourcesFit]: small" in message
    assert "small: NodeResourcesFit: Insufficient cpu" in message

    huge = await wait_for(lambda: annotation(api, "huge"), message="huge's summary")
    assert huge["result"] == "Unschedulable" and huge["node"] is None
    assert huge["message"].startswith("0/8 nodes are available: 8 Insufficient cpu.")
    assert huge["filtered"] == [["Insufficient cpu [NodeResourcesFit]", 8]]
    assert huge["preemption"]["node"] is None
    assert len(json.dumps(huge)) <= SUMMARY_LIMIT
    events = await wait_for(lambda: events_for(api, "huge", EVENT_REASON))
    assert all(len(e["message"]) <= EVENT_LIMIT for e in events)

    await wait_for(lambda: (api.get("pods", "plain", "default") or {}).get("spec", {}).get("nodeName"))
    await stays(lambda: annotation(api, "plain") is None and not events_for(api, "plain", EVENT_REASON), 0.3)
    # Nothing but the pods that asked was patched.
    patched = {r.name for r in api.requests("PATCH", "pods") if not r.subresource}
    assert patched == {"web", "huge"}
