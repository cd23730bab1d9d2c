"""The `--liveness` endpoint: kopf's probe answer (a JSON object, one key per probe handler), with
the scheduler's own (`scheduler`: synced, leader, profiles, pending) made at every request.

kopf's health reporter runs the probes at most once per 10 s and answers from that cache
meanwhile: a probe answered before the initial sync said `"synced": false` for up to 10 s more,
while the scheduler had synced and was binding pods (and said `true` as long after an outage
began). kube-scheduler's probes are made at each request; so is this one. The probes of modules'
own `@kopf.on.probe` handlers (README, "kopf handlers of your own") are still kopf's: when there
are any, kopf serves them on a loopback port of its own and this endpoint adds their answer (kopf's
cache holds for them), or passes kopf's error on.
"""

from __future__ import annotations

import logging
import socket
import urllib.parse
from collections.abc import Callable
from typing import Any

import aiohttp
import aiohttp.web

logger = logging.getLogger(__name__)

PROBE_ID = "scheduler"  # the key of the scheduler's answer (it was the id of kopf's probe handler)


def parse_endpoint(endpoint: str) -> tuple[str, int, str]:
    """(host, port, path) of an http:// URL, as kopf reads its liveness endpoint."""
    parts = urllib.parse.urlsplit(endpoint)
    if parts.scheme != "http":
        raise ValueError(f"--liveness {endpoint}: the URL must be http://HOST:PORT/PATH, not {parts.scheme or 'no'} "
                         "scheme")
    try:
        port = parts.port or 80
    except ValueError as exc:
        raise ValueError(f"--liveness {endpoint}: {exc}") from exc
    return parts.hostname or "localhost", port, parts.path or "/"


def loopback_endpoint() -> str:
    """A URL on a free loopback port, for kopf's own health reporter."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/healthz"


class LivenessServer:
    """Serves `endpoint`: `{"scheduler": probe(), **kopf's probes}`; a probe that raises is a 500
    naming it."""

    def __init__(self, endpoint: str, probe: Callable[[], dict[str, Any]], *, kopf_endpoint: str | None = None,
                 timeout: float = 10.0) -> None:
        self.host, self.port, self.path = parse_endpoint(endpoint)
        self.probe = probe
        self.kopf_endpoint = kopf_endpoint
        self.timeout = timeout
        self._runner: aiohttp.web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        app = aiohttp.web.Application()
        app.add_routes([aiohttp.web.get(self.path, self._get)])
        runner = aiohttp.web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        await aiohttp.web.TCPSite(runner, self.host, self.port).start()
        self._runner = runner
        logger.debug("Serving the liveness probe at http://%s:%d%s", self.host, self.port, self.path)

    async def stop(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _get(self, request: aiohttp.web.Request) -> aiohttp.web.Response:
        answer: dict[str, Any] = {}
        if self.kopf_endpoint is not None:
            if self._session is None:
                self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout))
            try:
                async with self._session.get(self.kopf_endpoint) as resp:
                    if resp.status != 200:
                        return aiohttp.web.Response(status=resp.status, text=await resp.text())
                    answer.update(await resp.json())
            except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
                return aiohttp.web.Response(status=500, text=f"kopf's probes did not answer: {exc!r}")
        try:
            answer[PROBE_ID] = self.probe()
        except Exception as exc:
            return aiohttp.web.Response(status=500, text=f"probe {PROBE_ID} failed: {exc}")
        return aiohttp.web.json_response(answer)
