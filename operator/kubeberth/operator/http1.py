"""Kept-alive HTTP/1.1 connections for the REST client's requests, answers parsed by httptools.

The scheduler's writes (a binding and an Event per pod, status patches) are small requests with
small answers, hundreds a second. Through aiohttp's ClientSession each one cost about 160 µs of
the process' CPU (its request and response objects, URL handling, timers, tracing hooks); here it
is about 80 µs, measured against kube-apiserver with the same TLS (benchmarks/PROFILE.md, "The
write path"). The request is one buffer (request line, headers prepared once, the body), written
in one call; the answer is parsed by httptools (llhttp, the parser uvicorn uses), which handles
Content-Length and chunked bodies.

One request at a time per connection (no pipelining: an answer never waits behind another's),
at most `limit` connections, kept alive `idle_timeout` seconds. Errors: a connection that cannot
be made, is lost or answers something that is not HTTP raises `HTTPConnectionError` (a
`ConnectionError`: transient for the callers' retries, as aiohttp's errors were); the timeout
raises `TimeoutError`. A connection is never reused after an error, a timeout or a cancellation.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import httptools

__all__ = ["ConnectionPool", "HTTPConnectionError", "Response"]


class HTTPConnectionError(ConnectionError):
    """The connection could not be made, was lost before the whole answer came, or the answer was not HTTP."""


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    reason: str
    body: bytes


class _Connection(asyncio.Protocol):
    """One TLS (or plain) connection and the answer to its one request in flight."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._parser = httptools.HttpResponseParser(self)
        self._transport: asyncio.Transport | None = None
        self._answer: asyncio.Future[Response] | None = None
        self._body: list[bytes] = []
        self._reason = b""
        self.lost = False
        self.keep_alive = True
        self.idle_since = 0.0

    # --- asyncio.Protocol ---

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._fail(HTTPConnectionError(f"the connection was lost: {exc}" if exc else
                                       "the server closed the connection"))

    def eof_received(self) -> bool | None:
        return False  # close our side too; connection_lost follows

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(HTTPConnectionError(f"the server's answer is not HTTP/1.1: {exc}"))
            self.close()

    # --- httptools callbacks ---

    def on_status(self, reason: bytes) -> None:
        self._reason += reason

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        answer, self._answer = self._answer, None
        body = b"".join(self._body)
        reason = self._reason.decode("latin-1")
        self._body, self._reason = [], b""
        self.keep_alive = self._parser.should_keep_alive()
        if answer is None or answer.done():
            self.keep_alive = False  # an answer nobody asked for: the stream is out of step
            return
        answer.set_result(Response(self._parser.get_status_code(), reason, body))

    # --- the pool's side ---

    def send(self, data: bytes) -> asyncio.Future[Response]:
        assert self._transport is not None and self._answer is None
        self._answer = self._loop.create_future()
        self._transport.write(data)
        return self._answer

    def _fail(self, exc: Exception) -> None:
        answer, self._answer = self._answer, None
        if answer is not None and not answer.done():
            answer.set_exception(exc)

    def close(self) -> None:
        self.lost = True
        if self._transport is not None:
            self._transport.abort()


class ConnectionPool:
    """At most `limit` kept-alive connections to one server (`url`: scheme, host and port)."""

    def __init__(self, url: str, ssl_context: ssl.SSLContext | None, *, limit: int = 100,
                 idle_timeout: float = 60.0) -> None:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.netloc = parts.netloc
        self.base_path = parts.path.rstrip("/")
        self._ssl = ssl_context if parts.scheme == "https" else None
        self._slots = asyncio.Semaphore(limit)
        self._idle: list[_Connection] = []
        self._busy: set[_Connection] = set()
        self.idle_timeout = idle_timeout
        self.connections_made = 0  # for tests and benchmarks: every TLS handshake costs both sides

    @property
    def open_connections(self) -> int:
        return len(self._idle) + len(self._busy)

    async def request(self, method: str, target: str, headers: bytes, body: bytes | None, *,
                      timeout: float) -> Response:
        """Send `method target` (target: the path and query, already encoded) with `headers`
        (complete `Name: value\\r\\n` lines, without Host and Content-Length) and `body`; the answer,
        whatever its status. Waiting for a free connection counts in `timeout`."""
        head = b"%s %s%s HTTP/1.1\r\nHost: %s\r\n%s" % (method.encode(), self.base_path.encode(), target.encode(),
                                                        self.netloc.encode(), headers)
        if body is not None or method in ("POST", "PUT", "PATCH"):
            data = b"%sContent-Length: %d\r\n\r\n%s" % (head, len(body or b""), body or b"")
        else:
            data = head + b"\r\n"
        async with asyncio.timeout(timeout), self._slots:
            conn = await self._connection()
            self._busy.add(conn)
            reusable = False
            try:
                answer = await conn.send(data)
                reusable = conn.keep_alive and not conn.lost
                return answer
            finally:
                self._busy.discard(conn)
                if reusable:
                    conn.idle_since = time.monotonic()
                    self._idle.append(conn)
                else:
                    conn.close()

    async def _connection(self) -> _Connection:
        now = time.monotonic()
        while self._idle:
            conn = self._idle.pop()
            if not conn.lost and conn.keep_alive and now - conn.idle_since < self.idle_timeout:
                return conn
            conn.close()
        loop = asyncio.get_running_loop()
        try:
            _, conn = await loop.create_connection(lambda: _Connection(loop), self.host, self.port, ssl=self._ssl,
                                                   server_hostname=self.host if self._ssl else None)
        except ssl.SSLCertVerificationError as exc:
            raise HTTPConnectionError(f"{self.netloc}: the server's certificate is not trusted: "
                                      f"{exc.verify_message}") from exc
        except OSError as exc:
            # asyncio's "Connect call failed (address)" says less than the errno's own words
            reason = os.strerror(exc.errno) if exc.errno else str(exc)
            raise HTTPConnectionError(f"cannot connect to {self.netloc}: {reason}") from exc
        self.connections_made += 1
        return conn

    async def close(self) -> None:
        for conn in [*self._idle, *self._busy]:
            conn.close()
        self._idle.clear()
        self._busy.clear()
