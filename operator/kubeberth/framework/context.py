"""What every profile's framework shares: the handle plugins are given."""

from __future__ import annotations

import random
from typing import Any, Protocol

from ..cache.objects import ObjectStore
from ..cache.snapshot import Snapshot
from ..clock import Clock, FakeClock
from ..model import Pod
from .waiting_pods import WaitingPods


class Nominator(Protocol):
    def nominated_pods_for_node(self, node_name: str) -> list[Pod]: ...


class MetricsRecorder(Protocol):
    def extension_point_duration(self, point: str, status: str, profile: str, seconds: float) -> None: ...


class SchedulerContext:
    """Shared, long-lived dependencies. `snapshot` is replaced at the start of each cycle."""

    def __init__(self, *, objects: ObjectStore | None = None, client: Any = None,
                 nominator: Nominator | None = None, clock: Clock | None = None,
                 rng: random.Random | None = None, metrics: MetricsRecorder | None = None) -> None:
        self.objects = objects or ObjectStore()
        self.client = client
        self.nominator = nominator
        self.clock: Clock = clock or FakeClock()
        self.rng = rng or random.Random(0)
        self.metrics = metrics
        self.waiting_pods = WaitingPods()
        self.snapshot = Snapshot()
        # Upstream's nextStartNodeIndex: where the next cycle starts looking for feasible nodes.
        self.next_start_node_index = 0
        # Filled by the scheduler: a callable running preemption-aware filters etc.
        self.extras: dict[str, Any] = {}
