"""Helpers for the core plugin tests: a handle over a snapshot, and one-call runners
for each extension point, so that tables read like upstream's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubeberth.cache.snapshot import Snapshot
from kubeberth.config import SchedulingProfileSpec
from kubeberth.framework import (
    CycleState,
    FilterPlugin,
    Framework,
    NodeScore,
    PreFilterPlugin,
    PreScorePlugin,
    SchedulerContext,
    ScorePlugin,
    Status,
)
from kubeberth.model import Node, NodeInfo, Pod


def handle(nodes: Sequence[Node] = (), pods: Sequence[Pod] = (), *, client: Any = None,
           extras: dict[str, Any] | None = None) -> Framework:
    """A framework (the plugins' handle) whose snapshot holds `nodes` and the bound `pods`."""
    ctx = SchedulerContext(client=client)
    ctx.snapshot = Snapshot.from_objects(nodes, pods)
    ctx.extras.update(extras or {})
    return Framework("test", SchedulingProfileSpec(), ctx)


def run_filter(plugin: Any, pod: Pod, node_info: NodeInfo, *, state: CycleState | None = None,
               pre_filter: bool = True) -> Status | None:
    """PreFilter (unless disabled) then Filter; a rejecting or skipping PreFilter is returned as is."""
    state = state if state is not None else CycleState()
    if pre_filter and isinstance(plugin, PreFilterPlugin):
        _, s = plugin.pre_filter(state, pod, [node_info])
        if s is not None and not s.is_success():
            return s
    assert isinstance(plugin, FilterPlugin)
    return plugin.filter(state, pod, node_info)


def run_score(plugin: Any, pod: Pod, node_infos: Sequence[NodeInfo], *, pre_score: bool = True,
              normalize: bool = True) -> list[int]:
    """PreScore (unless disabled; a Skip gives all zeros), Score each node, then NormalizeScore."""
    assert isinstance(plugin, ScorePlugin)
    state = CycleState()
    if pre_score and isinstance(plugin, PreScorePlugin):
        s = plugin.pre_score(state, pod, list(node_infos))
        if s is not None and s.is_skip():
            return [0] * len(node_infos)
        assert s is None or s.is_success(), s
    scores = [NodeScore(ni.name, plugin.score(state, pod, ni)) for ni in node_infos]
    if normalize and plugin.has_normalize:
        assert plugin.normalize_score(state, pod, scores) is None
    return [s.score for s in scores]
