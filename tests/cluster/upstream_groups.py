"""The PodGroupInitiallyScheduled condition kube-scheduler decided, which is not always the one it leaves.

Once a cycle scheduled a pod group, a later cycle of the same group (a basic group's leftover
pods are retried at once after a successful cycle; a group's pods can also come in several
cycles) must not take the True back: upstream's updatePodGroupCondition
(schedule_one_podgroup.go) returns early when the PodGroup already carries a True. But it reads
that PodGroup from its informer cache, and when the watch has not yet brought back the True the
earlier cycle patched (a few milliseconds), the later cycle patches False/Unschedulable over it.
The condition left on the API server then depends on that race; the one upstream decided does
not. (The patch is a strategic merge patch from the cached PodGroup: when the cache still holds
an earlier False, a failed cycle with another message sends only the message, which lands on the
server's True.) `ConditionWatch` records every condition each PodGroup carried (a watch started
before kube-scheduler), and `decided` applies upstream's rule to that history: the True the
scheduling cycle wrote stands, else the last condition. tests/conformance/fuzz-known.yaml
explains the same race for the fuzzer (podgroup-condition-written-from-a-lagging-cache).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from .kube import Kube, collection

CONDITION = "PodGroupInitiallyScheduled"


def condition_of(group: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in (group.get("status") or {}).get("conditions") or [] if c.get("type") == CONDITION),
                None)


def decided(history: list[dict[str, Any]], final: dict[str, Any] | None) -> dict[str, Any] | None:
    """The condition upstream decided for a PodGroup: the first True it carried, as the cycle that
    scheduled the group wrote it (a write after it comes from a cycle that read the PodGroup before
    its watch brought the True: a False, or a failed cycle's message patched onto the True), else
    `final`."""
    return next((c for c in history if c.get("status") == "True"), final)


def _key(obj: dict[str, Any]) -> str:
    return f"{obj['metadata'].get('namespace') or 'default'}/{obj['metadata']['name']}"


@dataclass
class ConditionWatch:
    """Every PodGroupInitiallyScheduled condition each PodGroup carried, in the order written (a
    watch from before kube-scheduler starts): `async with ConditionWatch(kube) as watch:`."""

    kube: Kube
    history: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    seen: dict[str, str] = field(default_factory=dict)  # key -> the last resourceVersion the watch brought
    _task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> ConditionWatch:
        listed = await self.kube.request("GET", collection("podgroups"))
        for g in listed.get("items") or []:
            self._saw(g)
        self._task = asyncio.get_running_loop().create_task(self._watch(listed["metadata"]["resourceVersion"]))
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def _saw(self, group: dict[str, Any]) -> None:
        key = _key(group)
        self.seen[key] = group["metadata"].get("resourceVersion", "")
        cond = condition_of(group)
        if cond is not None:
            self.history.setdefault(key, []).append(cond)

    async def _watch(self, resource_version: str) -> None:
        params = {"watch": "1", "resourceVersion": resource_version}
        async with self.kube.session.get(self.kube.url + collection("podgroups"), params=params,
                                         timeout=aiohttp.ClientTimeout(total=None)) as resp:
            async for line in resp.content:
                event = json.loads(line)
                if event.get("type") in ("ADDED", "MODIFIED"):
                    self._saw(event["object"])

    async def decided(self, groups: list[dict[str, Any]], timeout: float = 10.0) -> dict[str, dict[str, Any] | None]:
        """`groups` (as listed last) -> the condition upstream decided for each, once the watch
        has brought each group's listed version (and so every one before it)."""
        deadline = time.monotonic() + timeout
        while any(self.seen.get(_key(g)) != g["metadata"].get("resourceVersion") for g in groups):
            if self._task is not None and self._task.done():
                self._task.result()  # the watch's error, if it ended with one
                raise RuntimeError("the PodGroup watch ended")
            if time.monotonic() >= deadline:
                raise RuntimeError(f"the PodGroup watch did not catch up within {timeout:g}s")
            await asyncio.sleep(0.02)
        return {_key(g): decided(self.history.get(_key(g), []), condition_of(g)) for g in groups}
