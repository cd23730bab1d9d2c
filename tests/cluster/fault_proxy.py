"""A fault-injecting HTTP proxy (aiohttp, 127.0.0.1) between `kubeberth run` and a real kube-apiserver.

It passes every request through (watch streams included) until told to fail: then it answers every
request with a Status of that code (503 ServiceUnavailable, 401 Unauthorized, ...) and cuts the
streams it was carrying, as an API server that went away or an authenticating proxy would. The
operator talks plain HTTP to it; it talks HTTPS to the API server with the caller's own headers.

It runs on an event loop of its own, in a thread (`FaultProxy.started(...)`), so that a test may
block (kubectl, the operator's probe) without holding up the traffic it carries.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import ssl
import threading
from collections.abc import Iterator
from typing import Any

import aiohttp
from aiohttp import web

HOP_BY_HOP = {"host", "content-length", "transfer-encoding", "connection", "keep-alive"}
REASONS = {401: "Unauthorized", 403: "Forbidden", 429: "TooManyRequests", 500: "InternalError",
           503: "ServiceUnavailable"}


class FaultProxy:
    def __init__(self, upstream: str, ssl_context: ssl.SSLContext) -> None:
        self.upstream = upstream.rstrip("/")
        self.ssl_context = ssl_context
        self.fault: int | None = None  # the status every request gets; None: pass through
        self.faulted = 0  # requests answered with the fault
        self.passed = 0
        self._streams: set[asyncio.Task[Any]] = set()
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.url = ""

    async def start(self) -> FaultProxy:
        self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=self.ssl_context, limit=0),
                                              auto_decompress=False)
        app = web.Application()
        app.router.add_route("*", "/{path:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def stop(self) -> None:
        self.cut()
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    def fail(self, status: int) -> None:
        """From now on answer every request with `status`, and cut the open streams."""
        self.fault = status
        self._call(self.cut)

    def heal(self) -> None:
        self.fault = None

    def _call(self, fn: Any) -> None:
        loop = self._loop
        if loop is None or loop is _running_loop():
            fn()
        else:
            loop.call_soon_threadsafe(fn)

    @classmethod
    @contextlib.contextmanager
    def started(cls, upstream: str, ssl_context: ssl.SSLContext) -> Iterator[FaultProxy]:
        """The proxy, serving from a thread of its own until the block ends."""
        proxy = cls(upstream, ssl_context)
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        stop = threading.Event()

        def main() -> None:
            async def serve() -> None:
                proxy._loop = asyncio.get_running_loop()
                try:
                    await proxy.start()
                except BaseException as exc:
                    ready.set_exception(exc)
                    raise
                ready.set_result(None)
                while not stop.is_set():
                    await asyncio.sleep(0.05)
                await proxy.stop()

            asyncio.run(serve())

        thread = threading.Thread(target=main, name="fault proxy", daemon=True)
        thread.start()
        ready.result(timeout=10)
        try:
            yield proxy
        finally:
            stop.set()
            thread.join(timeout=10)

    def cut(self) -> None:
        for task in list(self._streams):
            task.cancel()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if self.fault is not None:
            self.faulted += 1
            reason = REASONS.get(self.fault, "InternalError")
            return web.json_response({"apiVersion": "v1", "kind": "Status", "status": "Failure", "metadata": {},
                                      "message": f"injected by the test proxy: {reason}", "reason": reason,
                                      "code": self.fault}, status=self.fault)
        assert self._session is not None
        self.passed += 1
        task = asyncio.current_task()
        assert task is not None
        self._streams.add(task)
        try:
            headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
            body = await request.read()
            async with self._session.request(request.method, self.upstream + request.rel_url.path_qs,
                                             headers=headers, data=body or None,
                                             timeout=aiohttp.ClientTimeout(total=None)) as upstream:
                response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
                for key, value in upstream.headers.items():
                    if key.lower() not in HOP_BY_HOP:
                        response.headers.add(key, value)
                await response.prepare(request)
                async for chunk in upstream.content.iter_any():
                    await response.write(chunk)
                with contextlib.suppress(ConnectionError):
                    await response.write_eof()
                return response
        finally:
            self._streams.discard(task)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
