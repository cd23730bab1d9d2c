"""The dry-run front: the process that serves the dry runs' HTTP side (docs/guides/dry-run.md).

    python -m kubeberth.operator.dryrun_front FD

Started by the operator (dryrun_supervisor.py) with FD, its end of a SOCK_SEQPACKET socket pair:
the control channel. It serves `POST /apis/kubeberth.io/v1alpha1/namespaces/{ns}/dryruns` on
--dry-run-port with the secure port's server (secure_serving.make_server: the same TLS
certificate and options, the same delegated authentication), the handler of dryrun_endpoint.py
(the SubjectAccessReview on `dryruns.kubeberth.io`, the body's validation, the status codes),
and the probes. It reaches the API server itself (TokenReviews, SubjectAccessReviews, the
ConfigMap of the client CAs) with the operator's connection settings. Each request, parsed,
goes to a worker: a fork of the operator answering on its copy of the scheduler
(kubeberth.dryrun.worker), whose socket the operator hands over the control channel. So the
scheduler's process does nothing per request; it forks.

The control channel, one JSON object per message:
- operator -> front: `{"config": ...}` first (FrontConfig), `{"synced": true}` once the
  scheduler has listed the cluster, `{"worker": pid, "born": t}` with the worker's socket
  attached (SCM_RIGHTS), `{"error": "..."}` when a fork failed;
- front -> operator: `{"listening": port}` or `{"failed": "..."}` once, then `{"fork": true}`
  when it wants a fresher copy.
The front exits when the channel closes (the operator stopped or died) or on SIGTERM.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import orjson

from ..dryrun.worker import DEFAULT_REFRESH, NICE, Overloaded, Worker, retire_later, settle
from .options import OperatorConfig
from .serving_options import ServingOptions

logger = logging.getLogger("kubeberth.operator.dryrun_front")

STALE_FACTOR = 5.0  # a copy older than this many refresh periods is not used: the request waits for a new one
FORK_TIMEOUT = 30.0  # seconds a request waits for a copy of the scheduler
MAX_MESSAGE = 1 << 20
# The operator's settings the front needs to reach the API server as the operator does.
CONNECTION_FIELDS = ("kubeconfig", "context", "in_cluster", "server", "request_timeout")


@dataclass
class FrontConfig:
    """What the front is told at start (the first control message)."""

    host: str
    port: int
    serving: ServingOptions = field(default_factory=ServingOptions)
    connection: dict[str, Any] | None = None  # OperatorConfig's CONNECTION_FIELDS; None: no API server
    keypair: tuple[str, str] | None = None  # the secure port's self-signed certificate and key (PEM)
    refresh: float = DEFAULT_REFRESH
    max_queue: int = 32
    verbose: bool = False
    debug: bool = False

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FrontConfig:
        options: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v
                                   for k, v in (data.pop("serving") or {}).items()}
        keypair = data.pop("keypair", None)
        return cls(serving=ServingOptions(**options), keypair=(keypair[0], keypair[1]) if keypair else None, **data)


def send(channel: socket.socket, message: dict[str, Any], fds: Sequence[int] = ()) -> None:
    """One control message (with `fds` attached)."""
    payload = orjson.dumps(message)
    if fds:
        socket.send_fds(channel, [payload], list(fds))
    else:
        channel.send(payload)


def receive(channel: socket.socket) -> tuple[dict[str, Any] | None, list[int]]:
    """One control message and the descriptors attached; (None, []) when the channel is closed."""
    data, fds, _, _ = socket.recv_fds(channel, MAX_MESSAGE, 4)
    if not data:
        for fd in fds:
            socket.close(fd)
        return None, []
    return orjson.loads(data), fds


class Copies:
    """The front's answerer: the current worker (a copy of the scheduler), replaced in the background.

    A request that finds the copy older than `refresh` asks the operator for a new one and is
    answered from the old one meanwhile; one that finds none, or one older than `stale`, waits for
    the new one. A replaced worker answers what it was sent, then exits. At most `max_queue`
    requests wait on a worker; more are Overloaded (429)."""

    def __init__(self, ask_fork: Callable[[], None], *, refresh: float, max_queue: int,
                 stale: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.ask_fork = ask_fork
        self.refresh = refresh
        self.max_queue = max_queue
        self.stale = stale if stale is not None else STALE_FACTOR * refresh
        self.clock = clock
        self.synced = False
        self.current: Worker | None = None
        self.pending: asyncio.Future[Worker] | None = None
        self.workers = 0  # received, in all
        self.served = 0
        self._tasks: set[asyncio.Task[None]] = set()

    def _want(self) -> asyncio.Future[Worker]:
        if self.pending is None:
            logger.debug("Asking the operator for a new copy of the scheduler")
            self.pending = asyncio.get_running_loop().create_future()
            self.ask_fork()
        return self.pending

    async def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        """The answer of the current copy (see the class)."""
        worker = self.current
        age = self.clock() - worker.born if worker is not None else float("inf")
        if age > self.refresh:
            wanted = self._want()
            if age > self.stale:
                try:
                    worker = await asyncio.wait_for(asyncio.shield(wanted), FORK_TIMEOUT)
                except TimeoutError:
                    raise RuntimeError(f"no copy of the scheduler within {FORK_TIMEOUT:.0f} s") from None
        assert worker is not None
        if worker.waiting >= self.max_queue:
            raise Overloaded(f"{worker.waiting} dry runs are waiting")
        try:
            reply = await worker.ask(request)
        except (ConnectionError, asyncio.IncompleteReadError) as exc:
            if self.current is worker:
                self.current = None
            raise RuntimeError(f"the worker {worker.pid} is gone ({type(exc).__name__})") from None
        self.served += 1
        return reply

    async def arrived(self, sock: socket.socket, pid: int, born: float) -> None:
        """A new worker: the current one from now on."""
        worker = await Worker.on(sock, pid, born)
        logger.debug("The worker %d answers from now on (its copy is %.0f ms old)", pid, (self.clock() - born) * 1000)
        self.workers += 1
        old, self.current = self.current, worker
        if old is not None:
            self._retire(old)
        pending, self.pending = self.pending, None
        if pending is not None and not pending.done():
            pending.set_result(worker)

    def failed(self, message: str) -> None:
        pending, self.pending = self.pending, None
        if pending is not None and not pending.done():
            pending.set_exception(RuntimeError(message))
            pending.exception()  # retrieved: waiters re-raise it, none is fine too

    def _retire(self, worker: Worker) -> None:
        retire_later(worker, self._tasks)

    async def close(self) -> None:
        if self.current is not None:
            self._retire(self.current)
            self.current = None
        self.failed("the dry-run front is stopping")
        await settle(self._tasks)


async def _api(connection: dict[str, Any] | None, user_agent: str
               ) -> tuple[Callable[[str, dict[str, Any]], Awaitable[Any]] | None,
                          Callable[[str], Awaitable[Any]] | None, Callable[[], Awaitable[None]]]:
    """post/get to the API server with the operator's connection settings, and the closer."""
    async def nothing() -> None:
        return None

    if connection is None:
        return None, None, nothing
    from .connection import load_configuration, load_credentials
    from .rest import RestClient

    config = OperatorConfig(**{k: v for k, v in connection.items() if k in CONNECTION_FIELDS})
    configuration = await load_configuration(config)
    rest = RestClient(configuration, credentials=load_credentials(config, configuration),
                      request_timeout=config.request_timeout, user_agent=user_agent, pool_size=16)

    async def post(path: str, body: dict[str, Any]) -> Any:
        return await rest.request("POST", path, body=body)

    async def get(path: str) -> Any:
        return await rest.request("GET", path)

    return post, get, rest.close


async def serve(channel: socket.socket, cfg: FrontConfig) -> int:
    """The front's life on `channel` (see the module's docstring); the exit code."""
    from .. import __version__
    from .dryrun_endpoint import DryRunEndpoint
    from .secure_serving import make_server

    loop = asyncio.get_running_loop()
    channel.setblocking(False)
    done = asyncio.Event()

    def ask_fork() -> None:
        try:
            send(channel, {"fork": True})
        except OSError as exc:
            logger.error("The operator cannot be asked for a copy of the scheduler: %s", exc)
            done.set()

    copies = Copies(ask_fork, refresh=cfg.refresh, max_queue=cfg.max_queue)
    endpoint = DryRunEndpoint(copies, None, ready=lambda: copies.synced)
    post, get, close_api = await _api(cfg.connection, f"kubeberth/{__version__} (dry-run front)")
    keypair = (cfg.keypair[0].encode(), cfg.keypair[1].encode()) if cfg.keypair else None
    try:
        server = await make_server(cfg.serving, None, cfg.port, cfg.host, post=post, get=get,
                                   resource_routes=endpoint.routes(), self_signed=keypair)
        port = await server.start()
    except Exception as exc:
        send(channel, {"failed": f"the dry-run port {cfg.host}:{cfg.port}: {exc}"})
        await close_api()
        return 1
    send(channel, {"listening": port})

    def on_message() -> None:
        try:
            message, fds = receive(channel)
        except BlockingIOError:
            return
        except OSError:
            message, fds = None, []
        if message is None:
            done.set()  # the operator is gone
            return
        if "worker" in message and fds:
            sock = socket.socket(fileno=fds[0])
            task = loop.create_task(copies.arrived(sock, int(message["worker"]), float(message["born"])))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        elif "error" in message:
            copies.failed(str(message["error"]))
        elif message.get("synced"):
            copies.synced = True

    tasks: set[asyncio.Task[None]] = set()
    loop.add_reader(channel.fileno(), on_message)
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, done.set)
    try:
        await done.wait()
    finally:
        loop.remove_reader(channel.fileno())
        await server.stop()
        await copies.close()
        await close_api()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or not args[0].isdigit():
        sys.stderr.write("usage: python -m kubeberth.operator.dryrun_front FD (started by `kubeberth run`)\n")
        return 2
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s [%(levelname)-8s] kubeberth dry-run front: %(message)s")
    logging.getLogger("kubeberth").setLevel(logging.INFO)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    os.nice(NICE)  # the scheduler's process first, when the CPU is short
    channel = socket.socket(fileno=int(args[0]))
    try:
        message, _ = receive(channel)
        if message is None or "config" not in message:
            logger.error("No configuration from the operator: exiting")
            return 2
        cfg = FrontConfig.from_json(message["config"])
        if cfg.debug or cfg.verbose:
            logging.getLogger("kubeberth").setLevel(logging.DEBUG)
            logging.getLogger().setLevel(logging.DEBUG if cfg.debug else logging.INFO)
        return asyncio.run(serve(channel, cfg))
    finally:
        channel.close()


if __name__ == "__main__":
    sys.exit(main())
