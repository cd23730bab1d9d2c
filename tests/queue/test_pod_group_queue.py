"""The queue with GenericWorkload: a PodGroup's pods queued and popped as one entry (upstream's
QueuedPodGroupInfo), pods waiting for their PodGroup (incomplete), pods arriving while their
group is being scheduled (pending), and the group requeued whole after its attempt."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth import features
from kubeberth.features import FeatureGates
from kubeberth.framework.types import QueuedPodGroupInfo
from kubeberth.model import Pod
from kubeberth.queue import ACTIVE, BACKOFF, GATED, PriorityQueue
from kubeberth.queue.scheduling_queue import INCOMPLETE, PENDING
from tests.queue.fakes import new_queue, pod

GATES = FeatureGates.parse("GenericWorkload=true")


def member(name: str, group: str, **kw: Any) -> Pod:
    p = pod(name, **kw)
    raw = {**p.raw, "spec": {**p.spec, "schedulingGroup": {"podGroupName": group}}}
    return Pod(raw)


def gang_queue() -> PriorityQueue:
    with features.override(GATES):
        q, _ = new_queue()
    return q


def pop_group(q: PriorityQueue) -> QueuedPodGroupInfo:
    got = q.pop_nowait()
    assert isinstance(got, QueuedPodGroupInfo), got
    return got


def test_pods_wait_for_their_pod_group_then_queue_as_one_entry() -> None:
    q = gang_queue()
    a, b = member("a", "g"), member("b", "g")
    q.add(a)
    q.add(b)
    assert [p.name for p in q.pending_pods()[INCOMPLETE]] == ["a", "b"]
    assert q.pop_nowait() is None
    q.add_pod_group("default/g", 0)
    assert q.pending_pods()[INCOMPLETE] == [] and [p.name for p in q.pending_pods()[ACTIVE]] == ["a", "b"]
    entry = pop_group(q)
    assert [m.pod.name for m in entry.members] == ["a", "b"]
    assert all(m.attempts == 1 for m in entry.members) and q.in_flight(a.uid)
    assert q.pop_nowait() is None


def test_members_join_the_queued_entry_and_keep_upstreams_order() -> None:
    q = gang_queue()
    q.add_pod_group("default/g", 0)
    for p in (member("b", "g"), member("a", "g"), member("hi", "g", prio=10)):
        q.add(p)
    entry = pop_group(q)
    # priority first, then attempts, queue time, name (PodGroupMemberPodsOrderingFunc); same time here
    assert [m.pod.name for m in entry.members] == ["hi", "a", "b"]


def test_a_pod_arriving_during_the_groups_attempt_waits_and_comes_back_with_it() -> None:
    q = gang_queue()
    q.add_pod_group("default/g", 0)
    a = member("a", "g")
    q.add(a)
    entry = pop_group(q)
    late = member("late", "g")
    q.add(late)
    assert [p.name for p in q.pending_pods()[PENDING]] == ["late"]
    # the attempt failed a: it comes back pending too, then the group is requeued whole (backoff)
    a_info = entry.members[0]
    assert q.add_unschedulable_if_not_present(a_info) == PENDING
    assert q.add_attempted_pod_group(entry, "unschedulable") == BACKOFF
    assert [p.name for p in q.pods_in_backoff()] == ["a", "late"]
    # not popped early from backoffQ (upstream names no rejecting plugin for a group)
    assert q.pop_nowait() is None


def test_after_a_success_the_rest_go_straight_to_active() -> None:
    q = gang_queue()
    q.add_pod_group("default/g", 0)
    q.add(member("a", "g"))
    entry = pop_group(q)
    q.add(member("late", "g"))
    assert q.add_attempted_pod_group(entry, "scheduled") == ACTIVE
    assert [m.pod.name for m in pop_group(q).members] == ["late"]


def test_nothing_to_requeue_after_an_attempt_that_placed_every_pod() -> None:
    q = gang_queue()
    q.add_pod_group("default/g", 0)
    q.add(member("a", "g"))
    entry = pop_group(q)
    assert q.add_attempted_pod_group(entry, "scheduled") == ""
    assert len(q) == 0 and not q.in_flight(entry.members[0].pod.uid)


def test_a_gated_member_gates_the_whole_group() -> None:
    q = gang_queue()
    q.add_pod_group("default/g", 0)
    q.add(member("a", "g"))
    q.add(member("b", "g", schedulingGates=[{"name": "wait"}]))
    assert [p.name for p in q.pending_pods()[GATED]] == ["a", "b"]
    assert q.pop_nowait() is None


def test_deleting_the_pod_group_makes_its_pods_incomplete_again() -> None:
    q = gang_queue()
    q.add_pod_group("default/g", 0)
    a = member("a", "g")
    q.add(a)
    q.delete_pod_group("default/g")
    assert [p.name for p in q.pending_pods()[INCOMPLETE]] == ["a"]
    q.delete(a)
    assert len(q) == 0


def test_deleting_the_last_member_drops_the_entry() -> None:
    q = gang_queue()
    q.add_pod_group("default/g", 0)
    a = member("a", "g")
    q.add(a)
    q.delete(a)
    assert q.pop_nowait() is None and len(q) == 0


def test_activating_a_member_activates_its_group() -> None:
    q = gang_queue()
    q.add_pod_group("default/g", 0)
    a = member("a", "g", schedulingGates=[{"name": "wait"}])
    q.add(a)
    assert q.get(a.uid)[0] == GATED  # type: ignore[index]
    ungated = Pod({**a.raw, "spec": {k: v for k, v in a.spec.items() if k != "schedulingGates"}})
    q.update(a, ungated)
    assert q.get(a.uid)[0] == ACTIVE  # type: ignore[index]


@pytest.mark.parametrize("gates", [FeatureGates(), GATES], ids=["gate-off", "gate-on-no-group"])
def test_other_pods_stay_individual(gates: FeatureGates) -> None:
    with features.override(gates):
        q, _ = new_queue()
    p = member("a", "g") if not gates.generic_workload else pod("a")
    q.add(p)
    got = q.pop_nowait()
    assert got is not None and not isinstance(got, QueuedPodGroupInfo) and got.pod.name == "a"


def test_entity_counts_count_a_group_once() -> None:
    q = gang_queue()
    q.add_pod_group("default/g", 0)
    for name in ("a", "b", "c"):
        q.add(member(name, "g"))
    q.add(pod("alone"))
    counts = q.entity_counts()
    assert counts["active", "podgroup"] == 1 and counts["active", "pod"] == 1
    assert len(q.pending_pods()[ACTIVE]) == 4


def test_an_update_of_a_pod_whose_group_is_being_scheduled_does_not_queue_it_again() -> None:
    q = gang_queue()
    q.add_pod_group("default/g", 0)
    a = member("a", "g")
    q.add(a)
    entry = pop_group(q)
    q.update(a, Pod({**a.raw, "metadata": {**a.raw["metadata"], "labels": {"x": "y"}}}))
    assert q.get(a.uid) is None and q.in_flight(a.uid)
    assert q.add_attempted_pod_group(entry, "scheduled") == ""
