"""The API-server ClusterClient against the emulator: binding, status, deletion, events."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from kubernetes_asyncio.client import ApiClient, Configuration

from kubeberth.client import BindConflict
from kubeberth.clock import FakeClock
from kubeberth.model import Pod
from kubeberth.operator.api_client import (
    ApiUnavailable,
    EventRecorder,
    KubernetesClusterClient,
    RetryPolicy,
    TokenBucket,
)

from .conftest import Cluster
from .emulator import events_for, make_node, make_pod

FAST = RetryPolicy(attempts=4, initial=0.01, maximum=0.05, jitter=0.0)


@pytest_asyncio.fixture
async def client(cluster: Cluster) -> AsyncIterator[KubernetesClusterClient]:
    cluster.api.create("nodes", make_node("n1"))
    cluster.api.create("nodes", make_node("n2"))
    async with ApiClient(Configuration(host=cluster.url)) as api_client:
        c = KubernetesClusterClient(api_client, retry=FAST, request_timeout=0.3)
        await c.start()
        yield c
        await c.close()


def pod(cluster: Cluster, name: str, **kw: Any) -> Pod:
    return Pod(cluster.api.create("pods", make_pod(name, **kw)))


async def test_bind_sets_node_name_once(cluster, client):
    p = pod(cluster, "p")
    await client.bind(p, "n1")
    assert cluster.api.get("pods", "p", "default")["spec"]["nodeName"] == "n1"
    await client.bind(p, "n1")  # a duplicate call is not sent again
    assert len(cluster.api.requests("POST", "pods", "binding")) == 1


@pytest.mark.parametrize("fault, conflict", [
    pytest.param({"status": 409}, True, id="409-conflict"),
    pytest.param({"status": 500, "times": 2}, False, id="500-retried"),
    pytest.param({"status": 503, "after_apply": True}, False, id="500-after-binding-lost-response"),
    pytest.param({"status": None, "delay": 0.5}, False, id="timeout-then-applied"),
])
async def test_bind_failures(cluster, client, fault, conflict):
    p = pod(cluster, "p")
    cluster.api.inject(method="POST", plural="pods", subresource="binding", **fault)
    if conflict:
        with pytest.raises(BindConflict):
            await client.bind(p, "n1")
        assert cluster.api.bindings == []
    else:
        await client.bind(p, "n1")
        await asyncio.sleep(0.6)  # let a delayed request land
        assert [b[2] for b in cluster.api.bindings] == ["n1"]


async def test_bind_conflicts_when_bound_elsewhere_or_gone_or_replaced(cluster, client):
    p = pod(cluster, "p")
    cluster.api.patch("pods", "p", {"spec": {"nodeName": "n2"}}, namespace="default")
    with pytest.raises(BindConflict, match="already assigned"):
        await client.bind(p, "n1")
    cluster.api.delete("pods", "p", namespace="default", grace=False)
    with pytest.raises(BindConflict, match="gone"):
        await client.bind(p, "n1")
    pod(cluster, "p")  # same name, another pod (UID)
    with pytest.raises(BindConflict, match="UID"):
        await client.bind(p, "n1")


async def test_bind_gives_up_after_the_retry_budget(cluster, client):
    p = pod(cluster, "p")
    cluster.api.inject(method="POST", plural="pods", subresource="binding", status=500, times=None)
    with pytest.raises(ApiUnavailable):
        await client.bind(p, "n1")
    assert len(cluster.api.requests("POST", "pods", "binding")) == FAST.attempts


async def test_unschedulable_condition_and_nomination(cluster, client):
    p = pod(cluster, "p")
    await client.set_unschedulable(p, "0/2 nodes are available: 2 Insufficient cpu.")
    await client.set_nominated_node(p, "n2")
    await client.flush()
    assert len(cluster.api.requests("PATCH", "pods", "status")) == 1  # the two coalesced into one patch
    status = cluster.api.get("pods", "p", "default")["status"]
    assert status["nominatedNodeName"] == "n2"
    [cond] = status["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("PodScheduled", "False", "Unschedulable")
    assert cond["message"] == "0/2 nodes are available: 2 Insufficient cpu."
    # Nothing new to say: no request (upstream's podConditionHaveUpdate).
    fresh = Pod(cluster.api.get("pods", "p", "default"))
    before = len(cluster.api.log)
    await client.set_unschedulable(fresh, "0/2 nodes are available: 2 Insufficient cpu.")
    await client.set_nominated_node(fresh, "n2")
    await client.flush()
    assert len(cluster.api.log) == before
    await client.set_nominated_node(fresh, "")
    await client.flush()
    assert "nominatedNodeName" not in cluster.api.get("pods", "p", "default")["status"]
    assert cluster.api.requests("PATCH", "pods", "status")[-1].content_type.startswith(
        "application/strategic-merge-patch+json")


async def arrived(cluster: Cluster, method: str, subresource: str, count: int) -> None:
    """Until the emulator has received `count` such requests of pods."""
    while len(cluster.api.requests(method, "pods", subresource)) < count:
        await asyncio.sleep(0.005)


async def test_a_binding_goes_after_the_nomination_patch_of_its_pod(cluster, client, caplog):
    """A Permit-waiting pod's nomination (NominatedNodeNameForExpectation) and its binding: upstream
    writes the nomination and binds once that returned. Sent together, a slow patch landed after the
    binding and the API server refused it (422: nominatedNodeName on a bound pod)."""
    p = pod(cluster, "p")
    cluster.api.inject(method="PATCH", plural="pods", subresource="status", status=None, delay=0.2)
    await client.set_nominated_node(p, "n1")
    await arrived(cluster, "PATCH", "status", 1)  # the patch is in flight, held back by the server
    await client.bind(p, "n1")
    await client.flush()
    assert [(e.method, e.subresource, e.status) for e in cluster.api.log if e.subresource in ("status", "binding")] \
        == [("PATCH", "status", 200), ("POST", "binding", 201)]
    assert "Could not patch" not in caplog.text
    # Bound by this process: nothing more is written on its status.
    await client.set_nominated_node(p, "n2")
    await client.set_unschedulable(p, "too late")
    await client.flush()
    assert len(cluster.api.requests("PATCH", "pods", "status")) == 1
    bound = cluster.api.get("pods", "p", "default")
    assert bound["spec"]["nodeName"] == "n1" and "nominatedNodeName" not in bound["status"]


async def test_a_nomination_queued_behind_other_pods_is_sent_by_the_binding_first(cluster, client, caplog):
    p = pod(cluster, "p")
    others = [pod(cluster, f"o{i}") for i in range(client.status.workers)]
    cluster.api.inject(method="PATCH", plural="pods", subresource="status", status=None, delay=0.2,
                       times=len(others))
    for o in others:  # every worker busy with a slow patch
        await client.set_unschedulable(o, "0/2 nodes are available")
    await arrived(cluster, "PATCH", "status", len(others))
    await client.set_nominated_node(p, "n1")
    await client.bind(p, "n1")
    await client.flush()
    mine = [(e.method, e.subresource, e.status) for e in cluster.api.log
            if e.name == "p" and e.subresource in ("status", "binding")]
    assert mine == [("PATCH", "status", 200), ("POST", "binding", 201)]
    assert "Could not patch" not in caplog.text


@pytest.mark.parametrize("spec_edits", [0, 2], ids=["as-created", "spec-edited-twice"])
async def test_unschedulable_condition_carries_the_generation_the_scheduler_saw(cluster, client, spec_edits):
    """v1.37 (PodObservedGenerationTracking, GA): the PodScheduled condition's observedGeneration
    is the pod's metadata.generation as the scheduler read it (issue 29, finding 8)."""
    pod(cluster, "p")
    for i in range(spec_edits):
        cluster.api.patch("pods", "p", {"spec": {"activeDeadlineSeconds": 100 + i}}, "default")
    seen = Pod(cluster.api.get("pods", "p", "default"))
    assert seen.generation == 1 + spec_edits
    await client.set_unschedulable(seen, "0/2 nodes are available: 2 Insufficient cpu.")
    await client.flush()
    [cond] = cluster.api.get("pods", "p", "default")["status"]["conditions"]
    assert (cond["type"], cond["observedGeneration"]) == ("PodScheduled", 1 + spec_edits)


async def test_a_pod_without_a_generation_gets_no_observed_generation(cluster, client):
    """Upstream's observedGeneration is omitempty: a pod read without metadata.generation (0)."""
    raw = cluster.api.create("pods", make_pod("p"))
    del raw["metadata"]["generation"]
    await client.set_unschedulable(Pod(raw), "0/2 nodes are available: 2 Insufficient cpu.")
    await client.flush()
    [cond] = cluster.api.get("pods", "p", "default")["status"]["conditions"]
    assert cond["type"] == "PodScheduled" and "observedGeneration" not in cond


async def test_delete_victim_with_uid_precondition(cluster, client):
    pod(cluster, "victim", node="n1")
    cluster.api.patch("pods", "victim", {"spec": {"activeDeadlineSeconds": 60}}, "default")
    victim = Pod(cluster.api.get("pods", "victim", "default"))
    message = "team-sched: preempting to accommodate a higher priority pod"
    await client.delete_pod(victim, message)
    obj = cluster.api.get("pods", "victim", "default")
    assert obj["metadata"]["deletionTimestamp"]  # bound: it terminates gracefully
    assert [c["type"] for c in obj["status"]["conditions"]] == ["DisruptionTarget"]
    [cond] = obj["status"]["conditions"]
    assert (cond["status"], cond["reason"], cond["message"], cond["observedGeneration"]) == (
        "True", "PreemptionByScheduler", message, 2)
    await asyncio.sleep(0.3)
    assert cluster.api.get("pods", "victim", "default") is None
    await client.delete_pod(victim, message)  # already gone: fine

    replaced = pod(cluster, "victim", node="n1")
    await client.delete_pod(victim, message)  # the old UID: the new pod of that name is not touched
    assert cluster.api.get("pods", "victim", "default")["metadata"]["uid"] == replaced.uid
    assert "deletionTimestamp" not in cluster.api.get("pods", "victim", "default")["metadata"]


async def test_events_are_events_k8s_io_with_a_series_for_repeats(cluster, client):
    p = pod(cluster, "p")
    for _ in range(3):
        await client.record_event(p, "Warning", "FailedScheduling", "0/2 nodes are available: 2 Insufficient cpu.")
    await client.record_event(p, "Normal", "Scheduled", "Successfully assigned default/p to n1")
    await client.events.flush()
    [failed] = events_for(cluster.api, "p", "FailedScheduling")
    assert failed["apiVersion"] == "events.k8s.io/v1"
    assert failed["series"]["count"] == 2  # the first repeat is written; the next waits for the series' end
    assert failed["reportingController"] == "default-scheduler" and "source" not in failed
    assert failed["regarding"] == {"apiVersion": "v1", "kind": "Pod", "namespace": "default", "name": "p",
                                   "uid": p.uid, "resourceVersion": p.raw["metadata"]["resourceVersion"]}
    [scheduled] = events_for(cluster.api, "p", "Scheduled")
    assert scheduled["action"] == "Binding" and "series" not in scheduled
    assert len(cluster.api.requests("POST", "events.events.k8s.io")) == 2
    assert len(cluster.api.requests("PATCH", "events.events.k8s.io")) == 1
    assert cluster.api.requests(plural="events") == []  # nothing through core/v1


async def test_a_preempted_event_is_reported_by_the_preemptors_profile(cluster, client):
    """The victim's scheduler is default-scheduler; the profile that preempted it reports the
    event (source, reportingComponent and reportingInstance)."""
    victim = pod(cluster, "victim", node="n1")
    preemptor = pod(cluster, "vip", scheduler="team-sched")
    await client.record_event(victim, "Normal", "Preempted", f"Preempted by pod {preemptor.uid} on node n1",
                              reporter="team-sched")
    await client.events.flush()
    [event] = events_for(cluster.api, "victim", "Preempted")
    assert event["reportingController"] == "team-sched"
    assert event["reportingInstance"] == f"team-sched-{client.events.instance}"
    assert event["action"] == "Preempting"
    assert event["regarding"]["uid"] == victim.uid
    assert "related" not in event  # as kube-scheduler v1.37.2's


async def test_a_storm_of_failures_is_rate_limited(cluster):
    clock = FakeClock()
    async with ApiClient(Configuration(host=cluster.url)) as api_client:
        client = KubernetesClusterClient(api_client, retry=FAST, clock=clock)
        client.events = EventRecorder(client.api, clock=clock, per_object_burst=5, overall_burst=20, overall_qps=1)
        await client.start()
        pods = [pod(cluster, f"p{i}") for i in range(10)]
        for i in range(100):  # 100 distinct failures per pod (each at a new version of it), in no time
            for p in pods:
                await client.record_event(at_version(p, i), "Warning", "FailedScheduling", f"attempt {i}")
        await client.events.flush()
        writes = (len(cluster.api.requests("POST", "events.events.k8s.io"))
                  + len(cluster.api.requests("PATCH", "events.events.k8s.io")))
        assert writes == 20  # the overall burst; each pod also capped at 5
        assert client.events.dropped == 1000 - 20
        clock.advance(300)  # five minutes later each pod may report again
        await client.record_event(at_version(pods[0], 100), "Warning", "FailedScheduling", "later")
        await client.events.flush()
        assert [e["note"] for e in events_for(cluster.api, "p0")][-1] == "later"
        await client.close()


def at_version(p: Pod, version: int) -> Pod:
    return Pod({**p.raw, "metadata": {**p.raw["metadata"], "resourceVersion": f"{version}"}})


async def test_event_failures_never_reach_the_scheduler(cluster, client):
    p = pod(cluster, "p")
    cluster.api.inject(method="POST", plural="events.events.k8s.io", status=500, times=None)
    await client.record_event(p, "Normal", "Scheduled", "Successfully assigned default/p to n1")
    await client.events.flush()  # retried, then dropped with a warning
    assert events_for(cluster.api, "p") == []


def test_token_bucket():
    bucket = TokenBucket(burst=2, rate=0.5, now=0.0)
    assert [bucket.take(0.0) for _ in range(3)] == [True, True, False]
    assert bucket.take(1.0) is False
    assert bucket.take(2.0) is True


def test_retry_policy_delays_grow_and_cap():
    delays = list(RetryPolicy(attempts=6, initial=0.1, maximum=0.5, jitter=0.0).delays())
    assert delays == pytest.approx([0.1, 0.2, 0.4, 0.5, 0.5])


async def test_events_queued_before_the_lease_was_lost_are_not_sent(cluster):
    leader = True
    async with ApiClient(Configuration(host=cluster.url)) as api_client:
        client = KubernetesClusterClient(api_client, retry=FAST, may_write=lambda: leader)
        p = pod(cluster, "p")
        await client.record_event(p, "Normal", "Scheduled", "Successfully assigned default/p to n1")
        leader = False  # lost before the sender got to it
        await client.start()
        await client.flush()
        await client.close()
    assert events_for(cluster.api, "p") == [] and client.events.dropped == 1


async def test_annotate_pod_merges_into_the_pods_annotations(cluster, client):
    cluster.api.create("pods", make_pod("p"))
    cluster.api.patch("pods", "p", {"metadata": {"annotations": {"keep": "me", "gpu": "old"}}}, "default")
    p = Pod(cluster.api.get("pods", "p", "default"))
    await client.annotate_pod(p, {"alibabacloud.com/gpu-index": "0-1", "gpu": "new"})
    got = cluster.api.get("pods", "p", "default")["metadata"]["annotations"]
    assert got == {"keep": "me", "gpu": "new", "alibabacloud.com/gpu-index": "0-1"}
    [req] = cluster.api.requests("PATCH", "pods")
    assert (req.subresource, req.content_type) == ("", "application/merge-patch+json")
    gone = Pod(make_pod("gone"))
    await client.annotate_pod(gone, {"a": "b"})  # a pod that is gone: nothing to do
