"""The framework: one profile's plugins per extension point, and how each point runs."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any

import numpy as np

from ..cache.objects import ObjectStore
from ..cache.snapshot import Snapshot
from ..client import ClusterClient
from ..clock import Clock
from ..model import NodeInfo, Pod
from .context import NO_METRICS
from .cycle_state import CycleState
from .extender import Extender
from .interfaces import (
    BindPlugin,
    FilterPlugin,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from .status import Code, PluginError, Status
from .types import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    NodeScore,
    NodeToStatus,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfo,
)
from .vector import NodeView, ScoreTable
from .waiting_pods import WaitingPod, WaitingPods

if TYPE_CHECKING:
    from ..config.models import SchedulingProfileSpec
    from .context import MetricsRecorder, Nominator, SchedulerContext, VictimsRecorder

MAX_PERMIT_TIMEOUT = 15 * 60.0


class Framework:
    """Runs a profile. It is also the handle given to plugins (handle.py; as upstream's
    frameworkImpl).

    `vectorise`: filter and score through the plugins' `filter_all` / `score_all` over the
    snapshot's node arrays (see framework/vector/) when the cycle sees at least
    `vector_min_nodes` nodes; the decisions are the same either way, only faster.
    """

    vectorise: bool = True
    vector_min_nodes: int = 64

    def __init__(self, profile_name: str, spec: SchedulingProfileSpec, ctx: SchedulerContext) -> None:
        self.profile_name = profile_name
        self.spec = spec
        self.ctx = ctx
        self.plugins: dict[str, Plugin] = {}
        self.pre_enqueue_plugins: list[PreEnqueuePlugin] = []
        self.queue_sort_plugins: list[QueueSortPlugin] = []
        self.pre_filter_plugins: list[PreFilterPlugin] = []
        self.filter_plugins: list[FilterPlugin] = []
        self.post_filter_plugins: list[PostFilterPlugin] = []
        self.pre_score_plugins: list[PreScorePlugin] = []
        self.score_plugins: list[ScorePlugin] = []
        self.reserve_plugins: list[ReservePlugin] = []
        self.permit_plugins: list[PermitPlugin] = []
        self.pre_bind_plugins: list[PreBindPlugin] = []
        self.bind_plugins: list[BindPlugin] = []
        self.post_bind_plugins: list[PostBindPlugin] = []
        self.score_weights: dict[str, int] = {}
        self.extenders: list[Extender] = []

    # ---- handle (handle.py) ----------------------------------------------------
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

    def plugin(self, name: str) -> Plugin | None:
        return self.plugins.get(name)

    def has_filter_plugins(self) -> bool:
        return bool(self.filter_plugins)

    def has_score_plugins(self) -> bool:
        return bool(self.score_plugins)

    def has_post_filter_plugins(self) -> bool:
        return bool(self.post_filter_plugins)

    def _observe(self, point: str, status: Status | None, started: float) -> None:
        metrics = self.ctx.metrics
        if metrics is not None:
            code = (status.code if status is not None else Code.SUCCESS).upstream_name
            metrics.extension_point_duration(point, code, self.profile_name, time.perf_counter() - started)

    # ---- queue ----------------------------------------------------------------
    def queue_sort_less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return self.queue_sort_plugins[0].less(a, b)

    def run_pre_enqueue(self, pod: Pod) -> Status | None:
        for p in self.pre_enqueue_plugins:
            s = p.pre_enqueue(pod)
            if s is not None and not s.is_success():
                return s.with_plugin(p.name)
        return None

    # ---- scheduling cycle -----------------------------------------------------
    def run_pre_filter(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
                       ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        """Returns (merged result, failure status, plugins that restricted or rejected)."""
        started = time.perf_counter()
        result: PreFilterResult | None = None
        involved: set[str] = set()
        skipped = 0
        for p in self.pre_filter_plugins:
            try:
                r, s = p.pre_filter(state, pod, nodes)
            except PluginError as exc:
                r, s = None, Status.error(str(exc))
            if s is not None and s.is_skip():
                state.skip_filter_plugins.add(p.name)
                skipped += 1
                continue
            if s is not None and not s.is_success():
                s.with_plugin(p.name)
                if s.is_rejected():
                    involved.add(p.name)
                elif s.code == Code.ERROR:
                    s.reasons = [f"running PreFilter plugin {p.name!r}: {s.message()}"]
                self._observe("PreFilter", s, started)
                return None, s, involved
            if r is not None and not r.all_nodes():
                involved.add(p.name)
                result = r if result is None else result.merge(r)
                if not result.node_names:
                    break
        self._observe("PreFilter", None, started)
        return result, None, involved

    def run_pre_filter_add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod,
                               node_info: NodeInfo) -> Status | None:
        return self._run_pre_filter_extension("AddPod", state, pod, pod_to_add, node_info)

    def run_pre_filter_remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: Pod,
                                  node_info: NodeInfo) -> Status | None:
        return self._run_pre_filter_extension("RemovePod", state, pod, pod_to_remove, node_info)

    def _run_pre_filter_extension(self, which: str, state: CycleState, pod: Pod, other: Pod,
                                  node_info: NodeInfo) -> Status | None:
        for p in self.pre_filter_plugins:
            if p.name in state.skip_filter_plugins:
                continue
            ext = p.pre_filter_extensions()
            if ext is None:
                continue
            call = ext.add_pod if which == "AddPod" else ext.remove_pod
            s = call(state, pod, other, node_info)
            if s is not None and not s.is_success():
                return Status.error(f"running {which} on PreFilter plugin {p.name!r}: {s.message()}", p.name)
        return None

    def run_filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Filters in order; the first that does not pass decides."""
        return self.run_filter_plugins(self.filter_plugins, state, pod, node_info, state.skip_filter_plugins)

    def run_filter_plugins(self, plugins: Sequence[FilterPlugin], state: CycleState, pod: Pod,
                           node_info: NodeInfo, skip: AbstractSet[str] = frozenset()) -> Status | None:
        """Run `plugins` (filter_plugins or a sub-list of them, in their order), leaving out `skip`."""
        for p in plugins:
            if skip and p.name in skip:
                continue
            s = p.filter(state, pod, node_info)
            if s is not None and s.code != Code.SUCCESS:
                if s.code == Code.ERROR:
                    return Status.error(f"running {p.name!r} filter plugin: {s.message()}", p.name)
                return s.with_plugin(p.name)
        return None

    def run_filter_with_nominated_pods(self, state: CycleState, pod: Pod,
                                       node_info: NodeInfo) -> Status | None:
        """Upstream's two-pass filter: first as if the nominated pods of equal or higher
        priority were already on the node, then (if they were) without them."""
        nominator = self.ctx.nominator
        nominated = nominator.nominated_pods_for_node(node_info.name) if nominator is not None else ()
        if not nominated:
            return self.run_filter(state, pod, node_info)
        added_state, added_info, added = state, node_info, False
        for nom in nominated:
            if nom.priority >= pod.priority and nom.uid != pod.uid:
                if not added:
                    added_state, added_info, added = state.clone(), node_info.clone(), True
                added_info.add_pod(nom)
                s = self.run_pre_filter_add_pod(added_state, pod, nom, added_info)
                if s is not None and not s.is_success():
                    return s
        status = self.run_filter(added_state, pod, added_info)
        if not added or (status is not None and not status.is_success()):
            return status
        return self.run_filter(state, pod, node_info)

    async def run_post_filter(self, state: CycleState, pod: Pod, statuses: NodeToStatus
                              ) -> tuple[PostFilterResult | None, Status]:
        started = time.perf_counter()
        reasons: list[str] = []
        result: PostFilterResult | None = None
        for p in self.post_filter_plugins:
            r, s = await p.post_filter(state, pod, statuses)
            if s is None or s.is_success():
                self._observe("PostFilter", None, started)
                return r, Status()
            if s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                self._observe("PostFilter", s, started)
                return r, s.with_plugin(p.name)
            if s.code != Code.UNSCHEDULABLE:
                self._observe("PostFilter", s, started)
                return None, s.with_plugin(p.name)
            reasons.extend(s.reasons)
            if r is not None:
                result = r
        status = Status(Code.UNSCHEDULABLE, *reasons)
        self._observe("PostFilter", status, started)
        return result, status

    def run_pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        started = time.perf_counter()
        for p in self.pre_score_plugins:
            s = p.pre_score(state, pod, nodes)
            if s is not None and s.is_skip():
                state.skip_score_plugins.add(p.name)
                continue
            if s is not None and not s.is_success():
                status = Status.error(f"running PreScore plugin {p.name!r}: {s.message()}", p.name)
                self._observe("PreScore", status, started)
                return status
        self._observe("PreScore", None, started)
        return None

    def run_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> ScoreTable:
        """Scores, normalised and weighted, per node of `nodes`. Raises PluginError on a plugin
        failure. When `nodes` is a NodeView of a vectorising framework, plugins' `score_all` /
        `normalize_all` give whole columns where they can; their per-node methods otherwise."""
        started = time.perf_counter()
        m = len(nodes)
        totals = np.zeros(m, dtype=np.int64)
        per_plugin: dict[str, np.ndarray] = {}
        view = nodes if self.vectorise and isinstance(nodes, NodeView) else None
        skip = state.skip_score_plugins
        for p in self.score_plugins:
            if skip and p.name in skip:
                continue
            raw = p.score_all(state, pod, view) if view is not None else None
            if raw is None:
                raw = np.fromiter((p.score(state, pod, ni) for ni in nodes), dtype=np.int64, count=m)
            if p.has_normalize:
                out = p.normalize_all(state, pod, view, raw) if view is not None else None
                if out is None:
                    scores = [NodeScore(ni.name, s) for ni, s in zip(nodes, raw.tolist())]
                    st = p.normalize_score(state, pod, scores)
                    if st is not None and not st.is_success():
                        raise PluginError(f"running Normalize on Score plugin {p.name!r}: {st.message()}", p.name)
                    out = np.fromiter((ns.score for ns in scores), dtype=np.int64, count=m)
                raw = out
            if m:
                bad = (raw > MAX_NODE_SCORE) | (raw < MIN_NODE_SCORE)
                if bad.any():
                    s = int(raw[int(np.argmax(bad))])
                    raise PluginError(
                        f"plugin {p.name!r} returns an invalid score {s}, it should in the range of "
                        f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing", p.name)
            weighted = raw * self.score_weights[p.name]
            per_plugin[p.name] = weighted
            totals += weighted
        self._observe("Score", None, started)
        return ScoreTable(nodes, totals, per_plugin)

    def run_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        for p in self.reserve_plugins:
            s = p.reserve(state, pod, node_name)
            if s is not None and not s.is_success():
                if s.is_rejected():
                    return s.with_plugin(p.name)
                return Status.error(f"running Reserve plugin {p.name!r}: {s.message()}", p.name)
        return None

    def run_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for p in reversed(self.reserve_plugins):
            p.unreserve(state, pod, node_name)

    def run_permit(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        waits: dict[str, float] = {}
        for p in self.permit_plugins:
            s, timeout = p.permit(state, pod, node_name)
            if s is None or s.is_success():
                continue
            if s.is_rejected():
                return s.with_plugin(p.name)
            if s.is_wait():
                waits[p.name] = min(max(timeout, 0.0), MAX_PERMIT_TIMEOUT)
                continue
            return Status.error(f"running Permit plugin {p.name!r}: {s.message()}", p.name)
        if waits:
            self.ctx.waiting_pods.add(WaitingPod(pod, waits, asyncio.get_event_loop()))
            return Status(Code.WAIT, f"one or more plugins asked to wait and no plugin rejected pod {pod.name!r}")
        return None

    async def wait_on_permit(self, pod: Pod) -> Status | None:
        wp = self.ctx.waiting_pods.get(pod.uid)
        if wp is None:
            return None
        started = time.perf_counter()
        try:
            status = await wp.wait()
        finally:
            self.ctx.waiting_pods.remove(pod.uid)
        if self.ctx.metrics is not None:
            code = (status.code if status is not None else Code.SUCCESS).upstream_name
            self.ctx.metrics.permit_wait_duration(code, time.perf_counter() - started)
        return status

    async def run_pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        for p in self.pre_bind_plugins:
            s = await p.pre_bind(state, pod, node_name)
            if s is not None and not s.is_success():
                if s.is_rejected():
                    return s.with_plugin(p.name)
                return Status.error(f"running PreBind plugin {p.name!r}: {s.message()}", p.name)
        return None

    async def run_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        if not self.bind_plugins:
            return Status.skip()
        for p in self.bind_plugins:
            s = await p.bind(state, pod, node_name)
            if s is not None and s.is_skip():
                continue
            if s is not None and not s.is_success():
                if s.is_rejected():
                    return s.with_plugin(p.name)
                return Status.error(f"running Bind plugin {p.name!r}: {s.message()}", p.name)
            return None
        return Status.skip()

    def run_post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for p in self.post_bind_plugins:
            p.post_bind(state, pod, node_name)
