"""The `--liveness` endpoint answers from the scheduler's state at each request: "synced" goes true
when the scheduler has synced (and schedules), not up to 10 s later as kopf's cached probes did."""

from __future__ import annotations

import time
from typing import Any

import aiohttp
import kopf
import pytest

from kubeberth.operator.liveness import LivenessServer, parse_endpoint

from .conftest import free_port, wait_for
from .emulator import make_node, make_pod


async def probe(url: str) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as s, s.get(url) as r:
        return r.status, (await r.json() if r.status == 200 else await r.text())


async def test_synced_is_said_as_soon_as_the_scheduler_has_synced(cluster, start_operator):
    api = cluster.api
    api.create("nodes", make_node("n1"))
    api.create("pods", make_pod("p"))
    # the initial list of nodes takes a while: the probe is asked before the sync
    api.inject(method="GET", plural="nodes", subresource="", status=None, delay=1.0, watch=False)
    url = f"http://127.0.0.1:{free_port()}/healthz"
    await start_operator(liveness=url)
    status, health = await probe(url)
    assert status == 200 and health["scheduler"]["synced"] is False
    await wait_for(lambda: api.bindings, message="p bound")
    bound_at = time.monotonic()
    while (await probe(url))[1]["scheduler"]["synced"] is not True:
        assert time.monotonic() - bound_at < 1.0, "still not synced 1 s after the scheduler bound a pod"
    assert "default-scheduler" in (await probe(url))[1]["scheduler"]["profiles"]


async def test_the_probes_of_modules_own_handlers_are_kopfs_and_added(cluster, start_operator, monkeypatch):
    """A module's `@kopf.on.probe` (kopf handlers of one's own that bring no plugin) still answers on
    the endpoint, beside the scheduler's."""
    registry = kopf.OperatorRegistry()

    @kopf.on.probe(registry=registry, id="audit")
    def audit_probe(**_: Any) -> int:
        return 42

    monkeypatch.setattr(kopf, "get_default_registry", lambda: registry)
    url = f"http://127.0.0.1:{free_port()}/healthz"
    await start_operator(liveness=url)
    status, health = await probe(url)
    assert status == 200 and health["audit"] == 42 and set(health["scheduler"]) >= {"synced", "leader"}


async def test_a_failing_probe_is_a_500_naming_it():
    def broken() -> dict[str, Any]:
        raise RuntimeError("the scheduling loop died: boom")

    server = LivenessServer(f"http://127.0.0.1:{free_port()}/healthz", broken)
    await server.start()
    try:
        status, text = await probe(f"http://127.0.0.1:{server.port}/healthz")
    finally:
        await server.stop()
    assert (status, text) == (500, "probe scheduler failed: the scheduling loop died: boom")


@pytest.mark.parametrize(("url", "message"), [
    ("https://0.0.0.0:8080/healthz", "not https scheme"),
    ("0.0.0.0:8080", "must be http://HOST:PORT/PATH"),
])
def test_a_liveness_url_that_cannot_be_served_is_refused(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_endpoint(url)
