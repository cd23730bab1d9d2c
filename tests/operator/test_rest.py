"""The REST client's TLS connections: asyncio's per-connection read buffer lowered to one TLS record
(16 KiB instead of 256 KiB: a quarter of the memory per kept-alive connection), answers of any
size read whole."""

from __future__ import annotations

import asyncio.sslproto
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp.web
import orjson
import pytest
import pytest_asyncio
import trustme
from kubernetes_asyncio.client import Configuration

from kubeberth.operator.rest import TLS_READ_BUFFER, RestClient

BIG = [{"name": f"item-{i}", "payload": "x" * 100} for i in range(20000)]  # about 2.5 MB of JSON


@pytest_asyncio.fixture
async def tls_server(tmp_path: Path) -> AsyncIterator[Configuration]:
    ca = trustme.CA()
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_ctx)
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))

    async def small(_: aiohttp.web.Request) -> aiohttp.web.Response:
        return aiohttp.web.Response(body=b'{"ok": true}', content_type="application/json")

    async def big(_: aiohttp.web.Request) -> aiohttp.web.Response:
        return aiohttp.web.Response(body=orjson.dumps({"items": BIG}), content_type="application/json")

    app = aiohttp.web.Application()
    app.router.add_get("/small", small)
    app.router.add_get("/big", big)
    runner = aiohttp.web.AppRunner(app)
    await runner.setup()
    site = aiohttp.web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_ctx)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    cfg = Configuration(host=f"https://127.0.0.1:{port}")
    cfg.ssl_ca_cert = str(ca_file)
    yield cfg
    await runner.cleanup()


def read_buffers(client: RestClient) -> list[int]:
    """The TLS read buffer of each kept-alive connection of the client's pool."""
    pool: Any = client._get_pool()
    return [len(conn._transport._ssl_protocol._ssl_buffer) for conn in pool._idle]


async def test_a_kept_alive_connection_has_a_16_kib_read_buffer(tls_server: Configuration,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(asyncio.sslproto.SSLProtocol, "max_size", 256 * 1024)  # asyncio's own
    client = RestClient(tls_server)
    try:
        assert await client.request("GET", "/small") == {"ok": True}
        assert read_buffers(client) == [TLS_READ_BUFFER] and TLS_READ_BUFFER == 16 * 1024
    finally:
        await client.close()


async def test_a_large_answer_is_read_whole(tls_server: Configuration) -> None:
    client = RestClient(tls_server)
    try:
        answers = await asyncio.gather(*(client.request("GET", "/big") for _ in range(3)))
        assert all(a == {"items": BIG} for a in answers)
    finally:
        await client.close()
