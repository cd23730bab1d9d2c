"""Acting on the chosen node as v1.37's asynchronous preemption does: the PostFilter result names
the node (the scheduler nominates the pod), the victims are preempted in the background, the
preemptor is held back meanwhile, and is activated when no deletion event will bring it back."""

from __future__ import annotations

import asyncio

import pytest

from kubeberth.framework import Code, PostFilterResult
from kubeberth.framework.waiting_pods import WaitingPod
from tests.preemption.fakes import Env, node, pod

WAITING = "waiting for the preemption for this pod to be finished"


async def test_result_names_the_node_and_the_victims_are_deleted_in_the_background():
    env = Env([node("n1")], [pod("low", cpu="3", prio=1, node="n1"), pod("low2", cpu="1", prio=2, node="n1")])
    p = pod("p", cpu="2", prio=10)
    state = env.state_for(p)
    result, status = await env.fw.run_post_filter(state, p, env.statuses(state, p))
    assert status.is_success()
    assert status.message() == "preemption: found a potential placement for pod on node n1, preempting 1 victims"
    assert isinstance(result, PostFilterResult) and result.nominated_node_name == "n1"
    assert env.client.calls == []  # nothing sent within the cycle
    assert env.plugin.pre_enqueue(p).message() == WAITING
    await env.background()
    assert env.client.calls == [
        ("delete", "default/low"),
        ("event", "default/low", "Normal", "Preempted", "Preempted by pod uid-default-p on node n1"),
    ]
    assert env.plugin.pre_enqueue(p) is None
    assert env.recorded == [("default/p", ["default/low"])]
    assert env.metrics.attempts == 1 and env.metrics.victims == [1] and env.metrics.goroutines == ["success"]
    assert env.pods_on("n1") == ["low", "low2"]  # the snapshot itself is the cache's business


@pytest.mark.parametrize("victim_scheduler", [
    pytest.param(None, id="victim-of-default-scheduler"),
    pytest.param("team-sched", id="victim-of-the-same-profile"),
    pytest.param("batch-sched", id="victim-of-a-third-scheduler"),
])
@pytest.mark.parametrize("waiting", [False, True], ids=["deleted", "in-memory"])
async def test_the_preemptors_profile_names_itself_in_the_condition_and_the_event(victim_scheduler, waiting):
    """As upstream: the DisruptionTarget message names the preemptor's schedulerName and the
    Preempted event is reported by the preemptor's profile, whichever scheduler placed the victim
    (issue 29, finding 3)."""
    victim = pod("low", cpu="4", prio=1, node="n1", scheduler=victim_scheduler)
    env = Env([node("n1")], [victim], scheduler_name="team-sched")
    if waiting:
        wp = WaitingPod(victim, {"Gate": 60.0}, asyncio.get_running_loop())
        env.ctx.waiting_pods.add(wp)
    _, status = await env.post_filter(pod("p", cpu="2", prio=10, scheduler="team-sched"))
    assert status.is_success()
    assert env.client.disruptions == ([] if waiting else [
        ("default/low", "team-sched: preempting to accommodate a higher priority pod")])
    assert env.client.reporters == [("default/low", "Preempted", "team-sched")]


async def test_the_scheduler_nominates_from_the_result():
    env = Env([node("n1")], [pod("low", cpu="4", prio=1, node="n1")])
    p = pod("p", cpu="2", prio=10)
    result, status = await env.post_filter(p)
    assert status.is_success() and result.nominated_node_name == "n1"
    assert env.client.calls[0] == ("nominate", "default/p", "n1")
    assert env.nominator.nominated_node_for(p) == "n1"


async def test_victim_waiting_at_permit_is_preempted_in_memory_not_deleted():
    victim = pod("waiting", cpu="4", prio=1, node="n1")
    env = Env([node("n1")], [victim])
    wp = WaitingPod(victim, {"Gate": 60.0}, asyncio.get_running_loop())
    env.ctx.waiting_pods.add(wp)
    activated: list[str] = []
    env.ctx.activate = lambda pods: activated.extend(p.key for p in pods)
    _, status = await env.post_filter(pod("p", cpu="2", prio=10))
    assert status.is_success()
    assert env.client.of("delete") == []
    assert env.client.of("event") == [("default/waiting", "Normal", "Preempted",
                                       "Preempted by pod uid-default-p on node n1 (in kube-scheduler memory).")]
    preempted = await wp.wait()
    # An error, not a rejection: the victim is retried after its backoff.
    assert preempted.code == Code.ERROR
    assert preempted.reasons == ["preempted"] and preempted.plugin == "DefaultPreemption"
    # No deletion event will come for the last victim: the preemptor is activated.
    assert activated == ["default/p"]


async def test_victim_in_pre_bind_is_cancelled_not_deleted():
    victim = pod("binding", cpu="4", prio=1, node="n1")
    env = Env([node("n1")], [victim])
    entry = env.ctx.pods_in_pre_bind.add(victim.uid)
    _, status = await env.post_filter(pod("p", cpu="2", prio=10))
    assert status.is_success()
    assert env.client.of("delete") == []
    assert entry.canceled and entry.cause == "preempted by DefaultPreemption"
    assert not entry.mark_prebound()


async def test_victim_past_pre_bind_is_deleted():
    victim = pod("bound", cpu="4", prio=1, node="n1")
    env = Env([node("n1")], [victim])
    entry = env.ctx.pods_in_pre_bind.add(victim.uid)
    assert entry.mark_prebound()
    await env.post_filter(pod("p", cpu="2", prio=10))
    assert env.client.of("delete") == [("default/bound",)]


async def test_victim_already_terminating_gets_no_call():
    """v1.37 sends nothing for a victim whose graceful deletion has started: it waits for it."""
    env = Env([node("n1")], [pod("going", cpu="2", prio=1, node="n1", deleting=True),
                             pod("low", cpu="2", prio=1, node="n1")])
    p = pod("p", cpu="4", prio=10)
    _, status = await env.post_filter(p)
    assert status.is_success()
    assert env.client.of("delete") == [("default/low",)]
    assert [c[0] for c in env.client.of("event")] == ["default/low"]
    assert env.metrics.victims == [2]


async def test_only_terminating_victims_start_nothing():
    env = Env([node("n1")], [pod("going", cpu="4", prio=1, node="n1", deleting=True)])
    p = pod("p", cpu="2", prio=10)
    state = env.state_for(p)
    result, status = await env.fw.run_post_filter(state, p, env.statuses(state, p))
    assert status.is_success() and result.nominated_node_name == "n1"
    assert not env.ctx.preemption_tasks
    assert env.plugin.pre_enqueue(p) is None
    assert env.metrics.goroutines == []


async def test_last_victim_being_deleted_ends_the_wait():
    """Once the last victim's deletion shows in the scheduler's view, PreEnqueue lets the
    preemptor through, even before the background work has returned."""
    low = pod("low", cpu="2", prio=1, node="n1")
    last = pod("last", cpu="2", prio=1, node="n1")
    env = Env([node("n1")], [low, last])
    view = {low.uid: low, last.uid: last}
    env.ctx.lookup_pod = view.get
    gate = asyncio.Event()
    seen: list[object] = []
    original = env.client.delete_pod

    async def slow_delete(victim, disruption_message):
        await original(victim, disruption_message)
        if victim.uid == last.uid:
            seen.append(env.plugin.pre_enqueue(p))  # still in the cluster's view: waiting
            view[last.uid] = pod("last", cpu="2", prio=1, node="n1", deleting=True)
            seen.append(env.plugin.pre_enqueue(p))  # its deletion has started: done
            await gate.wait()

    env.client.delete_pod = slow_delete
    p = pod("p", cpu="4", prio=10)
    state = env.state_for(p)
    await env.fw.run_post_filter(state, p, env.statuses(state, p))
    for _ in range(20):
        await asyncio.sleep(0)
    assert [s.message() if s is not None else None for s in seen] == [WAITING, None]
    assert env.ctx.preemption_tasks
    gate.set()
    await env.background()


async def test_clears_lower_priority_nominations_on_the_chosen_node_first():
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
    # As upstream's background work: the nominations go before the victims.
    calls = env.client.calls
    assert calls.index(("nominate", "default/lower", "")) < calls.index(("delete", "default/low"))


async def test_nothing_found_asks_to_clear_own_nomination():
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


@pytest.mark.parametrize("failing_victim", ["first", "last"])
async def test_delete_failure_activates_the_preemptor(failing_victim):
    """The cycle has already ended; a failed deletion is reported in the metrics and the
    preemptor is activated, so that it preempts again soon rather than waiting for an event.
    A failure among the first victims skips the last one."""
    first, last = pod("a", cpu="2", prio=2, node="n1"), pod("b", cpu="2", prio=1, node="n1")
    env = Env([node("n1")], [first, last])
    activated: list[str] = []
    env.ctx.activate = lambda pods: activated.extend(p.key for p in pods)
    original = env.client.delete_pod
    doomed = "default/a" if failing_victim == "first" else "default/b"

    async def delete(victim, disruption_message):
        if victim.key == doomed:
            raise RuntimeError("boom")
        await original(victim, disruption_message)

    env.client.delete_pod = delete
    p = pod("p", cpu="4", prio=10)
    result, status = await env.post_filter(p)
    assert status.is_success() and result.nominated_node_name == "n1"
    assert env.metrics.goroutines == ["error"]
    assert activated == ["default/p"]
    assert env.plugin.pre_enqueue(p) is None
    assert env.client.of("delete") == ([] if failing_victim == "first" else [("default/a",)])


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


async def test_with_the_queue_nominator():
    from kubeberth.queue.nominator import Nominator

    nominations = Nominator()
    lower = pod("lower", cpu="1", prio=5, nominated="n1")
    nominations.add_nominated_pod(lower, "n1")
    env = Env([node("n1")], [pod("low", cpu="4", prio=1, node="n1")])
    env.ctx.nominator = env.nominator = nominations
    p = pod("p", cpu="2", prio=10)
    result, status = await env.post_filter(p)
    assert status.is_success() and result.nominated_node_name == "n1"
    assert nominations.nominations() == {"default/p": "n1"}
    assert env.evaluator.nominated_node_of(p) == "n1"
