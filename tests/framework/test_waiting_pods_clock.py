"""Permit's waiting pods on a virtual clock (a replay's): deadlines instead of the event loop's
timers, enforced by whoever moves the clock."""

from __future__ import annotations

import asyncio

from kubeberth.clock import FakeClock
from kubeberth.framework.status import Code
from kubeberth.framework.waiting_pods import WaitingPod, WaitingPods
from kubeberth.model import Pod


def pod(name: str) -> Pod:
    return Pod({"metadata": {"name": name, "namespace": "default", "uid": name}, "spec": {"containers": []}})


def test_deadlines_fire_only_when_the_clock_says() -> None:
    async def scenario() -> None:
        clock = FakeClock(1000.0)
        pods = WaitingPods()
        pods.virtual_clock = clock
        loop = asyncio.get_running_loop()
        a = WaitingPod(pod("a"), {"Gang": 30.0, "Other": 10.0}, loop, clock=clock)
        b = WaitingPod(pod("b"), {"Gang": 5.0}, loop, clock=clock)
        pods.add(a)
        pods.add(b)
        assert (pods.next_deadline(), pods.parked()) == (1005.0, 2)
        await asyncio.sleep(0.01)  # no timer on the loop: nothing happens in wall-clock time
        assert a.waiting and b.waiting
        b.allow("Gang")
        a.allow("Other")
        assert pods.next_deadline() == 1030.0 and pods.parked() == 1
        clock.set(1029.0)
        assert pods.expire_due(clock.now()) == 0
        clock.set(1030.0)
        assert pods.expire_due(clock.now()) == 1
        status = await a.wait()
        assert status is not None and status.code == Code.UNSCHEDULABLE
        assert status.message() == "rejected due to timeout after waiting 30s at plugin Gang"
        assert pods.next_deadline() is None and pods.parked() == 0

    asyncio.run(scenario())


def test_without_a_clock_the_loop_times_out() -> None:
    async def scenario() -> None:
        wp = WaitingPod(pod("a"), {"P": 0.001}, asyncio.get_running_loop())
        assert wp.next_deadline() is None
        status = await wp.wait()
        assert status is not None and status.plugin == "P"

    asyncio.run(scenario())
