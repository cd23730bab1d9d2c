"""scheduler_* metrics: upstream names, labels and buckets, served over HTTP."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Histogram, generate_latest

from kubeberth.metrics import BulkHistogram, SchedulerMetrics, exponential_buckets

from .conftest import wait_for
from .emulator import make_node, make_pod

BOUNDS = exponential_buckets(0.0001, 2, 12)


@given(st.lists(st.tuples(st.sampled_from(["PodAdd", "NodeAdd"]),
                          st.one_of(st.sampled_from(BOUNDS), st.floats(0, 1, allow_nan=False))), max_size=40))
def test_a_bulk_histogram_is_exposed_as_prometheus_clients_histogram(observations: list[tuple[str, float]]) -> None:
    """The per-pod histograms are BulkHistograms: the same text, sample for sample (values on a
    bound included), as prometheus-client's Histogram given the same observations."""
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    bulk = BulkHistogram("scheduler_x_seconds", "X.", ["event"], BOUNDS, ours)
    plain = Histogram("scheduler_x_seconds", "X.", ["event"], buckets=BOUNDS, registry=theirs)
    unlabelled = BulkHistogram("scheduler_y", "Y.", [], BOUNDS, ours)
    plain_unlabelled = Histogram("scheduler_y", "Y.", buckets=BOUNDS, registry=theirs)
    for event, value in observations:
        bulk.observe((event,), value)
        plain.labels(event).observe(value)
        unlabelled.observe((), value)
        plain_unlabelled.observe(value)
    assert sorted(generate_latest(ours).splitlines()) == sorted(generate_latest(theirs).splitlines())


def test_upstream_names_and_labels():
    m = SchedulerMetrics()
    m.schedule_attempt("scheduled", "default-scheduler", 0.003)
    m.schedule_attempt("unschedulable", "default-scheduler", 0.01)
    m.pending_pods("active", 3)
    m.preemption_attempt()
    m.preemption_victims(2)
    m.extension_point_duration("Filter", "Success", "default-scheduler", 0.0002)
    m.pod_scheduled(2, 1.5)
    assert m.sample("scheduler_schedule_attempts_total", {"result": "scheduled", "profile": "default-scheduler"}) == 1
    assert m.sample("scheduler_scheduling_attempt_duration_seconds_count",
                    {"result": "unschedulable", "profile": "default-scheduler"}) == 1
    assert m.sample("scheduler_scheduling_attempt_duration_seconds_bucket",
                    {"result": "scheduled", "profile": "default-scheduler", "le": "0.004"}) == 1
    assert m.sample("scheduler_pending_pods", {"queue": "active"}) == 3
    assert m.sample("scheduler_pending_pods", {"queue": "gated"}) == 0
    assert m.sample("scheduler_preemption_attempts_total") == 1
    assert m.sample("scheduler_preemption_victims_sum") == 2
    assert m.sample("scheduler_framework_extension_point_duration_seconds_count",
                    {"extension_point": "Filter", "status": "Success", "profile": "default-scheduler"}) == 1
    assert m.sample("scheduler_pod_scheduling_sli_duration_seconds_count", {"attempts": "2"}) == 1
    text = m.render().decode()
    assert "# TYPE scheduler_schedule_attempts_total counter" in text
    assert "# TYPE scheduler_pod_scheduling_sli_duration_seconds histogram" in text


def test_registries_are_separate():
    a, b = SchedulerMetrics(), SchedulerMetrics()
    a.preemption_attempt()
    assert b.sample("scheduler_preemption_attempts_total") == 0


def test_results_are_upstreams():
    with pytest.raises(ValueError, match="scheduled, unschedulable, error"):
        SchedulerMetrics().schedule_attempt("bound", "p", 0.1)


async def test_the_operator_serves_metrics_and_liveness(cluster, start_operator):
    from .conftest import free_port

    api = cluster.api
    api.create("nodes", make_node("n1", cpu="1"))
    api.create("pods", make_pod("ok", cpu="100m"))
    api.create("pods", make_pod("too-big", cpu="4"))
    liveness = free_port()
    op = await start_operator(liveness=f"http://127.0.0.1:{liveness}/healthz")
    await wait_for(lambda: (api.get("pods", "ok", "default") or {}).get("spec", {}).get("nodeName"))
    url = f"http://127.0.0.1:{op.app.metrics_port}/metrics"

    async def scrape() -> str:
        async with aiohttp.ClientSession() as s, s.get(url) as r:
            return await r.text()

    body = ""
    for _ in range(100):
        body = await scrape()
        if 'result="unschedulable"' in body:
            break
        await asyncio.sleep(0.05)
    assert 'scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 1.0' in body
    assert 'scheduler_schedule_attempts_total{profile="default-scheduler",result="unschedulable"}' in body
    assert 'scheduler_framework_extension_point_duration_seconds_count{extension_point="PreFilter"' in body
    assert "scheduler_pod_scheduling_sli_duration_seconds_bucket" in body
    assert "scheduler_preemption_attempts_total" in body
    assert "# TYPE kubeberth_plugin_errors_total counter" in body  # kubeberth's own, framework/isolation.py
    async with aiohttp.ClientSession() as s, s.get(f"http://127.0.0.1:{liveness}/healthz") as r:
        assert r.status == 200
        health = await r.json()
    assert health["scheduler"]["synced"] is True
    assert "default-scheduler" in health["scheduler"]["profiles"]


async def test_the_scheduler_reports_algorithm_latency_incoming_pods_cache_size_and_unschedulable_plugins():
    from kubeberth.clock import FakeClock
    from kubeberth.config import default_spec
    from kubeberth.scheduler import Scheduler
    from kubeberth.testing import InMemoryClient
    from tests.builders import node_dict, pod_dict

    m = SchedulerMetrics()
    sched = Scheduler(clock=FakeClock(), metrics=m)
    sched.ctx.client = InMemoryClient(sched)
    sched.add_profile_spec(default_spec())
    sched.on_node_add(node_dict("n1", cpu="2"))
    sched.on_node_add(node_dict("n2", cpu="2"))
    sched.on_pod_add(pod_dict("fits", cpu="1"))
    sched.on_pod_add(pod_dict("too-big", cpu="8"))
    await sched.run_until_idle(max_attempts=1)
    assert m.sample("scheduler_scheduling_algorithm_duration_seconds_count") == 1  # only successful runs
    assert m.sample("scheduler_queue_incoming_pods_total", {"queue": "active", "event": "UnscheduledPodAdd"}) == 2
    assert m.sample("scheduler_queue_incoming_pods_total",
                    {"queue": "unschedulable", "event": "ScheduleAttemptFailure"}) == 1
    assert m.sample("scheduler_cache_size", {"type": "nodes"}) == 2
    assert m.sample("scheduler_cache_size", {"type": "pods"}) == 1
    assert m.sample("scheduler_cache_size", {"type": "assumed_pods"}) == 0
    assert m.sample("scheduler_unschedulable_pods",
                    {"plugin": "NodeResourcesFit", "profile": "default-scheduler"}) == 1
    sched.on_pod_delete(pod_dict("too-big", cpu="8"))
    sched.report_pending_pods()
    assert m.sample("scheduler_unschedulable_pods",
                    {"plugin": "NodeResourcesFit", "profile": "default-scheduler"}) == 0


async def _evaluations_after(vectorise: bool, monkeypatch: pytest.MonkeyPatch | None = None,
                             sample_percent: int = 0) -> tuple[SchedulerMetrics, dict[tuple[str, str], float]]:
    """80 nodes (every third with 8 CPUs, the others 2); pods of 1, 4 and 80 CPUs, one attempt each."""
    from kubeberth.clock import FakeClock
    from kubeberth.config import default_spec
    from kubeberth.framework import plugin_metrics
    from kubeberth.scheduler import Scheduler
    from kubeberth.testing import InMemoryClient
    from tests.builders import node_dict, pod_dict

    if monkeypatch is not None:
        monkeypatch.setattr(plugin_metrics, "SAMPLE_PERCENT", sample_percent)
    m = SchedulerMetrics()
    sched = Scheduler(clock=FakeClock(), metrics=m)
    sched.ctx.client = InMemoryClient(sched)
    fw = sched.add_profile_spec(default_spec())
    fw.vectorise, fw.vector_min_nodes = vectorise, 0
    for i in range(80):
        sched.on_node_add(node_dict(f"n{i}", cpu="8" if i % 3 == 0 else "2"))
    for name, cpu in (("small", "1"), ("large", "4"), ("huge", "80")):
        sched.on_pod_add(pod_dict(name, cpu=cpu))
    await sched.run_until_idle(max_attempts=1)
    counts = {}
    for family in m.registry.collect():
        if family.name == "scheduler_plugin_evaluation":
            for s in family.samples:
                if s.name.endswith("_total"):
                    assert s.labels["profile"] == "default-scheduler"
                    counts[(s.labels["plugin"], s.labels["extension_point"])] = s.value
    return m, counts


@pytest.mark.parametrize("vectorise", [False, True], ids=["per-node", "vectorised"])
async def test_plugin_evaluations_count_each_call_as_upstream(vectorise):
    _, counts = await _evaluations_after(vectorise)
    # Filter: every node for each pod, up to the plugin that rejects it; NodeResourcesFit rejects
    # the huge pod everywhere and the large one on 53 nodes. The plugins whose PreFilter skipped
    # (no affinity, ports, volumes, spreading or features) are never called.
    for plugin in ("NodeName", "NodeUnschedulable", "TaintToleration", "NodeResourcesFit"):
        assert counts[(plugin, "Filter")] == 3 * 80
    for plugin in ("NodeAffinity", "NodePorts", "VolumeBinding", "PodTopologySpread", "InterPodAffinity"):
        assert (plugin, "Filter") not in counts
        assert counts[(plugin, "PreFilter")] == 3
    # Score: each feasible node of the two pods that fit (80 + 27), for the plugins PreScore kept.
    for plugin in ("NodeResourcesFit", "NodeResourcesBalancedAllocation", "ImageLocality", "TaintToleration"):
        assert counts[(plugin, "Score")] == 80 + 27
    assert (("PodTopologySpread", "Score") not in counts and ("InterPodAffinity", "Score") not in counts)
    assert counts[("PodTopologySpread", "PreScore")] == 2  # the huge pod never reaches PreScore


async def test_plugin_evaluations_agree_between_the_per_node_and_vectorised_paths():
    assert (await _evaluations_after(False))[1] == (await _evaluations_after(True))[1]


async def test_plugin_execution_durations_are_sampled_per_call(monkeypatch):
    m, _ = await _evaluations_after(False, monkeypatch, sample_percent=100)
    labels = {"plugin": "NodeResourcesFit", "extension_point": "Filter", "status": "Success"}
    assert m.sample("scheduler_plugin_execution_duration_seconds_count", labels) == 80 + 27
    rejected = {**labels, "status": "UnschedulableAndUnresolvable"}  # more than the node has at all
    assert m.sample("scheduler_plugin_execution_duration_seconds_count", rejected) == 53 + 80
    assert m.sample("scheduler_plugin_execution_duration_seconds_count",
                    {"plugin": "DefaultBinder", "extension_point": "Bind", "status": "Success"}) == 2
    assert m.sample("scheduler_plugin_execution_duration_seconds_bucket", {**labels, "le": "+Inf"}) == 80 + 27
    m, _ = await _evaluations_after(False, monkeypatch, sample_percent=0)
    assert m.sample("scheduler_plugin_execution_duration_seconds_count", labels) is None


def _buckets(start: float, factor: float, count: int) -> list[float]:
    return [start * factor**i for i in range(count)]


# kube-scheduler v1.37's metrics (pkg/scheduler/metrics/metrics.go): type, labels, buckets.
UPSTREAM = {
    "scheduler_schedule_attempts_total": ("counter", ["result", "profile"], None),
    "scheduler_scheduling_attempt_duration_seconds": ("histogram", ["result", "profile"], _buckets(0.001, 2, 15)),
    "scheduler_scheduling_algorithm_duration_seconds": ("histogram", [], _buckets(0.001, 2, 15)),
    "scheduler_framework_extension_point_duration_seconds": (
        "histogram", ["extension_point", "status", "profile"], _buckets(0.0001, 2, 12)),
    "scheduler_plugin_execution_duration_seconds": (
        "histogram", ["plugin", "extension_point", "status"], _buckets(0.00001, 1.5, 20)),
    "scheduler_plugin_evaluation_total": ("counter", ["plugin", "extension_point", "profile"], None),
    "scheduler_permit_wait_duration_seconds": ("histogram", ["result"], _buckets(0.001, 2, 15)),
    "scheduler_pending_pods": ("gauge", ["queue"], None),
    "scheduler_queued_entities": ("gauge", ["queue", "type"], None),
    "scheduler_queue_incoming_pods_total": ("counter", ["queue", "event"], None),
    "scheduler_queue_incoming_entities_total": ("counter", ["queue", "event", "type"], None),
    "scheduler_queueing_hint_execution_duration_seconds": (
        "histogram", ["plugin", "event", "hint"], _buckets(0.00001, 1.5, 20)),
    "scheduler_inflight_events": ("gauge", ["event"], None),
    "scheduler_unschedulable_pods": ("gauge", ["plugin", "profile"], None),
    "scheduler_pod_scheduled_after_flush_total": ("counter", [], None),
    "scheduler_pod_scheduling_sli_duration_seconds": ("histogram", ["attempts"], _buckets(0.01, 2, 20)),
    "scheduler_pod_scheduling_attempts": ("histogram", [], _buckets(1, 2, 5)),
    "scheduler_preemption_attempts_total": ("counter", [], None),
    "scheduler_preemption_victims": ("histogram", [], _buckets(1, 2, 7)),
    "scheduler_preemption_goroutines_duration_seconds": ("histogram", ["result"], _buckets(0.01, 2, 20)),
    "scheduler_preemption_goroutines_execution_total": ("counter", ["result"], None),
    "scheduler_cache_size": ("gauge", ["type"], None),
    "scheduler_event_handling_duration_seconds": ("histogram", ["event"], _buckets(0.0001, 2, 12)),
    "scheduler_goroutines": ("gauge", ["operation"], None),
}


def test_every_metric_has_upstreams_type_labels_and_buckets() -> None:
    """The registry against the table (also the README's): nothing missing, nothing extra, and
    each histogram's `le` bounds as upstream's."""
    m = SchedulerMetrics()
    # One sample of each labelled histogram, so that its buckets show.
    m.schedule_attempt("scheduled", "p", 0.01)
    m.extension_point_duration("Filter", "Success", "p", 0.01)
    m.plugin_execution_durations("X", "Filter", "Success", [0.01])
    m.permit_wait_duration("Success", 0.01)
    m.queueing_hint_duration("X", "NodeAdd", "Queue", 0.01)
    m.pod_scheduled(1, 0.01)
    m.scheduling_algorithm_duration(0.01)
    m.preemption_victims(1)
    m.preemption_goroutine("success", 0.01)
    m.event_handling_duration("NodeAdd", 0.01)
    m.goroutines("binding", 1)
    # And of every other labelled family, so that its labels show.
    m.cache_size(1, 1, 0)
    m.unschedulable_pods({("X", "p"): 1})
    m.inflight_events({"PodPopped": 1})
    m.queue_incoming_pod("active", "NodeAdd")
    m.plugin_evaluations("p", {("X", "Filter"): 1})
    m.plugin_error("X", "Score")
    seen = {}
    for family in m.registry.collect():
        name = family.name + ("_total" if family.type == "counter" else "")
        labels: list[str] = []
        bounds: list[float] = []
        for s in family.samples:
            if s.name.endswith("_bucket"):
                if s.labels["le"] != "+Inf":
                    bounds.append(float(s.labels["le"]))
                labels = [k for k in s.labels if k != "le"]
            elif not labels:
                labels = list(s.labels)
        seen[name] = (family.type, sorted(labels), sorted(set(bounds)) or None)
    want = {name: (kind, sorted(labels), buckets) for name, (kind, labels, buckets) in UPSTREAM.items()}
    # kubeberth's own metrics (kubeberth_*) have no upstream counterpart; every other one must match.
    assert seen.pop("kubeberth_api_forbidden_total") == ("counter", [], None)  # no sample yet: no labels
    assert seen.pop("kubeberth_plugin_errors_total") == ("counter", ["extension_point", "plugin"], None)
    assert set(seen) == set(want)
    for name, (kind, labels, buckets) in want.items():
        got_kind, got_labels, got_buckets = seen[name]
        assert got_kind == kind, name
        assert got_labels == labels, name
        if buckets is not None:
            assert got_buckets == pytest.approx(buckets), name


async def _evaluations_with_a_nomination(vectorise: bool) -> dict[tuple[str, str], float]:
    """As _evaluations_after, with a pending pod nominated to n0 (priority 10, fits nowhere; no
    PostFilter to clear its nomination): nodes with nominated pods take the two-pass filter."""
    from kubeberth.clock import FakeClock
    from kubeberth.config import SchedulingProfileSpec
    from kubeberth.scheduler import Scheduler
    from kubeberth.testing import InMemoryClient
    from tests.builders import node_dict, pod_dict

    m = SchedulerMetrics()
    sched = Scheduler(clock=FakeClock(), metrics=m)
    sched.ctx.client = InMemoryClient(sched)
    fw = sched.add_profile_spec(SchedulingProfileSpec.model_validate(
        {"plugins": {"postFilter": {"disabled": [{"name": "*"}]}}}))
    fw.vectorise, fw.vector_min_nodes = vectorise, 0
    for i in range(80):
        sched.on_node_add(node_dict(f"n{i}", cpu="8" if i % 3 == 0 else "2"))
    holder = pod_dict("holder", cpu="100", priority=10)
    holder["status"] = {"nominatedNodeName": "n0"}
    sched.on_pod_add(holder)
    for name, cpu in (("small", "1"), ("large", "4"), ("huge", "80")):
        sched.on_pod_add(pod_dict(name, cpu=cpu))
    await sched.run_until_idle(max_attempts=1)
    return {(s.labels["plugin"], s.labels["extension_point"]): s.value
            for family in m.registry.collect() if family.name == "scheduler_plugin_evaluation"
            for s in family.samples if s.name.endswith("_total")}


async def test_plugin_evaluations_count_the_two_pass_filter_of_nominated_nodes_alike() -> None:
    per_node = await _evaluations_with_a_nomination(False)
    assert per_node == await _evaluations_with_a_nomination(True)
    assert per_node[("NodeName", "Filter")] >= 4 * 80  # every node for each pod, n0 once more per pass


async def test_event_handling_and_binding_goroutines_through_the_scheduler() -> None:
    """Each watch event is timed under upstream's label (assigned or unscheduled pod, node,
    storage object), and the binding cycles in flight are the `binding` goroutines."""
    from kubeberth.clock import FakeClock
    from kubeberth.config import SchedulingProfileSpec
    from kubeberth.scheduler import Scheduler
    from kubeberth.testing import InMemoryClient
    from tests.builders import node_dict, pod_dict

    m = SchedulerMetrics()
    sched = Scheduler(clock=FakeClock(), metrics=m)
    sched.ctx.client = InMemoryClient(sched)
    sched.add_profile_spec(SchedulingProfileSpec())
    sched.on_node_add(node_dict("n1", cpu="2"))
    sched.on_pod_add(pod_dict("running", cpu="1", node="n1"))
    pending = sched.on_pod_add(pod_dict("p", cpu="1"))
    sched.on_object("PersistentVolumeClaim", {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                              "metadata": {"name": "c", "namespace": "default"}})
    await sched.run_until_idle()
    assert pending is not None
    sched.on_pod_delete(pending)
    sched.on_node_delete("n1")

    def count(event: str) -> float:
        return m.sample("scheduler_event_handling_duration_seconds_count", {"event": event})

    assert count("NodeAdd") == 1 and count("NodeDelete") == 1
    assert count("AssignedPodAdd") == 1 and count("UnscheduledPodAdd") == 1
    assert count("AssignedPodUpdate") == 1  # the binding, as the watch brings it back
    assert count("AssignedPodDelete") == 1
    assert count("PersistentVolumeClaimAdd") == 1
    assert m.sample("scheduler_goroutines", {"operation": "binding"}) == 0
