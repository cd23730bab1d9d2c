"""Pods parked at Permit, waiting for every Wait-ing plugin to allow them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ..clock import Clock
from ..model import Pod
from .status import Code, Status


class WaitingPod:
    """A pod a Permit plugin holds (Code.WAIT) until every plugin that waits on it `allow`s it,
    one `reject`s it, or a plugin's timeout passes; `pending_plugins()` still wait.

    Timeouts run on the event loop's timers, or, given a `clock` (a replay's virtual clock), as
    deadlines on that clock that whoever drives the clock enforces (`next_deadline`, `expire`)."""

    def __init__(self, pod: Pod, plugin_timeouts: dict[str, float],
                 loop: asyncio.AbstractEventLoop | None = None, clock: Clock | None = None) -> None:
        self.pod = pod
        self._loop = loop or asyncio.get_event_loop()
        self._future: asyncio.Future[Status | None] = self._loop.create_future()
        self._timers: dict[str, asyncio.TimerHandle | None] = {}
        self._deadlines: dict[str, tuple[float, str]] = {}
        for plugin, timeout in plugin_timeouts.items():
            message = f"rejected due to timeout after waiting {_fmt(timeout)} at plugin {plugin}"
            if clock is not None:
                self._timers[plugin] = None
                self._deadlines[plugin] = (clock.now() + timeout, message)
            else:
                self._timers[plugin] = self._loop.call_later(timeout, self.reject, plugin, message)

    @property
    def waiting(self) -> bool:
        """Whether its wait is not over yet."""
        return not self._future.done()

    def next_deadline(self) -> float | None:
        """The earliest virtual-clock deadline of the plugins still waiting (None: none)."""
        times = [self._deadlines[p][0] for p in self._timers if p in self._deadlines]
        return min(times) if times and self.waiting else None

    def expire(self, now: float) -> bool:
        """Reject the pod if a plugin's virtual-clock deadline is at or before `now` (the first
        such plugin, by deadline then name); whether it was."""
        due = sorted((d, p) for p, (d, _) in self._deadlines.items() if p in self._timers and d <= now)
        if not due or not self.waiting:
            return False
        plugin = due[0][1]
        return self.reject(plugin, self._deadlines[plugin][1])

    @property
    def pending_plugins(self) -> list[str]:
        return list(self._timers)

    def allow(self, plugin: str) -> None:
        timer = self._timers.pop(plugin, None)
        if timer is not None:
            timer.cancel()
        self._deadlines.pop(plugin, None)
        if not self._timers and not self._future.done():
            self._future.set_result(None)

    def reject(self, plugin: str, message: str) -> bool:
        """Unschedulable: the pod goes back to the queue as rejected by `plugin`. False if its
        wait was already over."""
        return self._stop(Code.UNSCHEDULABLE, plugin, message)

    def preempt(self, plugin: str, message: str) -> bool:
        """Preempted while waiting: an error, not a rejection, so the pod is retried after its
        backoff rather than parked as unschedulable. False if its wait was already over."""
        return self._stop(Code.ERROR, plugin, message)

    def _stop(self, code: Code, plugin: str, message: str) -> bool:
        for t in self._timers.values():
            if t is not None:
                t.cancel()
        self._timers.clear()
        self._deadlines.clear()
        if self._future.done():
            return False
        self._future.set_result(Status(code, message, plugin=plugin))
        return True

    async def wait(self) -> Status | None:
        return await self._future


def _fmt(seconds: float) -> str:
    """Go's time.Duration String() for whole or fractional seconds: 10s, 1.5s, 5m0s, 1h0m0s."""
    if seconds < 1:
        return f"{seconds * 1000:g}ms"
    if seconds < 60:
        return f"{seconds:g}s"
    whole = int(seconds)
    frac = seconds - whole
    h, rest = divmod(whole, 3600)
    m, sec = divmod(rest, 60)
    secs = f"{sec + frac:g}s"
    return (f"{h}h{m}m" if h else f"{m}m") + secs


class WaitingPods:
    """uid -> WaitingPod, shared by the profiles of one scheduler. `virtual_clock`: when set (a
    replay), Permit timeouts are deadlines on that clock (`next_deadline`, `expire_due`), not
    the event loop's timers."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}
        self.virtual_clock: Clock | None = None

    def next_deadline(self) -> float | None:
        """The earliest virtual-clock Permit deadline among the waiting pods (None: none)."""
        times = [t for t in (wp.next_deadline() for wp in self._pods.values()) if t is not None]
        return min(times) if times else None

    def expire_due(self, now: float) -> int:
        """Reject the pods whose virtual-clock deadline has come; how many were."""
        return sum(1 for wp in list(self._pods.values()) if wp.expire(now))

    def parked(self) -> int:
        """How many pods still wait at Permit."""
        return sum(1 for wp in self._pods.values() if wp.waiting)

    def add(self, wp: WaitingPod) -> None:
        self._pods[wp.pod.uid] = wp

    def remove(self, uid: str) -> None:
        self._pods.pop(uid, None)

    def get(self, uid: str) -> WaitingPod | None:
        return self._pods.get(uid)

    def iterate(self, fn: Callable[[WaitingPod], None]) -> None:
        for wp in list(self._pods.values()):
            fn(wp)

    def __len__(self) -> int:
        return len(self._pods)
