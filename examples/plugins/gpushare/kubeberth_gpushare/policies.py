"""Five of the paper's policies as Score plugins (FGD is fgd.py), scoring as the artifact's
`pkg/simulator/plugin/*_score.go` do (integer truncations included), vectorised over nodes."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np

from kubeberth.framework import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    NodeInfo,
    NodeScore,
    Pod,
    PreScorePlugin,
    Status,
)
from kubeberth.framework.vector import NodeView

from .model import MAX_SPEC_CPU, MAX_SPEC_GPU, MILLI, GpuRequest
from .policy_base import GpuPolicy, NodeState, go_div, random_fit

_RANDOM_KEY = "kubeberth_gpushare.random"


def _total_left(nodes: NodeState) -> np.ndarray:
    return np.where(nodes.free > 0, nodes.free, 0).sum(axis=1)  # type: ignore[no-any-return]


class Random(GpuPolicy, PreScorePlugin):
    """One feasible node, drawn uniformly at PreScore (the handle's seeded RNG), scores 100, the
    others 0; a sharing pod takes a GPU drawn uniformly among those that fit."""

    name = "Random"

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self._rng = random.Random(self.handle.rng.getrandbits(64)) if handle is not None else random.Random(0)

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        if nodes:
            state.write(_RANDOM_KEY, nodes[self.handle.rng.randrange(len(nodes))].name)
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return MAX_NODE_SCORE if state.get(_RANDOM_KEY) == node_info.name else 0

    def score_all(self, state: CycleState, pod: Pod, nodes: NodeView) -> np.ndarray | None:
        chosen = state.get(_RANDOM_KEY)
        return np.array([MAX_NODE_SCORE if ni.name == chosen else 0 for ni in nodes], dtype=np.int64)

    def choose(self, state: CycleState, pod: Pod, req: GpuRequest, nodes: NodeState) -> tuple[int, ...]:
        return random_fit(nodes.free[0], req, self._rng)


class DotProd(GpuPolicy):
    """Tetris' dot product (the artifact's `merge` dimensions, `max` normalisation): 100 x (1 -
    (cpuLeft/128000 x cpuReq/128000 + gpuLeft/8000 x gpuReq/8000) / 2); 0 where the CPU does not
    fit. GPUs: best fit."""

    name = "DotProd"

    def scores(self, state: CycleState, pod: Pod, req: GpuRequest, nodes: NodeState) -> np.ndarray:
        left = _total_left(nodes)
        dot = (nodes.cpu / MAX_SPEC_CPU) * (req.cpu / MAX_SPEC_CPU) + (left / MAX_SPEC_GPU) * (req.total / MAX_SPEC_GPU)
        raw = float(MAX_NODE_SCORE) * (1 - dot / 2)
        return np.where(nodes.cpu < req.cpu, 0, np.trunc(raw)).astype(np.int64)


class GpuClustering(GpuPolicy):
    """Packs pods of one kind (sharing, or k whole GPUs) together: 75.. for a node holding only
    that kind, 50.. with others too, 25.. for a node without GPU pods, 0.. otherwise, plus
    25 x (8000 - milli left) / 8000 (integers); 0 for a pod without GPU. GPUs: best fit."""

    name = "GpuClustering"

    def scores(self, state: CycleState, pod: Pod, req: GpuRequest, nodes: NodeState) -> np.ndarray:
        if req.tag == 0:
            return np.zeros(len(nodes.cpu), dtype=np.int64)
        base = go_div((MAX_NODE_SCORE // 4) * (MAX_SPEC_GPU - _total_left(nodes)), MAX_SPEC_GPU)
        has = (nodes.tags & req.tag) != 0
        only = nodes.tags == req.tag
        q = MAX_NODE_SCORE // 4
        bonus = np.where(has, np.where(only, 3 * q, 2 * q), np.where(nodes.tags == 0, q, 0))
        return (base + bonus).astype(np.int64)


class GpuPacking(GpuPolicy):
    """Prefers GPUs in use, then used nodes: 100 - (the used GPUs' free %)/10 (at least 50) when
    the pod fits on GPUs in use, 50 - whole GPUs it would start (at least 33) on a node in use,
    33 - free GPUs (at least that count) on an idle node; 0 for a pod without GPU. GPUs: best fit."""

    name = "GpuPacking"

    def scores(self, state: CycleState, pod: Pod, req: GpuRequest, nodes: NodeState) -> np.ndarray:
        n = len(nodes.cpu)
        if req.milli <= 0:
            return np.zeros(n, dtype=np.int64)
        free = nodes.free
        fully = (free == MILLI).sum(axis=1)
        idle = fully == nodes.count
        ordered = np.sort(free, axis=1, kind="stable")  # absent GPUs (-1) first: they never fit
        fits = ordered >= req.milli
        used = fits & (np.cumsum(fits, axis=1) <= req.count)
        enough = used.sum(axis=1) == req.count
        new_gpus = (used & (ordered == MILLI)).sum(axis=1)
        ratio = np.where(used, ordered * 100 // MILLI, 0).sum(axis=1)
        case1 = np.maximum(MAX_NODE_SCORE - ratio // 10, MAX_NODE_SCORE // 2)
        case2 = np.maximum(MAX_NODE_SCORE // 2 - new_gpus, MAX_NODE_SCORE // 3)
        case3 = np.maximum(MAX_NODE_SCORE // 3 - fully, fully)
        out = np.where(idle, case3, np.where(~enough, 0, np.where(new_gpus > 0, case2, case1)))
        return out.astype(np.int64)


class BestFit(GpuPolicy):
    """Least resources left after placing: 100 x (1 - ((cpuLeft - cpu)/128000 x 0.5 + (gpuLeft -
    gpu)/8000 x 0.5)), truncated, then min-max normalised to 0..100 over the nodes scored (integer
    arithmetic; all 0 when they are equal), as the artifact does. Scores CPU-only pods too. A node
    where the pod would not fit (which Filter removes) scores 0. GPUs: best fit."""

    name = "BestFit"

    def scores(self, state: CycleState, pod: Pod, req: GpuRequest, nodes: NodeState) -> np.ndarray:
        left = _total_left(nodes)
        s = (nodes.cpu - req.cpu) / MAX_SPEC_CPU * 0.5
        s = s + (left - req.total) / MAX_SPEC_GPU * 0.5
        raw = np.trunc((1.0 - s) * float(MAX_NODE_SCORE)).astype(np.int64)
        return np.where((nodes.cpu < req.cpu) | (left < req.total), 0, raw)

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        got = self.normalize_all(state, pod, NodeView([], None), np.array([s.score for s in scores], dtype=np.int64))  # type: ignore[arg-type]
        assert got is not None
        for s, v in zip(scores, got.tolist(), strict=True):
            s.score = v
        return None

    def normalize_all(self, state: CycleState, pod: Pod, nodes: NodeView, scores: np.ndarray) -> np.ndarray | None:
        if len(scores) == 0:
            return scores
        lo, hi = int(scores.min()), int(scores.max())
        if hi == lo:
            return np.zeros_like(scores)
        return (scores - lo) * MAX_NODE_SCORE // (hi - lo)
