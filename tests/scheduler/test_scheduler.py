"""The scheduler loop: scheduling and binding cycles, their failure paths, permit waits,
event ingestion and the bounded run simulate uses."""

from __future__ import annotations

import asyncio

import pytest

from kubeberth.queue import ACTIVE, BACKOFF, UNSCHEDULABLE
from kubeberth.scheduler import EVICTED, EXISTING, IGNORED, SCHEDULED
from kubeberth.scheduler import UNSCHEDULABLE as S_UNSCHEDULABLE
from tests.builders import node_dict, pod_dict
from tests.scheduler.fakes import add_pod, journal, registry, scheduler, spec


def where(sched, pod) -> str:  # type: ignore[no-untyped-def]
    got = sched.queue.get(pod.uid)
    return got[0] if got is not None else ("in-flight" if sched.queue.in_flight(pod.uid) else "absent")


# ---- the happy path --------------------------------------------------------------------------
async def test_schedules_binds_and_records() -> None:
    sched, client, _ = scheduler()
    p = add_pod(sched, "p")
    assert await sched.schedule_one()
    await sched.wait_for_bindings()
    rec = sched.outcomes["default/p"]
    assert (rec.status, rec.node, rec.message) == (SCHEDULED, "n1", "")
    assert client.of("bind") == [("default/p", "n1")]
    assert ("default/p", "Normal", "Scheduled", "Successfully assigned default/p to n1") in client.of("event")
    assert journal(sched) == ["reserve p n1", "bind p n1", "postbind p n1"]
    # The bound pod's update (fed back by the client) confirmed the assumed pod.
    assert not sched.cache.is_assumed(p.uid) and sched.cache.get_pod(p.uid).node_name == "n1"  # type: ignore[union-attr]
    assert sched.queue.pending_pods() == {ACTIVE: [], BACKOFF: [], UNSCHEDULABLE: [], "gated": []}


async def test_binding_runs_as_its_own_task() -> None:
    sched, client, _ = scheduler(script={"permit": "wait"})
    add_pod(sched, "p")
    await sched.schedule_one()
    assert client.of("bind") == [] and len(sched.ctx.waiting_pods) == 1
    assert sched.cache.is_assumed(sched._uids["default/p"])
    sched.ctx.waiting_pods.get(sched._uids["default/p"]).allow("Script")  # type: ignore[union-attr]
    await sched.wait_for_bindings()
    assert client.of("bind") == [("default/p", "n1")]


async def test_the_wait_on_permit_is_measured_by_its_result() -> None:
    from kubeberth.metrics import SchedulerMetrics

    sched, _, _ = scheduler(script={"permit": "wait"})
    sched.ctx.metrics = metrics = SchedulerMetrics()
    add_pod(sched, "p")
    await sched.schedule_one()
    sched.ctx.waiting_pods.get(sched._uids["default/p"]).allow("Script")  # type: ignore[union-attr]
    await sched.wait_for_bindings()
    assert metrics.sample("scheduler_permit_wait_duration_seconds_count", {"result": "Success"}) == 1
    add_pod(sched, "q")
    await sched.schedule_one()
    sched.ctx.waiting_pods.get(sched._uids["default/q"]).reject("Script", "no")  # type: ignore[union-attr]
    await sched.wait_for_bindings()
    assert metrics.sample("scheduler_permit_wait_duration_seconds_count", {"result": "Unschedulable"}) == 1


async def test_assumed_pod_holds_its_room_for_the_next_cycle() -> None:
    sched, client, _ = scheduler(feed=False, nodes={"n1": "2", "n2": "2"})
    add_pod(sched, "a", cpu="2")
    add_pod(sched, "b", cpu="2")
    await sched.schedule_one()
    await sched.schedule_one()
    await sched.wait_for_bindings()
    assert sorted(n for _, n in client.of("bind")) == ["n1", "n2"]
    assert len(sched.cache.assumed_pods()) == 2  # never confirmed (no feedback): still assumed


async def test_existing_pods_count() -> None:
    sched, _, _ = scheduler()
    sched.on_pod_add(pod_dict("running", cpu="2", node="n1"))
    p = add_pod(sched, "p")
    await sched.run_until_idle()
    assert sched.outcomes["default/running"].status == EXISTING
    assert sched.outcomes["default/p"].status == S_UNSCHEDULABLE
    assert where(sched, p) == UNSCHEDULABLE


# ---- FitError and the move-on-event path ----------------------------------------------------------
async def test_fit_error_records_upstream_message_and_waits_for_an_event() -> None:
    sched, client, _ = scheduler(nodes={"n1": "1", "n2": "1"})
    p = add_pod(sched, "p", cpu="2")
    await sched.schedule_one()
    msg = "0/2 nodes are available: 2 Insufficient cpu."
    rec = sched.outcomes["default/p"]
    assert (rec.status, rec.message) == (S_UNSCHEDULABLE, msg)
    assert ("default/p", "Warning", "FailedScheduling", msg) in client.of("event")
    assert ("default/p", "Unschedulable", msg) in client.of("unschedulable")
    assert where(sched, p) == UNSCHEDULABLE
    sched.on_node_add(node_dict("n3", cpu="4"))
    assert where(sched, p) == BACKOFF
    await sched.run_until_idle()
    assert (sched.outcomes["default/p"].status, sched.outcomes["default/p"].node) == (SCHEDULED, "n3")


async def test_the_unschedulable_condition_is_for_the_generation_the_scheduler_last_saw() -> None:
    """The PodScheduled=False condition's observedGeneration (issue 29, finding 8) is that of the
    pod as the scheduler holds it when the attempt fails: after a spec edit, the new generation."""
    sched, client, _ = scheduler(nodes={"n1": "1"})
    raw = pod_dict("p", cpu="2")
    raw["metadata"]["generation"] = 1
    sched.on_pod_add(raw)
    await sched.run_until_idle()
    edited = pod_dict("p", cpu="2", activeDeadlineSeconds=600)  # a spec edit: the API server counts it
    edited["metadata"]["generation"] = 2
    sched.on_pod_update(edited)
    sched.on_node_add(node_dict("n2", cpu="1"))  # an event that retries it (in vain)
    await sched.run_until_idle()
    assert client.generations == [("unschedulable", "default/p", 1), ("unschedulable", "default/p", 2)]


async def test_deleting_an_assigned_pod_retries_pods_it_blocked() -> None:
    sched, _, _ = scheduler()
    sched.on_pod_add(pod_dict("big", cpu="2", node="n1"))
    add_pod(sched, "p")
    await sched.run_until_idle()
    assert sched.outcomes["default/p"].status == S_UNSCHEDULABLE
    sched.on_pod_delete(pod_dict("big", cpu="2", node="n1"))
    await sched.run_until_idle()
    assert sched.outcomes["default/p"].status == SCHEDULED


async def test_node_allocatable_growth_retries_but_a_label_change_does_not() -> None:
    sched, _, _ = scheduler(nodes={"n1": "1"})
    p = add_pod(sched, "p", cpu="2")
    await sched.run_until_idle()
    sched.on_node_update(node_dict("n1", cpu="1", labels={"x": "y"}))
    assert where(sched, p) == UNSCHEDULABLE
    sched.on_node_update(node_dict("n1", cpu="4", labels={"x": "y"}))
    assert where(sched, p) == BACKOFF
    await sched.run_until_idle()
    assert sched.outcomes["default/p"].status == SCHEDULED


async def test_post_filter_nominates_and_records_victims() -> None:
    sched, client, _ = scheduler(post_filter=True)
    sched.on_pod_add(pod_dict("low", cpu="2", node="n1", priority=1))
    add_pod(sched, "high", cpu="2", prio=100)
    await sched.schedule_one()
    rec = sched.outcomes["default/high"]
    assert rec.status == S_UNSCHEDULABLE and rec.nominated_node == "n1" and rec.victims == ["default/low"]
    assert rec.message == "0/1 nodes are available: 1 Insufficient cpu."
    assert sched.nominator.nominations() == {"default/high": "n1"}
    assert ("default/high", "n1") in client.of("nominate") and client.of("delete") == [("default/low",)]
    assert sched.outcomes["default/low"].status == EVICTED
    # The victim's deletion happened while "high" was in flight: it is retried after backoff.
    await sched.run_until_idle()
    rec = sched.outcomes["default/high"]
    assert (rec.status, rec.node, rec.nominated_node, rec.victims) == (SCHEDULED, "n1", "", ["default/low"])
    assert sched.nominator.nominations() == {}


async def test_post_filter_failure_message_is_appended() -> None:
    sched, _, _ = scheduler(post_filter=True)
    add_pod(sched, "p", cpu="3")
    await sched.run_until_idle()
    assert sched.outcomes["default/p"].message == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: no victims")  # appended as written


# ---- Reserve / Permit failures ------------------------------------------------------------------
@pytest.mark.parametrize(("point", "answer", "message", "queue"), [
    ("reserve", "reject", "0/1 nodes are available: 1 reserve says no.", UNSCHEDULABLE),
    ("reserve", "error", 'running Reserve plugin "Script": reserve broke', BACKOFF),
    ("permit", "reject", "0/1 nodes are available: 1 permit says no.", UNSCHEDULABLE),
    ("permit", "error", 'running Permit plugin "Script": permit broke', BACKOFF),
])
async def test_reserve_and_permit_failures_unreserve_forget_and_requeue(point: str, answer: str, message: str,
                                                                        queue: str) -> None:
    sched, client, _ = scheduler(script={point: answer})
    p = add_pod(sched, "p")
    await sched.schedule_one()
    assert "unreserve p n1" in journal(sched)
    assert sched.cache.get_pod(p.uid) is None and not sched.cache.is_assumed(p.uid)
    assert sched.outcomes["default/p"].message == message
    assert where(sched, p) == queue
    assert client.of("bind") == []


# ---- the binding cycle -------------------------------------------------------------------------------
@pytest.mark.parametrize(("script", "message"), [
    ({"bind": "error"}, 'running Bind plugin "Script": bind failed'),
    ({"prebind": "error"}, 'running PreBind plugin "Script": volume not ready'),
    ({"bind": "skip"}, "no Bind plugin bound the pod"),
])
async def test_binding_failures_go_to_backoff(script: dict[str, str], message: str) -> None:
    sched, client, _ = scheduler(script=script)
    p = add_pod(sched, "p")
    await sched.schedule_one()
    await sched.wait_for_bindings()
    assert journal(sched)[-1] == "unreserve p n1"
    assert sched.cache.get_pod(p.uid) is None
    assert where(sched, p) == BACKOFF
    rec = sched.outcomes["default/p"]
    assert (rec.status, rec.message) == (S_UNSCHEDULABLE, message)
    assert ("default/p", "Warning", "FailedScheduling", message) in client.of("event")


async def test_bind_failure_frees_the_room_for_others() -> None:
    sched, _, _ = scheduler(script={"permit": "wait", "bind": ["error", "ok"]})
    a = add_pod(sched, "a", cpu="2")
    b = add_pod(sched, "b", cpu="2")
    await sched.schedule_one()                 # a assumed on n1, waits at Permit
    await sched.schedule_one()                 # b: no room left
    assert where(sched, b) == UNSCHEDULABLE
    sched.ctx.waiting_pods.get(a.uid).allow("Script")  # type: ignore[union-attr]
    await sched.wait_for_bindings()            # a's bind fails: its room is freed
    assert where(sched, b) in (ACTIVE, BACKOFF) and where(sched, a) == BACKOFF


async def test_binding_failure_on_a_client_exception() -> None:
    sched, client, _ = scheduler()
    client.fail("bind", RuntimeError("connection reset"))
    p = add_pod(sched, "p")
    await sched.schedule_one()
    await sched.wait_for_bindings()
    assert where(sched, p) == BACKOFF and sched.cache.get_pod(p.uid) is None
    assert "connection reset" in sched.outcomes["default/p"].message


# ---- Permit waits ------------------------------------------------------------------------------------
@pytest.mark.looptime
async def test_permit_wait_then_allow() -> None:
    sched, client, _ = scheduler(script={"permit": "wait", "timeout": 30})
    p = add_pod(sched, "p")
    await sched.schedule_one()
    await asyncio.sleep(20)
    assert client.of("bind") == []
    sched.ctx.waiting_pods.get(p.uid).allow("Script")  # type: ignore[union-attr]
    await sched.wait_for_bindings()
    assert client.of("bind") == [("default/p", "n1")] and sched.outcomes["default/p"].status == SCHEDULED


@pytest.mark.looptime
async def test_permit_wait_then_reject() -> None:
    sched, client, _ = scheduler(script={"permit": "wait", "timeout": 30})
    p = add_pod(sched, "p")
    await sched.schedule_one()
    sched.ctx.waiting_pods.get(p.uid).reject("Script", "not this time")  # type: ignore[union-attr]
    await sched.wait_for_bindings()
    assert client.of("bind") == [] and sched.cache.get_pod(p.uid) is None
    assert sched.outcomes["default/p"].message == "0/1 nodes are available: 1 not this time."
    assert journal(sched)[-1] == "unreserve p n1"
    # While it waited at Permit its status named the node it was about to go to (v1.37's
    # NominatedNodeNameForExpectation); the failure cleared it. Clearing it is an update of the
    # pod itself, which Script (registered for every event, like upstream's plugins without
    # EnqueueExtensions) takes as possibly helpful: the pod is retried after its backoff.
    assert client.of("nominate") == [("default/p", "n1"), ("default/p", "")]
    assert where(sched, p) == BACKOFF


@pytest.mark.looptime
async def test_permit_wait_times_out() -> None:
    sched, client, _ = scheduler(script={"permit": "wait", "timeout": 10})
    p = add_pod(sched, "p")
    loop = asyncio.get_running_loop()
    start = loop.time()
    await sched.schedule_one()
    await sched.wait_for_bindings()
    assert loop.time() - start == pytest.approx(10)
    assert client.of("bind") == [] and sched.cache.get_pod(p.uid) is None
    assert sched.outcomes["default/p"].message == (
        "0/1 nodes are available: 1 rejected due to timeout after waiting 10s at plugin Script.")
    assert where(sched, p) == BACKOFF  # its nomination cleared: see test_permit_wait_then_reject


@pytest.mark.looptime
async def test_pod_deleted_while_waiting_on_permit() -> None:
    sched, client, _ = scheduler(script={"permit": "wait", "timeout": 60})
    p = add_pod(sched, "p")
    other = add_pod(sched, "other", cpu="2")
    await sched.schedule_one()       # p waits
    await sched.schedule_one()       # other: no room
    assert where(sched, other) == UNSCHEDULABLE
    sched.on_pod_delete(pod_dict("p", cpu="1"))
    await sched.wait_for_bindings()
    assert where(sched, p) == "absent" and sched.cache.get_pod(p.uid) is None
    assert where(sched, other) in (ACTIVE, BACKOFF)
    assert client.of("bind") == []


@pytest.mark.looptime
async def test_node_removed_mid_cycle_does_not_corrupt_the_cache() -> None:
    sched, client, _ = scheduler(script={"permit": "wait", "timeout": 60}, nodes={"n1": "2", "n2": "2"})
    client.fail("bind", RuntimeError("node gone"))
    p = add_pod(sched, "p")
    await sched.schedule_one()
    assumed_on = sched.cache.get_pod(p.uid).node_name  # type: ignore[union-attr]
    sched.on_node_delete(assumed_on)
    ghost = sched.cache.get_node(assumed_on)
    assert ghost is not None and ghost.node is None and len(ghost.pods) == 1
    sched.ctx.waiting_pods.get(p.uid).allow("Script")  # type: ignore[union-attr]
    await sched.wait_for_bindings()
    assert sched.cache.get_node(assumed_on) is None  # the ghost went with the forgotten pod
    client.fail("bind", None)
    sched.ctx.extras["script"]["permit"] = "allow"
    await sched.run_until_idle()
    rec = sched.outcomes["default/p"]
    assert rec.status == SCHEDULED and rec.node != assumed_on and rec.node in ("n1", "n2")


async def test_pod_deleted_mid_cycle_is_not_bound_nor_requeued() -> None:
    sched, client, _ = scheduler()
    p = add_pod(sched, "p")
    sched.ctx.extras["script"]["on_reserve"] = lambda pod: sched.on_pod_delete(pod_dict("p"))
    await sched.schedule_one()
    await sched.wait_for_bindings()
    assert client.of("bind") == [] and sched.cache.pod_count() == 0
    assert where(sched, p) == "absent" and sched.outcomes["default/p"].status == "Deleted"
    assert sched.cache.snapshot().get("n1").requested.milli_cpu == 0  # type: ignore[union-attr]


# ---- ingestion: priorities, bad pods, profiles ---------------------------------------------------
async def test_unknown_priority_class_is_a_per_pod_error_until_the_class_appears() -> None:
    sched, client, _ = scheduler()
    bad = sched.on_pod_add(pod_dict("vip", cpu="1", priorityClassName="gold"))
    add_pod(sched, "ok")
    assert bad is None
    rec = sched.outcomes["default/vip"]
    assert rec.status == S_UNSCHEDULABLE and rec.error
    assert rec.message.endswith("no PriorityClass with name gold was found")
    await sched.run_until_idle()
    assert ("default/vip", "Warning", "FailedScheduling", rec.message) in client.of("event")
    assert sched.outcomes["default/ok"].status == SCHEDULED
    sched.on_object("PriorityClass", {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                      "metadata": {"name": "gold"}, "value": 1000})
    await sched.run_until_idle()
    rec = sched.outcomes["default/vip"]
    assert rec.status == SCHEDULED and not rec.error
    assert sched.cache.get_pod(rec.uid).priority == 1000  # type: ignore[union-attr]


async def test_malformed_pod_is_reported_alone() -> None:
    sched, _, _ = scheduler()
    raw = pod_dict("broken")
    raw["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "lots"}}
    assert sched.on_pod_add(raw) is None
    add_pod(sched, "fine")
    await sched.run_until_idle()
    assert sched.outcomes["default/broken"].error and "cpu" in sched.outcomes["default/broken"].message
    assert sched.outcomes["default/fine"].status == SCHEDULED


@pytest.mark.parametrize("resources, field, problem", [
    pytest.param({"requests": {"cpu": "lots"}}, "spec.containers[0].resources.requests", "invalid quantity 'lots'",
                 id="bad-quantity"),
    pytest.param({"requests": {"memory": "-1Gi"}}, "spec.containers[0].resources.requests",
                 "quantity '-1Gi' must be greater than or equal to 0", id="negative-request"),
    pytest.param({"limits": {"cpu": "-2"}}, "spec.containers[0].resources.limits",
                 "quantity '-2' must be greater than or equal to 0", id="negative-limit"),
])
async def test_a_malformed_pod_is_reported_once_as_a_scheduler_error_and_retried_when_fixed(
        resources, field, problem) -> None:  # type: ignore[no-untyped-def]
    sched, client, _ = scheduler()
    raw = pod_dict("broken")
    raw["spec"]["containers"][0]["resources"] = resources
    assert sched.on_pod_add(raw) is None
    add_pod(sched, "fine")
    await sched.run_until_idle()
    [(key, event_type, reason, message)] = [e for e in client.of("event") if e[0] == "default/broken"]
    assert (key, event_type, reason) == ("default/broken", "Warning", "FailedScheduling")
    assert field in message and problem in message
    assert client.of("unschedulable") == [("default/broken", "SchedulerError", message)]
    assert sched.outcomes["default/fine"].status == SCHEDULED
    # Our own status patch comes back as an update: nothing is reported again.
    sched.on_pod_update(raw)
    await sched.run_until_idle()
    assert len([e for e in client.of("event") if e[0] == "default/broken"]) == 1
    sched.on_pod_update(pod_dict("broken", cpu="1"))  # fixed by its owner
    await sched.run_until_idle()
    assert sched.outcomes["default/broken"].status == SCHEDULED


async def test_a_malformed_pod_of_another_scheduler_is_not_written_to() -> None:
    sched, client, _ = scheduler()
    raw = pod_dict("theirs", scheduler="someone-else")
    raw["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "-1"}}
    assert sched.on_pod_add(raw) is None
    await sched.run_until_idle()
    assert client.of("event") == [] and client.of("unschedulable") == []


async def test_a_pod_bound_by_a_rival_is_dropped_without_a_failure_report() -> None:
    from kubeberth.client import BindConflict

    sched, client, _ = scheduler(feed=False)
    p = add_pod(sched, "raced")
    client.fail("bind", BindConflict('pod raced is already assigned to node "n9"', settled=True))
    await sched.schedule_one()
    await sched.wait_for_bindings()
    assert client.of("event") == [] and client.of("unschedulable") == []
    assert where(sched, p) == "absent" and not sched.cache.is_assumed(p.uid)
    # The rival's binding arrives through the watch: the pod is counted on its node.
    sched.on_node_add(node_dict("n9", cpu="2"))
    sched.on_pod_update(pod_dict("raced", cpu="1", nodeName="n9"))
    assert sched.cache.get_pod(p.uid).node_name == "n9"  # type: ignore[union-attr]
    assert where(sched, p) == "absent"


async def test_a_failed_binding_is_a_scheduler_error() -> None:
    sched, client, _ = scheduler(feed=False)
    add_pod(sched, "p")
    client.fail("bind", RuntimeError("connection reset"))
    await sched.schedule_one()
    await sched.wait_for_bindings()
    assert client.of("unschedulable")[-1][:2] == ("default/p", "SchedulerError")
    assert [e[1:3] for e in client.of("event")] == [("Warning", "FailedScheduling")]


@pytest.mark.looptime
async def test_the_periodic_flush_moves_a_pod_left_unschedulable_for_five_minutes() -> None:
    sched, _, clock = scheduler(nodes={"n1": "1"})
    p = add_pod(sched, "big", cpu="2")
    await sched.schedule_one()
    assert where(sched, p) == UNSCHEDULABLE  # no event will move it: only the leftover flush
    task = asyncio.ensure_future(sched._flush_periodically())
    loop = asyncio.get_running_loop()
    start = loop.time()
    while where(sched, p) == UNSCHEDULABLE:
        await asyncio.sleep(10)
        clock.advance(10)
    assert where(sched, p) in (ACTIVE, BACKOFF)
    assert 300 < loop.time() - start <= 340  # upstream's 30-second leftover flush, after 5 minutes
    sched.stop()
    await task


async def test_profiles_can_be_added_and_removed_between_cycles() -> None:
    sched, _, _ = scheduler()
    stray = add_pod(sched, "stray", scheduler="batch")
    assert sched.outcomes["default/stray"].status == IGNORED
    assert where(sched, stray) == "absent"
    fw = sched.add_profile_spec(spec(scheduler_name="batch"), registry())
    assert fw.scheduler_name == "batch" and where(sched, stray) == ACTIVE
    sched.remove_profile("batch")
    assert where(sched, stray) == "absent" and sched.outcomes["default/stray"].status == IGNORED
    sched.add_profile_spec(spec(scheduler_name="batch"), registry())
    await sched.run_until_idle()
    assert sched.outcomes["default/stray"].status == SCHEDULED


async def test_gated_pod_is_not_tried_until_ungated() -> None:
    sched, _, _ = scheduler()
    from kubeberth.framework import PreEnqueuePlugin, Status

    class Gates(PreEnqueuePlugin):
        name = "Gates"

        def pre_enqueue(self, pod):  # type: ignore[no-untyped-def]
            return Status.unresolvable("gated") if pod.scheduling_gates else None

    fw = sched.profiles["default-scheduler"]
    fw.pre_enqueue_plugins = [Gates()]
    raw = pod_dict("g", cpu="1", schedulingGates=[{"name": "wait"}])
    g = sched.on_pod_add(raw)
    await sched.run_until_idle()
    assert where(sched, g) == "gated" and sched.outcomes["default/g"].attempts == 0
    sched.on_pod_update(pod_dict("g", cpu="1"))
    await sched.run_until_idle()
    assert sched.outcomes["default/g"].status == SCHEDULED


async def test_update_of_a_pod_being_bound_is_kept_for_later() -> None:
    sched, _, _ = scheduler(script={"permit": "wait"}, feed=False)
    p = add_pod(sched, "p")
    await sched.schedule_one()
    newer = pod_dict("p", cpu="1", labels={"v": "2"})
    sched.on_pod_update(newer)
    assert sched.queue.get(p.uid) is None and sched.cache.is_assumed(p.uid)  # not queued again
    assert sched.pending_pod(p.uid).labels == {"v": "2"}  # type: ignore[union-attr]


# ---- the bounded run simulate uses ----------------------------------------------------------------------
async def test_run_until_idle_gives_up_on_a_pod_that_keeps_failing() -> None:
    sched, _, clock = scheduler(script={"bind": "error"})
    start = clock.now()
    add_pod(sched, "p")
    cycles = await sched.run_until_idle(max_attempts=5)
    rec = sched.outcomes["default/p"]
    assert cycles == 5 and rec.attempts == 5
    assert (rec.status, rec.message) == (S_UNSCHEDULABLE, 'running Bind plugin "Script": bind failed')
    # Backoffs (an error: never popped early) expired by moving the fake clock past the end of the
    # one-second window each ends in; popped a 6th time after the last one, it is dropped.
    assert clock.now() - start == (1 + 1) + (2 + 1) + (4 + 1) + (8 + 1) + (10 + 1)
    assert where(sched, sched.pending_pod(rec.uid)) == "absent"


@pytest.mark.looptime
async def test_run_and_stop() -> None:
    sched, client, _ = scheduler()
    task = asyncio.ensure_future(sched.run())
    add_pod(sched, "p")
    for _ in range(20):
        await asyncio.sleep(0)
    sched.stop()
    await asyncio.wait_for(task, 1)
    await sched.wait_for_bindings()
    assert client.of("bind") == [("default/p", "n1")]


async def test_record_victims_is_offered_to_plugins() -> None:
    sched, _, _ = scheduler()
    preemptor = add_pod(sched, "hi", prio=10)
    victim = sched.on_pod_add(pod_dict("lo", node="n1"))
    sched.ctx.record_victims(preemptor, [victim])
    assert sched.outcomes["default/hi"].victims == ["default/lo"]
    assert (sched.outcomes["default/lo"].status, sched.outcomes["default/lo"].preempted_by) == (EVICTED, "default/hi")


async def test_finished_pods_hold_no_room() -> None:
    sched, _, _ = scheduler()
    done = pod_dict("done", cpu="2", node="n1")
    done["status"]["phase"] = "Succeeded"
    sched.on_pod_add(done)
    running = pod_dict("job", cpu="2", node="n1")
    sched.on_pod_add(running)
    p = add_pod(sched, "p")
    await sched.run_until_idle()
    assert where(sched, p) == UNSCHEDULABLE
    running["status"]["phase"] = "Failed"
    sched.on_pod_update(running)  # finishing frees the node like a deletion
    await sched.run_until_idle()
    assert sched.outcomes["default/p"].status == SCHEDULED
    assert sched.outcomes["default/done"].status == EXISTING and sched.cache.pod_count() == 1


async def test_replacing_or_removing_a_profile_closes_its_extenders() -> None:
    from kubeberth.config import parse_spec
    from kubeberth.scheduler import Scheduler

    closed: list[str] = []

    class Ext:
        def __init__(self, name: str) -> None:
            self.name = name

        async def close(self) -> None:
            closed.append(self.name)

    sched = Scheduler()
    first = sched.add_profile_spec(parse_spec({}))
    first.extenders = [Ext("first")]
    second = sched.add_profile_spec(parse_spec({}))
    second.extenders = [Ext("second")]
    await asyncio.gather(*sched._background)
    assert closed == ["first"]
    sched.remove_profile("default-scheduler")
    await asyncio.gather(*sched._background)
    assert closed == ["first", "second"]


# ---- the handle's pod lister -----------------------------------------------------------------
async def test_list_pods_gives_bound_assumed_and_pending_pods_once() -> None:
    sched, _, _ = scheduler(script={"permit": "wait"}, nodes={"n1": "2"})
    sched.on_pod_add(pod_dict("bound", cpu="1", node="n1"))
    add_pod(sched, "waiting")                       # assumed, then parked at Permit
    add_pod(sched, "pending", namespace="other")
    sched.on_pod_add({**pod_dict("done", node="n1"), "status": {"phase": "Succeeded"}})
    await sched.schedule_one()
    fw = sched.profiles["default-scheduler"]
    assert sched.cache.is_assumed(sched._uids["default/waiting"])
    assert sorted(p.key for p in fw.list_pods()) == ["default/bound", "default/waiting", "other/pending"]
    assert sorted(p.key for p in fw.list_pods("default")) == ["default/bound", "default/waiting"]
    assert [p.node_name for p in fw.list_pods("default") if p.name == "waiting"] == ["n1"]
    for wp in list(sched.ctx.waiting_pods._pods.values()):
        wp.reject("Script", "done")
    await sched.wait_for_bindings()
