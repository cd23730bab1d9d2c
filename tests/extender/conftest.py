"""Real extender servers on 127.0.0.1 (aiohttp), and extenders pointed at them."""

from __future__ import annotations

import asyncio
import inspect
import json
import ssl
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from kubeberth.config.models import ExtenderConfig
from kubeberth.extender import HTTPExtender

Handler = Callable[[Any], Any]


class Call:
    """One request the server received."""

    def __init__(self, verb: str, body: Any, raw: bytes, headers: dict[str, str], peer: Any) -> None:
        self.verb = verb
        self.body = body
        self.raw = raw
        self.headers = headers
        self.peer = peer


class ExtenderServer:
    """An extender on 127.0.0.1 answering POST /api/<verb> with the test's handlers.

    A handler gets the decoded JSON body and returns a JSON-able value, a web.Response,
    or an awaitable of either. `hang()` makes a handler that never answers (until teardown).
    """

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.handlers: dict[str, Handler] = {}
        self.release = asyncio.Event()
        self.server: TestServer | None = None

    async def start(self, ssl_context: ssl.SSLContext | None = None) -> ExtenderServer:
        app = web.Application()
        app.router.add_post("/api/{verb}", self._handle)
        self.server = TestServer(app, host="127.0.0.1")
        await self.server.start_server(ssl=ssl_context)
        return self

    @property
    def url(self) -> str:
        assert self.server is not None
        return str(self.server.make_url("/api"))

    @property
    def port(self) -> int:
        assert self.server is not None and self.server.port is not None
        return self.server.port

    def verbs(self) -> list[str]:
        return [c.verb for c in self.calls]

    def last(self, verb: str) -> Call:
        return [c for c in self.calls if c.verb == verb][-1]

    def hang(self) -> Handler:
        async def handler(_: Any) -> Any:
            await self.release.wait()
            return {}
        return handler

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        verb = request.match_info["verb"]
        raw = await request.read()
        body = json.loads(raw) if raw else None
        self.calls.append(Call(verb, body, raw, dict(request.headers), request.transport and
                               request.transport.get_extra_info("peername")))
        handler = self.handlers.get(verb)
        if handler is None:
            return web.Response(status=404, text=f"no verb {verb}")
        out = handler(body)
        if inspect.isawaitable(out):
            out = await out
        if isinstance(out, web.StreamResponse):
            return out
        return web.json_response(out)

    async def close(self) -> None:
        self.release.set()
        if self.server is not None:
            await self.server.close()


@pytest.fixture
async def server() -> AsyncIterator[ExtenderServer]:
    srv = await ExtenderServer().start()
    yield srv
    await srv.close()


@pytest.fixture
async def make_server() -> AsyncIterator[Callable[..., Any]]:
    """Start more servers (e.g. with TLS): `await make_server(ssl_context=...)`."""
    started: list[ExtenderServer] = []

    async def start(ssl_context: ssl.SSLContext | None = None) -> ExtenderServer:
        srv = await ExtenderServer().start(ssl_context)
        started.append(srv)
        return srv

    yield start
    for srv in started:
        await srv.close()


@pytest.fixture
async def make_extender() -> AsyncIterator[Callable[..., HTTPExtender]]:
    """HTTPExtender from config keywords (camelCase, as in a profile); closed at teardown."""
    made: list[HTTPExtender] = []

    def make(url_prefix: str, **config: Any) -> HTTPExtender:
        ext = HTTPExtender(ExtenderConfig(urlPrefix=url_prefix, **config))
        made.append(ext)
        return ext

    yield make
    for ext in made:
        await ext.close()
