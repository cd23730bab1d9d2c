"""Nominated pods across cycles: the room made by preemption stays with the preemptor."""

from __future__ import annotations

from kubeberth.cache.snapshot import Snapshot
from kubeberth.framework import Code
from kubeberth.model import Pod
from tests.preemption.fakes import Env, node, pod


def _drop(env: Env, victim: Pod) -> None:
    """What the cache does once a victim is gone."""
    ni = env.ctx.snapshot.get(victim.node_name)
    ni.remove_pod(victim)
    env.ctx.snapshot.refresh()


async def test_room_is_held_for_the_nominated_preemptor():
    low = pod("low", cpu="4", prio=1, node="n1")
    env = Env([node("n1")], [low])
    p = pod("p", cpu="3", prio=10)
    result, status = await env.post_filter(p)
    assert status.is_success() and result.nominated_node_name == "n1"
    _drop(env, low)
    # next cycle: a lower-priority pod that would fit the empty node must not take the room
    other = pod("other", cpu="2", prio=5)
    state = env.state_for(other)
    s = env.fw.run_filter_with_nominated_pods(state, other, env.ctx.snapshot.get("n1"))
    assert s is not None and s.reasons == ["Insufficient cpu"]
    # and it cannot preempt the nominated preemptor (nominated pods are not victims)
    _, status = await env.post_filter(other)
    assert status.code == Code.UNSCHEDULABLE
    assert status.reasons == ["preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."]
    # the preemptor itself fits
    state = env.state_for(p)
    assert env.fw.run_filter_with_nominated_pods(state, p, env.ctx.snapshot.get("n1")) is None


async def test_does_not_preempt_again_while_victims_terminate():
    low = pod("low", cpu="4", prio=1, node="n1")
    env = Env([node("n1"), node("n2")], [low, pod("low2", cpu="4", prio=1, node="n2")])
    p = pod("p", cpu="3", prio=10)
    result, status = await env.post_filter(p)
    assert status.is_success()
    first = result.nominated_node_name
    deleted = [c[0] for c in env.client.of("delete")]
    assert len(deleted) == 1
    # the victim is terminating (deletionTimestamp and DisruptionTarget set) but still on its node
    name = deleted[0].split("/")[1]
    nodes = [node("n1"), node("n2")]
    pods = [pod(n, cpu="4", prio=1, node=f"n{i}", preempted=(n == name)) for i, n in ((1, "low"), (2, "low2"))]
    env.ctx.snapshot = Snapshot.from_objects(nodes, pods)
    env.client.calls.clear()
    result, status = await env.post_filter(p)
    assert result is None
    assert status.reasons == ["preemption: not eligible due to a terminating pod on the nominated node."]
    assert env.client.calls == []
    assert env.nominator.nominated_node_for(p) == first


async def test_pod_terminating_for_another_reason_does_not_block_preemption():
    """Only victims of a preemption (DisruptionTarget/PreemptionByScheduler) make the nominated
    pod wait, as upstream's podTerminatingByPreemption; a pod deleted for another reason does not."""
    env = Env([node("n1")], [pod("low", cpu="4", prio=1, node="n1", deleting=True)])
    p = pod("p", cpu="3", prio=10, nominated="n1")
    result, status = await env.post_filter(p)
    assert status.is_success() and result.nominated_node_name == "n1"


async def test_lower_priority_preemptor_accounts_for_nominated_pod():
    """A mid-priority pod dry-running on a node where a higher-priority pod is nominated must
    leave that pod's room: here it cannot fit at all."""
    high = pod("high", cpu="3", prio=100)
    env = Env([node("n1")], [pod("low", cpu="2", prio=1, node="n1")], nominated=[(high, "n1")])
    mid = pod("mid", cpu="2", prio=50)
    _, status = await env.post_filter(mid)
    assert status.code == Code.UNSCHEDULABLE
    assert status.reasons == ["preemption: 0/1 nodes are available: 1 Insufficient cpu."]
    assert env.client.of("delete") == []
    assert env.nominator.nominated_node_for(high) == "n1"


async def test_higher_priority_preemptor_ignores_lower_nominated_pods_and_clears_them():
    mid = pod("mid", cpu="3", prio=50, nominated="n1")
    env = Env([node("n1")], [pod("low", cpu="2", prio=1, node="n1"), pod("l2", cpu="2", prio=1, node="n1")],
              nominated=[(mid, "n1")])
    high = pod("high", cpu="3", prio=100)
    result, status = await env.post_filter(high)
    assert status.is_success() and result.nominated_node_name == "n1"
    assert sorted(c[0] for c in env.client.of("delete")) == ["default/l2", "default/low"]
    assert ("nominate", "default/mid", "") in env.client.calls
    assert env.nominator.nominated_node_for(mid) == ""
    assert env.nominator.nominated_node_for(high) == "n1"


async def test_preempts_again_elsewhere_when_nominated_node_became_unresolvable():
    p = pod("p", cpu="3", prio=10, nominated="n1")
    env = Env([node("n1", labels={"fake/off": "true"}), node("n2")],
              [pod("going", cpu="4", prio=1, node="n1", deleting=True), pod("low", cpu="4", prio=1, node="n2")],
              nominated=[(p, "n1")])
    result, status = await env.post_filter(p)
    assert status.is_success() and result.nominated_node_name == "n2"
    assert env.nominator.nominated_node_for(p) == "n2"
