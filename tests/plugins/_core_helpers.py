"""One-call runners for each extension point of a plugin under test, so that tables read like
upstream's (the plugin's handle comes from tests.doubles.handle)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubeberth.framework import (
    CycleState,
    FilterPlugin,
    NodeScore,
    PreFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    Status,
)
from kubeberth.model import NodeInfo, Pod


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
