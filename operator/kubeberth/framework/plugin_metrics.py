"""Per-plugin metrics of one framework: scheduler_plugin_evaluation_total and, in the cycles
sampled for it, scheduler_plugin_execution_duration_seconds.

The runners note calls here; `flush` hands the totals to the MetricsRecorder once per cycle,
so that the per-node hot path costs a dict increment, not a Prometheus call.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping

from .context import MetricsRecorder
from .status import Code, Status

# Upstream's pluginMetricsSamplePercent: the share of scheduling cycles whose plugin calls are timed.
SAMPLE_PERCENT = 10


class PluginMetrics:
    __slots__ = ("_durations", "_sampler", "evaluations")

    def __init__(self) -> None:
        self.evaluations: Counter[tuple[str, str]] = Counter()  # (plugin, extension point) -> calls
        self._durations: dict[tuple[str, str, str], list[float]] = {}
        # Its own generator: drawing from the scheduler's would change which node wins a tie.
        self._sampler = random.Random()

    def sample(self) -> bool:
        """Whether to time the plugins of the cycle about to start."""
        return self._sampler.randrange(100) < SAMPLE_PERCENT

    def count(self, plugin: str, point: str, n: int = 1) -> None:
        self.evaluations[(plugin, point)] += n

    def count_each(self, keys: Iterable[tuple[str, str]]) -> None:
        """One call of each (plugin, extension point)."""
        evaluations = self.evaluations
        for key in keys:
            evaluations[key] += 1

    def count_filter_calls(self, plugins: Iterable[str], stopped_at: Mapping[str, int], passed: int) -> None:
        """Filter calls of a walk over nodes: `plugins` in the order they run, `stopped_at[p]` the
        nodes plugin p rejected (the plugins after it were not called for them), `passed` the
        nodes all of them let through."""
        reached = passed + sum(stopped_at.values())
        for name in plugins:
            if not reached:
                break
            self.evaluations[(name, "Filter")] += reached
            reached -= stopped_at.get(name, 0)

    def took(self, plugin: str, point: str, status: Status | None, seconds: float) -> None:
        code = (status.code if status is not None else Code.SUCCESS).upstream_name
        key = (plugin, point, code)
        got = self._durations.get(key)
        if got is None:
            self._durations[key] = [seconds]
        else:
            got.append(seconds)

    def flush(self, profile: str, metrics: MetricsRecorder | None) -> None:
        if metrics is not None:
            if self.evaluations:
                metrics.plugin_evaluations(profile, self.evaluations)
            for (plugin, point, code), seconds in self._durations.items():
                metrics.plugin_execution_durations(plugin, point, code, seconds)
        self.evaluations = Counter()
        self._durations = {}
