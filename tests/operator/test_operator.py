"""The real operator (kopf + scheduler) against the emulated API server."""

from __future__ import annotations

import asyncio
from typing import Any

from .conftest import stays, wait_for
from .emulator import events_for, make_node, make_pod, series_count


def node_of(api: Any, name: str, namespace: str = "default") -> str:
    pod = api.get("pods", name, namespace)
    return str(((pod or {}).get("spec") or {}).get("nodeName") or "")


def condition(api: Any, name: str, ctype: str = "PodScheduled") -> dict[str, Any]:
    pod = api.get("pods", name, "default") or {}
    return next((c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") == ctype), {})


async def test_pending_pods_are_bound_with_events(cluster, start_operator):
    api = cluster.api
    api.create("nodes", make_node("n1", cpu="2"))
    api.create("nodes", make_node("n2", cpu="2"))
    api.create("pods", make_pod("running", cpu="1", node="n1"))
    for i in range(4):
        api.create("pods", make_pod(f"web-{i}", cpu="500m"))
    api.create("pods", make_pod("huge", cpu="8"))
    api.create("pods", make_pod("other", scheduler="someone-else"))
    await start_operator()

    await wait_for(lambda: all(node_of(api, f"web-{i}") for i in range(4)), message="web pods bound")
    for i in range(4):
        [event] = await wait_for(lambda i=i: events_for(api, f"web-{i}", "Scheduled"))
        assert event["note"] == f"Successfully assigned default/web-{i} to {node_of(api, f'web-{i}')}"
        assert (event["type"], event["action"]) == ("Normal", "Binding")
        assert event["reportingController"] == "default-scheduler"
        assert event["regarding"]["uid"] == api.get("pods", f"web-{i}", "default")["metadata"]["uid"]

    failed = await wait_for(lambda: events_for(api, "huge", "FailedScheduling"))
    assert failed[0]["type"] == "Warning"
    assert failed[0]["note"].startswith("0/2 nodes are available: 2 Insufficient cpu.")
    cond = await wait_for(lambda: condition(api, "huge").get("reason") == "Unschedulable" and condition(api, "huge"))
    assert cond["status"] == "False"
    assert cond["message"] == failed[0]["note"]
    assert node_of(api, "huge") == ""
    # Pods of another scheduler are not ours; the bound one is left where it is.
    assert node_of(api, "other") == ""
    assert not events_for(api, "other")
    assert node_of(api, "running") == "n1"
    assert not api.requests("POST", "pods", "binding") or all(
        r.name != "running" for r in api.requests("POST", "pods", "binding"))


async def test_preemption_nominates_deletes_victims_then_binds(cluster, start_operator):
    api = cluster.api
    api.pod_grace_seconds = 0.3  # victims terminate gracefully, as on a real node
    api.create("priorityclasses", {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                   "metadata": {"name": "high"}, "value": 1000})
    api.create("nodes", make_node("n1", cpu="2"))
    api.create("pods", make_pod("low-1", cpu="1", node="n1", priority=0))
    api.create("pods", make_pod("low-2", cpu="1", node="n1", priority=0))
    low_uids = {api.get("pods", n, "default")["metadata"]["uid"] for n in ("low-1", "low-2")}
    await start_operator()
    api.create("pods", make_pod("vip", cpu="1500m", priority_class="high"))

    await wait_for(lambda: (api.get("pods", "vip", "default") or {}).get("status", {}).get("nominatedNodeName")
                   == "n1", message="vip nominated to n1")
    deletes = await wait_for(lambda: api.requests("DELETE", "pods"))
    assert {(r.body or {}).get("preconditions", {}).get("uid") for r in deletes} <= low_uids
    victims = {r.name for r in deletes}
    assert victims and victims <= {"low-1", "low-2"}
    for victim in victims:
        preempted = await wait_for(lambda v=victim: events_for(api, v, "Preempted"))
        assert preempted[0]["note"].startswith("Preempted by pod ")
        assert preempted[0]["note"].endswith(" on node n1")
    await wait_for(lambda: node_of(api, "vip") == "n1", message="vip bound after the victims left")
    assert all(api.get("pods", v, "default") is None for v in victims)
    [binding] = [b for b in api.bindings if b[0] == "default/vip"]
    assert binding[2] == "n1"
    assert api.get("pods", "vip", "default")["status"].get("nominatedNodeName") in (None, "", "n1")


def profile(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile",
            "metadata": {"name": name}, "spec": spec}


MOST_ALLOCATED = {
    "schedulerName": "default-scheduler",
    "plugins": {"score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}],
                          "enabled": [{"name": "NodeResourcesFit", "weight": 5}]}},
    "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
        "type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}}}],
}


def accepted(api: Any, name: str) -> dict[str, Any]:
    obj = api.get("schedulingprofiles", name) or {}
    status = obj.get("status") or {}
    if status.get("observedGeneration") != obj.get("metadata", {}).get("generation"):
        return {}
    return next((c for c in status.get("conditions") or [] if c["type"] == "Accepted"), {})


async def test_editing_a_profile_changes_later_placements(cluster, start_operator):
    api = cluster.api
    api.create("nodes", make_node("busy", cpu="4"))
    api.create("nodes", make_node("idle", cpu="4"))
    api.create("pods", make_pod("base", cpu="2", memory="2Gi", node="busy"))
    api.create("schedulingprofiles", profile("default", {"schedulerName": "default-scheduler"}))
    await start_operator()
    await wait_for(lambda: accepted(api, "default").get("status") == "True", message="profile accepted")

    api.create("pods", make_pod("spread", cpu="500m"))
    await wait_for(lambda: node_of(api, "spread"))
    assert node_of(api, "spread") == "idle"  # LeastAllocated: the emptier node

    api.patch("schedulingprofiles", "default", {"spec": MOST_ALLOCATED})
    cond = await wait_for(lambda: accepted(api, "default").get("status") == "True"
                          and api.get("schedulingprofiles", "default")["status"]["observedGeneration"] == 2
                          and accepted(api, "default"))
    assert cond["reason"] == "Valid"
    api.create("pods", make_pod("packed", cpu="500m"))
    await wait_for(lambda: node_of(api, "packed"))
    assert node_of(api, "packed") == "busy"  # MostAllocated: the fuller node


async def test_an_invalid_profile_is_refused_and_the_last_good_one_runs(cluster, start_operator):
    api = cluster.api
    api.create("nodes", make_node("busy", cpu="4"))
    api.create("nodes", make_node("idle", cpu="4"))
    api.create("pods", make_pod("base", cpu="2", memory="2Gi", node="busy"))
    api.create("schedulingprofiles", profile("default", MOST_ALLOCATED))
    await start_operator()
    await wait_for(lambda: accepted(api, "default").get("status") == "True")

    bad = {**MOST_ALLOCATED, "plugins": {"score": {"enabled": [{"name": "NoSuchPlugin"}]}}}
    api.patch("schedulingprofiles", "default", {"spec": bad})
    cond = await wait_for(lambda: accepted(api, "default").get("status") == "False" and accepted(api, "default"))
    assert cond["reason"] == "Invalid"
    assert cond["message"].startswith("spec.plugins.score.enabled[0].name: ")
    assert "NoSuchPlugin" in cond["message"]
    refused = await wait_for(lambda: [e for e in api.list("events.events.k8s.io", "default")
                                      if e["reason"] == "ProfileRefused"])
    assert refused[0]["regarding"]["kind"] == "SchedulingProfile"

    # Scheduling goes on with the last good version (MostAllocated).
    api.create("pods", make_pod("next", cpu="500m"))
    await wait_for(lambda: node_of(api, "next"))
    assert node_of(api, "next") == "busy"

    # A second profile for an unknown scheduler name, invalid from the start: refused, nothing runs for it.
    api.create("schedulingprofiles", profile("typo", {"schedulerName": "batch", "podMaxBackoffSeconds": 0}))
    cond = await wait_for(lambda: accepted(api, "typo").get("status") == "False" and accepted(api, "typo"))
    assert cond["message"].startswith("spec.podMaxBackoffSeconds: ")
    api.create("pods", make_pod("batch-pod", scheduler="batch"))
    await stays(lambda: node_of(api, "batch-pod") == "", 0.3)

    # Fixing it makes it run, and its pods get scheduled.
    api.patch("schedulingprofiles", "typo", {"spec": {"podMaxBackoffSeconds": 5}})
    await wait_for(lambda: accepted(api, "typo").get("status") == "True")
    await wait_for(lambda: node_of(api, "batch-pod"))


async def test_deleting_the_default_scheduler_profile_returns_to_the_default(cluster, start_operator):
    api = cluster.api
    api.create("nodes", make_node("busy", cpu="4"))
    api.create("nodes", make_node("idle", cpu="4"))
    api.create("pods", make_pod("base", cpu="2", memory="2Gi", node="busy"))
    api.create("schedulingprofiles", profile("packing", MOST_ALLOCATED))
    await start_operator()
    await wait_for(lambda: accepted(api, "packing").get("status") == "True")
    api.create("pods", make_pod("a", cpu="500m"))
    await wait_for(lambda: node_of(api, "a") == "busy")

    api.delete("schedulingprofiles", "packing")
    await wait_for(lambda: api.get("schedulingprofiles", "packing") is None)
    # Wait until the operator has seen the deletion: a pod placed by the default profile proves it.
    for i in range(20):
        api.create("pods", make_pod(f"b{i}", cpu="100m"))
        await wait_for(lambda i=i: node_of(api, f"b{i}"))
        if node_of(api, f"b{i}") == "idle":
            break
    else:
        raise AssertionError("the default profile did not come back")


async def test_bind_conflicts_and_server_errors_recover_without_double_binding(cluster, start_operator):
    api = cluster.api
    api.create("nodes", make_node("n1", cpu="4"))
    # 409 once (e.g. another scheduler raced us): forget, requeue, bind on a later attempt.
    conflict = api.inject(method="POST", plural="pods", subresource="binding", name="raced", status=409)
    # 500 after the binding was made (a lost response): the retry meets 409, reads the pod back: done.
    lost = api.inject(method="POST", plural="pods", subresource="binding", name="lost", status=500,
                      after_apply=True)
    # 500 twice before anything happened: retried with backoff.
    flaky = api.inject(method="POST", plural="pods", subresource="binding", name="flaky", status=503, times=2)
    # A timeout: the answer comes after the client gave up (and is applied then).
    slow = api.inject(method="POST", plural="pods", subresource="binding", name="slow", status=None, delay=0.8)
    for name in ("raced", "lost", "flaky", "slow"):
        api.create("pods", make_pod(name))
    await start_operator(request_timeout=0.5)

    await wait_for(lambda: all(node_of(api, n) == "n1" for n in ("raced", "lost", "flaky", "slow")), timeout=15,
                   message="all pods bound")
    assert (conflict.hits, lost.hits, flaky.hits, slow.hits) == (1, 1, 2, 1)
    bound = [b[0] for b in api.bindings]
    assert sorted(bound) == sorted(f"default/{n}" for n in ("raced", "lost", "flaky", "slow"))  # once each
    for name in ("lost", "flaky", "slow"):
        await wait_for(lambda n=name: events_for(api, n, "Scheduled"))
    # The 409 made one attempt fail (FailedScheduling), the next one bound it.
    await wait_for(lambda: events_for(api, "raced", "Scheduled"))
    assert events_for(api, "raced", "FailedScheduling")
    await stays(lambda: len(api.bindings) == 4, 0.3)


def _bind_requests(api: Any, name: str) -> list[Any]:
    return [r for r in api.requests("POST", "pods", "binding") if r.name == name]


async def test_the_loop_keeps_scheduling_while_a_bind_hangs_or_fails(cluster, start_operator):
    api = cluster.api
    api.create("nodes", make_node("n1", cpu="8"))
    # One binding hangs for 4 s (then lands); another is answered 503 three times before it lands.
    hung = api.inject(method="POST", plural="pods", subresource="binding", name="hung", status=None, delay=4.0)
    failing = api.inject(method="POST", plural="pods", subresource="binding", name="failing", status=503, times=3)
    api.create("pods", make_pod("hung"))
    api.create("pods", make_pod("failing"))
    await start_operator(request_timeout=10.0)
    await wait_for(lambda: _bind_requests(api, "hung"), message="the hung binding was sent")
    for i in range(5):
        api.create("pods", make_pod(f"later-{i}"))

    def others_bound_while_hung() -> bool:
        return all(node_of(api, n) == "n1" for n in ("failing", *(f"later-{i}" for i in range(5))))

    await wait_for(others_bound_while_hung, timeout=3.5, message="the other pods bound while one binding hangs")
    assert node_of(api, "hung") == ""
    await wait_for(lambda: node_of(api, "hung") == "n1", timeout=10, message="the hung binding landed")
    assert (hung.hits, failing.hits) == (1, 3)
    assert sorted(b[0] for b in api.bindings) == sorted(
        f"default/{n}" for n in ("hung", "failing", *(f"later-{i}" for i in range(5))))


async def test_bindings_in_flight_are_bounded(cluster, start_operator):
    api = cluster.api
    api.create("nodes", make_node("n1", cpu="8"))
    api.inject(method="POST", plural="pods", subresource="binding", name="hung", status=None, delay=1.5)
    api.create("pods", make_pod("hung"))
    await start_operator(bind_concurrency=1)
    await wait_for(lambda: _bind_requests(api, "hung"), message="the hung binding was sent")
    api.create("pods", make_pod("next"))
    # The one slot is taken: the next pod is scheduled (assumed) but its binding waits for the slot.
    await stays(lambda: not _bind_requests(api, "next"), 0.8)
    await wait_for(lambda: node_of(api, "hung") == "n1" and node_of(api, "next") == "n1", timeout=10)


async def test_a_restarted_operator_picks_up_pending_pods_and_leaves_bound_ones(cluster, start_operator):
    api = cluster.api
    api.create("nodes", make_node("n1", cpu="4"))
    api.create("nodes", make_node("n2", cpu="4"))
    api.create("pods", make_pod("first"))
    op = await start_operator()
    await wait_for(lambda: node_of(api, "first"))
    assert await op.stop() == 0

    # While no scheduler runs: new pending pods, a pod bound by someone else, a pod going away.
    api.create("pods", make_pod("second"))
    api.create("pods", make_pod("third"))
    api.create("pods", make_pod("pinned", node="n2"))
    bindings_before = len(api.bindings)
    await start_operator()
    await wait_for(lambda: node_of(api, "second") and node_of(api, "third"))
    assert node_of(api, "pinned") == "n2"
    assert node_of(api, "first")
    bound_again = [b[0] for b in api.bindings[bindings_before:]]
    assert sorted(bound_again) == ["default/second", "default/third"]
    await stays(lambda: len(api.bindings) == bindings_before + 2, 0.3)


async def test_pods_and_nodes_are_only_watched(cluster, start_operator):
    api = cluster.api
    api.create("nodes", make_node("n1", cpu="1"))
    api.create("pods", make_pod("fits", cpu="500m"))
    api.create("pods", make_pod("does-not-fit", cpu="2"))
    api.create("pods", make_pod("bound", node="n1"))
    api.create("pods", make_pod("leaving", cpu="100m"))
    api.patch("pods", "leaving", {"metadata": {"finalizers": ["example.com/hold"]}}, namespace="default")
    api.delete("pods", "leaving", namespace="default")  # terminating: a deletionTimestamp, kept by the finalizer
    await start_operator()
    await wait_for(lambda: node_of(api, "fits"))
    await wait_for(lambda: events_for(api, "does-not-fit", "FailedScheduling"))
    api.patch("nodes", "n1", {"metadata": {"labels": {"zone": "a"}}})
    await stays(lambda: node_of(api, "leaving") == "", 0.3)

    # Every logged request is the operator's (the tests change objects in-process). Only bindings and
    # status patches touch pods; nothing at all touches nodes.
    writes = {(r.method, r.plural, r.subresource) for r in api.log
              if r.method != "GET" and r.plural in ("pods", "nodes")}
    assert writes == {("POST", "pods", "binding"), ("PATCH", "pods", "status")}
    assert not [r for r in api.requests("POST", "pods", "binding") if r.name in ("bound", "leaving")]
    for pod in api.list("pods"):
        meta = pod["metadata"]
        assert not [k for k in meta.get("annotations") or {} if "kopf" in k or "kubeberth" in k]
        assert meta.get("finalizers", []) in ([], ["example.com/hold"])
    for node in api.list("nodes"):
        assert not node["metadata"].get("annotations") and not node["metadata"].get("finalizers")


FAST_LEASE = dict(leader_elect=True, lease_namespace="default", lease_duration=1.0, renew_deadline=0.6,
                  retry_period=0.1)


def lease_holder(api: Any) -> str:
    return str(((api.get("leases", "kubeberth", "default") or {}).get("spec") or {}).get("holderIdentity") or "")


async def test_a_warm_standby_keeps_its_cache_writes_nothing_and_takes_over_on_a_clean_stop(cluster, start_operator):
    api = cluster.api
    api.create("nodes", make_node("n1", cpu="8"))
    first = await start_operator(**FAST_LEASE)
    await wait_for(lambda: lease_holder(api) == first.app.identity, message="the first replica leads")
    second = await start_operator(**FAST_LEASE)
    api.create("pods", make_pod("one"))
    await wait_for(lambda: node_of(api, "one"))
    api.create("nodes", make_node("n2", cpu="8"))
    standby = second.app.scheduler
    await wait_for(lambda: {"n1", "n2"} <= set(standby.cache.node_names())
                   and standby.cache.get_pod(api.get("pods", "one", "default")["metadata"]["uid"]) is not None,
                   message="the standby's cache follows the cluster")
    assert lease_holder(api) == first.app.identity and not second.app.elector.is_leader

    assert await first.stop() == 0  # releases the Lease on the way out
    api.create("pods", make_pod("two"))
    await wait_for(lambda: node_of(api, "two"), timeout=15, message="the standby took over")
    assert lease_holder(api) == second.app.identity
    assert [b[0] for b in api.bindings] == ["default/one", "default/two"]


async def test_a_leader_that_loses_its_lease_stops_writing_and_exits_to_restart(cluster, start_operator):
    api = cluster.api
    api.create("nodes", make_node("n1", cpu="8"))
    api.create("pods", make_pod("one"))
    op = await start_operator(**FAST_LEASE)
    await wait_for(lambda: node_of(api, "one"))
    api.patch("leases", "kubeberth", {"spec": {"holderIdentity": "someone-else"}}, "default")

    async def other_holds_it() -> None:  # another replica took the Lease, and keeps renewing it
        renewals = 0
        while op.alive:
            renewals += 1
            api.patch("leases", "kubeberth", {"spec": {"holderIdentity": "someone-else",
                                                       "renewTime": f"2026-01-01T00:00:{renewals % 60:02d}.000000Z"}},
                      "default")
            await asyncio.sleep(0.1)

    keeper = asyncio.get_running_loop().create_task(other_holds_it())
    await wait_for(lambda: not op.alive, timeout=10, message="the replica that lost its Lease exited")
    keeper.cancel()
    assert op.exit_code == 75
    api.create("pods", make_pod("two"))
    await asyncio.sleep(0.3)
    assert node_of(api, "two") == ""


async def test_a_410_answer_to_a_watch_request_relists_and_the_operator_lives_on(cluster, start_operator):
    api = cluster.api
    api.create("nodes", make_node("n1", cpu="4"))
    api.create("pods", make_pod("first"))
    # The first watch of pods and of nodes is refused with 410 (not an ERROR event in a stream).
    gone = [api.inject(method="GET", plural=plural, watch=True, status=410, message="too old resource version")
            for plural in ("pods", "nodes")]
    op = await start_operator()
    await wait_for(lambda: node_of(api, "first"), message="first bound")
    await wait_for(lambda: all(f.hits == 1 for f in gone), message="both watches refused")
    api.create("nodes", make_node("n2", cpu="4", labels={"late": "yes"}))
    second = make_pod("second")
    second["spec"]["nodeSelector"] = {"late": "yes"}
    api.create("pods", second)
    await wait_for(lambda: node_of(api, "second") == "n2", message="second bound on a node added after the 410")
    lists = [r for r in api.requests("GET", "pods") if not r.watch and r.name is None]
    assert len(lists) >= 2  # the initial list and the one after the 410
    assert op.alive and op.app.health()["synced"]


async def test_a_malformed_pod_gets_one_scheduler_error_and_is_retried_once_fixed(cluster, start_operator):
    api = cluster.api
    api.create("nodes", make_node("n1", cpu="4"))
    broken = make_pod("broken")
    broken["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "-500m"}}
    api.create("pods", broken)
    api.create("pods", make_pod("fine"))
    await start_operator()
    await wait_for(lambda: node_of(api, "fine"), message="the other pod is not held up")
    cond = await wait_for(lambda: condition(api, "broken").get("reason") == "SchedulerError"
                          and condition(api, "broken"))
    assert cond["status"] == "False"
    assert "spec.containers[0].resources.requests" in cond["message"] and "'-500m'" in cond["message"]
    [event] = await wait_for(lambda: events_for(api, "broken", "FailedScheduling"))
    assert event["type"] == "Warning" and event["note"] == cond["message"]
    await stays(lambda: series_count(events_for(api, "broken", "FailedScheduling")[0]) == 1, 0.5)
    # The owner fixes it (a pod's resources cannot be edited in a real cluster; the emulator allows it).
    api.patch("pods", "broken", {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]}},
              namespace="default")
    await wait_for(lambda: node_of(api, "broken") == "n1", message="bound once fixed")


async def test_a_pod_bound_by_a_rival_scheduler_is_dropped_quietly(cluster, start_operator):
    api = cluster.api
    api.create("nodes", make_node("n1", cpu="4"))
    api.create("nodes", make_node("n2", cpu="4"))
    # Another scheduler binds the pod first; our binding is refused as the API server refuses it.
    rival = api.inject(method="POST", plural="pods", subresource="binding", name="raced", status=409,
                       message='Operation cannot be fulfilled on pods/binding "raced": pod raced is already '
                               'assigned to node "n2"')
    api.create("pods", make_pod("raced"))
    await start_operator()
    await wait_for(lambda: rival.hits == 1, message="our binding was refused")
    api.patch("pods", "raced", {"spec": {"nodeName": "n2"}}, namespace="default")  # the rival's, seen late
    api.create("pods", make_pod("next"))
    await wait_for(lambda: node_of(api, "next"), message="scheduling goes on")
    await stays(lambda: not events_for(api, "raced", "FailedScheduling") and condition(api, "raced") == {}, 0.5)
    assert [b[0] for b in api.bindings] == ["default/next"]


async def test_a_burst_of_500_bindings_gets_every_scheduled_event(cluster, start_operator):
    api = cluster.api
    for i in range(5):
        api.create("nodes", make_node(f"n{i}", cpu="64", memory="64Gi", pods="200"))
    for i in range(500):
        api.create("pods", make_pod(f"burst-{i:03d}", cpu="10m"))
    await start_operator()
    await wait_for(lambda: len(api.bindings) == 500, timeout=60, message="all bound")
    events = "events.events.k8s.io"
    scheduled = await wait_for(lambda: len([e for e in api.list(events, "default") if e["reason"] == "Scheduled"])
                               == 500, timeout=30, message="a Scheduled event for every binding")
    assert scheduled
    names = {e["regarding"]["name"] for e in api.list(events, "default") if e["reason"] == "Scheduled"}
    assert names == {f"burst-{i:03d}" for i in range(500)}


async def test_the_initial_sync_runs_without_the_cyclic_collector(cluster, start_operator, monkeypatch):
    """The initial lists are applied with the collector off (operator/collector.py), which is back
    on, with the cache frozen, once they are."""
    import gc

    from kubeberth.operator.reflector import Informers

    seen: list[bool] = []
    original = Informers.sync

    async def sync(self: Informers) -> None:
        seen.append(gc.isenabled())
        await original(self)
        seen.append(gc.isenabled())

    monkeypatch.setattr(Informers, "sync", sync)
    was = gc.isenabled()
    gc.enable()
    try:
        cluster.api.create("nodes", make_node("n1"))
        cluster.api.create("pods", make_pod("p"))
        await start_operator()
        await wait_for(lambda: node_of(cluster.api, "p"), message="p bound")
        assert seen == [False, False] and gc.isenabled() and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        (gc.enable if was else gc.disable)()
