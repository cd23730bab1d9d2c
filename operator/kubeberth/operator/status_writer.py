"""Pod status patches off the scheduling loop, coalesced per pod.

kube-scheduler's handleSchedulingFailure writes the PodScheduled condition and the nomination
without holding up the next cycle (v1.37's asynchronous API calls). Here the scheduling loop
hands the patch over and goes on; a few workers send them. While a pod's patch is queued or in
flight, newer patches for the same pod merge into one that is sent after it, so a pod is never
patched out of order and a burst of failures of one pod costs one or two requests.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ..model import Pod
from .background import drain_then_cancel

logger = logging.getLogger(__name__)

Patch = dict[str, Any]
Send = Callable[[Pod, Patch], Awaitable[None]]


def merge_status(old: Patch, new: Patch) -> Patch:
    """`new` over `old`: conditions merged by type (as the strategic merge patch does), other
    status fields replaced."""
    status = dict(old.get("status") or {})
    incoming = dict(new.get("status") or {})
    if "conditions" in incoming:
        by_type = {c["type"]: c for c in status.get("conditions") or []}
        by_type.update({c["type"]: c for c in incoming.pop("conditions") or []})
        status["conditions"] = list(by_type.values())
    status.update(incoming)
    return {"status": status}


class PodStatusWriter:
    def __init__(self, send: Send, *, workers: int = 8) -> None:
        self.send = send
        self.workers = workers
        self._pending: dict[str, tuple[Pod, Patch]] = {}
        self._in_flight: set[str] = set()
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self.sent = 0
        self.coalesced = 0

    def start(self) -> None:
        if not self._tasks:
            loop = asyncio.get_running_loop()
            self._tasks = [loop.create_task(self._work(), name=f"kubeberth status writer {i}")
                           for i in range(self.workers)]

    def submit(self, pod: Pod, patch: Patch) -> None:
        uid = pod.uid
        queued = self._pending.get(uid)
        if queued is not None:
            self._pending[uid] = (pod, merge_status(queued[1], patch))
            self.coalesced += 1
            return
        self._pending[uid] = (pod, patch)
        if uid not in self._in_flight:
            self._queue.put_nowait(uid)

    async def _work(self) -> None:
        while True:
            uid = await self._queue.get()
            try:
                item = self._pending.pop(uid, None)
                if item is None:
                    continue
                self._in_flight.add(uid)
                try:
                    await self.send(*item)
                    self.sent += 1
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # reported; a status patch must never stop the scheduler
                    logger.warning("Could not patch the status of %s: %s", item[0].key, exc)
                finally:
                    self._in_flight.discard(uid)
                    if uid in self._pending:
                        self._queue.put_nowait(uid)
            finally:
                self._queue.task_done()

    async def flush(self) -> None:
        await self._queue.join()

    async def close(self, timeout: float = 2.0) -> None:
        if not self._tasks:
            return
        await drain_then_cancel(self._tasks, self.flush, timeout)
        self._tasks = []
