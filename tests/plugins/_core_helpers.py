"""One-call runners for each extension point of a plugin under test, so that tables read like
upstream's (the plugin's handle comes from tests.doubles.handle)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kubeberth.framework import (
    CycleState,
    FilterPlugin,
    NodeScore,
    PreFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    Status,
)
from kubeberth.framework.vector import AllNodes
from kubeberth.model import NodeInfo, Pod

if TYPE_CHECKING:
    from kubeberth.cache.snapshot import Snapshot


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


def assert_vectorised_filter_is_filters(plugin: Any, pod: Pod, snap: Snapshot, per_node: CycleState,
                                        vectorised: CycleState) -> None:
    """filter_all's mask over the snapshot, and filter_statuses of the rows it rejects, as `filter`
    gives them node by node (PreFilter already run into `per_node` and, vectorised, `vectorised`)."""
    arrays = snap.arrays()
    mask = plugin.filter_all(vectorised, pod, AllNodes(snap.node_infos, arrays))
    assert mask is not None
    want = [plugin.filter(per_node, pod, ni) for ni in snap.node_infos]
    assert mask.tolist() == [st is None for st in want]
    got = plugin.filter_statuses(vectorised, pod, arrays, np.flatnonzero(~mask))
    assert got is not None
    assert [(st.code, st.reasons) for st in got] == [(st.code, st.reasons) for st in want if st is not None]
