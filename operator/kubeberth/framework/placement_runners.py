"""The pod-group cycle's placement extension points (TopologyAwareWorkloadScheduling), as
upstream's frameworkImpl runs them: PlacementGenerate (only the first plugin: the candidate
placements, or the parent placement when the profile has none) and PlacementScore (every plugin
scores every feasible placement, normalises, is range-checked and weighted)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..model import NodeInfo, PodGroup
from .cycle_state import CycleState
from .status import Code, PluginError, Status
from .types import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    Placement,
    PlacementPluginScores,
    PlacementScore,
    PodGroupAssignments,
)

if TYPE_CHECKING:
    from .context import SchedulerContext
    from .interfaces import PlacementGeneratePlugin, PlacementScorePlugin

NO_FEASIBLE_PLACEMENTS = "no feasible placements found"  # upstream's words when a generator returns none


class PlacementRunners:
    """Mixed into Framework (which sets the plugin lists, the weights and `_observe`)."""

    ctx: SchedulerContext
    placement_generate_plugins: list[PlacementGeneratePlugin]
    placement_score_plugins: list[PlacementScorePlugin]
    placement_score_weights: dict[str, int]

    def _observe(self, point: str, status: Status | None, started: float) -> None:
        raise NotImplementedError

    def run_placement_generate(self, state: CycleState, pod_group: PodGroup, nodes: list[NodeInfo]
                               ) -> tuple[list[Placement], Status | None]:
        """upstream's RunPlacementGeneratePlugins: the placements of the first PlacementGenerate
        plugin over the parent placement of `nodes`; [parent] when there is none; Unschedulable
        when it generates none; its failure with its name."""
        started = time.perf_counter()
        parent = Placement("", list(nodes))
        status: Status | None = None
        try:
            if not self.placement_generate_plugins:
                return [parent], None
            plugin = self.placement_generate_plugins[0]
            try:
                placements, status = plugin.generate_placements(state, pod_group, parent)
            except PluginError as exc:
                placements, status = [], Status.error(str(exc))
            except Exception as exc:  # a plugin's own bug: the group's attempt fails with its Error
                placements, status = [], self.ctx.plugin_errors.raised("PlacementGenerate", plugin.name, exc)
            if status is not None and not status.is_success():
                status.with_plugin(plugin.name)
                return [], status
            if not placements:
                status = Status(Code.UNSCHEDULABLE, NO_FEASIBLE_PLACEMENTS, plugin=plugin.name)
                return [], status
            return list(placements), None
        finally:
            self._observe("PlacementGenerate", status, started)

    def run_placement_score(self, state: CycleState, pod_group: PodGroup, assignments: list[PodGroupAssignments]
                            ) -> tuple[list[PlacementPluginScores], Status | None]:
        """upstream's RunPlacementScorePlugins: per placement, each plugin's score normalised,
        checked against [MIN_NODE_SCORE, MAX_NODE_SCORE] and weighted, and their total. An Error
        status (with upstream's words) when a plugin fails or scores out of range."""
        started = time.perf_counter()
        status: Status | None = None
        try:
            per_plugin: dict[str, list[PlacementScore]] = {}
            for p in self.placement_score_plugins:
                try:
                    per_plugin[p.name] = [PlacementScore(a.placement, int(p.score_placement(state, pod_group, a)))
                                          for a in assignments]
                except Exception as exc:
                    status = Status.error(f'running PlacementScore plugins: plugin "{p.name}" failed with: '
                                          f'{_text(exc)}')
                    return [], status
            for p in self.placement_score_plugins:
                if not p.has_normalize_placement_score:
                    continue
                try:
                    st = p.normalize_placement_scores(state, pod_group, per_plugin[p.name])
                except Exception as exc:
                    st = Status.error(_text(exc))
                if st is not None and not st.is_success():
                    status = Status.error(f'running NormalizePlacementScore on PlacementScore plugins: plugin '
                                          f'"{p.name}" failed with: {st.message()}')
                    return [], status
            result: list[PlacementPluginScores] = []
            for i, a in enumerate(assignments):
                scores: dict[str, int] = {}
                total = 0
                for p in self.placement_score_plugins:
                    score = per_plugin[p.name][i].score
                    if score > MAX_NODE_SCORE or score < MIN_NODE_SCORE:
                        status = Status.error(
                            f'applying score defaultWeights on PlacementScore plugins: plugin "{p.name}" returns '
                            f"an invalid score {score}, it should in the range of [{MIN_NODE_SCORE}, "
                            f"{MAX_NODE_SCORE}] after normalizing")
                        return [], status
                    weighted = score * self.placement_score_weights[p.name]
                    scores[p.name] = weighted
                    total += weighted
                result.append(PlacementPluginScores(a.placement, scores, total))
            return result, None
        finally:
            self._observe("PlacementScore", status, started)


def _text(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
