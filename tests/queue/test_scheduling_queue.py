"""The scheduling queue: each transition between activeQ, backoffQ and the unschedulable pool."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubeberth.framework import events as ev
from kubeberth.queue import ACTIVE, BACKOFF, GATED, UNSCHEDULABLE, ActionType, ClusterEvent
from kubeberth.queue.subqueues import DEFAULT_POD_MAX_IN_UNSCHEDULABLE_SECONDS
from tests.builders import make_node, make_pod, pod_dict
from tests.queue.fakes import fail, new_queue, pod, profile, where

NODE_ADD = ev.EVENT_NODE_ADD
POD_DELETE = ev.EVENT_ASSIGNED_POD_DELETE


# ---- activeQ ordering --------------------------------------------------------------------
def test_add_goes_to_active_and_pops_by_priority_then_fifo() -> None:
    q, _ = new_queue()
    pods = [pod("a", prio=1), pod("b", prio=5), pod("c", prio=1), pod("d", prio=5)]
    for p in pods:
        q.add(p)
    assert [where(q, p) for p in pods] == [ACTIVE] * 4
    assert [p.name for p in q.pods_in_active()] == ["b", "d", "a", "c"]
    assert [q.pop_nowait().pod.name for _ in pods] == ["b", "d", "a", "c"]  # type: ignore[union-attr]
    assert q.pop_nowait() is None


def test_pop_marks_in_flight_and_counts_attempts() -> None:
    q, _ = new_queue()
    p = pod("a")
    q.add(p)
    info = q.pop_nowait()
    assert info is not None and info.attempts == 1 and q.in_flight(p.uid)
    assert where(q, p) == "in-flight" and q.scheduling_cycle == 1
    q.done(p.uid)
    assert where(q, p) == "absent"


async def test_pop_blocks_until_a_pod_is_added() -> None:
    q, _ = new_queue()
    waiter = asyncio.ensure_future(q.pop())
    await asyncio.sleep(0)
    assert not waiter.done()
    q.add(pod("late"))
    info = await asyncio.wait_for(waiter, 1)
    assert info is not None and info.pod.name == "late"


async def test_close_releases_a_blocked_pop() -> None:
    q, _ = new_queue()
    waiter = asyncio.ensure_future(q.pop())
    await asyncio.sleep(0)
    q.close()
    assert await asyncio.wait_for(waiter, 1) is None


def test_one_queue_several_profiles() -> None:
    q, _ = new_queue(profile("default-scheduler"), profile("batch"))
    low = pod("low", prio=1)
    high = pod("high", prio=9, scheduler="batch")
    mid = pod("mid", prio=5)
    for p in (low, high, mid):
        q.add(p)
    assert [q.pop_nowait().pod.name for _ in range(3)] == ["high", "mid", "low"]  # type: ignore[union-attr]


def test_profiles_with_other_sort_plugins_fall_back_to_priority_between_them() -> None:
    def by_name(a, b):  # type: ignore[no-untyped-def]
        return a.pod.name < b.pod.name

    q, _ = new_queue(profile("default-scheduler"), profile("named", less=by_name, sort_name="ByName"))
    for p in (pod("z", scheduler="named"), pod("y", scheduler="named", prio=3), pod("x", prio=2)):
        q.add(p)
    # Within "named", by name: y before z. Across profiles: the head y (prio 3) beats x (prio 2).
    assert [q.pop_nowait().pod.name for _ in range(3)] == ["y", "x", "z"]  # type: ignore[union-attr]


def test_set_profile_replaces_the_order() -> None:
    q, _ = new_queue()
    for p in (pod("a", prio=1), pod("b", prio=2)):
        q.add(p)
    q.set_profile(profile(less=lambda a, b: a.pod.priority < b.pod.priority, sort_name="Lowest"))
    assert [p.name for p in q.pods_in_active()] == ["a", "b"]


def test_remove_profile_returns_its_pods() -> None:
    q, _ = new_queue(profile("default-scheduler"), profile("batch"))
    a, b = pod("a"), pod("b", scheduler="batch")
    q.add(a)
    q.add(b)
    assert [x.pod.name for x in q.remove_profile("batch")] == ["b"]
    assert where(q, b) == "absent" and where(q, a) == ACTIVE


# ---- failures, backoff and events ------------------------------------------------------
def test_rejected_pod_waits_in_unschedulable_until_an_event_it_registered() -> None:
    q, _ = new_queue()
    p = pod("p")
    q.add(p)
    assert fail(q, q.pop_nowait(), "NodeResourcesFit") == UNSCHEDULABLE  # type: ignore[arg-type]
    assert not q.in_flight(p.uid)
    q.move_all_to_active_or_backoff(ClusterEvent(ev.PERSISTENT_VOLUME_CLAIM, ActionType.ADD))
    assert where(q, p) == UNSCHEDULABLE
    q.move_all_to_active_or_backoff(NODE_ADD, None, make_node("n"))
    assert where(q, p) == BACKOFF  # 1s backoff not over yet


def test_event_after_backoff_moves_straight_to_active() -> None:
    q, clock = new_queue()
    p = pod("p")
    q.add(p)
    fail(q, q.pop_nowait(), "NodeResourcesFit")  # type: ignore[arg-type]
    clock.advance(1.5)  # the backoff (1 s) ends within the current one-second window: still backing off
    q.move_all_to_active_or_backoff(POD_DELETE)
    assert where(q, p) == BACKOFF
    q.delete(p)
    q.add(p)
    fail(q, q.pop_nowait(), "NodeResourcesFit")  # type: ignore[arg-type]
    clock.advance(2)
    q.move_all_to_active_or_backoff(POD_DELETE)
    assert where(q, p) == ACTIVE


@pytest.mark.parametrize(("plugins", "event", "moves"), [
    (("NodeResourcesFit",), POD_DELETE, True),
    (("NodeResourcesFit",), ev.EVENT_ASSIGNED_POD_ADD, False),
    (("NodeResourcesFit",), ClusterEvent(ev.NODE, ActionType.UPDATE_NODE_ALLOCATABLE), True),
    (("NodeResourcesFit",), ClusterEvent(ev.NODE, ActionType.UPDATE_NODE_LABEL), False),
    (("TaintToleration",), ClusterEvent(ev.NODE, ActionType.UPDATE_NODE_TAINT), True),
    (("TaintToleration",), POD_DELETE, False),
    (("TaintToleration", "NodeResourcesFit"), POD_DELETE, True),
    (("VolumeBinding",), ClusterEvent(ev.PERSISTENT_VOLUME_CLAIM, ActionType.UPDATE_OTHER), True),
    (("VolumeBinding",), ClusterEvent(ev.STORAGE_CLASS, ActionType.UPDATE_OTHER), False),
    (("Anything",), ClusterEvent(ev.CSI_NODE, ActionType.ADD), True),
    (("NotInProfile",), ClusterEvent(ev.CSI_NODE, ActionType.ADD), True),
    ((), ClusterEvent(ev.CSI_NODE, ActionType.ADD), True),
    (("NodeResourcesFit",), ev.EVENT_UNSCHEDULABLE_TIMEOUT, True),
], ids=["fit-pod-delete", "fit-pod-add", "fit-allocatable", "fit-node-label", "taint-update", "taint-pod-delete",
        "two-rejectors", "pvc-update", "sc-update", "any-event", "unknown-plugin", "no-rejector", "wildcard"])
def test_move_on_event_rules(plugins: tuple[str, ...], event: ClusterEvent, moves: bool) -> None:
    q, _ = new_queue()
    p = pod("p")
    q.add(p)
    info = q.pop_nowait()
    assert info is not None
    info.unschedulable_plugins = set(plugins)
    q._unschedulable[p.uid] = info  # placed directly: the rules, not the in-flight logic
    q.done(p.uid)
    q.move_all_to_active_or_backoff(event)
    assert (where(q, p) != UNSCHEDULABLE) == moves


def test_error_without_rejector_goes_to_backoff() -> None:
    q, clock = new_queue()
    p = pod("p")
    q.add(p)
    assert fail(q, q.pop_nowait()) == BACKOFF  # type: ignore[arg-type]
    # Backoff 1 s, expiry aligned to its one-second window; the pod is out once that window is over.
    assert q.next_backoff_expiry() == clock.now() + 2
    assert q.pop_nowait() is None  # a pod that failed with an error is never popped early


@pytest.mark.parametrize(("attempts", "initial", "maximum", "want"), [
    (1, 1, 10, 1), (2, 1, 10, 2), (3, 1, 10, 4), (4, 1, 10, 8), (5, 1, 10, 10), (9, 1, 10, 10),
    (1, 2, 5, 2), (2, 2, 5, 4), (3, 2, 5, 5), (1, 3, 3, 3), (4, 3, 3, 3),
])
def test_backoff_doubles_per_attempt_up_to_the_profile_max(attempts: int, initial: float, maximum: float,
                                                           want: float) -> None:
    q, clock = new_queue(profile(initial=initial, maximum=maximum))
    p = pod("p")
    q.add(p)
    waited = []
    for _ in range(attempts):
        info = q.pop_nowait()
        assert info is not None
        fail(q, info)  # an error: straight to backoffQ
        failed_at = clock.now()
        expiry = q.next_backoff_expiry()
        assert expiry is not None
        waited.append(expiry - failed_at)
        clock.set(expiry - 0.001)
        assert q.flush_backoff_completed() == 0
        clock.set(expiry)
        assert q.flush_backoff_completed() == 1
    assert info.attempts == attempts == info.consecutive_errors
    # The failure happened on a whole second: the backoff, plus the rest of the window it ends in.
    assert waited[-1] == want + 1 and want == q.backoff_duration(info)


def test_backoff_flush_moves_only_expired_pods_in_expiry_order() -> None:
    q, clock = new_queue()
    a, b = pod("a"), pod("b")
    q.add(a)
    q.add(b)
    ia = q.pop_nowait()
    ib = q.pop_nowait()
    fail(q, ib)  # type: ignore[arg-type]          # b: backoff until +1, out after that window (+2)
    clock.advance(1.2)
    fail(q, ia)  # type: ignore[arg-type]          # a: backoff until +2.2, window [+2, +3): out at +3
    assert [p.name for p in q.pods_in_backoff()] == ["b", "a"]
    clock.advance(0.79)
    assert q.flush_backoff_completed() == 0
    clock.advance(0.01)
    assert q.flush_backoff_completed() == 1
    assert where(q, b) == ACTIVE and where(q, a) == BACKOFF
    clock.advance(0.99)
    assert q.flush_backoff_completed() == 0
    clock.advance(0.01)
    q.flush_backoff_completed()
    assert where(q, a) == ACTIVE


def test_per_profile_backoff() -> None:
    q, clock = new_queue(profile("default-scheduler", initial=1), profile("slow", initial=4, maximum=8))
    fast, slow = pod("fast"), pod("slow", scheduler="slow")
    q.add(fast)
    q.add(slow)
    for _ in range(2):
        fail(q, q.pop_nowait())  # type: ignore[arg-type]
    t = clock.now()
    assert sorted(q._backoff.expiry(i) for i in q._backoff) == [t + 1, t + 4]


def test_unschedulable_leftovers_are_flushed_after_five_minutes() -> None:
    q, clock = new_queue()
    p = pod("p")
    q.add(p)
    fail(q, q.pop_nowait(), "NodeResourcesFit")  # type: ignore[arg-type]
    clock.advance(DEFAULT_POD_MAX_IN_UNSCHEDULABLE_SECONDS)
    q.flush_unschedulable_leftover()
    assert where(q, p) == UNSCHEDULABLE  # not longer than 5 minutes yet
    clock.advance(1)
    q.flush_unschedulable_leftover()
    assert where(q, p) == ACTIVE


# ---- in-flight pods ------------------------------------------------------------------------
def test_event_while_in_flight_requeues_the_pod_when_it_comes_back() -> None:
    q, _ = new_queue()
    p = pod("p")
    q.add(p)
    info = q.pop_nowait()
    q.move_all_to_active_or_backoff(POD_DELETE)  # nothing to move now, but p is in flight
    assert fail(q, info, "NodeResourcesFit") == BACKOFF  # type: ignore[arg-type]


def test_unrelated_event_while_in_flight_is_not_enough() -> None:
    q, _ = new_queue()
    p = pod("p")
    q.add(p)
    info = q.pop_nowait()
    q.move_all_to_active_or_backoff(ClusterEvent(ev.NODE, ActionType.UPDATE_NODE_LABEL))
    assert fail(q, info, "NodeResourcesFit") == UNSCHEDULABLE  # type: ignore[arg-type]


def test_events_before_the_pop_do_not_count() -> None:
    q, _ = new_queue()
    first, second = pod("first", prio=1), pod("second")
    q.add(first)
    q.add(second)
    i1 = q.pop_nowait()                      # keeps the event log alive
    q.move_all_to_active_or_backoff(POD_DELETE)
    i2 = q.pop_nowait()                      # popped after the event
    assert fail(q, i2, "NodeResourcesFit") == UNSCHEDULABLE  # type: ignore[arg-type]
    assert fail(q, i1, "NodeResourcesFit") == BACKOFF  # type: ignore[arg-type]
    assert not q._in_flight.has_events()  # nothing in flight: the log is empty


def test_pending_plugin_event_requeues_immediately() -> None:
    q, _ = new_queue()
    p = pod("p")
    q.add(p)
    info = q.pop_nowait()
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert fail(q, info, pending=("Waits",)) == ACTIVE  # type: ignore[arg-type]


def test_update_of_an_in_flight_pod_is_recorded_for_it_only() -> None:
    q, _ = new_queue()
    raw = pod_dict("p", priority=0)
    p = make_pod("p", priority=0)
    other = pod("other")
    q.add(p)
    q.add(other)
    ip, io = q.pop_nowait(), q.pop_nowait()
    assert {ip.pod.name, io.pod.name} == {"p", "other"}  # type: ignore[union-attr]
    tolerating = dict(raw, spec={**raw["spec"], "tolerations": [{"key": "k", "operator": "Exists"}]})
    from kubeberth.model import Pod

    q.update(p, Pod(tolerating))
    assert where(q, p) == "in-flight"
    pi = ip if ip.pod.name == "p" else io  # type: ignore[union-attr]
    oi = io if pi is ip else ip
    assert fail(q, pi, "TaintToleration") == BACKOFF  # type: ignore[arg-type]
    assert fail(q, oi, "TaintToleration") == UNSCHEDULABLE  # type: ignore[arg-type]


def test_status_only_update_of_an_in_flight_pod_is_ignored() -> None:
    q, _ = new_queue()
    raw = pod_dict("p")
    from kubeberth.model import Pod

    p = Pod(raw)
    q.add(p)
    info = q.pop_nowait()
    q.update(p, Pod(dict(raw, status={"phase": "Pending", "conditions": [{"type": "PodScheduled"}]})))
    assert fail(q, info, "Anything") == UNSCHEDULABLE  # type: ignore[arg-type]


def test_activate_an_in_flight_pod() -> None:
    q, _ = new_queue()
    p = pod("p")
    q.add(p)
    info = q.pop_nowait()
    q.activate([p])
    assert fail(q, info, "NodeResourcesFit") == BACKOFF  # type: ignore[arg-type]


def test_activate_moves_from_unschedulable_and_backoff() -> None:
    q, _ = new_queue()
    a, b = pod("a"), pod("b")
    q.add(a)
    q.add(b)
    fail(q, q.pop_nowait(), "NodeResourcesFit")  # type: ignore[arg-type]
    fail(q, q.pop_nowait())  # type: ignore[arg-type]
    assert {where(q, a), where(q, b)} == {UNSCHEDULABLE, BACKOFF}
    q.activate([a, b])
    assert where(q, a) == ACTIVE and where(q, b) == ACTIVE


def test_add_unschedulable_when_already_queued_is_refused() -> None:
    q, _ = new_queue()
    p = pod("p")
    q.add(p)
    info = q.pop_nowait()
    q.add(p)  # re-added meanwhile (e.g. a relist)
    assert fail(q, info, "NodeResourcesFit") == ""  # type: ignore[arg-type]
    assert where(q, p) == ACTIVE and not q.in_flight(p.uid)


# ---- update and delete ---------------------------------------------------------------------
def _changed(p_raw: dict, **spec: object) -> dict:  # type: ignore[type-arg]
    return dict(p_raw, spec={**p_raw["spec"], **spec})


def test_update_in_active_reorders() -> None:
    from kubeberth.model import Pod

    q, _ = new_queue()
    a, b = pod("a", prio=5), pod("b", prio=1)
    q.add(a)
    q.add(b)
    q.update(b, Pod(pod_dict("b", priority=9)))
    assert [p.name for p in q.pods_in_active()] == ["b", "a"]


def test_update_in_backoff_stays_in_backoff() -> None:
    from kubeberth.model import Pod

    q, _ = new_queue()
    p = pod("p")
    q.add(p)
    fail(q, q.pop_nowait())  # type: ignore[arg-type]
    new = Pod(pod_dict("p", labels={"x": "y"}))
    q.update(p, new)
    got = q.get(p.uid)
    assert got is not None and got[0] == BACKOFF and got[1].pod is new


@pytest.mark.parametrize(("change", "after_backoff", "want"), [
    ("status", False, UNSCHEDULABLE),
    ("labels", False, UNSCHEDULABLE),
    ("requests", False, BACKOFF),
    ("requests", True, ACTIVE),
], ids=["status-only-stays", "change-no-rejector-registered-stays", "change-while-backing-off",
        "change-after-backoff"])
def test_update_in_unschedulable(change: str, after_backoff: bool, want: str) -> None:
    from kubeberth.model import Pod

    q, clock = new_queue()
    raw = pod_dict("p", cpu="1")
    p = Pod(raw)
    q.add(p)
    fail(q, q.pop_nowait(), "NodeResourcesFit")  # type: ignore[arg-type]
    if after_backoff:
        clock.advance(2)
    if change == "status":
        new = Pod(dict(raw, status={"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False"}]}))
    elif change == "labels":  # NodeResourcesFit registered no TargetPod label change
        new = Pod(pod_dict("p", cpu="1", labels={"new": "label"}))
    else:  # a smaller request: TargetPod/UpdatePodScaleDown, which NodeResourcesFit registered
        new = Pod(pod_dict("p", cpu="500m"))
    q.update(p, new)
    assert where(q, p) == want


def test_update_of_an_unknown_pod_adds_it() -> None:
    q, _ = new_queue()
    p = pod("p")
    q.update(None, p)
    assert where(q, p) == ACTIVE


@pytest.mark.parametrize("place", [ACTIVE, BACKOFF, UNSCHEDULABLE, GATED])
def test_delete_from_each_sub_queue(place: str) -> None:
    q, _ = new_queue()
    p = make_pod("p", schedulingGates=[{"name": "g"}]) if place == GATED else pod("p")
    q.add(p)
    if place == BACKOFF:
        fail(q, q.pop_nowait())  # type: ignore[arg-type]
    elif place == UNSCHEDULABLE:
        fail(q, q.pop_nowait(), "NodeResourcesFit")  # type: ignore[arg-type]
    assert where(q, p) == place
    q.delete(p)
    assert where(q, p) == "absent" and len(q) == 0


# ---- PreEnqueue (scheduling gates) ------------------------------------------------------------
def test_gated_pod_is_held_out_of_active_until_its_gates_go() -> None:
    from kubeberth.model import Pod

    q, clock = new_queue()
    raw = pod_dict("g", schedulingGates=[{"name": "example.com/wait"}])
    gated = Pod(raw)
    q.add(gated)
    assert where(q, gated) == GATED
    assert q.pop_nowait() is None
    assert [p.name for p in q.pending_pods()[GATED]] == ["g"]
    q.move_all_to_active_or_backoff(NODE_ADD)
    clock.advance(DEFAULT_POD_MAX_IN_UNSCHEDULABLE_SECONDS + 1)
    q.flush_unschedulable_leftover()
    assert where(q, gated) == GATED
    ungated = Pod(_changed(raw, schedulingGates=[]))
    q.update(gated, ungated)
    assert where(q, gated) == ACTIVE
    assert q.pop_nowait().pod is ungated  # type: ignore[union-attr]


def test_gate_event_moves_a_gated_pod_only_through_pre_enqueue() -> None:
    q, _ = new_queue()
    gated = make_pod("g", schedulingGates=[{"name": "x"}])
    q.add(gated)
    # The gate's own event, but the pod is still gated: PreEnqueue keeps it out.
    q.move_all_to_active_or_backoff(ClusterEvent(ev.UNSCHEDULED_POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED))
    assert where(q, gated) == GATED


def test_pending_pods_per_queue() -> None:
    q, _ = new_queue()
    pods = {name: pod(name) for name in ("a", "b", "c")}
    gated = make_pod("g", schedulingGates=[{"name": "x"}])
    for p in (*pods.values(), gated):
        q.add(p)
    fail(q, q.pop_nowait())  # type: ignore[arg-type]                    # a -> backoff
    fail(q, q.pop_nowait(), "NodeResourcesFit")  # type: ignore[arg-type]  # b -> unschedulable
    got = {k: sorted(p.name for p in v) for k, v in q.pending_pods().items()}
    assert got == {ACTIVE: ["c"], BACKOFF: ["a"], UNSCHEDULABLE: ["b"], GATED: ["g"]}
    assert len(q) == 4


# ---- assigned pod events -------------------------------------------------------------------
def _affinity(app: str) -> dict:  # type: ignore[type-arg]
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}]}}


def _real_plugins_queue() -> Any:
    """A queue whose profile holds the real InterPodAffinity, PodTopologySpread and
    NodeResourcesFit: their QueueingHints decide."""
    from kubeberth.plugins.inter_pod_affinity import InterPodAffinity
    from kubeberth.plugins.node_resources_fit import NodeResourcesFit
    from kubeberth.plugins.pod_topology_spread import PodTopologySpread
    from kubeberth.queue import QueueProfile
    from tests.doubles import handle, priority_then_age

    h = handle()
    plugins = {p.name: p for p in (InterPodAffinity(None, h), PodTopologySpread(None, h), NodeResourcesFit(None, h))}
    q, _ = new_queue(QueueProfile("default-scheduler", priority_then_age, queue_sort_name="PrioritySort",
                                  plugins=plugins))
    return q


def test_assigned_pod_added_moves_only_pods_it_may_help() -> None:
    q = _real_plugins_queue()
    wants_db = make_pod("wants-db", affinity=_affinity("db"))
    wants_web = make_pod("wants-web", affinity=_affinity("web"))
    other_ns = make_pod("other-ns", namespace="prod", affinity=_affinity("db"))
    spread_db = make_pod("spread-db", topologySpreadConstraints=[
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "db"}}}])
    spread_web = make_pod("spread-web", topologySpreadConstraints=[
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "web"}}}])
    fit = pod("fit")
    rejected = ((wants_db, "InterPodAffinity"), (wants_web, "InterPodAffinity"), (other_ns, "InterPodAffinity"),
                (spread_db, "PodTopologySpread"), (spread_web, "PodTopologySpread"), (fit, "NodeResourcesFit"))
    for p, plugin in rejected:
        q.add(p)
        fail(q, q.pop_nowait(), plugin)  # type: ignore[arg-type]
    q.assigned_pod_added(make_pod("db-0", labels={"app": "db"}, node="n1"))
    moved = {p.name for p, _ in rejected if where(q, p) != UNSCHEDULABLE}
    assert moved == {"wants-db", "spread-db"}


def test_assigned_pod_added_reads_the_terms_as_the_plugin_does() -> None:
    """The hints read a pending pod's terms through the model's one parse (matchLabelKeys folded
    in), as InterPodAffinity does; as upstream's, they match namespaceSelector terms without the
    namespaces' labels, and requeue a pod whose terms do not parse."""
    from kubeberth.model import pod_affinity_terms
    from kubeberth.plugins.inter_pod_affinity import pod_terms

    q = _real_plugins_queue()
    rev1 = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "matchLabelKeys": ["rev"], "topologyKey": "zone"}]}}
    in_prod = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "namespaceSelector": {"matchLabels": {"env": "prod"}},
         "topologyKey": "zone"}]}}
    unparsable = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}]},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "Near"}]}, "topologyKey": "zone"}]}}
    pending = {"same-rev": make_pod("same-rev", labels={"rev": "1"}, affinity=rev1),
               "other-rev": make_pod("other-rev", labels={"rev": "2"}, affinity=rev1),
               "wants-prod": make_pod("wants-prod", affinity=in_prod),
               "unparsable": make_pod("unparsable", affinity=unparsable)}
    for p in pending.values():
        q.add(p)
        fail(q, q.pop_nowait(), "InterPodAffinity")  # type: ignore[arg-type]
    assert all(pod_affinity_terms(p) is pod_terms(p) for p in pending.values())

    q.assigned_pod_added(make_pod("db-0", labels={"app": "db", "rev": "1"}, node="n1"))
    assert {name for name, p in pending.items() if where(q, p) != UNSCHEDULABLE} == {"same-rev", "unparsable"}
    q.assigned_pod_added(make_pod("db-1", namespace="prod", labels={"app": "db"}, node="n1"))
    assert {name for name, p in pending.items() if where(q, p) != UNSCHEDULABLE} == {"same-rev", "unparsable"}


def test_assigned_pod_scale_down_moves_resource_rejected_pods() -> None:
    q, _ = new_queue()
    p = pod("p")
    q.add(p)
    fail(q, q.pop_nowait(), "NodeResourcesFit")  # type: ignore[arg-type]
    old, new = make_pod("r", cpu="2", node="n"), make_pod("r", cpu="1", node="n")
    (event,) = ev.pod_scheduling_properties_change(new, old)
    assert event.action == ActionType.UPDATE_POD_SCALE_DOWN
    q.assigned_pod_updated(old, new, event)
    assert where(q, p) == BACKOFF
