"""A lean REST client for the API server: raw JSON over kept-alive connections.

The reflectors (LIST pages and WATCH streams) and the scheduler's writes go through it. Requests
(the writes, LIST pages, GETs) go through `http1.ConnectionPool` (one buffer written per request,
the answer parsed by httptools: half aiohttp's CPU per request); WATCH streams, long-lived and
read as they come, through an aiohttp session.
It takes the connection from a kubernetes-asyncio `Configuration` (server, TLS, token or
client certificate), so kubeconfig, in-cluster and `--server` work as before, and raises
kubernetes-asyncio's `ApiException` for answers outside 2xx, so callers keep one error type.
Bodies are parsed with orjson; no model classes are built.
"""

from __future__ import annotations

import asyncio.sslproto
import ssl
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp
import orjson
from kubernetes_asyncio.client import Configuration
from kubernetes_asyncio.client.exceptions import ApiException

from .credentials import Credentials, Forbidden, authorization
from .http1 import ConnectionPool

__all__ = ["JSON", "TLS_READ_BUFFER", "RestClient", "api_exception", "authorization", "describe_error",
           "lean_tls_buffers", "ssl_context"]

JSON = "application/json"
PATH_SAFE = "/:@-._~!$&'()*+,;="  # what a path may hold unquoted (RFC 3986); the rest is percent-encoded
# asyncio's TLS transport gives every connection a read buffer of 256 KiB (SSLProtocol.max_size),
# filled once a read is that large: about 320 KiB of RSS per kept-alive connection in all, 80 KiB
# with 16 KiB (one TLS record), measured against kube-apiserver. The scheduler keeps hundreds of
# connections (one per binding and per event in flight: HTTP/1.1 has no multiplexing), so
# `RestClient` lowers it for the process; a large answer (a LIST page) is read in more calls.
TLS_READ_BUFFER = 16 * 1024


def lean_tls_buffers(size: int = TLS_READ_BUFFER) -> None:
    """Lower asyncio's per-connection TLS read buffer to `size` bytes (process-wide: asyncio reads
    it from the class when a connection is made; never raised here)."""
    if asyncio.sslproto.SSLProtocol.max_size > size:
        asyncio.sslproto.SSLProtocol.max_size = size


def ssl_context(cfg: Configuration) -> ssl.SSLContext | bool:
    if not str(cfg.host).startswith("https"):
        return False
    if not cfg.verify_ssl:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    else:
        ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
    if cfg.cert_file:
        ctx.load_cert_chain(cfg.cert_file, cfg.key_file)
    return ctx


def api_exception(status: int, reason: str, body: bytes | str) -> ApiException:
    exc = ApiException(status=status, reason=reason)
    exc.body = body.decode(errors="replace") if isinstance(body, bytes) else body  # type: ignore[assignment]
    return exc


def describe_error(exc: BaseException) -> str:
    """One line for a log: the HTTP status of an API error, else the exception."""
    if isinstance(exc, ApiException):
        return f"HTTP {exc.status} {exc.reason}".strip()
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class RestClient:
    """Raw JSON requests and watch streams on one aiohttp session."""

    def __init__(self, configuration: Configuration, *, pool_size: int = 100, request_timeout: float = 10.0,
                 user_agent: str = "kubeberth", credentials: Credentials | None = None,
                 forbidden: Forbidden | None = None) -> None:
        self.configuration = configuration
        # The token (read again from its file as client-go does) and what a 401 means; a 403 names
        # the missing permission once per verb and resource.
        self.credentials = credentials if credentials is not None else Credentials(configuration)
        self.forbidden = forbidden if forbidden is not None else Forbidden(subject=self.credentials.description)
        self.user_agent = user_agent
        self.host = str(configuration.host).rstrip("/")
        self.request_timeout = request_timeout
        self._pool_size = pool_size
        self._session: aiohttp.ClientSession | None = None
        self._pool: ConnectionPool | None = None
        self._head_lines: dict[tuple[str | None, str | None], bytes] = {}

    def _get_session(self) -> aiohttp.ClientSession:
        """The WATCH streams' session."""
        if self._session is None or self._session.closed:
            lean_tls_buffers()
            connector = aiohttp.TCPConnector(limit=self._pool_size, ssl=ssl_context(self.configuration),
                                             keepalive_timeout=60)
            self._session = aiohttp.ClientSession(connector=connector)
        return self._session

    def _get_pool(self) -> ConnectionPool:
        """The requests' connections."""
        if self._pool is None:
            lean_tls_buffers()
            ctx = ssl_context(self.configuration)
            self._pool = ConnectionPool(self.host, ctx if isinstance(ctx, ssl.SSLContext) else None,
                                        limit=self._pool_size, idle_timeout=60.0)
        return self._pool

    @property
    def connections_made(self) -> int:
        """Connections the requests' pool opened so far (each a TLS handshake on both sides)."""
        return self._pool.connections_made if self._pool is not None else 0

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    async def _authorization(self) -> str | None:
        """The Authorization header's value: the credentials' (a bearer token, read again as
        client-go does), else the configuration's basic auth, else none."""
        auth = await self.credentials.authorization()
        if not auth and self.configuration.username:
            auth = self.configuration.get_basic_auth_token()
        return auth or None

    def _header_map(self, content_type: str | None, auth: str | None) -> dict[str, str]:
        headers = {"Accept": JSON, "User-Agent": self.user_agent}
        if content_type:
            headers["Content-Type"] = content_type
        if auth:
            headers["Authorization"] = auth
        return headers

    async def _headers(self, content_type: str | None) -> dict[str, str]:
        return self._header_map(content_type, await self._authorization())

    async def _head_lines_for(self, content_type: str | None) -> bytes:
        """The request's header lines but Host and Content-Length, as bytes (kept per credential)."""
        auth = await self._authorization()
        key = (auth, content_type)
        lines = self._head_lines.get(key)
        if lines is None:
            if len(self._head_lines) > 16:  # rotated tokens: keep only the current ones
                self._head_lines.clear()
            headers = self._header_map(content_type, auth)
            lines = self._head_lines[key] = "".join(f"{k}: {v}\r\n" for k, v in headers.items()).encode("latin-1")
        return lines

    async def request(self, method: str, path: str, *, body: Any = None, content_type: str | None = None,
                      query: Mapping[str, str] | None = None, timeout: float | None = None) -> Any:
        """One call; the parsed JSON answer, or ApiException for a non-2xx answer."""
        data = orjson.dumps(body) if body is not None else None
        lines = await self._head_lines_for(content_type or (JSON if body is not None else None))
        target = quote(path, safe=PATH_SAFE) + (f"?{urlencode(query)}" if query else "")
        answer = await self._get_pool().request(method, target, lines, data,
                                                timeout=timeout if timeout is not None else self.request_timeout)
        if answer.status >= 300:
            raise self._refused(method, path, query, answer.status, answer.reason, answer.body)
        self.credentials.accepted()
        return orjson.loads(answer.body) if answer.body else None

    def _refused(self, method: str, path: str, query: Mapping[str, str] | None, status: int, reason: str,
                 raw: bytes) -> ApiException:
        """The error of an answer outside 2xx; a 401 or a 403 is reported as what it is."""
        if status == 401:
            self.credentials.unauthorized(method, path)
        elif status == 403:
            self.forbidden.report(method, path, query, raw)
        return api_exception(status, reason, raw)

    async def watch(self, path: str, query: Mapping[str, str], *,
                    read_timeout: float | None = None) -> AsyncIterator[list[dict[str, Any]]]:
        """A WATCH stream as batches of events: every complete line that arrived in one read, and
        first an empty batch once the server accepted the request. Ends when the server ends the
        stream; raises ApiException for a non-2xx answer."""
        headers = await self._headers(None)
        timeout = aiohttp.ClientTimeout(total=None, connect=self.request_timeout, sock_read=read_timeout)
        async with self._get_session().get(self.host + path, params={**query, "watch": "true"},
                                           headers=headers, timeout=timeout) as resp:
            if resp.status >= 300:
                raise self._refused("GET", path, {**query, "watch": "true"}, resp.status, resp.reason or "",
                                    await resp.read())
            self.credentials.accepted()
            yield []
            tail = b""
            async for chunk in resp.content.iter_any():
                lines = (tail + chunk).split(b"\n")
                tail = lines.pop()
                batch = [orjson.loads(line) for line in lines if line.strip()]
                if batch:
                    yield batch
            if tail.strip():
                yield [orjson.loads(tail)]
