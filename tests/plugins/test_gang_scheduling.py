"""GangScheduling (upstream's gangscheduling plugin): PreEnqueue, Permit, PlacementFeasible and
its queueing hints, in tables, with upstream's messages word for word."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubeberth.cache.pod_groups import POD_GROUP_STATES, PodGroupStates
from kubeberth.framework import CycleState
from kubeberth.framework.events import QueueingHint
from kubeberth.framework.status import Code
from kubeberth.framework.waiting_pods import WaitingPod
from kubeberth.model import Pod, PodGroup
from kubeberth.plugins.gang_scheduling import PERMIT_TIMEOUT_SECONDS, GangScheduling
from tests.builders import make_pod
from tests.doubles import handle


def member(name: str, group: str = "g", node: str = "") -> Pod:
    p = make_pod(name, node=node)
    return Pod({**p.raw, "spec": {**p.spec, "schedulingGroup": {"podGroupName": group}}})


def group_raw(min_count: int | None, name: str = "g") -> dict[str, Any]:
    policy = {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}}
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"schedulingPolicy": policy}}


def plugin(min_count: int | None, pods: list[Pod], assumed: set[str] = frozenset()  # type: ignore[assignment]
           ) -> tuple[GangScheduling, Any, list[Pod]]:
    h = handle()
    states = PodGroupStates(lambda uid: uid in assumed)
    if min_count != -1:
        states.set_pod_group(PodGroup(group_raw(min_count)))
    for p in pods:
        states.add_or_update_pod(p)
    h.ctx.shared_indexes[POD_GROUP_STATES] = states
    activated: list[Pod] = []
    h.ctx.activate = lambda got: activated.extend(got)
    return GangScheduling(None, h), h, activated


WAIT_GROUP = 'waiting for pods\'s pod group "g" to appear in scheduling queue'
WAIT_MIN = "waiting for minCount pods from a gang to appear in scheduling queue"


@pytest.mark.parametrize(("min_count", "others", "message"), [
    pytest.param(-1, 0, WAIT_GROUP, id="no-pod-group"),
    pytest.param(3, 1, WAIT_MIN, id="short-of-pods"),
    pytest.param(3, 2, None, id="min-count-pods"),
    pytest.param(None, 0, None, id="basic-policy"),
])
def test_pre_enqueue(min_count: int | None, others: int, message: str | None) -> None:
    me = member("me")
    pl, _, _ = plugin(min_count, [me, *(member(f"o{i}") for i in range(others))])
    got = pl.pre_enqueue(me)
    if message is None:
        assert got is None
    else:
        assert got is not None and got.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and got.message() == message


def test_pre_enqueue_ignores_pods_of_no_group() -> None:
    pl, _, _ = plugin(-1, [])
    assert pl.pre_enqueue(make_pod("alone")) is None


@pytest.mark.parametrize(("scheduled", "remaining", "code", "message"), [
    pytest.param(1, 1, Code.UNSCHEDULABLE, "minCount (3) cannot be satisfied: 1 scheduled, 1 remaining", id="out"),
    pytest.param(1, 2, Code.WAIT, "minCount (3) is not yet satisfied: 1 scheduled, 2 remaining", id="not-yet"),
    pytest.param(3, 0, None, "", id="reached"),
])
def test_placement_feasible(scheduled: int, remaining: int, code: Code | None, message: str) -> None:
    got = GangScheduling.placement_feasible(PodGroup(group_raw(3)), scheduled, remaining)
    assert (got.code, got.message()) == (code, message) if code is not None else got is None


async def test_permit_waits_for_the_quorum_then_allows_every_waiting_pod() -> None:
    a, b, c = member("a"), member("b"), member("c")
    assumed = {a.uid}
    pl, h, activated = plugin(2, [a, b, c], assumed)
    status, timeout = pl.permit(CycleState(), a, "n1")
    assert status is not None and status.code == Code.WAIT
    assert status.message() == "waiting for minCount pods from a gang to be scheduled"
    assert timeout == PERMIT_TIMEOUT_SECONDS == 300
    assert sorted(p.name for p in activated) == ["b", "c"]  # the rest of the gang is activated
    waiting = WaitingPod(a, {"GangScheduling": timeout}, asyncio.get_running_loop())
    h.ctx.waiting_pods.add(waiting)
    assumed.add(b.uid)
    assert pl.permit(CycleState(), b, "n2") == (None, 0.0)
    assert await asyncio.wait_for(waiting.wait(), 1) is None  # a was allowed


def test_permit_counts_bound_pods() -> None:
    a, bound = member("a"), member("b", node="n1")
    pl, _, _ = plugin(2, [a, bound], {a.uid})
    assert pl.permit(CycleState(), a, "n1") == (None, 0.0)


def test_the_permit_timeout_message_is_upstreams() -> None:
    from kubeberth.framework.waiting_pods import _fmt

    assert f"rejected due to timeout after waiting {_fmt(PERMIT_TIMEOUT_SECONDS)} at plugin GangScheduling" == \
        "rejected due to timeout after waiting 5m0s at plugin GangScheduling"


@pytest.mark.parametrize(("hint", "old", "new", "expected"), [
    pytest.param("pod", None, "same", QueueingHint.QUEUE, id="pod-of-the-group"),
    pytest.param("pod", None, "other", QueueingHint.QUEUE_SKIP, id="pod-of-another-group"),
    pytest.param("group-add", None, group_raw(3), QueueingHint.QUEUE, id="its-group-added"),
    pytest.param("group-add", None, group_raw(3, "other"), QueueingHint.QUEUE_SKIP, id="another-group-added"),
    pytest.param("group-update", group_raw(3), group_raw(2), QueueingHint.QUEUE, id="min-count-lowered"),
    pytest.param("group-update", group_raw(2), group_raw(3), QueueingHint.QUEUE_SKIP, id="min-count-raised"),
    pytest.param("group-update", group_raw(None), group_raw(2), QueueingHint.QUEUE_SKIP, id="basic-to-gang"),
])
def test_queueing_hints(hint: str, old: Any, new: Any, expected: QueueingHint) -> None:
    pl, _, _ = plugin(3, [])
    registered = pl.events_to_register()
    fn = {"pod": registered[0].hint, "group-add": registered[2].hint, "group-update": registered[3].hint}[hint]
    if hint == "pod":
        new = member("x", "g" if new == "same" else "other")
    assert fn is not None and fn(member("me"), old, new) == expected
