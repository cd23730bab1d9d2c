"""Per-plugin metrics of one framework: scheduler_plugin_evaluation_total and, in the cycles
sampled for it, scheduler_plugin_execution_duration_seconds.

The runners note calls here; `flush` hands the totals to the MetricsRecorder once per cycle,
so that the per-node hot path costs a dict increment, not a Prometheus call. The counts of
a cycle cost next to nothing: calls are summed per plugin name and extension point (no key
tuple to build and hash per call), and a point that calls a prefix of its plugins in order
(PreFilter, PreScore) notes one number per cycle, how far it got (`PrefixCounts`).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from .context import MetricsRecorder
from .status import Code, Status

# Upstream's pluginMetricsSamplePercent: the share of scheduling cycles whose plugin calls are timed.
SAMPLE_PERCENT = 10


class PrefixCounts:
    """Calls of an extension point whose runs each call the first k of its plugins (in their
    fixed order): `runs[k]` counts the runs that stopped after k plugins, so a run costs one
    list increment, and plugin i was called sum(runs[i + 1:]) times."""

    __slots__ = ("plugins", "point", "runs")

    def __init__(self, point: str, plugins: Sequence[str]) -> None:
        self.point = point
        self.plugins = list(plugins)
        self.runs = [0] * (len(self.plugins) + 1)

    def drain(self, into: Counter[tuple[str, str]]) -> None:
        runs = self.runs
        called = 0
        for k in range(len(self.plugins), 0, -1):
            called += runs[k]
            if called:
                into[(self.plugins[k - 1], self.point)] += called
        runs[:] = [0] * len(runs)  # in place: a runner may hold the list


class PluginMetrics:
    __slots__ = ("_by_point", "_prefixes", "_sampler", "_timings", "evaluations")

    def __init__(self) -> None:
        # (plugin, extension point) -> calls, filled by `flush` from the counts below.
        self.evaluations: Counter[tuple[str, str]] = Counter()
        self._by_point: dict[str, dict[str, int]] = {}  # extension point -> plugin -> calls
        self._prefixes: list[PrefixCounts] = []
        self._timings: list[tuple[str, str, Code, float]] = []  # (plugin, point, code, seconds)
        # Its own generator: drawing from the scheduler's would change which node wins a tie.
        self._sampler = random.Random()

    def sample(self) -> bool:
        """Whether to time the plugins of the cycle about to start (SAMPLE_PERCENT of them)."""
        return self._sampler.random() * 100 < SAMPLE_PERCENT

    def calls(self, point: str) -> dict[str, int]:
        """plugin -> calls at `point`, for a runner to add to (`calls[name] = calls.get(name, 0) + n`)."""
        got = self._by_point.get(point)
        if got is None:
            got = self._by_point[point] = {}
        return got

    def prefix_counts(self, point: str, plugins: Sequence[str]) -> PrefixCounts:
        """Counts for a point that calls a prefix of `plugins` per run (kept until the framework goes)."""
        counts = PrefixCounts(point, plugins)
        self._prefixes.append(counts)
        return counts

    def count(self, plugin: str, point: str, n: int = 1) -> None:
        calls = self.calls(point)
        calls[plugin] = calls.get(plugin, 0) + n

    def count_each(self, keys: Iterable[tuple[str, str]]) -> None:
        """One call of each (plugin, extension point)."""
        for plugin, point in keys:
            self.count(plugin, point)

    def count_filter_calls(self, plugins: Iterable[str], stopped_at: Mapping[str, int], passed: int) -> None:
        """Filter calls of a walk over nodes: `plugins` in the order they run, `stopped_at[p]` the
        nodes plugin p rejected (the plugins after it were not called for them), `passed` the
        nodes all of them let through."""
        reached = passed + sum(stopped_at.values()) if stopped_at else passed
        if not reached:
            return
        calls = self.calls("Filter")
        for name in plugins:
            calls[name] = calls.get(name, 0) + reached
            if stopped_at:
                reached -= stopped_at.get(name, 0)
                if not reached:
                    break

    def took(self, plugin: str, point: str, status: Status | None, seconds: float) -> None:
        """One timed call (sampled cycles only); grouped per (plugin, point, status) at flush."""
        self._timings.append((plugin, point, status.code if status is not None else Code.SUCCESS, seconds))

    def collect(self) -> Counter[tuple[str, str]]:
        """Move every call noted since the last collect into `evaluations` (and return it)."""
        evaluations = self.evaluations
        for point, calls in self._by_point.items():
            for plugin, n in calls.items():
                if n:
                    evaluations[(plugin, point)] += n
            calls.clear()
        for prefix in self._prefixes:
            prefix.drain(evaluations)
        return evaluations

    def flush(self, profile: str, metrics: MetricsRecorder | None) -> None:
        evaluations = self.collect()
        if metrics is not None:
            if evaluations:
                metrics.plugin_evaluations(profile, evaluations)
            durations: dict[tuple[str, str, Code], list[float]] = {}
            for plugin, point, code, seconds in self._timings:
                got = durations.get((plugin, point, code))
                if got is None:
                    durations[(plugin, point, code)] = [seconds]
                else:
                    got.append(seconds)
            for (plugin, point, code), observed in durations.items():
                metrics.plugin_execution_durations(plugin, point, code.upstream_name, observed)
        self.evaluations = Counter()
        self._timings = []
