"""Readiness on the real API server: kubeberth says it is ready when it schedules, not later.

kube-scheduler's /readyz goes ready once its informers have synced (and leader election allows),
and its loop starts then. kubeberth's `/readyz` (the secure port) and the `synced` of its
`--liveness` endpoint must say so within a small margin of the first binding: they once said it
about 10 s after pods were bound whenever the liveness endpoint was asked before the sync (kopf's
probe cache). Each run appends its timings to $KUBEBERTH_READINESS_LOG when that is set.
"""

from __future__ import annotations

import asyncio
import os
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from .conftest import OperatorProcess, Operators
from .control_plane import ControlPlane
from .fault_proxy import FaultProxy
from .kube import Kube, node, pod
from .test_resilience import create_token, write_kubeconfig

pytestmark = pytest.mark.cluster

MARGIN = 1.0  # seconds between the first binding seen and "ready" (both polled every 20 ms)


def readyz(op: OperatorProcess) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{op.metrics_port}/readyz", timeout=2) as resp:
            return resp.status == 200
    except (OSError, urllib.error.HTTPError):
        return False


async def timings(kube: Kube, op: OperatorProcess, started: float) -> dict[str, float | None]:
    """When (s after `started`) the first pod was seen bound, the liveness probe said synced and
    /readyz said ok."""
    seen: dict[str, float | None] = {"first binding": None, "synced": None, "/readyz": None}
    while time.monotonic() - started < 90 and None in seen.values():
        assert op.process.alive(), op.process.tail(60)
        now = time.monotonic() - started
        if seen["synced"] is None and await asyncio.to_thread(op.synced):
            seen["synced"] = now
        if seen["/readyz"] is None and await asyncio.to_thread(readyz, op):
            seen["/readyz"] = now
        if seen["first binding"] is None and any(p["spec"].get("nodeName") for p in await kube.list("pods", "default")):
            seen["first binding"] = now
        await asyncio.sleep(0.02)
    if os.environ.get("KUBEBERTH_READINESS_LOG"):
        with open(os.environ["KUBEBERTH_READINESS_LOG"], "a") as f:
            f.write(f"{seen}\n")
    return seen


def assert_ready_with_the_first_binding(seen: dict[str, float | None]) -> None:
    assert None not in seen.values(), seen
    first = seen["first binding"]
    assert first is not None
    for what in ("synced", "/readyz"):
        at = seen[what]
        assert at is not None and at <= first + MARGIN, f"{what} said ready {at:.2f}s after start, " \
            f"the first pod was bound at {first:.2f}s: {seen}"


async def test_ready_when_the_first_pod_is_bound(kube: Kube, operators: Operators) -> None:
    await kube.create("nodes", node("n1", cpu="8"))
    for i in range(5):
        await kube.create("pods", pod(f"p{i}"))
    started = time.monotonic()
    op = operators.start(wait=False)
    assert_ready_with_the_first_binding(await timings(kube, op, started))


async def test_ready_when_the_first_pod_is_bound_after_a_start_the_api_server_refused(
        control_plane: ControlPlane, kube: Kube, operators: Operators, tmp_path: Path) -> None:
    """The probes are asked while the initial lists fail (503): not synced. Once the API server
    answers, ready goes with the first binding."""
    await kube.create("nodes", node("n1", cpu="8"))
    for i in range(5):
        await kube.create("pods", pod(f"p{i}"))
    with FaultProxy.started(control_plane.url, control_plane.ssl_context()) as proxy:
        proxy.fail(503)
        config = write_kubeconfig(tmp_path / "proxy.kubeconfig", server=proxy.url, user="kubeberth",
                                  token=create_token(control_plane))
        started = time.monotonic()
        op = operators.start(kubeconfig=config, wait=False)
        while op.health() is None:  # the liveness endpoint answers
            assert op.process.alive() and time.monotonic() - started < 60, op.process.tail(60)
            await asyncio.sleep(0.05)
        assert not op.synced() and not readyz(op)
        proxy.heal()
        assert_ready_with_the_first_binding(await timings(kube, op, started))
