"""Raw JSON calls to the API server, retried with backoff on transient failures."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from .rest import RestClient, describe_error

logger = logging.getLogger(__name__)

RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
# 401: the token may have been renewed since (its file is read again before the retry, `Credentials`).
UNAUTHORIZED = 401


class ApiUnavailable(Exception):
    """The API server kept failing (5xx/429/401/timeouts) beyond the retry budget."""


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter for transient API failures."""

    attempts: int = 6
    initial: float = 0.1
    maximum: float = 5.0
    factor: float = 2.0
    jitter: float = 0.2

    def delays(self, rng: random.Random | None = None) -> Iterator[float]:
        """The pauses between `attempts` tries (attempts - 1 of them)."""
        rng = rng or random.Random()
        delay = self.initial
        for _ in range(max(self.attempts - 1, 0)):
            yield min(delay, self.maximum) * (1 + self.jitter * (rng.random() * 2 - 1))
            delay *= self.factor


def _status(exc: BaseException) -> int | None:
    return exc.status if isinstance(exc, ApiException) else None


def is_transient(exc: BaseException) -> bool:
    if isinstance(exc, ApiException):
        return exc.status in RETRYABLE_STATUSES or exc.status in (0, UNAUTHORIZED)
    return isinstance(exc, aiohttp.ClientError | TimeoutError | ConnectionError)


class Api:
    """Raw JSON calls through a kubernetes-asyncio ApiClient (no model (de)serialisation)."""

    def __init__(self, api_client: ApiClient | RestClient, *, request_timeout: float = 10.0,
                 retry: RetryPolicy | None = None, rng: random.Random | None = None,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep) -> None:
        self.api_client = api_client
        self.request_timeout = request_timeout
        self.retry = retry or RetryPolicy()
        self.rng = rng or random.Random()
        self.sleep = sleep

    async def request(self, method: str, path: str, *, body: Any = None, content_type: str | None = None,
                      query: Mapping[str, str] | None = None) -> Any:
        """One call; raises ApiException for non-2xx answers."""
        if isinstance(self.api_client, RestClient):
            return await self.api_client.request(method, path, body=body, content_type=content_type, query=query,
                                                 timeout=self.request_timeout)
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        elif body is not None:
            headers["Content-Type"] = "application/json"
        return await self.api_client.call_api(
            path, method, path_params={}, query_params=list((query or {}).items()),
            header_params=headers, body=body,
            response_types_map={200: "object", 201: "object", 202: "object"},
            auth_settings=["BearerToken"], _return_http_data_only=True,
            _preload_content=True, _request_timeout=self.request_timeout)

    async def call(self, method: str, path: str, *, what: str, body: Any = None,
                   content_type: str | None = None, query: Mapping[str, str] | None = None) -> Any:
        """A call retried on 5xx/429/401/timeouts with backoff; other errors raise at once."""
        delays = self.retry.delays(self.rng)
        while True:
            try:
                return await self.request(method, path, body=body, content_type=content_type, query=query)
            except Exception as exc:
                if not is_transient(exc):
                    raise
                delay = next(delays, None)
                if delay is None:
                    raise ApiUnavailable(f"{what}: giving up after {self.retry.attempts} attempts: "
                                         f"{describe_error(exc)}") from exc
                logger.warning("%s failed (%s); retrying in %.2fs", what, describe_error(exc), delay)
                await self.sleep(delay)
