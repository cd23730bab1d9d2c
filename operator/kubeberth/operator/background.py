"""Background tasks of the operator: how a set of them is ended."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable
from typing import Any


async def cancel_and_wait(tasks: Iterable[asyncio.Task[Any]]) -> None:
    """Cancel the tasks and wait until each has ended (whatever it ended with)."""
    tasks = list(tasks)
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


async def drain_then_cancel(tasks: Iterable[asyncio.Task[Any]], flush: Callable[[], Awaitable[None]],
                            timeout: float) -> None:
    """Let the workers send what is queued (`flush`, within `timeout`), then end them."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(flush(), timeout)
    await cancel_and_wait(tasks)
