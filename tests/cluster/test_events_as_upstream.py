"""The Events of a pod that fails, fails again, repeats, then is scheduled: kube-scheduler v1.37.2
and kubeberth side by side, read through events.k8s.io/v1.

The same story runs twice on the same API server, once with kube-scheduler (default profile) and
once with `kubeberth run`: a node of 2 CPUs holds three bound pods of 500m; the pod `p` asks for
2 CPUs. Its first attempt fails (FailedScheduling; its PodScheduled=False condition changes its
resourceVersion). Deleting a bound pod tries it again (NodeResourcesFit's hint on an assigned
pod's deletion): the second failure regards the pod's new version, so it is another Event; the
third is isomorphic to the second (same type, action, reason, reporter, regarding object at the
same version) and becomes that Event's series (count 2). Deleting the last bound pod lets it fit:
Scheduled.

Compared, with UIDs, resourceVersions and times replaced by what they stand for: every Event's
name form, type, reason, action, note, regarding, related, reportingController,
reportingInstance (`<controller>-<hostname>`: the same host runs both), series count, the fields
events.k8s.io/v1 leaves empty (deprecated*); and, from the audit log, the order of the writes
(create, create, patch of the series, create) with their API group.
"""

from __future__ import annotations

import json
import re
import socket
import time
from datetime import datetime
from typing import Any

import pytest

from .conftest import Operators, reset
from .control_plane import ControlPlane
from .kube import EVENTS_V1, Kube, eventually, node, pod

pytestmark = pytest.mark.cluster

FILLERS = ("f1", "f2", "f3")
NAME_FORM = re.compile(r"p\.[0-9a-f]+")
MICRO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


def scheduled_condition(p: dict[str, Any]) -> dict[str, Any]:
    return next((c for c in (p.get("status") or {}).get("conditions") or [] if c["type"] == "PodScheduled"), {})


async def events_of(kube: Kube) -> list[dict[str, Any]]:
    found = await kube.list(EVENTS_V1, "default", fieldSelector="regarding.name=p")
    return sorted(found, key=lambda e: e["eventTime"])


def view(e: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """What an Event says, with the run's own UIDs and versions named; its times checked for form."""
    assert MICRO_TIME.fullmatch(e["eventTime"]), e["eventTime"]
    series = e.get("series")
    if series is not None:
        assert MICRO_TIME.fullmatch(series["lastObservedTime"]), series
    regarding = {k: names.get(v, v) if k in ("uid", "resourceVersion") else v for k, v in e["regarding"].items()}
    return {
        "name form": bool(NAME_FORM.fullmatch(e["metadata"]["name"])),
        "namespace": e["metadata"]["namespace"],
        **{k: e.get(k) for k in ("type", "reason", "action", "note", "related", "reportingController",
                                 "reportingInstance")},
        "regarding": regarding,
        "series count": series["count"] if series else None,
        "deprecated fields": {k: v for k, v in e.items() if k.startswith("deprecated")},
    }


def event_writes(plane: ControlPlane, since: float, until: float) -> list[tuple[str, str]]:
    """(API group, verb) of each successful write of an Event about p between `since` and `until`,
    in the order the API server received them."""
    writes = []
    for a in plane.audit_events():
        ref = a.get("objectRef") or {}
        code = (a.get("responseStatus") or {}).get("code", 0)
        if (a.get("stage") != "ResponseComplete" or ref.get("resource") != "events" or not 200 <= code < 300
                or ref.get("namespace") != "default" or not str(ref.get("name") or "").startswith("p.")
                or a.get("verb") not in ("create", "patch", "update")):
            continue
        t = datetime.fromisoformat(a["requestReceivedTimestamp"].replace("Z", "+00:00")).timestamp()
        if since <= t <= until:
            writes.append((t, ref.get("apiGroup", ""), a["verb"]))
    return [(group, verb) for _, group, verb in sorted(writes)]


async def story(kube: Kube, plane: ControlPlane) -> dict[str, Any]:
    """Runs the story (the scheduler under test already runs); what it wrote about p."""
    started = time.time()
    await kube.create("nodes", node("n1", cpu="2"))
    for name in FILLERS:
        await kube.create("pods", pod(name, cpu="500m", node_name="n1"))
    created = await kube.create("pods", pod("p", cpu="2"))
    names = {created["metadata"]["uid"]: "<uid of p>", created["metadata"]["resourceVersion"]: "<p as created>"}

    async def failed_once() -> dict[str, Any] | None:
        current = await kube.get("pods", "p", "default")
        return current if scheduled_condition(current).get("reason") == "Unschedulable" else None

    waiting = await eventually(failed_once, what="p's PodScheduled=False")
    names[waiting["metadata"]["resourceVersion"]] = "<p once its condition was written>"
    await eventually(lambda: _count(kube, "FailedScheduling", 1), what="the first FailedScheduling")

    await kube.delete("pods", "f1", "default", grace_period=0)
    await eventually(lambda: _count(kube, "FailedScheduling", 2), what="the second FailedScheduling")
    await kube.delete("pods", "f2", "default", grace_period=0)

    async def repeated() -> list[dict[str, Any]] | None:
        found = await events_of(kube)
        return found if any((e.get("series") or {}).get("count") == 2 for e in found) else None

    await eventually(repeated, what="the third attempt counted in the second Event's series")
    await kube.delete("pods", "f3", "default", grace_period=0)
    await eventually(lambda: _count(kube, "Scheduled", 1), what="the Scheduled event")
    final = await events_of(kube)
    bound = await kube.get("pods", "p", "default")
    assert bound["spec"].get("nodeName") == "n1"
    assert bound["metadata"]["resourceVersion"] not in names
    # The audit backend writes in batches: wait for the last Event's create to be in the log.
    until = time.time() + 0.5

    def writes() -> list[tuple[str, str]]:
        return event_writes(plane, started, until)

    deadline = time.monotonic() + 10
    while len(writes()) < 4 and time.monotonic() < deadline:
        time.sleep(0.5)
    return {"events": [view(e, names) for e in final], "writes": writes()}


async def _count(kube: Kube, reason: str, n: int) -> bool:
    return len([e for e in await events_of(kube) if e["reason"] == reason]) >= n


async def test_failed_then_scheduled_events_are_kube_schedulers(kube: Kube, operators: Operators,
                                                                 control_plane: ControlPlane) -> None:
    sched = control_plane.start_kube_scheduler("kube-scheduler-events")
    try:
        upstream = await story(kube, control_plane)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- kube-scheduler ---\n{sched.tail(40)}") from exc
    finally:
        sched.stop()
    await reset(kube)

    operators.start()
    ours = await story(kube, control_plane)
    assert ours == upstream, (f"kube-scheduler:\n{json.dumps(upstream, indent=1, sort_keys=True)}\n"
                              f"kubeberth:\n{json.dumps(ours, indent=1, sort_keys=True)}")

    # What the comparison stands on, spelled out.
    instance = f"default-scheduler-{socket.gethostname()}"
    assert [(e["reason"], e["action"], e["series count"], e["regarding"]["resourceVersion"])
            for e in ours["events"]] == [
        ("FailedScheduling", "Scheduling", None, "<p as created>"),
        ("FailedScheduling", "Scheduling", 2, "<p once its condition was written>"),
        ("Scheduled", "Binding", None, "<p once its condition was written>"),
    ]
    for e in ours["events"]:
        assert (e["reportingController"], e["reportingInstance"], e["name form"]) == (
            "default-scheduler", instance, True), e
        assert not any(e["deprecated fields"].values()), e  # no source, count or first/last timestamps
    assert ours["events"][2]["note"] == "Successfully assigned default/p to n1"
    assert ours["writes"] == [("events.k8s.io", "create"), ("events.k8s.io", "create"),
                              ("events.k8s.io", "patch"), ("events.k8s.io", "create")]
