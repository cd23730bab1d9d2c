"""What a plugin may ask of its framework (upstream's framework.Handle).

`Framework` implements it; plugins are typed against this protocol so that they see
the scheduler's shared state (snapshot, objects, nominator, client, ...) and the
runners preemption needs, and nothing else of the framework.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..cache.objects import ObjectStore
from ..cache.snapshot import Snapshot
from ..client import ClusterClient
from ..clock import Clock
from ..model import NodeInfo, Pod
from .context import NO_METRICS
from .cycle_state import CycleState
from .extender import Extender
from .pods_in_pre_bind import PodsInPreBind
from .status import Status
from .waiting_pods import WaitingPods

if TYPE_CHECKING:
    from ..config.models import SchedulingProfileSpec
    from .context import MetricsRecorder, Nominator, SchedulerContext, VictimsRecorder
    from .interfaces import FilterPlugin, Plugin, PreFilterPlugin


class Handle(Protocol):
    """What a plugin may ask of its framework, handed to `__init__(self, args, handle)`:
    the cycle's `snapshot` of NodeInfos, the `objects` store (other kinds), the `client`,
    `waiting_pods`, `nominator`, `clock`, `rng`, `metrics`, `shared_indexes`, `plugin(name)`,
    `lookup_pod` / `list_pods` / `activate`, the extenders, whether the cycle `vectorise`s, and
    the runners preemption uses (`run_filter`, ...)."""

    @property
    def scheduler_name(self) -> str: ...

    @property
    def profile_name(self) -> str: ...

    @property
    def snapshot(self) -> Snapshot: ...

    @property
    def objects(self) -> ObjectStore: ...

    @property
    def client(self) -> ClusterClient | None: ...

    @property
    def nominator(self) -> Nominator | None: ...

    @property
    def rng(self) -> random.Random: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def waiting_pods(self) -> WaitingPods: ...

    @property
    def pods_in_pre_bind(self) -> PodsInPreBind: ...

    @property
    def preemption_tasks(self) -> set[asyncio.Task[None]]: ...

    def lookup_pod(self, uid: str) -> Pod | None: ...

    def list_pods(self, namespace: str | None = None) -> list[Pod]:
        """Every non-terminal pod the scheduler knows (bound, assumed or pending; of `namespace`
        if given), as upstream's pod lister gives them."""
        ...

    def activate(self, pods: Iterable[Pod]) -> None: ...

    @property
    def extenders(self) -> Sequence[Extender]: ...

    @property
    def metrics(self) -> MetricsRecorder: ...

    @property
    def record_victims(self) -> VictimsRecorder | None: ...

    @property
    def shared_indexes(self) -> dict[str, Any]: ...

    @property
    def vectorise(self) -> bool: ...

    @property
    def vector_min_nodes(self) -> int: ...

    @property
    def percentage_of_nodes_to_score(self) -> int: ...

    def plugin(self, name: str) -> Plugin | None: ...

    # The profile's plugins at the points preemption's shortcuts inspect (upstream's ListPlugins).
    @property
    def pre_filter_plugins(self) -> Sequence[PreFilterPlugin]: ...

    @property
    def filter_plugins(self) -> Sequence[FilterPlugin]: ...

    # The runners preemption's dry runs use (upstream's PluginsRunner).
    def run_filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None: ...

    def run_filter_with_nominated_pods(self, state: CycleState, pod: Pod,
                                       node_info: NodeInfo) -> Status | None: ...

    def run_pre_filter_add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod,
                               node_info: NodeInfo) -> Status | None: ...

    def run_pre_filter_remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: Pod,
                                  node_info: NodeInfo) -> Status | None: ...


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
