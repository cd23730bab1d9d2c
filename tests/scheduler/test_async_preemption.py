"""v1.37's asynchronous preemption through the whole scheduler (default profile): the cycle ends
before the victims are deleted, the preemptor is held back (gated by DefaultPreemption) while
they are, other pods are scheduled meanwhile, and the victims' deletions bring it back."""

from __future__ import annotations

import asyncio
from typing import Any

from kubeberth.clock import FakeClock
from kubeberth.config import SchedulingProfileSpec
from kubeberth.config.models import PluginRef, PluginSet
from kubeberth.framework.events import EVENT_UNSCHEDULABLE_TIMEOUT
from kubeberth.model import Pod
from kubeberth.plugins.default_preemption import DefaultPreemption
from kubeberth.queue import GATED
from kubeberth.scheduler import SCHEDULED, Scheduler
from kubeberth.scheduler import UNSCHEDULABLE as S_UNSCHEDULABLE
from kubeberth.testing import InMemoryClient
from tests.builders import node_dict, pod_dict
from tests.doubles import RecordingClient
from tests.scheduler.fakes import journal, registry, spec


class SlowDeletions(InMemoryClient):
    """The in-memory cluster, with deletions that wait until `release` is set."""

    def __init__(self, scheduler: Scheduler) -> None:
        super().__init__(scheduler)
        self.release = asyncio.Event()
        self.deleting: list[str] = []

    async def delete_pod(self, pod: Pod, disruption_message: str) -> None:
        self.deleting.append(pod.key)
        await self.release.wait()
        await super().delete_pod(pod, disruption_message)


def _uid(sched: Scheduler, key: str) -> str:
    return sched._uids[key]


async def _cluster() -> tuple[Scheduler, SlowDeletions]:
    sched = Scheduler(clock=FakeClock())
    client = SlowDeletions(sched)
    sched.ctx.client = client
    sched.add_profile_spec(SchedulingProfileSpec())
    sched.on_node_add(node_dict("n1", cpu="4"))
    sched.on_node_add(node_dict("n2", cpu="1"))
    low: dict[str, Any] = pod_dict("low", cpu="2", priority=0, node="n1")
    low2: dict[str, Any] = pod_dict("low2", cpu="2", priority=0, node="n1")
    sched.on_pod_add(low)
    sched.on_pod_add(low2)
    return sched, client


async def _one_cycle(sched: Scheduler) -> None:
    q = sched.queue.pop_nowait()
    assert q is not None
    await sched.schedule_popped(q)
    for _ in range(10):
        await asyncio.sleep(0)


async def test_preemptor_is_gated_until_its_victims_are_deleted() -> None:
    sched, client = await _cluster()
    sched.on_pod_add(pod_dict("high", cpu="4", priority=100))
    await _one_cycle(sched)
    uid = _uid(sched, "default/high")
    # All victims but the last at once; the last one after them.
    assert len(client.deleting) == 1 and client.deleting[0] in ("default/low", "default/low2")
    assert sched.nominator.nominated_node_for(sched._pending[uid]) == "n1"
    # Deleting is under way: a pod popped meanwhile is scheduled; the preemptor is not tried.
    sched.on_pod_add(pod_dict("small", cpu="1", priority=0))
    await _one_cycle(sched)
    assert sched.outcomes["default/small"].node == "n2"
    got = sched.queue.get(uid)
    assert got is None or got[0] != "active"
    # A cluster event meanwhile looks at the preemptor again: PreEnqueue still holds it back.
    sched.queue.move_all_to_active_or_backoff(EVENT_UNSCHEDULABLE_TIMEOUT)
    got = sched.queue.get(uid)
    assert got is not None and got[0] == GATED
    assert got[1].unschedulable_plugins >= {"DefaultPreemption", "NodeResourcesFit"}
    assert sched.queue.pop_nowait() is None
    # The deletions land: the preemptor comes back and takes n1.
    client.release.set()
    await sched.wait_for_preemptions()
    await sched.run_until_idle()
    assert (sched.outcomes["default/high"].status, sched.outcomes["default/high"].node) == (SCHEDULED, "n1")
    assert sorted(sched.outcomes["default/high"].victims) == ["default/low", "default/low2"]


async def test_a_failed_deletion_activates_the_preemptor_which_preempts_again() -> None:
    sched, client = await _cluster()
    failures = [RuntimeError("etcd is unhappy")]
    original = InMemoryClient.delete_pod

    async def flaky(self: SlowDeletions, pod: Pod, disruption_message: str) -> None:
        if failures:
            raise failures.pop()
        await original(self, pod, disruption_message)

    client.delete_pod = flaky.__get__(client)  # type: ignore[method-assign]
    sched.on_pod_add(pod_dict("high", cpu="4", priority=100))
    await sched.run_until_idle(max_attempts=5)
    assert (sched.outcomes["default/high"].status, sched.outcomes["default/high"].node) == (SCHEDULED, "n1")


async def test_a_victim_in_pre_bind_is_cancelled_and_requeued_not_deleted() -> None:
    """The victim's binding is still in PreBind: preemption cancels it (no API call), the victim
    goes back to the queue, and the preemptor, activated since no deletion event will come, takes
    the node. Before PreBind, the victim's status named the node (NominatedNodeNameForExpectation)."""
    reg = registry()
    reg.register(DefaultPreemption)
    profile = spec()
    profile = profile.model_copy(update={"plugins": profile.plugins.model_copy(update={
        "postFilter": PluginSet(enabled=[PluginRef(name="DefaultPreemption")])})})
    sched = Scheduler(clock=FakeClock(), seed=1)
    client = RecordingClient(sched)
    sched.ctx.client = client
    gate = asyncio.Event()
    sched.ctx.extras["script"] = {"prebind": "hang", "gate": gate}
    sched.add_profile_spec(profile, reg)
    sched.on_node_add(node_dict("n1", cpu="2"))
    sched.on_pod_add(pod_dict("slow", cpu="2", priority=0))
    await _one_cycle(sched)
    assert journal(sched) == ["reserve slow n1", "prebind waits slow"]
    assert client.of("nominate") == [("default/slow", "n1")]
    sched.on_pod_add(pod_dict("high", cpu="2", priority=100))
    sched.ctx.extras["script"]["prebind"] = "ok"
    await sched.run_until_idle(max_attempts=3)
    assert client.of("delete") == []
    assert ("default/slow", "Normal", "Preempted",
            f"Preempted by pod {sched._uids['default/high']} on node n1 (in kube-scheduler memory).") \
        in client.of("event")
    assert (sched.outcomes["default/high"].status, sched.outcomes["default/high"].node) == (SCHEDULED, "n1")
    slow = sched.outcomes["default/slow"]
    assert slow.status == S_UNSCHEDULABLE and "unreserve slow n1" in journal(sched)
    assert not sched.ctx.pods_in_pre_bind and not gate.is_set()


async def test_a_victim_past_pre_bind_is_deleted() -> None:
    """Once PreBind is over the binding can no longer be cancelled."""
    from kubeberth.framework.pods_in_pre_bind import PodsInPreBind

    pods = PodsInPreBind()
    entry = pods.add("u")
    assert entry.mark_prebound() and not entry.cancel("preempted by DefaultPreemption")
    entry = pods.add("v")
    assert entry.cancel("preempted by DefaultPreemption") and entry.cancel("again")
    assert not entry.mark_prebound() and entry.cause == "preempted by DefaultPreemption"
