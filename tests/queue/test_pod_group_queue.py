"""The queue with GenericWorkload: a PodGroup's pods queued and popped as one entry (upstream's
QueuedPodGroupInfo), pods waiting for their PodGroup (incomplete), pods arriving while their
group is being scheduled (pending), and the group requeued whole after its attempt."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth import features
from kubeberth.features import FeatureGates
from kubeberth.framework import events as ev
from kubeberth.framework.types import QueuedPodGroupInfo, QueuedPodInfo
from kubeberth.model import Pod
from kubeberth.queue import ACTIVE, BACKOFF, GATED, PriorityQueue
from kubeberth.queue.active_queue import InFlight
from kubeberth.queue.subqueues import INCOMPLETE, PENDING
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


def test_a_group_gated_while_its_preemption_runs_is_requeued_by_a_victims_deletion() -> None:
    """upstream's runPreEnqueuePlugins names the gating plugin a rejector of the pods, not of the
    group's entry: once DefaultPreemption lets the group through, the victim's deletion (the event
    DefaultPreemption registers, its hint skipping) requeues the entry, which has no rejector."""
    from kubeberth.framework.events import EVENT_ASSIGNED_POD_DELETE, ClusterEventWithHint, QueueingHint
    from kubeberth.framework.status import Status
    from kubeberth.queue.profile import QueueProfile
    from tests.queue.fakes import PLUGINS, EventsPlugin, priority_then_age

    preempting = {"on": False}

    def gate(p: Pod) -> Status | None:
        if preempting["on"]:
            return Status.unresolvable("waiting for the preemption for this pod group to be finished",
                                       plugin="DefaultPreemption")
        return None

    preemption = EventsPlugin("DefaultPreemption", [
        ClusterEventWithHint(EVENT_ASSIGNED_POD_DELETE, lambda *_: QueueingHint.QUEUE_SKIP)])
    prof = QueueProfile("default-scheduler", priority_then_age, queue_sort_name="PrioritySort", pre_enqueue=gate,
                        initial_backoff=1, max_backoff=10, plugins={**PLUGINS, "DefaultPreemption": preemption})
    with features.override(GATES):
        q, _ = new_queue(prof)
    q.add_pod_group("default/g", 0)
    a, b = member("a", "g"), member("b", "g")
    q.add(a)
    q.add(b)
    entry = pop_group(q)
    preempting["on"] = True
    for m in entry.members:
        m.unschedulable_plugins = {"NodeResourcesFit"}
        q.add_unschedulable_if_not_present(m)
    q.add_attempted_pod_group(entry, "unschedulable")
    assert q.get(a.uid)[0] == GATED  # type: ignore[index]
    preempting["on"] = False
    q.move_all_to_active_or_backoff(EVENT_ASSIGNED_POD_DELETE, pod("victim"), None)
    assert q.get(a.uid)[0] in (ACTIVE, BACKOFF)  # type: ignore[index]


def test_activating_the_pods_of_a_group_in_flight_records_an_event_for_each() -> None:
    # GangScheduling's Permit activates the group's unscheduled pods while the group is in flight:
    # one ForceActivate per pod (upstream's addEventsIfPodInFlight), kept as one entry per run
    q = gang_queue()
    q.add_pod_group("default/g", 0)
    q.add_pod_group("default/h", 0)
    pods = [member(n, "g") for n in "abcd"]
    for p in pods:
        q.add(p)
    entry = pop_group(q)
    other = member("x", "h")
    q.add(other)  # h's entry waits in activeQ
    q.activate([pods[1], pods[2], other, pods[3]])
    assert q.inflight_events() == {"ForceActivate": 3, "PodPopped": 1}
    assert [(e.label, new.name, target) for e, _, new, target in q._in_flight.events_for(entry.key)] == [
        ("ForceActivate", "b", entry.key), ("ForceActivate", "c", entry.key), ("ForceActivate", "d", entry.key)]


def test_events_recorded_together_are_seen_as_recorded_one_by_one() -> None:
    one, many = InFlight(), InFlight()
    flying = QueuedPodGroupInfo("default/g", 0, [QueuedPodInfo(member("a", "g"))])
    later = QueuedPodInfo(member("z", "h"))
    news = [member(n, "g") for n in "bcd"]
    for f in (one, many):
        f.start(flying)
        f.record(ev.EVENT_NODE_ADD, None, None)
    for p in news:
        one.record(ev.EVENT_FORCE_ACTIVATE, None, p, flying.key)
    many.record_each(ev.EVENT_FORCE_ACTIVATE, None, news, flying.key)
    for f in (one, many):
        f.start(later)
        f.record(ev.EVENT_NODE_ADD, None, None)
    assert one.counts() == many.counts() == {"ForceActivate": 3, "NodeAdd": 2, "PodPopped": 2}
    for uid in (flying.key, later.key):
        assert list(one.events_for(uid)) == list(many.events_for(uid))
    for f in (one, many):
        f.done(flying.key)
    assert one.counts() == many.counts() == {"NodeAdd": 1, "PodPopped": 1}
