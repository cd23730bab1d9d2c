"""The framework: one profile's plugins per extension point, and how each point runs."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING

import numpy as np

from ..model import NodeInfo, Pod
from .binding_runners import BindingCycleRunners
from .context import nominated_pods_added_for
from .cycle_state import CycleState
from .extender import Extender
from .handle import ContextHandle
from .interfaces import (
    BindPlugin,
    FilterPlugin,
    PermitPlugin,
    PlacementGeneratePlugin,
    PlacementScorePlugin,
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
from .placement_runners import PlacementRunners
from .plugin_metrics import PluginMetrics, PrefixCounts
from .status import Code, PluginError, Status, filter_failure
from .types import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    NodeScore,
    NodeToStatus,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfo,
)
from .vector import NodeView, is_zero_scores
from .vector.views import ScoreTable

if TYPE_CHECKING:
    from ..config.models import SchedulingProfileSpec
    from .context import SchedulerContext

class Framework(BindingCycleRunners, PlacementRunners, ContextHandle):
    """Runs a profile. It is also the handle given to plugins (handle.py; as upstream's
    frameworkImpl).

    `vectorise`: filter and score through the plugins' `filter_all` / `score_all` over the
    snapshot's node arrays (see framework/vector/) when the cycle sees at least
    `vector_min_nodes` nodes; the decisions are the same either way, only faster.
    """

    def __init__(self, profile_name: str, spec: SchedulingProfileSpec, ctx: SchedulerContext) -> None:
        super().__init__(profile_name, spec, ctx)
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
        self.placement_generate_plugins: list[PlacementGeneratePlugin] = []
        self.placement_score_plugins: list[PlacementScorePlugin] = []
        self.placement_score_weights: dict[str, int] = {}
        self.extenders: list[Extender] = []
        self.plugin_metrics = PluginMetrics()
        self._prefix_counts: dict[str, PrefixCounts] = {}

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
        try:
            return self.queue_sort_plugins[0].less(a, b)
        except Exception as exc:
            # The heap stays a heap: the two pods count as equals (counted; logged as PluginErrors do).
            self.ctx.plugin_errors.raised("QueueSort", self.queue_sort_plugins[0].name, exc)
            return False

    def run_pre_enqueue(self, pod: Pod) -> Status | None:
        for p in self.pre_enqueue_plugins:
            s = self.run_pre_enqueue_plugin(p, pod)
            if s is not None:
                return s
        return None

    def run_pre_enqueue_plugin(self, p: PreEnqueuePlugin, pod: Pod) -> Status | None:
        """One PreEnqueue plugin: None when it lets the pod through, else its failure (named after it)."""
        try:
            s = p.pre_enqueue(pod)
        except Exception as exc:  # as upstream's unexpected PreEnqueue error: the pod is gated by it
            return self.ctx.plugin_errors.raised("PreEnqueue", p.name, exc)
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
        pm = self.plugin_metrics
        timed = state.record_plugin_metrics
        runs = self._calls_in_order("PreFilter").runs
        called = 0
        for p in self.pre_filter_plugins:
            called += 1
            t0 = time.perf_counter() if timed else 0.0
            try:
                r, s = p.pre_filter(state, pod, nodes)
            except PluginError as exc:
                r, s = None, Status.error(str(exc))
            if timed:
                pm.took(p.name, "PreFilter", s, time.perf_counter() - t0)
            if s is not None and s.is_skip():
                state.skip_filter_plugins.add(p.name)
                skipped += 1
                continue
            if s is not None and not s.is_success():
                s.with_plugin(p.name)
                if s.is_rejected():
                    involved.add(p.name)
                elif s.code == Code.ERROR:
                    s.reasons = [f'running PreFilter plugin "{p.name}": {s.message()}']
                runs[called] += 1
                self._observe("PreFilter", s, started)
                return None, s, involved
            if r is not None and not r.all_nodes():
                involved.add(p.name)
                result = r if result is None else result.merge(r)
                if not result.node_names:
                    break
        runs[called] += 1
        self._observe("PreFilter", None, started)
        return result, None, involved

    def _calls_in_order(self, point: str) -> PrefixCounts:
        """The plugin_evaluation_total counts of PreFilter or PreScore, whose runs call a prefix
        of the point's plugins (fixed once built)."""
        counts = self._prefix_counts.get(point)
        if counts is None:
            plugins = self.pre_filter_plugins if point == "PreFilter" else self.pre_score_plugins
            counts = self._prefix_counts[point] = self.plugin_metrics.prefix_counts(point, [p.name for p in plugins])
        return counts

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
            try:
                s = call(state, pod, other, node_info)
            except Exception as exc:
                return self.ctx.plugin_errors.raised(which, p.name, exc)
            if s is not None and not s.is_success():
                return Status.error(f'running {which} on PreFilter plugin "{p.name}": {s.message()}', p.name)
        return None

    def run_filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Filters in order; the first that does not pass decides."""
        skip = state.skip_filter_plugins
        status = self.run_filter_plugins(self.filter_plugins, state, pod, node_info, skip)
        stopped_at = {status.plugin: 1} if status is not None and status.plugin else {}
        self.plugin_metrics.count_filter_calls(
            (p.name for p in self.filter_plugins if p.name not in skip), stopped_at, 0 if stopped_at else 1)
        return status

    def run_filter_plugins(self, plugins: Sequence[FilterPlugin], state: CycleState, pod: Pod,
                           node_info: NodeInfo, skip: AbstractSet[str] = frozenset()) -> Status | None:
        """Run `plugins` (filter_plugins or a sub-list of them, in their order), leaving out `skip`.
        Counts no calls (plugin_evaluation_total): the callers know how many nodes they walked."""
        timed = state.record_plugin_metrics
        for p in plugins:
            if skip and p.name in skip:
                continue
            if timed:
                t0 = time.perf_counter()
                s = p.filter(state, pod, node_info)
                self.plugin_metrics.took(p.name, "Filter", s, time.perf_counter() - t0)
            else:
                s = p.filter(state, pod, node_info)
            if s is not None and s.code != Code.SUCCESS:
                return filter_failure(p.name, s)
        return None

    def run_filter_with_nominated_pods(self, state: CycleState, pod: Pod,
                                       node_info: NodeInfo) -> Status | None:
        """Upstream's two-pass filter: first as if the nominated pods of equal or higher
        priority were already on the node, then (if they were) without them."""
        nominated = nominated_pods_added_for(self.ctx.nominator, pod, node_info.name)
        if not nominated:
            return self.run_filter(state, pod, node_info)
        added_state, added_info = state.clone(), node_info.clone()
        for nom in nominated:
            added_info.add_pod(nom)
            s = self.run_pre_filter_add_pod(added_state, pod, nom, added_info)
            if s is not None and not s.is_success():
                return s
        status = self.run_filter(added_state, pod, added_info)
        if status is not None and not status.is_success():
            return status
        return self.run_filter(state, pod, node_info)

    async def run_post_filter(self, state: CycleState, pod: Pod, statuses: NodeToStatus
                              ) -> tuple[PostFilterResult | None, Status]:
        started = time.perf_counter()
        reasons: list[str] = []
        result: PostFilterResult | None = None
        for p in self.post_filter_plugins:
            t0 = time.perf_counter()
            r, s = await p.post_filter(state, pod, statuses)
            if state.record_plugin_metrics:
                self.plugin_metrics.took(p.name, "PostFilter", s, time.perf_counter() - t0)
            if s is None or s.is_success():
                self._observe("PostFilter", None, started)
                return r, s if s is not None else Status()
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
        pm = self.plugin_metrics
        timed = state.record_plugin_metrics
        runs = self._calls_in_order("PreScore").runs
        for i, p in enumerate(self.pre_score_plugins):
            t0 = time.perf_counter() if timed else 0.0
            s = p.pre_score(state, pod, nodes)
            if timed:
                pm.took(p.name, "PreScore", s, time.perf_counter() - t0)
            if s is not None and s.is_skip():
                state.skip_score_plugins.add(p.name)
                continue
            if s is not None and not s.is_success():
                status = Status.error(f'running PreScore plugin "{p.name}": {s.message()}', p.name)
                runs[i + 1] += 1
                self._observe("PreScore", status, started)
                return status
        runs[-1] += 1
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
        pm = self.plugin_metrics
        calls = pm.calls("Score")
        timed = state.record_plugin_metrics
        for p in self.score_plugins:
            name = p.name
            if skip and name in skip:
                continue
            calls[name] = calls.get(name, 0) + m
            t0 = time.perf_counter() if timed else 0.0
            try:
                raw = p.score_all(state, pod, view) if view is not None else None
                if raw is None and timed:
                    raw = np.fromiter(self._timed_scores(p, state, pod, nodes), dtype=np.int64, count=m)
                elif raw is None:
                    raw = np.fromiter((p.score(state, pod, ni) for ni in nodes), dtype=np.int64, count=m)
                elif timed:
                    pm.took(p.name, "Score", None, time.perf_counter() - t0)
            except PluginError as exc:
                raise PluginError(f'running Score plugins: plugin "{p.name}" failed with: {exc}', p.name) from exc
            if p.has_normalize:
                t0 = time.perf_counter() if timed else 0.0
                out = p.normalize_all(state, pod, view, raw) if view is not None else None
                st = None
                if out is None:
                    scores = [NodeScore(ni.name, s) for ni, s in zip(nodes, raw.tolist())]
                    st = p.normalize_score(state, pod, scores)
                    if st is not None and not st.is_success():
                        raise PluginError(f'running Normalize on Score plugins: plugin "{p.name}" failed with: '
                                          f'{st.message()}', p.name)
                    out = np.fromiter((ns.score for ns in scores), dtype=np.int64, count=m)
                if timed:
                    pm.took(p.name, "ScoreExtensionNormalize", st, time.perf_counter() - t0)
                raw = out
            if raw.base is not None and view is not None and is_zero_scores(raw):
                per_plugin[name] = raw  # zero whatever the weight, nothing to add or check
                continue
            if m:
                bad = (raw > MAX_NODE_SCORE) | (raw < MIN_NODE_SCORE)
                if bad.any():
                    s = int(raw[int(np.argmax(bad))])
                    raise PluginError(
                        f'applying score defaultWeights on Score plugins: plugin "{p.name}" returns an invalid '
                        f"score {s}, it should in the range of "
                        f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing", p.name)
            weighted = raw * self.score_weights[p.name]
            per_plugin[p.name] = weighted
            totals += weighted
        self._observe("Score", None, started)
        return ScoreTable(nodes, totals, per_plugin)

    def _timed_scores(self, p: ScorePlugin, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
                      ) -> Iterator[int]:
        took = self.plugin_metrics.took
        for ni in nodes:
            t0 = time.perf_counter()
            score = p.score(state, pod, ni)
            took(p.name, "Score", None, time.perf_counter() - t0)
            yield score

    def flush_plugin_metrics(self) -> None:
        """Report the per-plugin calls and durations noted since the last flush."""
        self.plugin_metrics.flush(self.profile_name, self.ctx.metrics)
