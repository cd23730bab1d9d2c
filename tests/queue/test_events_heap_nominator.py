"""Cluster event matching, the keyed heap, and the nominator (with the two-pass filter)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth.framework import CycleState, FilterPlugin, Framework, Status
from kubeberth.framework import events as ev
from kubeberth.model import NodeInfo, Pod
from kubeberth.queue import ActionType, ClusterEvent, Nominator, PriorityQueue
from kubeberth.queue.heap import Heap
from tests.builders import make_node, make_pod, node_dict, pod_dict
from tests.doubles import CpuFit, handle
from tests.queue.fakes import fail, new_queue, pod, where

A = ActionType


# ---- events ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("registered", "incoming", "want"), [
    (ClusterEvent(ev.NODE, A.ADD), ClusterEvent(ev.NODE, A.ADD), True),
    (ClusterEvent(ev.NODE, A.ADD), ClusterEvent(ev.NODE, A.DELETE), False),
    (ClusterEvent(ev.NODE, A.UPDATE), ClusterEvent(ev.NODE, A.UPDATE_NODE_LABEL), True),
    (ClusterEvent(ev.NODE, A.UPDATE_NODE_LABEL), ClusterEvent(ev.NODE, A.UPDATE_OTHER), False),
    (ClusterEvent(ev.NODE, A.ALL), ClusterEvent(ev.NODE, A.UPDATE_NODE_TAINT), True),
    (ClusterEvent(ev.POD, A.DELETE), ev.EVENT_ASSIGNED_POD_DELETE, True),
    (ClusterEvent(ev.POD, A.DELETE), ev.EVENT_UNSCHEDULED_POD_DELETE, True),
    (ClusterEvent(ev.ASSIGNED_POD, A.DELETE), ev.EVENT_UNSCHEDULED_POD_DELETE, False),
    (ClusterEvent(ev.POD, A.DELETE), ClusterEvent(ev.NODE, A.DELETE), False),
    (ClusterEvent(ev.WILDCARD, A.ADD), ClusterEvent(ev.CSI_NODE, A.ADD), True),
    (ClusterEvent(ev.WILDCARD, A.ALL), ClusterEvent(ev.CSI_NODE, A.DELETE), True),
    (ClusterEvent(ev.NODE, A.ALL), ev.EVENT_UNSCHEDULABLE_TIMEOUT, False),
])
def test_match(registered: ClusterEvent, incoming: ClusterEvent, want: bool) -> None:
    assert registered.match(incoming) is want


def _node(**kw: Any) -> Any:
    from kubeberth.model import Node

    return Node(node_dict("n", **kw))


@pytest.mark.parametrize(("old", "new", "want"), [
    ({}, {"labels": {"zone": "a"}}, [A.UPDATE_NODE_LABEL]),
    ({}, {"cpu": "8"}, [A.UPDATE_NODE_ALLOCATABLE]),
    ({}, {"taints": [{"key": "k", "effect": "NoSchedule"}]}, [A.UPDATE_NODE_TAINT]),
    ({"unschedulable": True}, {}, [A.UPDATE_NODE_TAINT]),
    ({}, {"unschedulable": True}, []),
    ({}, {"conditions": [{"type": "Ready", "status": "False"}]}, [A.UPDATE_NODE_CONDITION]),
    ({}, {}, []),
], ids=["labels", "allocatable", "taints", "uncordon", "cordon", "conditions", "nothing"])
def test_node_update_events(old: dict[str, Any], new: dict[str, Any], want: list[ActionType]) -> None:
    got = ev.node_scheduling_properties_change(_node(**new), _node(**old))
    assert [e.action for e in got] == want
    assert all(e.resource == ev.NODE for e in got)


def test_pod_update_events() -> None:
    old = make_pod("p", cpu="2", node="n")
    assert [e.action for e in ev.pod_scheduling_properties_change(make_pod("p", cpu="1", node="n"), old)] == [
        A.UPDATE_POD_SCALE_DOWN]
    relabelled = ev.pod_scheduling_properties_change(make_pod("p", cpu="2", node="n", labels={"a": "b"}), old)
    assert [(e.resource, e.action) for e in relabelled] == [(ev.ASSIGNED_POD, A.UPDATE_POD_LABEL)]
    ungated = ev.pod_scheduling_properties_change(make_pod("p"), make_pod("p", schedulingGates=[{"name": "g"}]))
    assert [(e.resource, e.action) for e in ungated] == [
        (ev.UNSCHEDULED_POD, A.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)]
    assert [e.action for e in ev.pod_scheduling_properties_change(make_pod("p"), make_pod("p"))] == [A.UPDATE_OTHER]


# ---- heap ---------------------------------------------------------------------------------------
def test_heap_add_update_delete_pop() -> None:
    values: dict[str, int] = {}
    h: Heap[str] = Heap(lambda k: k, lambda a, b: values[a] < values[b])
    for k, v in {"a": 5, "b": 1, "c": 3, "d": 3, "e": 9}.items():
        values[k] = v
        h.add_or_update(k)
    assert h.peek() == "b" and len(h) == 5 and "c" in h
    values["e"] = 0
    h.add_or_update("e")
    assert h.delete("c") == "c" and h.delete("zz") is None
    assert [h.pop() for _ in range(4)] == ["e", "b", "d", "a"]
    assert h.pop() is None


def test_heap_keeps_fifo_among_equals() -> None:
    h: Heap[str] = Heap(lambda k: k, lambda a, b: False)
    for k in "qwerty":
        h.add_or_update(k)
    assert [h.pop() for _ in range(6)] == list("qwerty")


# ---- nominator ----------------------------------------------------------------------------------
def test_nominator_add_update_delete() -> None:
    n = Nominator()
    a, b = make_pod("a"), make_pod("b")
    n.add_nominated_pod(a, "n1")
    n.add_nominated_pod(b, "n1")
    assert [p.name for p in n.nominated_pods_for_node("n1")] == ["a", "b"]
    n.add_nominated_pod(a, "n2")  # re-nominated elsewhere
    assert [p.name for p in n.nominated_pods_for_node("n1")] == ["b"]
    assert n.nominated_node_for(a) == "n2"
    newer = make_pod("a", labels={"v": "2"})
    n.update_nominated_pod(a, newer)  # no nomination in either status: the in-memory one stays
    assert n.nominated_pods_for_node("n2") == [newer]
    n.add_nominated_pod(b, "")  # clears
    assert n.nominated_pods_for_node("n1") == [] and len(n) == 1
    n.delete_nominated_pod_if_exists(newer)
    assert len(n) == 0 and n.nominations() == {}


def test_nominator_uses_status_and_skips_bound_or_gone_pods() -> None:
    raw = pod_dict("a")
    raw["status"]["nominatedNodeName"] = "n3"
    alive: set[str] = {"uid-default-a"}
    n = Nominator(pod_exists=lambda p: p.uid in alive)
    n.add_nominated_pod(Pod(raw))
    assert n.nominations() == {"default/a": "n3"}
    n.add_nominated_pod(make_pod("bound", node="n3"), "n3")
    n.add_nominated_pod(make_pod("gone"), "n3")
    assert [p.name for p in n.nominated_pods_for_node("n3")] == ["a"]


def test_queue_tracks_nominations_of_pending_pods() -> None:
    q, _ = new_queue()
    raw = pod_dict("a")
    raw["status"]["nominatedNodeName"] = "n1"
    a = Pod(raw)
    q.add(a)
    assert q.nominated_pods_for_node("n1") == [a]
    info = q.pop_nowait()
    fail(q, info, "NodeResourcesFit")  # type: ignore[arg-type]
    q.delete(a)
    assert q.nominated_pods_for_node("n1") == [] and where(q, a) == "absent"


# ---- the two-pass filter with nominated pods ---------------------------------------------------------
class NeedsCompany(FilterPlugin):
    """Passes only on a node that already has a pod (an affinity-like rule)."""

    name = "NeedsCompany"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return None if node_info.pods else Status.unschedulable("node(s) didn't match pod affinity rules")


def _framework(queue: PriorityQueue, *filters: FilterPlugin) -> Framework:
    fw = handle(nominator=queue.nominator)
    fw.filter_plugins = list(filters)
    return fw


@pytest.mark.parametrize(("nominated_prio", "pod_prio", "want"), [
    (10, 5, "Insufficient cpu"),    # a lower-priority pod cannot take the preemptor's room
    (10, 10, "Insufficient cpu"),   # equal priority: the nominated pod counts too
    (10, 11, None),                 # higher priority: the nominated pod is not counted
], ids=["lower", "equal", "higher"])
def test_nominated_pods_hold_their_room(nominated_prio: int, pod_prio: int, want: str | None) -> None:
    q, _ = new_queue()
    preemptor = pod("preemptor", prio=nominated_prio, cpu="1500m")
    q.add(preemptor)
    q.nominator.add_nominated_pod(preemptor, "n1")
    fw = _framework(q, CpuFit())
    node = NodeInfo(make_node("n1", cpu="2"))
    status = fw.run_filter_with_nominated_pods(CycleState(), pod("late", prio=pod_prio, cpu="1"), node)
    assert (status.message() if status is not None else None) == want
    assert not node.pods  # the real NodeInfo is untouched


def test_second_pass_runs_without_the_nominated_pods() -> None:
    q, _ = new_queue()
    nominated = pod("nominated", prio=10, cpu="100m")
    q.add(nominated)
    q.nominator.add_nominated_pod(nominated, "n1")
    fw = _framework(q, NeedsCompany())
    # With the nominated pod added the node has company; without it (it may never come) it has none.
    status = fw.run_filter_with_nominated_pods(CycleState(), pod("p", prio=1), NodeInfo(make_node("n1")))
    assert status is not None and status.message() == "node(s) didn't match pod affinity rules"


def test_a_pod_ignores_its_own_nomination() -> None:
    q, _ = new_queue()
    me = pod("me", prio=10, cpu="1500m")
    q.add(me)
    q.nominator.add_nominated_pod(me, "n1")
    fw = _framework(q, CpuFit())
    assert fw.run_filter_with_nominated_pods(CycleState(), me, NodeInfo(make_node("n1", cpu="2"))) is None
