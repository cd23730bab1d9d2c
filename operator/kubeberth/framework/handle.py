"""The state behind a framework's Handle (the protocol itself, what a plugin may ask of its
framework, is `interfaces.Handle`, beside the extension points it hands out).

`ContextHandle` reads a profile's spec and the scheduler's shared context; `Framework`
(runtime.py) subclasses it with the plugins and the runners.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..cache.objects import ObjectStore
from ..cache.snapshot import Snapshot
from ..client import ClusterClient
from ..clock import Clock
from ..model import Pod
from .context import NO_METRICS
from .pods_in_pre_bind import PodsInPreBind
from .waiting_pods import WaitingPods

if TYPE_CHECKING:
    from ..config.models import SchedulingProfileSpec
    from .context import MetricsRecorder, Nominator, SchedulerContext, VictimsRecorder


class ContextHandle:
    """The Handle's shared state, read from a profile's spec and the scheduler's context
    (Framework adds the plugins and the runners)."""

    vectorise: bool = True
    vector_min_nodes: int = 64

    def __init__(self, profile_name: str, spec: SchedulingProfileSpec, ctx: SchedulerContext) -> None:
        self.profile_name = profile_name
        self.spec = spec
        self.ctx = ctx

    @property
    def scheduler_name(self) -> str:
        return self.spec.schedulerName

    @property
    def snapshot(self) -> Snapshot:
        return self.ctx.snapshot

    @property
    def objects(self) -> ObjectStore:
        return self.ctx.objects

    @property
    def client(self) -> ClusterClient | None:
        return self.ctx.client

    @property
    def nominator(self) -> Nominator | None:
        return self.ctx.nominator

    @property
    def rng(self) -> random.Random:
        return self.ctx.rng

    @property
    def clock(self) -> Clock:
        return self.ctx.clock

    @property
    def waiting_pods(self) -> WaitingPods:
        return self.ctx.waiting_pods

    @property
    def pods_in_pre_bind(self) -> PodsInPreBind:
        return self.ctx.pods_in_pre_bind

    @property
    def preemption_tasks(self) -> set[asyncio.Task[None]]:
        return self.ctx.preemption_tasks

    def lookup_pod(self, uid: str) -> Pod | None:
        return self.ctx.lookup_pod(uid)

    def list_pods(self, namespace: str | None = None) -> list[Pod]:
        return self.ctx.list_pods(namespace)

    def activate(self, pods: Iterable[Pod]) -> None:
        self.ctx.activate(pods)

    @property
    def metrics(self) -> MetricsRecorder:
        return self.ctx.metrics or NO_METRICS

    @property
    def record_victims(self) -> VictimsRecorder | None:
        return self.ctx.record_victims

    @property
    def shared_indexes(self) -> dict[str, Any]:
        return self.ctx.shared_indexes

    @property
    def percentage_of_nodes_to_score(self) -> int:
        """The profile's percentageOfNodesToScore if it sets one, else the scheduler-wide one
        (upstream's precedence; 0 means the adaptive percentage)."""
        own = self.spec.percentageOfNodesToScore
        return own if own is not None else self.ctx.percentage_of_nodes_to_score
