"""The operator's side of the dry-run front (dryrun_front.py; docs/guides/dry-run.md).

`DryRunFront` starts the front (`python -m kubeberth.operator.dryrun_front FD`, a process of its
own) at the operator's start-up, hands it its configuration over the control channel, restarts
it when it dies (with a backoff of 1 s doubling to 30 s; back to 1 s once it has run a minute),
and stops it with the operator (the channel closed: it exits; SIGKILL after 5 s). When the
front asks for a copy of the scheduler, it forks a worker (kubeberth.dryrun.worker.fork_worker)
from the event loop, between two of its steps, and passes the worker's socket to the front; the
front, not this process, then sends it the requests. So the scheduler's loop pays for the fork
(a few milliseconds of page tables at 5,000 nodes, then the copy-on-write faults of what it
writes), at most once per --dry-run-refresh and only while dry runs come, and for nothing per
request. Workers are reaped here (they are this process's children) once the front has let
them go.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import sys
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import orjson

from ..dryrun.worker import ScopeOf, fork_worker, kill, reap, supported
from .dryrun_front import CONNECTION_FIELDS, MAX_MESSAGE, FrontConfig, send

if TYPE_CHECKING:
    from ..scheduler import Scheduler
    from .secure_serving import ComponentServer

logger = logging.getLogger("kubeberth.operator.dryrun")

FRONT_MODULE = "kubeberth.operator.dryrun_front"
START_TIMEOUT = 60.0  # seconds for the front to listen
STOP_TIMEOUT = 5.0
BACKOFF_INITIAL, BACKOFF_MAX, BACKOFF_RESET = 1.0, 30.0, 60.0
REAP_INTERVAL = 5.0


class FrontError(RuntimeError):
    """The front could not start: the message says why (its port is taken, ...)."""


def _package_root() -> str:
    """The directory `kubeberth` is imported from: the front runs the same code."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class DryRunFront:
    """The front process, supervised, and the forks it asks for (see the module's docstring)."""

    def __init__(self, scheduler: Callable[[], Scheduler], config: FrontConfig, *,
                 synced: asyncio.Event | None = None, scope_of: ScopeOf | None = None,
                 python: str = sys.executable, sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.scheduler = scheduler
        self.config = config
        self.synced = synced  # None: synced from the start
        self.scope_of = scope_of
        self.python = python
        self.sleep = sleep
        self.clock = clock
        self.port: int | None = None
        self.process: asyncio.subprocess.Process | None = None
        self.channel: socket.socket | None = None
        self.workers: set[int] = set()  # forked, not yet reaped
        self.starts = 0
        self.asked = 0  # the front's requests for a copy
        self.forks = 0
        self.fork_seconds = 0.0  # the loop's time spent forking, in all
        self._stopping = False
        self._supervisor: asyncio.Task[None] | None = None
        self._telling: asyncio.Task[None] | None = None
        self._reaping: asyncio.TimerHandle | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    async def start(self) -> int:
        """The front listening (its port), and supervised from now on; FrontError when it cannot."""
        port = await self._spawn()
        self._supervisor = asyncio.get_running_loop().create_task(self._supervise(),
                                                                  name="kubeberth dry-run front")
        return port

    async def _spawn(self) -> int:
        loop = asyncio.get_running_loop()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_package_root(), env.get("PYTHONPATH")) if p)
        try:
            proc = await asyncio.create_subprocess_exec(self.python, "-m", FRONT_MODULE, str(theirs.fileno()),
                                                        pass_fds=(theirs.fileno(),), stdin=asyncio.subprocess.DEVNULL,
                                                        env=env)
        except OSError as exc:
            ours.close()
            raise FrontError(f"the dry-run front could not be started: {exc}") from None
        finally:
            theirs.close()
        config = self.config.to_json()
        if self.port:  # a restart: the port it had (the one picked for port 0 included)
            config["port"] = self.port
        ours.setblocking(False)
        try:
            send(ours, {"config": config})
            data = await asyncio.wait_for(loop.sock_recv(ours, MAX_MESSAGE), START_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            data, why = b"", f"{type(exc).__name__}: {exc}"
        else:
            why = f"it exited ({await proc.wait()})" if not data else ""
        answer = orjson.loads(data) if data else {"failed": why}
        if "listening" not in answer:
            ours.close()
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
            raise FrontError(f"the dry-run front did not start: {answer.get('failed')}")
        self.port = int(answer["listening"])
        self.process, self.channel = proc, ours
        self.starts += 1
        loop.add_reader(ours.fileno(), self._on_message)
        self._telling = loop.create_task(self._tell_synced(ours), name="kubeberth dry-run front synced")
        logger.info("The dry-run front (pid %d) serves dry runs on port %d", proc.pid, self.port)
        return self.port

    async def _tell_synced(self, channel: socket.socket) -> None:
        if self.synced is not None:
            await self.synced.wait()
        if channel is self.channel:
            with contextlib.suppress(OSError):
                send(channel, {"synced": True})

    def _detach(self) -> None:
        """Let the current front go: its channel closed (it exits on that)."""
        if self._telling is not None:
            self._telling.cancel()
            self._telling = None
        if self.channel is not None:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(self.channel.fileno())
            self.channel.close()
            self.channel = None

    async def _supervise(self) -> None:
        backoff = BACKOFF_INITIAL
        while not self._stopping:
            if self.process is not None:
                started = self.clock()
                code = await self.process.wait()
                if self._stopping:
                    return
                self._detach()
                self.process = None
                if self.clock() - started > BACKOFF_RESET:
                    backoff = BACKOFF_INITIAL
                logger.warning("The dry-run front exited (%s); starting it again in %.0f s", code, backoff)
            await self.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX)
            if self._stopping:
                return
            try:
                await self._spawn()
            except FrontError as exc:
                logger.error("%s; trying again", exc)

    def _on_message(self) -> None:
        channel = self.channel
        if channel is None:
            return
        try:
            data = channel.recv(MAX_MESSAGE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # the front is gone: the supervisor sees it exit
            asyncio.get_running_loop().remove_reader(channel.fileno())
            return
        if orjson.loads(data).get("fork"):
            self.asked += 1
            self._fork(channel)

    def _fork(self, channel: socket.socket) -> None:
        """A worker for the front, forked now (between two steps of the loop)."""
        reap(self.workers)
        started = time.perf_counter()
        try:
            pid, sock, born = fork_worker(self.scheduler(), scope_of=self.scope_of, close=(channel.fileno(),))
        except OSError as exc:
            with contextlib.suppress(OSError):
                send(channel, {"error": f"the operator could not fork: {exc}"})
            return
        self.workers.add(pid)
        self.forks += 1
        self.fork_seconds += time.perf_counter() - started
        try:
            send(channel, {"worker": pid, "born": born}, [sock.fileno()])
        except OSError as exc:  # the front is gone; the worker sees its socket close and exits
            logger.debug("Could not hand the worker %d to the dry-run front: %s", pid, exc)
        finally:
            sock.close()
        if self._reaping is None:
            self._reaping = asyncio.get_running_loop().call_later(REAP_INTERVAL, self._reap)

    def _reap(self) -> None:
        self._reaping = None
        reap(self.workers)
        if len(self.workers) > 1:  # the current one lives on; the replaced ones exit soon
            self._reaping = asyncio.get_running_loop().call_later(REAP_INTERVAL, self._reap)

    async def stop(self) -> None:
        """The front stopped, the workers gone."""
        self._stopping = True
        if self._reaping is not None:
            self._reaping.cancel()
            self._reaping = None
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor
            self._supervisor = None
        proc, self.process = self.process, None
        self._detach()
        if proc is not None:
            try:
                await asyncio.wait_for(proc.wait(), STOP_TIMEOUT)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        deadline = time.monotonic() + STOP_TIMEOUT
        while self.workers and time.monotonic() < deadline:
            reap(self.workers)
            if self.workers:
                await asyncio.sleep(0.01)
        kill(self.workers)


async def start_front(app: Any, secure: ComponentServer | None) -> DryRunFront | None:
    """The dry-run front of the operator `app` (app.OperatorApp), listening; None when the dry runs
    are off (--dry-run-port=0, --dry-run-refresh=0) or cannot be (no fork). `secure`: the secure
    port, whose self-signed certificate the front serves too."""
    cfg = app.config
    if not cfg.dry_run_port or not cfg.dry_run_refresh:
        return None
    if not supported():
        logger.warning("No dry runs: they need fork() (Linux)")
        return None
    from .explain_publisher import namespace_detail

    objects = app.scheduler.ctx.objects

    def scope_of(namespace: str) -> tuple[str, list[str]]:  # run by the worker, on its copy
        names = [(ns.get("metadata") or {}).get("name") or "" for ns in objects.list("Namespace")]
        return namespace_detail(objects, namespace)[0], names

    pair = secure.self_signed if secure is not None else None
    front = DryRunFront(lambda: app.scheduler, FrontConfig(
        host=cfg.metrics_host, port=cfg.dry_run_port, serving=cfg.serving,
        connection={k: getattr(cfg, k) for k in CONNECTION_FIELDS}, refresh=cfg.dry_run_refresh,
        max_queue=cfg.dry_run_max_queue, verbose=cfg.verbose, debug=cfg.debug,
        keypair=(pair[0].decode(), pair[1].decode()) if pair else None),
        synced=app.ingest.synced, scope_of=scope_of)
    await front.start()
    return front
