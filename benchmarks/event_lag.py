"""How long after its binding a pod's Scheduled event reaches the API server, as another client sees
it: one watch on pods (`peer.BindingWatch`) and one on Events with reason Scheduled, both from the
harness process, each noting the time it first saw a pod bound and first saw its Scheduled event.
The lag is the difference; both schedulers are measured the same way (kube-scheduler writes
events.k8s.io/v1 Events, kubeberth core/v1 ones: the API server serves both through /api/v1/events).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
from typing import Any

import aiohttp
from tests.cluster.kube import Kube


class ScheduledEventWatch:
    """Watches Events of reason Scheduled and notes when the first one about each pod was seen."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.seen_at: dict[str, float] = {}
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        rv = await self._list()
        self._task = asyncio.get_running_loop().create_task(self._run(rv))

    def _seen(self, obj: dict[str, Any]) -> None:
        involved = obj.get("involvedObject") or obj.get("regarding") or {}
        name = str(involved.get("name") or "")
        if name and obj.get("reason") == "Scheduled" and name not in self.seen_at:
            self.seen_at[name] = time.monotonic()

    async def _list(self) -> str:
        events = await self.kube.request("GET", "/api/v1/events", params={"fieldSelector": "reason=Scheduled"})
        for obj in events.get("items") or []:
            self._seen(obj)
        return str(events["metadata"]["resourceVersion"])

    async def _run(self, rv: str) -> None:
        forever = aiohttp.ClientTimeout(total=None, sock_read=None)
        while True:
            params = {"watch": "true", "resourceVersion": rv, "allowWatchBookmarks": "true",
                      "timeoutSeconds": "3600", "fieldSelector": "reason=Scheduled"}
            async with self.kube.session.get(self.kube.url + "/api/v1/events", params=params,
                                             timeout=forever) as resp:
                resp.raise_for_status()
                async for line in resp.content:
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        break
                    rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        self._seen(obj)
            await asyncio.sleep(0.1)
            rv = await self._list()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task


def quantile(values: list[float], q: float) -> float:
    """The nearest-rank quantile of sorted `values`."""
    return values[max(0, min(len(values) - 1, math.ceil(q * len(values)) - 1))]


def lag_summary(bound_at: dict[str, float], event_at: dict[str, float], prefix: str) -> dict[str, Any]:
    """p50/p99/max of event time minus binding time over the bound pods named `prefix*`, how many
    events came within 1 s of their binding, and how many bound pods have none."""
    lags = sorted(event_at[name] - t for name, t in bound_at.items()
                  if name.startswith(prefix) and name in event_at)
    missing = sum(1 for name in bound_at if name.startswith(prefix) and name not in event_at)
    if not lags:
        return {"event_lag_missing": missing}
    return {"event_lag_p50_ms": round(quantile(lags, 0.5) * 1000, 1),
            "event_lag_p99_ms": round(quantile(lags, 0.99) * 1000, 1),
            "event_lag_max_ms": round(lags[-1] * 1000, 1),
            "events_within_1s": sum(1 for lag in lags if lag <= 1.0),
            "event_lag_missing": missing}
