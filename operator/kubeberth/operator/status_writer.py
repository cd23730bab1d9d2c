"""Pod status patches off the scheduling loop, coalesced per pod.

kube-scheduler's handleSchedulingFailure writes the PodScheduled condition and the nomination
without holding up the next cycle (v1.37's asynchronous API calls). Here the scheduling loop
hands the patch over and goes on; a few workers send them. While a pod's patch is queued or in
flight, newer patches for the same pod merge into one that is sent after it, so a pod is never
patched out of order and a burst of failures of one pod costs one or two requests.

A pod's binding is ordered after its status patches, as kube-scheduler orders them: its binding
cycle writes the nominatedNodeName (NominatedNodeNameForExpectation) before WaitOnPermit and binds
only once that write returned (SchedulerAsyncAPICalls is off at v1.37; with it, the api
dispatcher's call queue keeps one call per pod and a binding waits for the pod's call in flight).
`binding(uid)` holds the binding back until the pod's patch in flight has returned and sends the
one still queued first, from the binding's own task (not behind the other pods' patches); patches
handed over while the binding is under way wait for it, and are dropped when it bound the pod: the
API server refuses a nominatedNodeName on a bound pod (422, "may not be set on pods that are
already bound to a node"), and a PodScheduled=False would contradict the binding.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
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
        # uid -> the event set when its patch in flight returns (only while a binding waits for it)
        self._returned: dict[str, asyncio.Event] = {}
        self._binding: Counter[str] = Counter()  # uids whose binding is under way
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self.sent = 0
        self.coalesced = 0
        self.dropped = 0  # handed over while the pod's binding was under way, and it bound the pod

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
        if uid not in self._in_flight and not self._binding[uid]:
            self._queue.put_nowait(uid)

    @contextlib.asynccontextmanager
    async def binding(self, uid: str) -> AsyncIterator[None]:
        """Around a pod's binding: entered once the pod's status patches handed over so far were
        sent (the one in flight waited for, the one queued sent now); those handed over inside wait,
        and are sent after a binding that failed, dropped after one that succeeded."""
        self._binding[uid] += 1
        bound = False
        try:
            while uid in self._in_flight:
                await self._returned.setdefault(uid, asyncio.Event()).wait()
            item = self._pending.pop(uid, None)
            if item is not None:
                await self._send(uid, item)
            yield
            bound = True
        finally:
            self._binding[uid] -= 1
            if self._binding[uid] <= 0:
                del self._binding[uid]
                if uid in self._pending and uid not in self._in_flight:
                    if bound:
                        del self._pending[uid]
                        self.dropped += 1
                    else:
                        self._queue.put_nowait(uid)

    async def _send(self, uid: str, item: tuple[Pod, Patch]) -> None:
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
            returned = self._returned.pop(uid, None)
            if returned is not None:
                returned.set()

    async def _work(self) -> None:
        while True:
            uid = await self._queue.get()
            try:
                if self._binding[uid]:
                    continue  # the binding sends it first, or decides after it
                item = self._pending.pop(uid, None)
                if item is None:
                    continue
                await self._send(uid, item)
                if uid in self._pending and not self._binding[uid]:
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
