"""Acting on the chosen node: nominate, evict, reject at Permit, events, nominations of others."""

from __future__ import annotations

import asyncio

import pytest

from kubeberth.framework import Code, PostFilterResult
from kubeberth.framework.waiting_pods import WaitingPod
from tests.preemption.fakes import Env, node, pod


async def test_nominates_before_deleting_and_records_events():
    env = Env([node("n1")], [pod("low", cpu="3", prio=1, node="n1"), pod("low2", cpu="1", prio=2, node="n1")])
    p = pod("p", cpu="2", prio=10)
    result, status = await env.post_filter(p)
    assert status.is_success() and status.reasons == []
    assert isinstance(result, PostFilterResult) and result.nominated_node_name == "n1"
    assert env.client.calls == [
        ("nominate", "default/p", "n1"),
        ("delete", "default/low"),
        ("event", "default/low", "Normal", "Preempted", "Preempted by pod uid-default-p on node n1"),
    ]
    assert env.nominator.nominated_node_for(p) == "n1"
    assert env.recorded == [("default/p", ["default/low"])]
    assert env.metrics.attempts == 1 and env.metrics.victims == [1]
    assert env.pods_on("n1") == ["low", "low2"]  # the snapshot itself is the cache's business


async def test_victim_waiting_at_permit_is_rejected_not_deleted():
    victim = pod("waiting", cpu="4", prio=1, node="n1")
    env = Env([node("n1")], [victim])
    wp = WaitingPod(victim, {"Gate": 60.0}, asyncio.get_running_loop())
    env.ctx.waiting_pods.add(wp)
    _, status = await env.post_filter(pod("p", cpu="2", prio=10))
    assert status.is_success()
    assert env.client.of("delete") == []
    assert [c[2] for c in env.client.of("event")] == ["Preempted"]
    rejected = await wp.wait()
    assert rejected.code == Code.UNSCHEDULABLE
    assert rejected.reasons == ["preempted"] and rejected.plugin == "DefaultPreemption"


async def test_victim_already_terminating_is_evicted_too():
    """Upstream's PreemptPod does not skip a victim with a deletionTimestamp: it sets the
    DisruptionTarget condition and deletes it like the others."""
    env = Env([node("n1")], [pod("going", cpu="2", prio=1, node="n1", deleting=True),
                             pod("low", cpu="2", prio=1, node="n1")])
    _, status = await env.post_filter(pod("p", cpu="4", prio=10))
    assert status.is_success()
    assert sorted(env.client.of("delete")) == [("default/going",), ("default/low",)]
    assert env.metrics.victims == [2]


async def test_clears_lower_priority_nominations_on_the_chosen_node():
    lower = pod("lower", cpu="1", prio=5, nominated="n1")
    higher = pod("higher", cpu="1", prio=50, nominated="n1")
    elsewhere = pod("elsewhere", cpu="1", prio=5, nominated="n2")
    env = Env([node("n1"), node("n2", "1")], [pod("low", cpu="4", prio=1, node="n1"),
                                              pod("busy", cpu="1", prio=100, node="n2")],
              nominated=[(lower, "n1"), (higher, "n1"), (elsewhere, "n2")])
    p = pod("p", cpu="2", prio=10)
    result, status = await env.post_filter(p)
    assert status.is_success() and result.nominated_node_name == "n1"
    assert ("nominate", "default/lower", "") in env.client.calls
    assert not any(c[0] in ("default/higher", "default/elsewhere") for c in env.client.of("nominate"))
    assert env.nominator.nominated_node_for(lower) == ""
    assert env.nominator.nominated_node_for(higher) == "n1"
    assert env.nominator.nominated_node_for(elsewhere) == "n2"
    # cleared after the victims went
    calls = env.client.calls
    assert calls.index(("delete", "default/low")) < calls.index(("nominate", "default/lower", ""))


async def test_nothing_found_clears_own_nomination():
    p = pod("p", cpu="2", prio=10, nominated="n1")
    env = Env([node("n1")], [pod("big", cpu="4", prio=100, node="n1")], nominated=[(p, "n1")])
    result, status = await env.post_filter(p)
    assert status.code == Code.UNSCHEDULABLE
    assert result is not None and result.nominated_node_name == ""
    assert env.client.calls == [("nominate", "default/p", "")]
    assert env.nominator.nominated_node_for(p) == ""


async def test_nothing_found_without_nomination_touches_nothing():
    env = Env([node("n1")], [pod("big", cpu="4", prio=100, node="n1")])
    _, status = await env.post_filter(pod("p", cpu="2", prio=10))
    assert status.code == Code.UNSCHEDULABLE
    assert env.client.calls == []
    assert env.metrics.victims == []


async def test_delete_failure_is_an_error():
    env = Env([node("n1")], [pod("low", cpu="4", prio=1, node="n1")])
    env.client.fail("delete", RuntimeError("boom"))
    result, status = await env.post_filter(pod("p", cpu="2", prio=10))
    assert result is None
    assert status.code == Code.ERROR
    assert "boom" in status.message()


@pytest.mark.parametrize("with_client", [True, False])
async def test_works_without_optional_collaborators(with_client):
    env = Env([node("n1")], [pod("low", cpu="4", prio=1, node="n1")])
    env.ctx.metrics = None
    env.ctx.record_victims = None
    env.ctx.nominator = None
    if not with_client:
        env.ctx.client = None
    result, status = await env.post_filter(pod("p", cpu="2", prio=10))
    assert status.is_success() and result.nominated_node_name == "n1"


class _QueueLike:
    """A scheduling queue exposing the nominator it embeds (as queue.SchedulingQueue does)."""

    def __init__(self) -> None:
        from kubeberth.queue.nominator import Nominator

        self.nominator = Nominator()

    def nominated_pods_for_node(self, node_name: str) -> list:
        return self.nominator.nominated_pods_for_node(node_name)


@pytest.mark.parametrize("wrapped", [False, True], ids=["queue-nominator", "queue-embedding-nominator"])
async def test_with_the_queue_nominator(wrapped):
    from kubeberth.queue.nominator import Nominator

    holder = _QueueLike() if wrapped else Nominator()
    nominations = holder.nominator if wrapped else holder
    lower = pod("lower", cpu="1", prio=5, nominated="n1")
    nominations.add_nominated_pod(lower, "n1")
    env = Env([node("n1")], [pod("low", cpu="4", prio=1, node="n1")])
    env.ctx.nominator = holder
    p = pod("p", cpu="2", prio=10)
    result, status = await env.post_filter(p)
    assert status.is_success() and result.nominated_node_name == "n1"
    assert nominations.nominations() == {"default/p": "n1"}
    assert env.evaluator.nominated_node_of(p) == "n1"
