"""simulate on the real loop: queue order, gated pods, preemption retries, metrics."""

from __future__ import annotations

import io
from typing import Any

from kubeberth.framework.context import NoMetrics
from kubeberth.whatif.simulate import simulate
from tests.builders import node_dict, pod_dict
from tests.scheduler.fakes import add_pod, scheduler


def _by_pod(objects: list[dict[str, Any]], seed: int = 0) -> dict[str, Any]:
    return {o.pod: o for o in simulate(objects, seed=seed, warn=io.StringIO())}


def _created(raw: dict[str, Any], ts: str) -> dict[str, Any]:
    raw["metadata"]["creationTimestamp"] = ts
    return raw


def test_queue_order_follows_creation_time_then_the_document() -> None:
    objects = [
        node_dict("n1", cpu="1"),
        _created(pod_dict("late", cpu="1"), "2024-01-01T00:00:10Z"),
        _created(pod_dict("early", cpu="1"), "2024-01-01T00:00:01Z"),
    ]
    got = _by_pod(objects)
    assert (got["default/early"].status, got["default/late"].status) == ("Scheduled", "Unschedulable")
    untimed = [node_dict("n1", cpu="1"), pod_dict("first", cpu="1"), pod_dict("second", cpu="1")]
    got = _by_pod(untimed)
    assert (got["default/first"].status, got["default/second"].status) == ("Scheduled", "Unschedulable")


def test_gated_pod_is_reported_with_its_gate() -> None:
    got = _by_pod([node_dict("n1"), pod_dict("g", schedulingGates=[{"name": "example.com/hold"}])])
    assert got["default/g"].status == "Unschedulable"
    assert got["default/g"].message == "waiting for scheduling gates: [example.com/hold]"


def test_output_keeps_input_order_and_statuses() -> None:
    objects = [node_dict("n1", cpu="2"), pod_dict("run", cpu="1", node="n1"), pod_dict("new", cpu="1"),
               pod_dict("other", scheduler="nobody")]
    out = simulate(objects, warn=io.StringIO())
    assert [(o.pod, o.status, o.node) for o in out] == [
        ("default/run", "Existing", "n1"), ("default/new", "Scheduled", "n1"), ("default/other", "Ignored", None)]


class Metrics(NoMetrics):
    def __init__(self) -> None:
        self.attempts: list[tuple[str, str]] = []
        self.scheduled: list[int] = []
        self.pending: dict[str, int] = {}

    def extension_point_duration(self, *args: Any) -> None:
        pass

    def schedule_attempt(self, result: str, profile: str, seconds: float) -> None:
        self.attempts.append((result, profile))

    def pod_scheduled(self, attempts: int, seconds: float) -> None:
        self.scheduled.append(attempts)

    def pending_pods(self, queue: str, n: int) -> None:
        self.pending[queue] = n


async def test_metrics_are_reported() -> None:
    sched, _, _ = scheduler()
    metrics = Metrics()
    sched.ctx.metrics = metrics
    add_pod(sched, "fits")
    add_pod(sched, "too-big", cpu="8")
    await sched.run_until_idle()
    assert sorted(metrics.attempts) == [("scheduled", "default-scheduler"), ("unschedulable", "default-scheduler")]
    assert metrics.scheduled == [1]
    assert metrics.pending == {"active": 0, "backoff": 0, "unschedulable": 1, "gated": 0}


def test_stale_diagnosis_is_refreshed_as_upstream_retries_leftover_pods() -> None:
    """A pod that failed before a lower-priority pod took the node's last pod slot is retried once
    upstream's podMaxInUnschedulablePodsDuration passes (no event of NodeResourcesFit's covers a
    pod being added): its message reports the node as it ends up."""
    objects = [node_dict("n1", cpu="4", pods="1"), pod_dict("big", cpu="5", priority=100),
               pod_dict("small", cpu="100m")]
    got = _by_pod(objects)
    assert got["default/small"].status == "Scheduled"
    assert got["default/big"].message.startswith("0/1 nodes are available: 1 Insufficient cpu, 1 Too many pods.")
