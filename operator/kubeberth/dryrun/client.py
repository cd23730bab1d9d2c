"""A small client of the dry-run service (docs/guides/dry-run.md).

    async with DryRunClient("https://kubeberth-dryrun.kubeberth-system:10260", token=TOKEN, ca_file=CA) as c:
        status = await c.schedule(pod)                     # one pod
        status = await c.schedule(pod, copies=10)          # ten copies, one after another
        status = await c.schedule_gang(pod_group, pods)    # a gang
        print(status.schedulable, [p.node for p in status.pods])

`schedule_sync(...)` does the same without an event loop of one's own. Errors: `DryRunError` with
the HTTP status and the server's message (400 a malformed body, 403 not allowed, 429 overloaded,
...).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

import aiohttp

from .models import API_VERSION, KIND, DryRunStatus, path_for


class DryRunError(Exception):
    """The service refused or failed: `status` is the HTTP status, `message` its explanation."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


def _namespace_of(pods: Sequence[Mapping[str, Any]], namespace: str | None) -> str:
    if namespace:
        return namespace
    for pod in pods:
        ns = (pod.get("metadata") or {}).get("namespace")
        if ns:
            return str(ns)
    return "default"


class DryRunClient:
    """Posts DryRuns to the scheduler's dry-run port as the holder of `token` (a bearer token), the
    server's certificate checked against `ca_file` (or `ca_data`; `insecure=True` checks nothing)."""

    def __init__(self, url: str, *, token: str | None = None, ca_file: str | None = None,
                 ca_data: str | None = None, insecure: bool = False, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        self._ssl: ssl.SSLContext | bool
        if insecure:
            self._ssl = False
        elif ca_file or ca_data:
            self._ssl = ssl.create_default_context(cafile=ca_file, cadata=ca_data)
        else:
            self._ssl = True
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> DryRunClient:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
            self._session = aiohttp.ClientSession(headers=headers, timeout=self.timeout)
        return self._session

    async def post(self, namespace: str, spec: Mapping[str, Any]) -> DryRunStatus:
        """One DryRun with `spec` for pods of `namespace`: its status."""
        body = {"apiVersion": API_VERSION, "kind": KIND, "spec": dict(spec)}
        async with self._client().post(self.url + path_for(namespace), json=body, ssl=self._ssl) as resp:
            data = await resp.json(content_type=None)
            if resp.status != 201:
                message = data.get("message") if isinstance(data, dict) else None
                raise DryRunError(resp.status, str(message or data))
        return DryRunStatus.model_validate(data["status"])

    async def schedule(self, pod: Mapping[str, Any], *, copies: int = 1, explain: bool = False,
                       namespace: str | None = None) -> DryRunStatus:
        """Would `pod` (or `copies` copies of it, one after another) be placed now?"""
        return await self.post(_namespace_of([pod], namespace), {"pod": dict(pod), "copies": copies,
                                                                 "explain": explain})

    async def schedule_gang(self, pod_group: Mapping[str, Any] | None, pods: Sequence[Mapping[str, Any]], *,
                            explain: bool = False, namespace: str | None = None) -> DryRunStatus:
        """Would these pods (a gang of `pod_group`, when given) be placed now, one after another?"""
        spec: dict[str, Any] = {"pods": [dict(p) for p in pods], "explain": explain}
        if pod_group is not None:
            spec["podGroup"] = dict(pod_group)
        return await self.post(_namespace_of(pods, namespace), spec)


def schedule_sync(url: str, pod: Mapping[str, Any], *, copies: int = 1, explain: bool = False,
                  **options: Any) -> DryRunStatus:
    """DryRunClient.schedule without an event loop of one's own (`options`: the client's)."""
    async def run() -> DryRunStatus:
        async with DryRunClient(url, **options) as client:
            return await client.schedule(pod, copies=copies, explain=explain)
    return asyncio.run(run())
