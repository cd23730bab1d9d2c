"""A long run keeps its size: what the operator keeps about a pod goes once the pod is deleted
(issue 38; the long run itself is benchmarks/churn.py, the short one tests/cluster/test_churn.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, cast

import aiohttp
import pytest_asyncio
from kubernetes_asyncio.client import Configuration

from kubeberth.clock import FakeClock
from kubeberth.operator.api_retry import Api
from kubeberth.operator.app import OperatorApp
from kubeberth.operator.event_recorder import EventRecorder
from kubeberth.operator.reflector import ADDED, DELETED
from kubeberth.operator.retained import METRIC, app_counts, scheduler_counts
from kubeberth.operator.run import OperatorConfig
from kubeberth.scheduler.watched import watched_kinds

from .conftest import wait_for
from .emulator import make_node, make_pod
from .test_event_recorder import OpenApi, pod, sent

POD_KIND = next(k for k in watched_kinds() if k.kind == "Pod")


@pytest_asyncio.fixture
async def app() -> AsyncIterator[OperatorApp]:
    """An operator wired as `kubeberth run` wires it, not connected to anything."""
    app = OperatorApp(OperatorConfig(server="http://127.0.0.1:1", metrics_port=None))
    cfg = Configuration()
    cfg.host = "http://127.0.0.1:1"
    app.build(cfg)
    yield app
    assert app._rest is not None and app.api_client is not None
    await app._rest.close()
    await app.api_client.close()


def raw_pod(name: str, uid: str, **kw: Any) -> dict[str, Any]:
    raw = make_pod(name, **kw)
    raw["metadata"]["uid"] = uid
    raw["metadata"]["resourceVersion"] = "1"
    return raw


async def test_the_operator_forgets_the_record_of_a_deleted_pod(app: OperatorApp) -> None:
    """`kubeberth run` kept a PodRecord for every pod it ever saw (simulate's report of evicted pods):
    a record per pod deleted, for months."""
    raw = raw_pod("elsewhere", "uid-1", scheduler="someone-else")  # no profile: recorded as Ignored
    app.ingest.apply(POD_KIND, [(ADDED, raw)])
    assert "default/elsewhere" in app.scheduler.outcomes
    app.ingest.apply(POD_KIND, [(DELETED, raw)])
    assert app.scheduler.outcomes == {}
    assert scheduler_counts(app.scheduler)["scheduler.records"] == 0


async def test_the_api_client_and_the_explain_publisher_forget_a_deleted_pod(app: OperatorApp) -> None:
    """The bindings this process made (kept so that none is sent twice) and the digest of what an
    explained pod was last told were kept for the last 65536 / 4096 pods, deleted or not."""
    raw = raw_pod("web", "uid-web", node="n1")
    app.ingest.apply(POD_KIND, [(ADDED, raw)])
    app.client._bound["uid-web"] = "n1"  # as after its binding
    app.explain_publisher._last["uid-web"] = "digest"  # as after its explanation was published
    app.ingest.apply(POD_KIND, [(DELETED, raw)])
    counts = app_counts(app)
    assert counts["api_client.bound"] == 0
    assert counts["explain_publisher.last"] == 0
    assert counts["cache.pods"] == 0


async def test_the_rate_limit_buckets_of_quiet_objects_go_at_housekeeping() -> None:
    """A per-object token bucket was kept until 16384 others pushed it out: one per pod and reason
    ever reported. Refilled to its burst it is the same as a new one, and housekeeping drops it."""
    api = OpenApi()
    rec = EventRecorder(cast(Api, api), clock=FakeClock(), host="h", per_object_refill_seconds=300.0)
    rec.start()
    try:
        for name in ("a", "b"):
            rec.record(pod(name), "Normal", "Scheduled", f"Successfully assigned default/{name} to n1")
        await sent(rec)
        assert len(rec._buckets) == 2
        clock = cast(FakeClock, rec.clock)
        clock.advance(100.0)
        rec.record(pod("b"), "Normal", "Scheduled", "again")  # b's bucket is short of a token again
        await sent(rec)
        clock.advance(250.0)  # a's token is back (300 s), b's not yet (250 s since)
        rec.housekeep()
        assert [k[2] for k in rec._buckets] == ["b"]
        clock.advance(600.0)
        rec.housekeep()
        assert len(rec._buckets) == 0
        # A new event about an object whose bucket went: as if never limited (a full bucket).
        assert rec.record(pod("a"), "Normal", "Scheduled", "once more")
    finally:
        await rec.close()


async def test_retained_objects_on_metrics_back_to_zero_once_the_pods_are_deleted(cluster, start_operator) -> None:
    api = cluster.api
    api.create("nodes", make_node("n1", cpu="2"))
    for i in range(6):
        api.create("pods", make_pod(f"web-{i}", cpu="200m"))
    api.create("pods", make_pod("huge", cpu="8"))
    op = await start_operator()
    url = f"http://127.0.0.1:{op.app.metrics_port}/metrics"

    async def retained() -> dict[str, float]:
        async with aiohttp.ClientSession() as s, s.get(url) as r:
            text = await r.text()
        out = {}
        for line in text.splitlines():
            if line.startswith(METRIC + "{"):
                labels, value = line.rsplit(" ", 1)
                out[labels.split('structure="', 1)[1].rstrip('"}')] = float(value)
        return out

    def bound() -> bool:
        return all((api.get("pods", f"web-{i}", "default") or {}).get("spec", {}).get("nodeName") for i in range(6))

    await wait_for(bound, message="bound")
    during = await retained()
    assert during["cache.pods"] == 6
    for i in range(6):
        api.delete("pods", f"web-{i}", "default", grace=False)
    api.delete("pods", "huge", "default", grace=False)

    async def emptied() -> dict[str, float] | None:
        now = await retained()
        per_pod = ("cache.pods", "scheduler.pending", "scheduler.records", "scheduler.uids", "queue.unschedulable",
                   "queue.active", "queue.backoff", "nominator.pods", "api_client.bound", "status_writer.pending")
        return now if all(now[k] == 0 for k in per_pod) else None

    for _ in range(250):
        if await emptied():
            break
        await asyncio.sleep(0.02)
    end = await retained()
    assert end["scheduler.records"] == 0, end
    assert end["api_client.bound"] == 0, end
    assert end["cache.pods"] == 0 and end["cache.nodes"] == 1, end


class _Slotted:
    __slots__ = ("by_node", "name")

    def __init__(self) -> None:
        self.by_node = {"n1": 1, "n2": 2}
        self.name = "not a container"


def test_counted_containers_include_slots_and_helpers_of_plugins() -> None:
    from kubeberth.scheduler import Scheduler

    sched = Scheduler(clock=FakeClock())
    sched.ctx.shared_indexes["slotted"] = _Slotted()
    counts = scheduler_counts(sched)
    assert counts["shared_index.slotted.by_node"] == 2
    assert "shared_index.slotted.name" not in counts
    assert counts["cache.pods"] == 0 and counts["queue.unschedulable"] == 0 and counts["nominator.pods"] == 0


def test_a_pod_deleted_while_its_binding_is_under_way_leaves_no_record() -> None:
    """The binding cycle noted the pod's attempts on its record after the bind: for a pod deleted
    meanwhile, a record came back after its deletion had removed it, and stayed for good."""
    from kubeberth.plugins import plugin_registry
    from kubeberth.scheduler import Scheduler
    from kubeberth.testing import InMemoryClient
    from kubeberth.whatif.engine import build_profiles

    from ..builders import node_dict, pod_dict

    sched = Scheduler(clock=FakeClock(), keep_deleted_records=False)

    class DeletedDuringBind(InMemoryClient):
        async def bind(self, pod: Any, node_name: str) -> None:
            await super().bind(pod, node_name)
            sched.on_pod_delete(pod.key)  # the pod is deleted as it binds

    sched.ctx.client = DeletedDuringBind(sched)
    for fw in build_profiles([], sched.ctx, plugin_registry()).values():
        sched.set_profile(fw)
    sched.on_node_add(node_dict("n1", cpu="2"))
    sched.on_pod_add(pod_dict("web", cpu="100m"))
    asyncio.run(sched.run_until_idle())
    counts = scheduler_counts(sched)
    assert sched.outcomes == {}, sched.outcomes
    assert counts["cache.pods"] == 0 and counts["scheduler.uids"] == 0


def test_the_preemption_executors_state_is_counted() -> None:
    from kubeberth.plugins import plugin_registry
    from kubeberth.scheduler import Scheduler
    from kubeberth.whatif.engine import build_profiles

    sched = Scheduler(clock=FakeClock())
    for fw in build_profiles([], sched.ctx, plugin_registry()).values():
        sched.set_profile(fw)
    counts = scheduler_counts(sched)
    assert counts["plugin.DefaultPreemption.evaluator.executor._preempting"] == 0
    assert counts["plugin.DefaultPreemption.evaluator.executor._last_victim"] == 0
