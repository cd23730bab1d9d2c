"""Dry runs off the scheduler's event loop: worker processes that are forks of the operator.

The scheduling loop and a dry run would share one interpreter (one GIL): a dry run at 5,000 nodes
costs what a scheduling cycle costs, and 100 of them a second would take a large share of the
loop's time. So dry runs are answered by a child process: `fork_worker` (an `os.fork()` of the
operator) holds the scheduler exactly as it was at that instant: its cache with the assumed pods,
the nominations, the profiles and their plugins, the PodGroups. The child answers the requests
sent to it, one after the other, over its socket, on its copy (engine.py), and never touches the
network, the parent's event loop or its files; it exits when told, or when the other end of its
socket is gone. The parent's cost is the fork itself (page tables: a few milliseconds at 5,000
nodes) and the copy-on-write faults of the pages it writes after.

Two users: the dry-run front (operator/dryrun_front.py: a process of its own that serves the
HTTP side and is handed each new worker's socket, so that the scheduler's process pays for the
fork alone), and `DryRunWorkers` here, for the callers inside the operator (the Kueue admission
check, through service.py): at most `max_queue` requests waiting on the current worker, more get
`Overloaded` (429); a worker that is replaced finishes what it was sent, then exits.

Linux (fork) only; elsewhere `supported()` is False and the endpoint answers 501.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import signal
import socket
import struct
import sys
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from .engine import EXTENSION_POINTS, Scope, dry_run, parse_pods

if TYPE_CHECKING:
    from ..scheduler import Scheduler

logger = logging.getLogger(__name__)

DEFAULT_REFRESH = 2.0    # seconds: a copy of the cache older than this is replaced (docs/guides/dry-run.md)
NICE = 10                # the workers (and the dry-run front) give way to the scheduler for the CPU
DEFAULT_MAX_QUEUE = 32   # requests waiting on a worker; more are refused (429)
_HEADER = struct.Struct("!I")
T = TypeVar("T")


class Overloaded(Exception):
    """Too many dry runs waiting: try again later (429)."""


def supported() -> bool:
    return hasattr(os, "fork") and sys.platform.startswith("linux")


def _send(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(_HEADER.pack(len(payload)) + payload)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _complete(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to its end here and now: on an event loop of its own (the worker has none running),
    or, inside a running loop (tests), driven by hand: it must not wait on anything then."""
    if asyncio.events._get_running_loop() is None:
        loop = asyncio.new_event_loop()
        try:
            return loop.run_until_complete(coro)
        finally:
            loop.close()
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("the dry run waited on I/O inside a running event loop")


# The namespace -> (explanation detail, the cluster's namespaces): what a caller there may read,
# computed on the scheduler's copy when the request does not say.
ScopeOf = Callable[[str], tuple[str, list[str]]]


def answer(sched: Scheduler, request: dict[str, Any], born: float, *, live: bool = False,
           scope_of: ScopeOf | None = None) -> dict[str, Any]:
    """One request on `sched` (the worker's copy; `live`: the live scheduler, engine.py says how):
    the status of the DryRun, as a dict. The caller's scope is the request's (`detail`,
    `namespaces`), else `scope_of(namespace)`."""
    if "detail" not in request and scope_of is not None:
        detail, namespaces = scope_of(request["namespace"])
    else:
        detail, namespaces = request.get("detail", "counts"), request.get("namespaces", ())
    scope = Scope(request["namespace"], detail, namespaces)
    try:
        pods = parse_pods(sched, request["pods"])
    except ValueError as exc:
        return {"error": str(exc)}
    group = request.get("pod_group")
    if group is not None:  # the worker's copy only: GangScheduling and the pod-group index read it
        sched.on_object("PodGroup", group)
    try:
        answers = _complete(dry_run(sched, pods, scope=scope, explain_pods=request.get("explain", False), live=live))
    finally:
        if group is not None:
            meta = group.get("metadata") or {}
            sched.on_object_delete("PodGroup", f"{meta.get('namespace')}/{meta.get('name')}")
    scheduled = sum(1 for a in answers if a.node)
    need = request.get("min_count") or len(answers)
    return {"schedulable": scheduled >= need, "scheduled": scheduled,
            "pods": [a.model_dump(exclude_none=True) for a in answers],
            "snapshot": {"ageMs": round((time.monotonic() - born) * 1000, 3), "nodes": len(sched.snapshot)},
            "extensionPoints": EXTENSION_POINTS, "servedBy": "scheduler" if live else "worker"}


def _child(sock: socket.socket, sched: Scheduler, born: float, scope_of: ScopeOf | None,
           close: tuple[int, ...]) -> None:  # pragma: no cover (in the child)
    """The worker's life: requests in, answers out, until EOF; then _exit (no finalizer of the
    parent's objects runs here). `close`: the parent's descriptors the child must not hold (its
    channel to the dry-run front: the front must see it close when the parent is gone)."""
    code = 0
    try:
        for fd in close:
            with contextlib.suppress(OSError):
                os.close(fd)
        signal.set_wakeup_fd(-1)  # the parent's loop reads that fd: never wake it from here
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        asyncio.events._set_running_loop(None)
        logging.disable(logging.CRITICAL)
        os.nice(NICE)
        gc.freeze()  # the inherited objects are not traversed (fewer pages copied)
        sched.ctx.client = None
        sched.explain_pods = None
        sched.on_explained = None
        while True:
            try:
                (size,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size))
                request = orjson.loads(_recv_exact(sock, size))
            except EOFError:
                break
            if request.get("exit"):
                break
            try:
                reply = answer(sched, request, born, scope_of=scope_of)
            except Exception as exc:
                reply = {"error": f"dry run failed: {type(exc).__name__}: {exc}", "internal": True}
            _send(sock, orjson.dumps(reply))
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def fork_worker(sched: Scheduler, *, scope_of: ScopeOf | None = None, close: tuple[int, ...] = (),
                clock: Callable[[], float] = time.monotonic) -> tuple[int, socket.socket, float]:
    """A worker forked now, answering on `sched` as it is: (its pid, the socket to ask it on, when
    its copy was taken: `clock()`, time.monotonic by default, a clock every process of the
    machine shares on Linux). The caller reaps the pid once the worker has exited."""
    parent_sock, child_sock = socket.socketpair()
    born = clock()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        parent_sock.close()
        _child(child_sock, sched, born, scope_of, close)
    child_sock.close()
    return pid, parent_sock, born


def reap(pids: set[int]) -> None:
    """Forget the workers of `pids` that have exited (waited for, no zombie left)."""
    for pid in list(pids):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            pids.discard(pid)


class Worker:
    """The asking side of one forked worker: requests are sent in order, answered in order."""

    def __init__(self, pid: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, born: float) -> None:
        self.pid = pid
        self.reader = reader
        self.writer = writer
        self.born = born
        self.waiting = 0
        self.lock = asyncio.Lock()  # one exchange at a time on the socket

    @classmethod
    async def on(cls, sock: socket.socket, pid: int, born: float) -> Worker:
        """The worker answering on `sock` (its copy taken at `born`)."""
        reader, writer = await asyncio.open_connection(sock=sock)
        return cls(pid, reader, writer, born)

    async def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        self.waiting += 1
        try:
            async with self.lock:
                payload = orjson.dumps(request)
                self.writer.write(_HEADER.pack(len(payload)) + payload)
                await self.writer.drain()
                (size,) = _HEADER.unpack(await self.reader.readexactly(_HEADER.size))
                reply: dict[str, Any] = orjson.loads(await self.reader.readexactly(size))
                return reply
        finally:
            self.waiting -= 1

    async def retire(self) -> None:
        """Exit once what it was sent is answered."""
        async with self.lock:
            with contextlib.suppress(Exception):
                payload = orjson.dumps({"exit": True})
                self.writer.write(_HEADER.pack(len(payload)) + payload)
                await self.writer.drain()
            self.writer.close()


class DryRunWorkers:
    """The current worker and its replacement policy (see the module's docstring)."""

    def __init__(self, scheduler: Callable[[], Scheduler], *, refresh: float = DEFAULT_REFRESH,
                 max_queue: int = DEFAULT_MAX_QUEUE, clock: Callable[[], float] = time.monotonic) -> None:
        self.scheduler = scheduler
        self.refresh = refresh
        self.max_queue = max_queue
        self.clock = clock
        self.current: Worker | None = None
        self.forks = 0
        self.fork_seconds = 0.0  # the parent's time spent forking, in all
        self._retired: set[int] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        """The answer of a worker whose copy is at most `refresh` old when the request comes."""
        worker = self.current
        if worker is None or self.clock() - worker.born > self.refresh:
            worker = await self._spawn()
        if worker.waiting >= self.max_queue:
            raise Overloaded(f"{worker.waiting} dry runs are waiting")
        return await worker.ask(request)

    async def _spawn(self) -> Worker:
        started = time.perf_counter()
        pid, parent_sock, born = fork_worker(self.scheduler(), clock=self.clock)
        self.fork_seconds += time.perf_counter() - started
        self.forks += 1
        worker = await Worker.on(parent_sock, pid, born)
        old, self.current = self.current, worker
        if old is not None:
            self._retire(old)
        reap(self._retired)
        return worker

    def _retire(self, worker: Worker) -> None:
        self._retired.add(worker.pid)
        retire_later(worker, self._tasks)

    async def close(self) -> None:
        if self.current is not None:
            self._retire(self.current)
            self.current = None
        await settle(self._tasks)
        deadline = time.monotonic() + 5.0
        while self._retired and time.monotonic() < deadline:
            reap(self._retired)
            if self._retired:
                await asyncio.sleep(0.01)
        kill(self._retired)


def kill(pids: set[int]) -> None:
    """End the workers of `pids` still there (ours: forked by this process) and reap them."""
    for pid in list(pids):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        pids.discard(pid)


def retire_later(worker: Worker, tasks: set[asyncio.Task[None]]) -> None:
    """`worker` finishes what it was sent and exits, in a task kept in `tasks` until it is done."""
    task = asyncio.get_running_loop().create_task(worker.retire(), name="kubeberth dry-run worker retire")
    tasks.add(task)
    task.add_done_callback(tasks.discard)


async def settle(tasks: set[asyncio.Task[None]]) -> None:
    """Wait for every task of `tasks` (their failures are theirs: a retiring worker's error is moot)."""
    for task in list(tasks):
        with contextlib.suppress(Exception):
            await task
