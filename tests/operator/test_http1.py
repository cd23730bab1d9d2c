"""The requests' HTTP/1.1 connections (operator/http1.py) against aiohttp's server and raw sockets:
kept alive and reused, chunked and sized answers, errors that name what happened, no connection
reused after an error, a timeout or a cancellation, and the limit."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp.web
import orjson
import pytest
import pytest_asyncio
import trustme
from kubernetes_asyncio.client import Configuration
from kubernetes_asyncio.client.exceptions import ApiException

from kubeberth.operator.api_retry import is_transient
from kubeberth.operator.http1 import ConnectionPool, HTTPConnectionError
from kubeberth.operator.rest import RestClient


@pytest_asyncio.fixture
async def server() -> AsyncIterator[tuple[str, dict[str, object]]]:
    """A plain HTTP server: its URL and what it saw."""
    seen: dict[str, object] = {"peers": set(), "requests": []}

    async def echo(request: aiohttp.web.Request) -> aiohttp.web.Response:
        seen["peers"].add(request.transport.get_extra_info("peername"))  # type: ignore[union-attr, attr-defined]
        seen["requests"].append((request.method, request.path_qs, dict(request.headers),  # type: ignore[attr-defined]
                                 await request.read()))
        return aiohttp.web.json_response({"method": request.method, "path": request.path_qs})

    async def chunked(request: aiohttp.web.Request) -> aiohttp.web.StreamResponse:
        resp = aiohttp.web.StreamResponse(headers={"Content-Type": "application/json"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        for part in (b'{"items": [', b'1, 2', b", 3]}"):
            await resp.write(part)
            await asyncio.sleep(0)
        await resp.write_eof()
        return resp

    async def refused(_: aiohttp.web.Request) -> aiohttp.web.Response:
        return aiohttp.web.json_response({"kind": "Status", "reason": "Conflict"}, status=409, reason="Conflict")

    async def slow(_: aiohttp.web.Request) -> aiohttp.web.Response:
        await asyncio.sleep(5)
        return aiohttp.web.json_response({})

    async def close(_: aiohttp.web.Request) -> aiohttp.web.Response:
        return aiohttp.web.json_response({"closing": True}, headers={"Connection": "close"})

    app = aiohttp.web.Application()
    for path, handler in (("/echo", echo), ("/chunked", chunked), ("/refused", refused), ("/slow", slow),
                          ("/close", close)):
        app.router.add_route("*", path, handler)
    runner = aiohttp.web.AppRunner(app)
    await runner.setup()
    site = aiohttp.web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}", seen
    await runner.cleanup()


async def test_requests_reuse_one_kept_alive_connection_and_bodies_arrive_whole(
        server: tuple[str, dict[str, object]]) -> None:
    url, seen = server
    client = RestClient(Configuration(host=url), user_agent="kubeberth-test")
    try:
        for i in range(5):
            answer = await client.request("POST", "/echo", body={"n": i}, query={"fieldSelector": "spec.nodeName="})
            assert answer == {"method": "POST", "path": "/echo?fieldSelector=spec.nodeName%3D"}
        assert await client.request("GET", "/chunked") == {"items": [1, 2, 3]}
        assert client.connections_made == 1 and len(seen["peers"]) == 1  # type: ignore[arg-type]
        method, _, headers, body = seen["requests"][0]  # type: ignore[index]
        assert (method, orjson.loads(body)) == ("POST", {"n": 0})
        assert headers["Content-Type"] == "application/json" and headers["User-Agent"] == "kubeberth-test"
        assert headers["Host"] == url.removeprefix("http://")
    finally:
        await client.close()


async def test_a_refusal_is_an_api_exception_with_status_reason_and_body(server: tuple[str, dict[str, object]]) -> None:
    client = RestClient(Configuration(host=server[0]))
    try:
        with pytest.raises(ApiException) as caught:
            await client.request("POST", "/refused", body={})
        assert (caught.value.status, caught.value.reason) == (409, "Conflict")
        assert orjson.loads(caught.value.body) == {"kind": "Status", "reason": "Conflict"}
        assert await client.request("GET", "/echo") == {"method": "GET", "path": "/echo"}
        assert client.connections_made == 1  # a refusal leaves the connection usable
    finally:
        await client.close()


async def test_connection_close_is_honoured(server: tuple[str, dict[str, object]]) -> None:
    client = RestClient(Configuration(host=server[0]))
    try:
        assert await client.request("GET", "/close") == {"closing": True}
        assert await client.request("GET", "/echo") == {"method": "GET", "path": "/echo"}
        assert client.connections_made == 2
    finally:
        await client.close()


async def test_a_timeout_raises_and_the_connection_is_not_reused(server: tuple[str, dict[str, object]]) -> None:
    pool = ConnectionPool(server[0], None, limit=4)
    try:
        with pytest.raises(TimeoutError):
            await pool.request("GET", "/slow", b"", None, timeout=0.2)
        assert pool.open_connections == 0
        answer = await pool.request("GET", "/echo", b"", None, timeout=5)
        assert answer.status == 200 and pool.connections_made == 2
    finally:
        await pool.close()


async def test_a_cancelled_request_closes_its_connection(server: tuple[str, dict[str, object]]) -> None:
    pool = ConnectionPool(server[0], None, limit=4)
    try:
        task = asyncio.ensure_future(pool.request("GET", "/slow", b"", None, timeout=10))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert pool.open_connections == 0
    finally:
        await pool.close()


async def test_at_most_limit_connections_at_once(server: tuple[str, dict[str, object]]) -> None:
    pool = ConnectionPool(server[0], None, limit=3)
    try:
        answers = await asyncio.gather(*(pool.request("GET", "/echo", b"", None, timeout=5) for _ in range(30)))
        assert all(a.status == 200 for a in answers)
        assert pool.connections_made <= 3 and pool.open_connections <= 3
    finally:
        await pool.close()


async def _raw_server(reply: bytes) -> tuple[asyncio.Server, str]:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(reply)
        await writer.drain()
        writer.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    return srv, f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}"


@pytest.mark.parametrize(("reply", "message"), [
    (b"", "the server closed the connection"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"cut", "the server closed the connection"),
    (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "not HTTP/1.1"),
])
async def test_a_lost_or_garbled_answer_is_a_transient_connection_error(reply: bytes, message: str) -> None:
    srv, url = await _raw_server(reply)
    pool = ConnectionPool(url, None, limit=2)
    try:
        with pytest.raises(HTTPConnectionError, match=message) as caught:
            await pool.request("GET", "/x", b"", None, timeout=5)
        assert is_transient(caught.value) and pool.open_connections == 0
    finally:
        await pool.close()
        srv.close()


async def test_no_server_is_a_connection_error_naming_the_address() -> None:
    srv = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    srv.close()
    await srv.wait_closed()
    pool = ConnectionPool(f"http://127.0.0.1:{port}", None)
    with pytest.raises(HTTPConnectionError, match=f"^cannot connect to 127.0.0.1:{port}: Connection refused$"):
        await pool.request("GET", "/", b"", None, timeout=5)


async def test_an_untrusted_certificate_is_named(tmp_path: Path) -> None:
    ca = trustme.CA()
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_ctx)
    srv = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0, ssl=server_ctx)
    url = f"https://127.0.0.1:{srv.sockets[0].getsockname()[1]}"
    try:
        pool = ConnectionPool(url, ssl.create_default_context())  # the system's CAs: not trustme's
        with pytest.raises(HTTPConnectionError, match="certificate is not trusted"):
            await pool.request("GET", "/", b"", None, timeout=5)
    finally:
        srv.close()


def test_a_url_that_is_not_http_is_refused() -> None:
    with pytest.raises(ValueError, match="not an http"):
        ConnectionPool("unix:///var/run/x", None)
    with pytest.raises(ValueError, match="at least 1"):
        ConnectionPool("http://127.0.0.1:1", None, limit=0)
