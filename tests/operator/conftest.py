"""Fixtures: an emulated API server on 127.0.0.1 and the real operator running against it.

The operator runs in-process, in a thread with its own event loop: kopf, when it stops,
cancels every task created after it started, which in a shared loop would include the
emulator's and other operators' tasks. Tests observe the operator only through the API
(the emulator's state and request log) and its HTTP endpoints, as a cluster would.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import kmock
import kopf
import pytest
import pytest_asyncio

from kubeberth.operator.app import OperatorApp
from kubeberth.operator.options import OperatorConfig
from kubeberth.operator.serving_options import ServingOptions
from kubeberth.plugins import use_plugins

from .emulator import Emulator


@pytest.fixture(autouse=True)
def only_in_tree_plugins(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The operator under test sees the in-tree plugins alone, and no kopf handler that modules other
    tests imported left on kopf's default registry: what is installed beside kubeberth (the example
    Coscheduling distribution, say) would cost nothing here anyway (no profile of these tests enables
    it: README, "Plugins no profile enables"), but its names would be in the registry the tests list.
    tests/extending and test_plugin_handlers.py cover plugins of one's own."""
    use_plugins((), entry_points=False)
    monkeypatch.setattr(kopf, "get_default_registry", kopf.OperatorRegistry)
    yield
    use_plugins(())

DEFAULT_TIMEOUT = 10.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """The emulator plus its URL."""

    def __init__(self, emulator: Emulator, url: str) -> None:
        self.api = emulator
        self.url = url


@pytest_asyncio.fixture
async def cluster() -> AsyncIterator[Cluster]:
    emulator = Emulator()
    async with emulator, kmock.Server(emulator) as server:
        for ns in ("default", "kube-system"):
            emulator.create("namespaces", {"metadata": {"name": ns}})
        yield Cluster(emulator, str(server.url).rstrip("/"))
        emulator.close()


class OperatorThread:
    """The real operator (kopf + scheduler), run until stop() in a thread of its own."""

    def __init__(self, config: OperatorConfig) -> None:
        self.config = config
        self.app = OperatorApp(config)
        self.ready = threading.Event()
        self.stopping = threading.Event()
        self.exit_code: int | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name=f"operator-{id(self):x}", daemon=True)

    def _main(self) -> None:
        async def main() -> int:
            stop = asyncio.Event()
            ready = asyncio.Event()
            loop = asyncio.get_running_loop()

            async def relay() -> None:
                await ready.wait()
                self.ready.set()

            def watch_stop() -> None:
                self.stopping.wait()
                with contextlib.suppress(RuntimeError):  # the operator may have ended on its own
                    loop.call_soon_threadsafe(stop.set)

            relay_task = loop.create_task(relay())
            threading.Thread(target=watch_stop, daemon=True).start()
            try:
                return await self.app.run(stop_flag=stop, ready_flag=ready)
            finally:
                relay_task.cancel()

        try:
            self.exit_code = asyncio.run(main())
        except BaseException as exc:
            self.error = exc
            logging.getLogger(__name__).exception("operator thread failed")
        finally:
            self.ready.set()

    def start(self, timeout: float = DEFAULT_TIMEOUT) -> OperatorThread:
        self._thread.start()
        if not self.ready.wait(timeout):
            raise TimeoutError("the operator did not get ready")
        if self.error is not None:
            raise self.error
        return self

    async def stop(self, timeout: float = DEFAULT_TIMEOUT) -> int | None:
        self.stopping.set()
        await asyncio.to_thread(self._thread.join, timeout)
        if self._thread.is_alive():
            raise TimeoutError("the operator did not stop")
        return self.exit_code

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()


def operator_config(cluster: Cluster, **overrides: Any) -> OperatorConfig:
    values: dict[str, Any] = dict(
        server=cluster.url, metrics_port=free_port(), metrics_host="127.0.0.1", request_timeout=2.0,
        dry_run_port=None,  # no dry-run front (tests/operator/test_dryrun_front.py starts its own)
        serving=ServingOptions(insecure=True),  # plain HTTP on loopback: the emulator has no TokenReview
        seed=1,
        extra_settings={"networking.error_backoffs": [0.1, 0.2, 0.5], "watching.reconnect_backoff": 0.05},
    )
    values.update(overrides)
    return OperatorConfig(**values)


@pytest_asyncio.fixture
async def start_operator(cluster: Cluster) -> AsyncIterator[Callable[..., Awaitable[OperatorThread]]]:
    """Start operators (`await start_operator(**config overrides)`); all are stopped at the end
    (while the emulator still serves them: the joins must not block its loop)."""
    started: list[OperatorThread] = []

    async def start(**overrides: Any) -> OperatorThread:
        op = OperatorThread(operator_config(cluster, **overrides))
        await asyncio.to_thread(op.start)
        started.append(op)
        return op

    yield start
    for op in started:
        op.stopping.set()
    for op in started:
        await asyncio.to_thread(op._thread.join, DEFAULT_TIMEOUT)


async def wait_for(predicate: Callable[[], Any], timeout: float = DEFAULT_TIMEOUT, interval: float = 0.02,
                   message: str = "") -> Any:
    """Poll `predicate` (on the test's loop, so the emulator keeps serving) until truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message or predicate}")
        await asyncio.sleep(interval)


async def stays(predicate: Callable[[], Any], duration: float, interval: float = 0.02) -> None:
    """Assert `predicate` holds for `duration` seconds."""
    deadline = time.monotonic() + duration
    while time.monotonic() < deadline:
        assert predicate()
        await asyncio.sleep(interval)

