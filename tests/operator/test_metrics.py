"""scheduler_* metrics: upstream names, labels and buckets, served over HTTP."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from kubeberth.metrics import MetricsServer, SchedulerMetrics

from .conftest import wait_for
from .emulator import make_node, make_pod


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


async def test_served_over_http():
    m = SchedulerMetrics()
    m.schedule_attempt("error", "p", 0.1)
    server = MetricsServer(m, 0, "127.0.0.1")
    port = await server.start()
    try:
        async with aiohttp.ClientSession() as s, s.get(f"http://127.0.0.1:{port}/metrics") as r:
            assert r.status == 200
            assert r.headers["Content-Type"].startswith("text/plain")
            body = await r.text()
        assert 'scheduler_schedule_attempts_total{profile="p",result="error"} 1.0' in body
    finally:
        await server.stop()


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
    async with aiohttp.ClientSession() as s, s.get(f"http://127.0.0.1:{liveness}/healthz") as r:
        assert r.status == 200
        health = await r.json()
    assert health["scheduler"]["synced"] is True
    assert "default-scheduler" in health["scheduler"]["profiles"]


async def test_the_scheduler_reports_algorithm_latency_incoming_pods_cache_size_and_unschedulable_plugins():
    from kubeberth.clock import FakeClock
    from kubeberth.config import default_spec
    from kubeberth.scheduler import Scheduler
    from kubeberth.simulate import InMemoryClient
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
    assert m.sample("scheduler_queue_incoming_pods_total", {"queue": "active", "event": "UnschedulablePodAdd"}) == 2
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
