"""What a preemption writes, kube-scheduler v1.37.2 and kubeberth side by side (issue 29, findings 3
and 8).

The same story runs twice on the same API server, once with the real kube-scheduler serving the
profile `team-sched` and once with `kubeberth run` serving a SchedulingProfile of that name: a
low-priority victim of *another* scheduler (default-scheduler) runs on the only node; its spec was
edited once (generation 2); a high-priority preemptor of `team-sched`, created with a scheduling
gate that is then lifted (generation 2), needs the room. Read back through the API server:

- the victim's DisruptionTarget condition (message naming the preemptor's profile,
  observedGeneration the generation the scheduler saw, not the one graceful deletion made);
- the victim's Preempted event (reason, message, type, reporting controller and instance, action,
  related object);
- the preemptor's PodScheduled=False condition (observedGeneration) and its status otherwise;
- once the victim is gone (the test plays the kubelet), the PodScheduled=True the binding writes.

Both observations, with UIDs and times replaced, must be equal.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from .conftest import Operators, reset
from .control_plane import ControlPlane
from .kube import Kube, eventually, node, pod

pytestmark = pytest.mark.cluster

PROFILE = "team-sched"
GATE = "example.com/hold"
SOURCE = "core/v1 source.component of the Preempted events"
TIMES = ("lastTransitionTime", "lastProbeTime", "eventTime", "firstTimestamp", "lastTimestamp", "startTime")


def condition(p: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in (p.get("status") or {}).get("conditions") or [] if c["type"] == kind), None)


def scrub(value: Any, names: dict[str, str]) -> Any:
    """`value` with the times dropped and each UID or resourceVersion in `names` replaced by what
    it stands for."""
    if isinstance(value, dict):
        return {k: scrub(v, names) for k, v in value.items() if k not in TIMES}
    if isinstance(value, list):
        return [scrub(v, names) for v in value]
    if isinstance(value, str):
        if value in names:
            return names[value]
        for uid, name in names.items():
            value = value.replace(uid, name)
    return value


def event_view(e: dict[str, Any]) -> dict[str, Any]:
    """The fields both schedulers set, as the core/v1 API shows them. Both write events.k8s.io/v1
    Events (no source, count or first/lastTimestamp in this view; an eventTime)."""
    return {k: e.get(k) for k in ("type", "reason", "message", "reportingComponent", "reportingInstance",
                                  "action", "involvedObject", "related")}


async def story(kube: Kube) -> dict[str, Any]:
    """Creates the objects (the scheduler under test already runs) and reads back what it wrote."""
    for name, value in (("low", 10), ("high", 1000)):
        await kube.create("priorityclasses", {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                              "metadata": {"name": name}, "value": value})
    await kube.create("nodes", node("n1", cpu="2"))
    victim = await kube.create("pods", pod("victim", cpu="2", priority_class="low", node_name="n1"))
    victim = await kube.patch("pods", "victim", {"spec": {"activeDeadlineSeconds": 3600}}, "default")
    assert victim["metadata"]["generation"] == 2, victim["metadata"]
    preemptor = await kube.create("pods", pod("preemptor", cpu="2", priority_class="high", scheduler=PROFILE,
                                              schedulingGates=[{"name": GATE}]))
    preemptor = await kube.patch("pods", "preemptor", {"spec": {"schedulingGates": None}}, "default")
    assert preemptor["metadata"]["generation"] == 2, preemptor["metadata"]
    names = {victim["metadata"]["uid"]: "<uid of victim>", preemptor["metadata"]["uid"]: "<uid of preemptor>",
             victim["metadata"]["resourceVersion"]: "<victim's version after its edit>",
             preemptor["metadata"]["resourceVersion"]: "<preemptor's version once ungated>"}

    async def terminating() -> dict[str, Any] | None:
        v = await kube.get("pods", "victim", "default")
        return v if v["metadata"].get("deletionTimestamp") and condition(v, "DisruptionTarget") else None

    victim = await eventually(terminating, what="the victim preempted")

    async def preempted() -> list[dict[str, Any]] | None:
        found = [e for e in await kube.list("events", "default", fieldSelector="involvedObject.name=victim")
                 if e["reason"] == "Preempted"]
        return found or None

    events = await eventually(preempted, what="the Preempted event")

    async def unschedulable() -> dict[str, Any] | None:
        p = await kube.get("pods", "preemptor", "default")
        c = condition(p, "PodScheduled")
        return p if c and c["status"] == "False" and c.get("reason") == "Unschedulable" else None

    waiting = await eventually(unschedulable, what="the preemptor's PodScheduled=False")
    said = condition(waiting, "PodScheduled") or {}

    async def failed_scheduling() -> list[dict[str, Any]] | None:
        found = [e for e in await kube.list("events", "default", fieldSelector="involvedObject.name=preemptor")
                 if e["reason"] == "FailedScheduling" and e["message"] == said.get("message")]
        return found or None

    failed = await eventually(failed_scheduling, what="the preemptor's FailedScheduling event")
    await kube.delete("pods", "victim", "default", grace_period=0)  # the kubelet's final delete

    async def bound() -> dict[str, Any] | None:
        p = await kube.get("pods", "preemptor", "default")
        return p if p["spec"].get("nodeName") else None

    placed = await eventually(bound, what="the preemptor bound")
    return scrub({
        "victim generation": victim["metadata"]["generation"],
        "victim conditions": victim["status"].get("conditions"),
        "Preempted events": [event_view(e) for e in events],
        SOURCE: [(e.get("source") or {}).get("component") for e in events],
        "preemptor's FailedScheduling events": [event_view(e) for e in failed],
        "preemptor generation": waiting["metadata"]["generation"],
        "preemptor status while waiting": waiting["status"],
        "preemptor node": placed["spec"]["nodeName"],
        "preemptor conditions once bound": placed["status"].get("conditions"),
    }, names)


async def test_preemption_writes_what_kube_scheduler_writes(kube: Kube, operators: Operators,
                                                            control_plane: ControlPlane) -> None:
    sched = control_plane.start_kube_scheduler("kube-scheduler-preempted", profiles=[{"schedulerName": PROFILE}])
    try:
        upstream = await story(kube)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- kube-scheduler ---\n{sched.tail(40)}") from exc
    finally:
        sched.stop()
    await reset(kube)

    await kube.create("schedulingprofiles", {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile",
                                             "metadata": {"name": "team"}, "spec": {"schedulerName": PROFILE}})
    operators.start()
    ours = await story(kube)
    # events.k8s.io/v1 Events have no source (kubeberth's core/v1 ones had one).
    assert upstream[SOURCE] == [None]
    assert ours == upstream, (f"kube-scheduler:\n{json.dumps(upstream, indent=1, sort_keys=True)}\n"
                              f"kubeberth:\n{json.dumps(ours, indent=1, sort_keys=True)}")

    # What the comparison stands on, spelled out: the preemptor's profile is named, and each
    # condition observes the generation the scheduler read.
    [event] = ours["Preempted events"]
    assert event["reportingComponent"] == PROFILE and event["reportingInstance"].startswith(f"{PROFILE}-")
    assert event["related"] is None  # upstream's wrapper of the preemptor has no reference
    [target] = [c for c in ours["victim conditions"] if c["type"] == "DisruptionTarget"]
    assert target["message"] == f"{PROFILE}: preempting to accommodate a higher priority pod"
    assert target["observedGeneration"] == 2 and ours["victim generation"] == 3  # deletion counted one more
    [waiting] = [c for c in ours["preemptor status while waiting"]["conditions"] if c["type"] == "PodScheduled"]
    assert waiting["observedGeneration"] == 2
