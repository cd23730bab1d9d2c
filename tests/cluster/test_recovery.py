"""Failures a real control plane produces: a takeover between two replicas, and expired watches.

The watch test stops the API server the operator talks to, changes the cluster through a second
API server on the same etcd, compacts etcd and restarts the first one: its watch cache starts
anew, so the operator's resourceVersions are gone (410) and it must list again, noticing what
was deleted while it was away.
"""

from __future__ import annotations

import asyncio
import signal
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from .conftest import OperatorProcess, Operators
from .control_plane import ADMIN_TOKEN, ControlPlane
from .kube import Kube, eventually, node, pod

pytestmark = pytest.mark.cluster


async def bound(kube: Kube, name: str) -> str | None:
    return (await kube.get("pods", name, "default"))["spec"].get("nodeName")


def identity(op: OperatorProcess) -> str:
    for line in op.log().splitlines():
        if "Standing by as " in line:
            return line.split("Standing by as ", 1)[1].split(" until", 1)[0]
    raise AssertionError(f"no identity in the log of {op.process.name}")


async def test_warm_standby_writes_nothing_and_takes_over_after_kill(control_plane: ControlPlane, kube: Kube,
                                                                    operators: Operators) -> None:
    await kube.create("nodes", node("n1"))
    active = operators.start("--leader-elect")
    await eventually(lambda: asyncio.to_thread(lambda: (active.health() or {}).get("scheduler", {}).get("leader")),
                     what="the first replica leads")
    standby = operators.start("--leader-elect")  # waits until the standby has synced: its cache is warm
    await kube.create("pods", pod("before"))
    await eventually(lambda: bound(kube, "before"), what="bound by the leader")
    await kube.create("nodes", node("n2"))  # seen by the standby while it stands by
    assert "Scheduling pods of" in active.log() and "Scheduling pods of" not in standby.log()
    assert (standby.health() or {})["scheduler"]["leader"] is False
    writes = [e for e in control_plane.audit_events()
              if identity(standby) in e.get("userAgent", "") and e["verb"] in ("create", "update", "patch", "delete")
              and e["objectRef"]["resource"] != "leases"]
    assert writes == []

    active.kill()
    killed = time.monotonic()
    await kube.create("pods", pod("after", nodeSelector={"kubernetes.io/hostname": "n2"}))
    # The Lease (15 s) lapses; the standby schedules from the cache it kept, without listing again.
    assert await eventually(lambda: bound(kube, "after"), timeout=60, interval=0.2, what="bound by the standby") == "n2"
    took = time.monotonic() - killed
    print(f"takeover after kill -9: {took:.1f}s")  # the figure, with -s
    assert "Scheduling pods of" in standby.log()
    assert standby.log().count("Scheduler cache synced") == 1


async def _through_a_gap(control_plane: ControlPlane, kube: Kube, operators: Operators) -> None:
    """n1 and gone (2 cpu each) full; while the operator is away both are emptied, gone is deleted,
    a node `fresh` (labelled) and a pending pod `during-gap` are created, and etcd is compacted."""
    await kube.create("nodes", node("n1", cpu="2"))
    await kube.create("nodes", node("gone", cpu="2"))
    await kube.create("pods", pod("old", cpu="2", node_name="n1"))
    await kube.create("pods", pod("filler", cpu="2", node_name="gone"))
    operators.start()
    await kube.create("pods", pod("first", cpu="1"))

    async def unschedulable(name: str) -> bool:
        conds = (await kube.get("pods", name, "default")).get("status", {}).get("conditions") or []
        return any(c["type"] == "PodScheduled" and c["status"] == "False" for c in conds)

    await eventually(lambda: unschedulable("first"), what="first unschedulable (both nodes full)")
    control_plane.stop_apiserver()
    with control_plane.second_apiserver() as url:
        async with Kube(url, ADMIN_TOKEN, control_plane.ssl_context()) as other:
            await other.delete("pods", "old", "default", grace_period=0)
            await other.delete("pods", "filler", "default", grace_period=0)
            await other.delete("nodes", "gone")
            await other.delete("pods", "first", "default", grace_period=0)
            await other.create("nodes", node("fresh", cpu="2", labels={"made": "during-gap"}))
            await other.create("pods", pod("during-gap", cpu="1", nodeSelector={"made": "during-gap"}))
        control_plane.compact_etcd()
    control_plane.start_apiserver()


async def test_expired_watches_are_listed_again(control_plane: ControlPlane, kube: Kube,
                                                operators: Operators) -> None:
    await _through_a_gap(control_plane, kube, operators)
    # What was created while the operator was away is seen once it lists again after the 410.
    assert await eventually(lambda: bound(kube, "during-gap"), timeout=60, what="during-gap bound") == "fresh"
    await kube.create("pods", pod("after", cpu="1", nodeSelector={"made": "during-gap"}))
    assert await eventually(lambda: bound(kube, "after"), timeout=60, what="after bound") == "fresh"
    assert operators.started[0].process.alive()


async def test_deletions_during_an_expired_watch_are_noticed(control_plane: ControlPlane, kube: Kube,
                                                             operators: Operators) -> None:
    await _through_a_gap(control_plane, kube, operators)
    await eventually(lambda: bound(kube, "during-gap"), timeout=60, what="during-gap bound")
    # n1 was emptied and `gone` deleted while the operator was away: a 2-cpu pod fits on n1 only.
    await kube.create("pods", pod("needs-n1", cpu="2"))
    assert await eventually(lambda: bound(kube, "needs-n1"), timeout=30, what="needs-n1 bound") == "n1"


def audit_time(event: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(event["requestReceivedTimestamp"].replace("Z", "+00:00"))


def writes_by(control_plane: ControlPlane, who: str) -> list[dict[str, Any]]:
    return [e for e in control_plane.audit_events()
            if who in e.get("userAgent", "") and e["verb"] in ("create", "update", "patch", "delete")]


async def test_an_outage_longer_than_every_retry_budget_ends_nothing(control_plane: ControlPlane, kube: Kube,
                                                                     operators: Operators) -> None:
    await kube.create("nodes", node("n1"))
    op = operators.start()
    await kube.create("pods", pod("before"))
    await eventually(lambda: bound(kube, "before"), what="bound before the outage")
    control_plane.stop_apiserver()
    try:
        # kopf's default retries give up after about 55 s; the reflectors and writers never do.
        outage_ends = time.monotonic() + 65
        await eventually(lambda: asyncio.to_thread(lambda: not op.synced()), timeout=30, interval=0.5,
                         what="the probe reports it cannot see the cluster")
        while time.monotonic() < outage_ends:
            assert op.process.alive(), f"exited during the outage:\n{op.process.tail(40)}"
            assert op.health() is not None, "the liveness probe stopped answering"
            await asyncio.sleep(1)
    finally:
        control_plane.start_apiserver()
    await kube.create("pods", pod("after"))
    # The watches come back within their backoff (at most 30 s between attempts, as client-go's).
    assert await eventually(lambda: bound(kube, "after"), timeout=90, interval=0.5, what="bound after") == "n1"
    # Every kind's watch is back within its own backoff (each retries on its own, 36 s apart at most).
    await eventually(lambda: asyncio.to_thread(op.synced), timeout=75, interval=0.5, what="synced again")
    assert op.process.alive()


async def test_a_frozen_leader_resumed_after_its_lease_writes_nothing_and_steps_down(
        control_plane: ControlPlane, kube: Kube, operators: Operators) -> None:
    await kube.create("nodes", node("n1"))
    frozen = operators.start("--leader-elect")
    await eventually(lambda: asyncio.to_thread(lambda: (frozen.health() or {}).get("scheduler", {}).get("leader")),
                     what="the first replica leads")
    standby = operators.start("--leader-elect")
    await kube.create("pods", pod("before"))
    await eventually(lambda: bound(kube, "before"), what="bound by the leader")
    frozen.kill(signal.SIGSTOP)
    await kube.create("pods", pod("during"))
    await eventually(lambda: bound(kube, "during"), timeout=60, interval=0.2, what="bound by the standby")
    # The frozen replica still holds pods in its queue and events in its senders: on waking it
    # finds its renewals late by its own clock, writes nothing and exits to be restarted.
    await kube.create("pods", pod("while-frozen"))
    resumed = datetime.now(UTC)
    frozen.kill(signal.SIGCONT)
    code = await eventually(lambda: asyncio.to_thread(frozen.process.popen.poll), timeout=30, interval=0.2,
                            what="the resumed replica exits")
    assert code == 75  # EXIT_LOST_LEADERSHIP
    await eventually(lambda: bound(kube, "while-frozen"), timeout=30, what="bound by the new leader")
    await asyncio.sleep(2)  # the audit log is written in batches
    # Nothing it sent after waking took effect (a request it had prepared before the freeze may
    # still arrive, and is refused: the Lease update by its resourceVersion, a binding as 409).
    after = [f"{e['verb']} {e['objectRef']['resource']} -> {e.get('responseStatus', {}).get('code')}"
             for e in writes_by(control_plane, identity(frozen))
             if audit_time(e) >= resumed and e.get("stage") == "ResponseComplete"
             and int(e.get("responseStatus", {}).get("code") or 0) < 400]
    assert after == []
    assert standby.process.alive()
