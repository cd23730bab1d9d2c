"""Coscheduling on kubeberth's scheduler loop (the in-memory cluster simulate uses)."""

from __future__ import annotations

import pytest
from cosched_testing import bound, node_dict, pod_dict, pod_group, scheduler


def group_of_four(cpu: str = "1") -> list[dict[str, object]]:
    return [pod_dict(f"w{i}", group="job", cpu=cpu) for i in range(4)]


async def test_a_group_that_fits_three_at_a_time_gets_no_pod_bound() -> None:
    sched = scheduler(pod_group("job", 4), *[node_dict(f"n{i}") for i in range(3)])
    for raw in group_of_four():
        sched.on_pod_add(raw)
    await sched.run_until_idle()
    assert bound(sched) == {}
    assert not sched.cache.assumed_pods() and len(sched.ctx.waiting_pods) == 0
    messages = {r.key: r.message for r in sched.outcomes.values()}
    # The member that found no node rejected the group (after DefaultPreemption found no victims);
    # the others, waiting at Permit, were rejected by it.
    last = [k for k, m in messages.items() if "even after PostFilter" in m]
    assert len(last) == 1, messages
    name = last[0].split("/")[1]
    assert messages[last[0]] == (
        "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims "
        f"found for incoming pod., PodGroup default/job gets rejected due to Pod {name} is unschedulable even after "
        "PostFilter")
    assert {m for k, m in messages.items() if k != last[0]} == {
        "0/1 nodes are available: 1 optimistic rejection in PostFilter."}


async def test_the_whole_group_binds_once_a_node_is_added() -> None:
    sched = scheduler(pod_group("job", 4), *[node_dict(f"n{i}") for i in range(3)])
    for raw in group_of_four():
        sched.on_pod_add(raw)
    # One round: three members wait at Permit, the fourth finds no node and rejects them. (Left
    # to run, the group would go round and round, as upstream's does between its backoffs.)
    await sched.run_until_idle(max_cycles=4)
    await sched.wait_for_bindings()
    assert bound(sched) == {} and len(sched.ctx.waiting_pods) == 0
    assert "even after PostFilter" in sched.outcomes["default/w3"].message
    # The member Filter rejected comes back with the node; placed first, it brings the others
    # back from the unschedulable pool (they wait on Coscheduling's own events), and all four bind.
    sched.on_node_add(node_dict("n3"))
    await sched.run_until_idle()
    assert sorted(bound(sched)) == ["w0", "w1", "w2", "w3"]
    assert sorted(bound(sched).values()) == ["n0", "n1", "n2", "n3"]


async def test_a_group_short_of_pods_waits_for_them() -> None:
    sched = scheduler(pod_group("job", 3), *[node_dict(f"n{i}") for i in range(3)])
    for raw in group_of_four()[:2]:
        sched.on_pod_add(raw)
    await sched.run_until_idle()
    assert bound(sched) == {}
    # PostFilter runs after a PreFilter rejection too, as upstream's: DefaultPreemption declines,
    # Coscheduling rejects the group.
    assert sched.outcomes["default/w0"].message == (
        "0/3 nodes are available: pre-filter pod w0 cannot find enough sibling pods, current pods number: 2, "
        "minMember of group: 3. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling., "
        "PodGroup default/job gets rejected due to Pod w0 is unschedulable even after PostFilter")
    sched.on_pod_add(pod_dict("w2", group="job"))  # the third pod: a Pod/Add event for the others too
    await sched.run_until_idle()
    assert sorted(bound(sched)) == ["w0", "w1", "w2"]


async def test_pods_without_group_are_scheduled_as_usual() -> None:
    sched = scheduler(pod_group("job", 4), node_dict("n0"))
    sched.on_pod_add(pod_dict("plain"))
    await sched.run_until_idle()
    assert bound(sched) == {"plain": "n0"}


@pytest.mark.looptime
async def test_a_quorum_that_never_comes_is_released_after_its_timeout() -> None:
    # minMember 3, three pods, but the third is unschedulable for a reason PostFilter does not
    # act on (a gap within podGroupRejectPercentage): the first two wait at Permit until the
    # group's scheduleTimeoutSeconds, and are then released with upstream's timeout message.
    sched = scheduler(pod_group("job", 3, timeout=10), node_dict("n0"), node_dict("n1"),
                      args={"podGroupRejectPercentage": 50})
    for raw in group_of_four()[:2]:
        sched.on_pod_add(raw)
    sched.on_pod_add(pod_dict("w2", group="job", cpu="2"))  # fits no node
    await sched.run_until_idle(max_attempts=1)
    assert bound(sched) == {}
    messages = sorted(sched.outcomes[f"default/w{i}"].message for i in (0, 1))
    timeout = "rejected due to timeout after waiting 10s at plugin Coscheduling"
    released = "rejection in Unreserve"
    # One of the two timed out; the other was released by the first one's Unreserve (or timed out too).
    assert any(timeout in m for m in messages), messages
    assert all(timeout in m or released in m for m in messages), messages
