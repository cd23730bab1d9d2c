"""Coscheduling at each extension point, as tables (scheduler-plugins' reasons word for word)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from cosched_testing import T0, Setup, pod, pod_group
from kubeberth_coscheduling import CoschedulingArgs
from pydantic import ValidationError

from kubeberth.framework import Code, CycleState, NodeInfo, NodeToStatus, QueuedPodInfo, WaitingPod
from kubeberth.model import Node

PG = pod_group("pg", 3)


def queued(p: Any, first_attempt: float) -> QueuedPodInfo:
    q = QueuedPodInfo(p, first_attempt)
    q.initial_attempt_timestamp = first_attempt
    return q


# ---- QueueSort ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("a", "b", "less"), [
    pytest.param(dict(name="hi", group="late", priority=10), dict(name="lo", group="early", priority=1), True,
                 id="higher-priority-first"),
    pytest.param(dict(name="z", group="early"), dict(name="a", group="late"), True,
                 id="same-priority-earlier-group-first"),
    pytest.param(dict(name="a", group="late"), dict(name="z", group="early"), False,
                 id="same-priority-later-group-second"),
    pytest.param(dict(name="a", group="early"), dict(name="b", group="early"), True, id="same-group-by-name"),
    pytest.param(dict(name="b", group="early"), dict(name="a", group="early"), False, id="same-group-by-name-2"),
    # T0 (the first attempts) is in November 2023, before both groups were created.
    pytest.param(dict(name="lone"), dict(name="a", group="early"), True,
                 id="groupless-pod-by-its-first-attempt"),
    pytest.param(dict(name="a", group="missing"), dict(name="b", group="early"), True,
                 id="group-not-found-uses-the-first-attempt"),
    pytest.param(dict(name="a", group="late"), dict(name="z"), False, id="group-created-after-the-first-attempt"),
])
def test_queue_sort(a: dict[str, Any], b: dict[str, Any], less: bool) -> None:
    s = Setup(pod_group("early", 2, created="2024-01-01T00:00:00Z"),
              pod_group("late", 2, created="2024-01-02T00:00:00Z"))
    assert s.plugin.less(queued(pod(**a), T0), queued(pod(**b), T0)) is less


def test_queue_sort_puts_a_group_that_failed_lately_behind_younger_groups() -> None:
    s = Setup(pod_group("early", 2, created="2024-01-01T00:00:00Z"),
              pod_group("late", 2, created="2024-01-02T00:00:00Z"))
    e, late = queued(pod("e", group="early"), T0), queued(pod("l", group="late"), T0)
    assert s.plugin.less(e, late)
    s.clock.set(T0 + 365 * 86400)  # a year on: after "late" was created
    s.plugin.unreserve(CycleState(), e.pod, "n1")  # the group fails now
    assert not s.plugin.less(e, late) and s.plugin.less(late, e)


# ---- PreFilter ---------------------------------------------------------------------------------
U = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
GATED = "pre-filter pod p1 cannot proceed due to gated pods in the same PodGroup"


@pytest.mark.parametrize(("pods", "group", "expected"), [
    pytest.param(["p1"], None, None, id="no-label"),
    pytest.param(["p1"], "nobody", None, id="label-without-podgroup"),
    pytest.param(["p1", "p2"], "pg", (U, "pre-filter pod p1 cannot find enough sibling pods, current pods number: 2, "
                                         "minMember of group: 3"), id="fewer-pods-than-minMember"),
    pytest.param(["p1", "p2", "p3"], "pg", None, id="quorum-of-pods"),
    pytest.param(["p1", "p2", "gated:p3"], "pg", (U, GATED), id="gated-pod-in-quorum"),
    pytest.param(["p1", "p2", "p3", "gated:p4"], "pg", None, id="gated-pod-beyond-quorum"),
    pytest.param(["p1", "p2", "gated:p3", "gated:p4"], "pg", (U, GATED), id="two-gated-one-spare"),
])
def test_pre_filter_counts_the_group(pods: list[str], group: str | None, expected: tuple[Code, str] | None) -> None:
    members = [pod(n.split(":")[-1], group=group, gated=n.startswith("gated:")) for n in pods]
    s = Setup(PG, pods=members)
    result, status = s.plugin.pre_filter(CycleState(), members[0], [])
    assert result is None
    assert (None if status is None else (status.code, status.message())) == expected


def nodes_of(*specs: tuple[str, str, list[Any]]) -> list[NodeInfo]:
    from cosched_testing import node_dict

    return [NodeInfo(Node(node_dict(name, cpu=cpu)), on) for name, cpu, on in specs]


@pytest.mark.parametrize(("min_resources", "others", "expected"), [
    pytest.param({"cpu": "2"}, [], None, id="fits-across-nodes"),
    pytest.param({"cpu": "3"}, [], "resource gap: map[cpu:{{1000 -3} {<nil>}  DecimalSI}]", id="cpu-gap"),
    pytest.param({"cpu": "2"}, ["busy"], "resource gap: map[cpu:{{500 -3} {<nil>}  DecimalSI}]",
                 id="other-pods-take-room"),
    pytest.param({"cpu": "2", "memory": "20Gi"}, [],
                 "resource gap: map[memory:{{4294967296 0} {<nil>}  BinarySI}]", id="memory-gap"),
    pytest.param({"cpu": "1", "example.com/gpu": 1}, [],
                 "resource gap: map[example.com/gpu:{{1 0} {<nil>}  DecimalSI}]", id="resource-no-node-has"),
])
def test_pre_filter_checks_min_resources(min_resources: dict[str, Any], others: list[str],
                                         expected: str | None) -> None:
    group = pod_group("pg", 2, min_resources=min_resources)
    members = [pod("p1", group="pg"), pod("p2", group="pg", node="n1", cpu="1")]
    busy = [pod(n, node="n2", cpu="500m") for n in others]
    s = Setup(group, pods=members + busy)
    # n1 holds p2 of the group itself: its room counts for the group.
    nodes = nodes_of(("n1", "1", [members[1]]), ("n2", "1", busy))
    for ni in nodes:
        ni.node.allocatable.memory = 8 * 2**30  # type: ignore[union-attr]
    _, status = s.plugin.pre_filter(CycleState(), members[0], nodes)
    assert (None if status is None else (status.code, status.message())) == (
        None if expected is None else (U, expected))


def test_pre_filter_remembers_a_fitting_group_for_the_wait_time() -> None:
    s = Setup(pod_group("pg", 1, min_resources={"cpu": "1"}), args={"permitWaitingTimeSeconds": 10})
    p = pod("p1", group="pg")
    s.pods.append(p)
    assert s.plugin.pre_filter(CycleState(), p, nodes_of(("n1", "1", [])))[1] is None
    assert s.plugin.pre_filter(CycleState(), p, [])[1] is None  # no node now, but it fitted 0s ago
    s.clock.advance(10)
    _, status = s.plugin.pre_filter(CycleState(), p, [])
    assert status is not None and status.message().startswith("resource gap: map[cpu:{{1 0}")


def test_pre_filter_names_a_podgroup_it_cannot_read() -> None:
    bad = pod_group("pg", 2)
    bad["spec"]["minMember"] = "two"
    p = pod("p1", group="pg")
    s = Setup(bad, pods=[p])
    _, status = s.plugin.pre_filter(CycleState(), p, [])
    assert status is not None and status.code == Code.ERROR
    assert status.message() == "PodGroup default/pg: spec.minMember must be an integer, got 'two'"


# ---- Permit ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("group_spec", "args", "wait"), [
    pytest.param({"timeout": 7}, {}, 7.0, id="group-timeout"),
    pytest.param({}, {"permitWaitingTimeSeconds": 20}, 20.0, id="args-timeout"),
    pytest.param({}, {"permitWaitingTimeSeconds": 0}, 60.0, id="default-60s"),
])
def test_permit_waits_below_quorum(group_spec: dict[str, Any], args: dict[str, Any], wait: float) -> None:
    first = pod("p1", group="pg", node="n1")
    s = Setup(pod_group("pg", 3, **group_spec), pods=[first, pod("p2", group="pg"), pod("p3", group="pg")],
              args=args)
    status, timeout = s.plugin.permit(CycleState(), first, "n1")
    assert status is not None and status.code == Code.WAIT and timeout == wait
    assert s.activated == ["p2", "p3"]  # the first one placed brings its siblings back to activeQ


def test_permit_activates_siblings_only_for_the_first_member() -> None:
    members = [pod("p1", group="pg", node="n1"), pod("p2", group="pg", node="n1"), pod("p3", group="pg")]
    s = Setup(PG, pods=members)
    status, _ = s.plugin.permit(CycleState(), members[1], "n1")
    assert status is not None and status.is_wait() and s.activated == []


@pytest.mark.parametrize(("p", "groups", "expected"), [
    pytest.param(dict(name="lone", node="n1"), [], None, id="no-label"),
    pytest.param(dict(name="p", group="nobody", node="n1"), [], (Code.UNSCHEDULABLE, "PodGroup not found"),
                 id="podgroup-not-found"),
    pytest.param(dict(name="p", group="one", node="n1"), [pod_group("one", 1)], None, id="group-of-one"),
])
def test_permit_answers(p: dict[str, Any], groups: list[dict[str, Any]], expected: tuple[Code, str] | None) -> None:
    target = pod(**p)
    s = Setup(*groups, pods=[target])
    status, timeout = s.plugin.permit(CycleState(), target, "n1")
    assert (None if status is None else (status.code, status.message())) == expected and timeout == 0


async def test_permit_allows_the_whole_group_at_quorum() -> None:
    members = [pod(f"p{i}", group="pg", node="n1") for i in (1, 2, 3)]
    other = pod("q", group="other", node="n1")
    s = Setup(PG, pod_group("other", 2), pods=[*members, other])
    waiting = [WaitingPod(p, {"Coscheduling": 30}) for p in (*members[:2], other)]
    for wp in waiting:
        s.ctx.waiting_pods.add(wp)
    status, timeout = s.plugin.permit(CycleState(), members[2], "n1")
    assert status is None and timeout == 0
    assert [await asyncio.wait_for(wp.wait(), 1) for wp in waiting[:2]] == [None, None]
    assert waiting[2].pending_plugins == ["Coscheduling"]  # another group's pod still waits


# ---- PostFilter --------------------------------------------------------------------------------
async def test_post_filter_rejects_the_waiting_group() -> None:
    placed = [pod(f"p{i}", group="pg", node="n1") for i in (1, 2)]
    failing = pod("p3", group="pg")
    s = Setup(PG, pods=[*placed, failing], args={"podGroupBackoffSeconds": 5})
    waiting = [WaitingPod(p, {"Coscheduling": 30}) for p in placed]
    for wp in waiting:
        s.ctx.waiting_pods.add(wp)
    result, status = await s.plugin.post_filter(CycleState(), failing, NodeToStatus())
    assert result is not None and result.nominated_node_name == ""
    assert status is not None and (status.code, status.message()) == (
        Code.UNSCHEDULABLE, "PodGroup default/pg gets rejected due to Pod p3 is unschedulable even after PostFilter")
    got = [await asyncio.wait_for(wp.wait(), 1) for wp in waiting]
    assert [(g.code, g.message(), g.plugin) for g in got if g is not None] == [
        (Code.UNSCHEDULABLE, "optimistic rejection in PostFilter", "Coscheduling")] * 2
    # The group now backs off: PreFilter turns its pods away until podGroupBackoffSeconds pass.
    _, pre = s.plugin.pre_filter(CycleState(), failing, [])
    assert pre is not None and pre.message() == "podGroup default/pg failed recently"
    s.clock.advance(5)
    assert s.plugin.pre_filter(CycleState(), failing, [])[1] is None


REJECTED_LAST = "PodGroup default/pg gets rejected due to Pod last is unschedulable even after PostFilter"


@pytest.mark.parametrize(("min_member", "placed", "percentage", "message"), [
    pytest.param(3, 3, 10, "", id="quorum-already-placed"),
    pytest.param(10, 9, 10, "", id="gap-within-reject-percentage"),
    pytest.param(10, 8, 10, REJECTED_LAST, id="gap-beyond-reject-percentage"),
    pytest.param(10, 9, 0, REJECTED_LAST, id="percentage-0-always-rejects"),
])
async def test_post_filter_spares_a_group_near_its_quorum(min_member: int, placed: int, percentage: int,
                                                          message: str) -> None:
    members = [pod(f"p{i}", group="pg", node="n1") for i in range(placed)]
    last = pod("last", group="pg")
    s = Setup(pod_group("pg", min_member), pods=[*members, last], args={"podGroupRejectPercentage": percentage})
    wp = WaitingPod(members[0], {"Coscheduling": 30})
    s.ctx.waiting_pods.add(wp)
    _, status = await s.plugin.post_filter(CycleState(), last, NodeToStatus())
    assert status is not None and (status.code, status.message()) == (Code.UNSCHEDULABLE, message)
    assert wp.pending_plugins == ([] if message else ["Coscheduling"])


async def test_post_filter_without_podgroup() -> None:
    p = pod("p", group="nobody")
    s = Setup(pods=[p])
    _, status = await s.plugin.post_filter(CycleState(), p, NodeToStatus())
    assert status is not None and (status.code, status.message()) == (Code.UNSCHEDULABLE, "can not find pod group")


# ---- Unreserve ---------------------------------------------------------------------------------
async def test_unreserve_releases_the_group() -> None:
    members = [pod(f"p{i}", group="pg", node="n1") for i in (1, 2, 3)]
    stranger = pod("x", group="pg", namespace="elsewhere", node="n1")
    s = Setup(PG, pods=[*members, stranger])
    waiting = [WaitingPod(p, {"Coscheduling": 30}) for p in (members[1], members[2], stranger)]
    for wp in waiting:
        s.ctx.waiting_pods.add(wp)
    s.plugin.unreserve(CycleState(), members[0], "n1")
    got = [await asyncio.wait_for(wp.wait(), 1) for wp in waiting[:2]]
    assert [(g.code, g.message()) for g in got if g is not None] == [(Code.UNSCHEDULABLE, "rejection in Unreserve")] * 2
    assert waiting[2].pending_plugins == ["Coscheduling"]  # same group name, another namespace
    assert s.plugin.last_failed == {"default/pg": T0}


def test_unreserve_of_a_pod_without_group_does_nothing() -> None:
    s = Setup(PG)
    s.plugin.unreserve(CycleState(), pod("lone", node="n1"), "n1")
    assert s.plugin.last_failed == {}


# ---- args --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("args", "field", "message"), [
    ({"permitWaitingTimeSeconds": -1}, "permitWaitingTimeSeconds", "must be greater than 0"),
    ({"podGroupBackoffSeconds": -3}, "podGroupBackoffSeconds", "must be greater than 0"),
    ({"podGroupRejectPercentage": 101}, "podGroupRejectPercentage", "must be between 0 and 100"),
    ({"permitWaitingTime": 3}, "permitWaitingTime", "Extra inputs are not permitted"),
])
def test_args_are_checked(args: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(ValidationError) as err:
        CoschedulingArgs(**args)
    (e,) = err.value.errors()
    assert e["loc"] == (field,) and message in e["msg"]


def test_args_defaults_are_upstreams() -> None:
    assert CoschedulingArgs().model_dump() == {
        "permitWaitingTimeSeconds": 60, "podGroupBackoffSeconds": 0, "podGroupRejectPercentage": 10}


def test_queue_sort_orders_a_broken_podgroup_by_first_attempt_and_warns_once(
        caplog: pytest.LogCaptureFixture) -> None:
    bad = pod_group("bad", 2)
    bad["metadata"]["creationTimestamp"] = "yesterday"
    s = Setup(bad, pod_group("early", 2, created="2024-01-01T00:00:00Z"))
    a, b = queued(pod("a", group="bad"), T0), queued(pod("b", group="early"), T0)
    assert s.plugin.less(a, b) and s.plugin.less(a, b)  # T0 (Nov 2023) is before the good group
    assert caplog.text.count("PodGroup default/bad: metadata.creationTimestamp 'yesterday'") == 1


async def test_what_is_kept_for_a_podgroup_goes_once_it_is_deleted() -> None:
    """A scheduler runs for months: the manager's tables (parsed groups, the fitting ones, those
    backing off or failed lately) kept an entry for every PodGroup ever seen."""
    from kubeberth_coscheduling.podgroup import PODGROUP

    sweep_seconds = 60.0  # the plugin's SWEEP_SECONDS
    failing = pod("p3", group="pg")
    s = Setup(PG, pods=[failing], args={"podGroupBackoffSeconds": 5})
    s.pods += [pod(f"p{i}", group="pg") for i in (1, 2)]
    await s.plugin.post_filter(CycleState(), failing, NodeToStatus())
    p = s.plugin
    tables = (p.permitted, p.backed_off, p.last_failed, p._parsed, p._unreadable)
    assert sum(len(t) for t in tables) >= 3  # parsed, backed off, failed lately
    s.ctx.objects.delete(PODGROUP.group_kind, "default/pg")
    s.pods.clear()
    s.clock.advance(sweep_seconds - 1)
    other = pod("lone")
    s.plugin.pre_filter(CycleState(), other, [])
    assert sum(len(t) for t in tables) >= 3  # not yet: once a minute
    s.clock.advance(1)
    assert s.plugin.pre_filter(CycleState(), other, [])[1] is None
    assert [len(t) for t in tables] == [0] * len(tables)
