"""The full flow against a real API server: bind, events, conditions, preemption, live profiles.

`kubeberth run` runs as its own process with the kubeberth ServiceAccount's token; the test
plays the other clients of the cluster (someone creating pods, and the kubelet that finishes a
graceful deletion, since there is no kubelet here).
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import Operators
from .kube import Kube, eventually, node, pod

pytestmark = pytest.mark.cluster


async def bound_node(kube: Kube, name: str, namespace: str = "default") -> str | None:
    return (await kube.get("pods", name, namespace))["spec"].get("nodeName")


async def events_of(kube: Kube, name: str, namespace: str = "default") -> list[dict[str, Any]]:
    return await kube.list("events", namespace, fieldSelector=f"involvedObject.name={name}")


def condition(p: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in (p.get("status") or {}).get("conditions") or [] if c["type"] == kind), None)


async def test_binds_and_reports_as_kube_scheduler(kube: Kube, operators: Operators) -> None:
    for i in range(3):
        await kube.create("nodes", node(f"n{i}", cpu="2"))
    operators.start()
    await kube.create("pods", pod("fits", cpu="1"))
    await kube.create("pods", pod("too-big", cpu="3"))
    where = await eventually(lambda: bound_node(kube, "fits"), what="fits bound")
    assert where in {"n0", "n1", "n2"}

    scheduled = await eventually(lambda: events_of(kube, "fits"), what="Scheduled event")
    assert [(e["type"], e["reason"], e["message"]) for e in scheduled] == [
        ("Normal", "Scheduled", f"Successfully assigned default/fits to {where}")]
    fits = await kube.get("pods", "fits", "default")
    assert (condition(fits, "PodScheduled") or {}).get("status") == "True"

    async def unschedulable() -> dict[str, Any] | None:
        p = await kube.get("pods", "too-big", "default")
        c = condition(p, "PodScheduled")
        return c if c and c["status"] == "False" else None

    cond = await eventually(unschedulable, what="PodScheduled=False")
    # More than any node's allocatable: no victim could make room.
    message = ("0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: "
               "3 Preemption is not helpful for scheduling.")
    assert (cond["reason"], cond["message"]) == ("Unschedulable", message)
    # Events go out through the recorder, as upstream's broadcaster: not ordered with the status patch.
    failed = await eventually(lambda: events_of(kube, "too-big"), what="FailedScheduling event")
    assert [(e["type"], e["reason"], e["message"]) for e in failed] == [("Warning", "FailedScheduling", message)]
    assert (await kube.get("pods", "too-big", "default"))["spec"].get("nodeName") is None

    # A node that makes room: the pod is retried and bound there.
    await kube.create("nodes", node("big", cpu="8"))
    assert await eventually(lambda: bound_node(kube, "too-big"), what="too-big bound") == "big"


async def test_pods_of_other_schedulers_are_left_alone(kube: Kube, operators: Operators) -> None:
    await kube.create("nodes", node("n0"))
    operators.start()
    await kube.create("pods", pod("theirs", scheduler="someone-else"))
    await kube.create("pods", pod("ours"))
    await eventually(lambda: bound_node(kube, "ours"), what="ours bound")
    theirs = await kube.get("pods", "theirs", "default")
    assert theirs["spec"].get("nodeName") is None and not (theirs.get("status") or {}).get("conditions")
    assert await events_of(kube, "theirs") == []


async def test_preemption_with_graceful_deletion(kube: Kube, operators: Operators) -> None:
    """v1.37's asynchronous preemption: the victims get DisruptionTarget, a Preempted event and a
    graceful deletion in the background; the preemptor is nominated with upstream's message and
    waits until a kubelet has ended the victims."""
    await kube.create("priorityclasses", {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                          "metadata": {"name": "low"}, "value": 10})
    await kube.create("priorityclasses", {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                          "metadata": {"name": "high"}, "value": 1000})
    await kube.create("nodes", node("n1", cpu="2"))
    # Already running, as a kubelet would report them.
    for name in ("victim-a", "victim-b"):
        await kube.create("pods", pod(name, cpu="1", priority_class="low", node_name="n1"))
    operators.start()
    preemptor = await kube.create("pods", pod("preemptor", cpu="2", priority_class="high"))
    assert preemptor["spec"]["priority"] == 1000  # the Priority admission plugin resolved the class

    async def nominated() -> str | None:
        return ((await kube.get("pods", "preemptor", "default")).get("status") or {}).get("nominatedNodeName")

    assert await eventually(nominated, what="nominatedNodeName") == "n1"

    for name in ("victim-a", "victim-b"):
        async def terminating(name: str = name) -> dict[str, Any] | None:
            v = await kube.get("pods", name, "default")
            return v if v["metadata"].get("deletionTimestamp") else None

        victim = await eventually(terminating, what=f"{name} deleted gracefully")
        target = condition(victim, "DisruptionTarget")
        assert target is not None and (target["status"], target["reason"]) == ("True", "PreemptionByScheduler")

        # Recorded after the deletion (as upstream's prepareCandidate does), through the recorder.
        async def preempted_events(name: str = name) -> list[dict[str, Any]] | None:
            return [e for e in await events_of(kube, name) if e["reason"] == "Preempted"] or None

        preempted = await eventually(preempted_events, what=f"Preempted event of {name}")
        expected = f"Preempted by pod {preemptor['metadata']['uid']} on node n1"
        assert len(preempted) == 1 and preempted[0]["message"] == expected

    async def failed_scheduling() -> list[str] | None:
        found = [e["message"] for e in await events_of(kube, "preemptor") if e["reason"] == "FailedScheduling"]
        return found or None

    assert await eventually(failed_scheduling, what="FailedScheduling") == [
        "0/1 nodes are available: 1 Insufficient cpu. preemption: found a potential placement for pod on "
        "node n1, preempting 2 victims"]
    # Still terminating: the preemptor waits for the room (no kubelet has confirmed the deletions).
    assert await bound_node(kube, "preemptor") is None
    for name in ("victim-a", "victim-b"):
        await kube.delete("pods", name, "default", grace_period=0)  # the kubelet's final delete
    assert await eventually(lambda: bound_node(kube, "preemptor"), what="preemptor bound") == "n1"


async def test_live_profile_edits(kube: Kube, operators: Operators) -> None:
    for i in range(3):
        await kube.create("nodes", node(f"n{i}"))
    operators.start("--no-default-profile")
    await kube.create("schedulingprofiles", {
        "apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": "packing"},
        "spec": {"schedulerName": "kubeberth", "pluginConfig": [{"name": "NodeResourcesFit", "args": {
            "scoringStrategy": {"type": "MostAllocated",
                                "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}}}],
                 "plugins": {"score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}],
                                       "enabled": [{"name": "NodeResourcesFit", "weight": 5}]}}}})

    async def in_force(generation: int) -> dict[str, Any] | None:
        status = (await kube.get("schedulingprofiles", "packing")).get("status") or {}
        return status if status.get("observedGeneration") == generation else None

    status = await eventually(lambda: in_force(1), what="generation 1 observed")
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [("Accepted", "True", "Valid")]
    for i in range(4):
        await kube.create("pods", pod(f"packed-{i}", scheduler="kubeberth"))
        await eventually(lambda i=i: bound_node(kube, f"packed-{i}"), what=f"packed-{i} bound")
    placed = {await bound_node(kube, f"packed-{i}") for i in range(4)}
    assert len(placed) == 1, placed  # bin packing: all on one node

    # An edit the schema allows but kubeberth refuses: the field is named, packing stays in force.
    await kube.patch("schedulingprofiles", "packing", {"spec": {"plugins": {"score": {
        "enabled": [{"name": "NodeResourceFit"}]}}}})
    status = await eventually(lambda: in_force(2), what="generation 2 observed")
    [accepted] = status["conditions"]
    assert (accepted["status"], accepted["reason"]) == ("False", "Invalid")
    assert "spec.plugins.score.enabled[0].name" in accepted["message"], accepted["message"]
    await kube.create("pods", pod("still-packed", scheduler="kubeberth"))
    assert await eventually(lambda: bound_node(kube, "still-packed"), what="bound") in placed

    # Spreading again: the next pods leave the full node.
    await kube.patch("schedulingprofiles", "packing", {"spec": {"plugins": None, "pluginConfig": None}})
    status = await eventually(lambda: in_force(3), what="generation 3 observed")
    assert status["conditions"][0]["status"] == "True"
    await kube.create("pods", pod("spread", scheduler="kubeberth"))
    assert await eventually(lambda: bound_node(kube, "spread"), what="bound") not in placed
