"""Injectable clocks: real time for the operator, a fake one for tests and simulate."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """The time as the scheduler sees it: `now()` in epoch seconds (real time in the operator, a
    fake clock in tests and simulate; a plugin reads `handle.clock`, never time.time())."""

    def now(self) -> float: ...


class RealClock:
    def now(self) -> float:
        return time.time()


class FakeClock:
    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += seconds

    def set(self, t: float) -> None:
        self._now = t
