"""FGD (Fragmentation Gradient Descent), the paper's policy: the node (and GPU) where the pod
adds the least fragmentation, given the workload's typical pods (fgd_score.go).

Score of a node: trunc(100 x sigmoid((F(node) - F(node with the pod)) / 1000)), F the node's
fragmentation (typical.frag_of). A sharing pod is tried on each GPU that fits, the best (the
lowest index on a tie) is its score and its GPU; whole GPUs go as the artifact's Sub packs them,
the lowest-index free GPUs are taken. The difference is computed per typical pod in integers,
then weighted: no fragmentation change scores 50 exactly.

Vectorised over nodes x GPUs x typical pods, and cached per pod shape: a shape's column is
recomputed only for the nodes whose GPUs, CPU or model changed since it was last asked.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from kubeberth.framework import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    NodeInfo,
    ObjectKind,
    PluginError,
    Pod,
)
from kubeberth.framework.vector import NodeView

from .model import MILLI, GpuRequest
from .policy_base import GpuPolicy, NodeState, WholeSnapshot, lowest_free
from .typical import WORKLOAD_SUMMARY, SummaryError, TypicalPods, find_summary, summary_name, typical_pods

SHAPES_CACHED = 256


def _frag_terms(tp: TypicalPods, free: np.ndarray, cpu: np.ndarray, acc: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per node and typical pod: (GPUs that fit it, milli on GPUs too small for it), and per node
    the milli left; plus whether the pod's GPU/model terms hold (before the count and CPU)."""
    fz = np.maximum(free, 0)
    fits = free[:, :, None] >= tp.milli[None, None, :]
    cnt = fits.sum(axis=1)
    small = np.where(fits, 0, fz[:, :, None]).sum(axis=1)
    gpu_ok = (tp.milli > 0)[None, :] & acc
    return cnt, small, fz.sum(axis=1), gpu_ok


def _frag_each(tp: TypicalPods, cnt: np.ndarray, small: np.ndarray, left: np.ndarray, gpu_ok: np.ndarray,
               cpu: np.ndarray) -> np.ndarray:
    ok = gpu_ok & (cnt >= tp.count) & (cpu[..., None] >= tp.cpu)
    return np.where(ok, small, left[..., None])


def _sigmoid_score(delta: np.ndarray) -> np.ndarray:
    return np.trunc(1.0 / (1.0 + np.exp(-(delta / 1000))) * float(MAX_NODE_SCORE)).astype(np.int64)


def fgd_scores(tp: TypicalPods, req: GpuRequest, nodes: NodeState, acc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(score, GPU) of each node of `nodes` for `req` (GPU -1: whole GPUs or none, or it fits no GPU)."""
    n = len(nodes.cpu)
    cnt, small, left, gpu_ok = _frag_terms(tp, nodes.free, nodes.cpu, acc)
    old = _frag_each(tp, cnt, small, left, gpu_ok, nodes.cpu)
    cpu_new = nodes.cpu - req.cpu
    gpu = np.full(n, -1, dtype=np.int64)
    if req.sharing:
        f = nodes.free[:, :, None]                       # (n, w, 1): candidates, one per GPU
        g = f - req.milli
        m = tp.milli[None, None, :]
        cnt_new = cnt[:, None, :] - (f >= m) + (g >= m)
        small_new = small[:, None, :] - np.where(f < m, np.maximum(f, 0), 0) + np.where(g < m, np.maximum(g, 0), 0)
        left_new = np.broadcast_to((left - req.milli)[:, None], cnt_new.shape[:2])
        new = _frag_each(tp, cnt_new, small_new, left_new, gpu_ok[:, None, :],
                         np.broadcast_to(cpu_new[:, None], cnt_new.shape[:2]))
        delta = (old[:, None, :] - new) @ tp.weight      # (n, w)
        score = np.where(nodes.free >= req.milli, _sigmoid_score(delta), -1)
        gpu = np.argmax(score, axis=1)
        best = score[np.arange(n), gpu]
        gpu = np.where(best >= 0, gpu, -1)
        return np.maximum(best, 0), gpu
    free_new = nodes.free.copy()
    if req.count > 0:
        order = np.argsort(free_new, axis=1, kind="stable")
        ordered = np.take_along_axis(free_new, order, axis=1)
        fits = ordered >= req.milli
        take = fits & (np.cumsum(fits, axis=1) <= req.count)
        np.put_along_axis(free_new, order, np.where(take, ordered - req.milli, ordered), axis=1)
    cnt2, small2, left2, _ = _frag_terms(tp, free_new, cpu_new, acc)
    new = _frag_each(tp, cnt2, small2, left2, gpu_ok, cpu_new)
    return _sigmoid_score((old - new) @ tp.weight), gpu


class _ShapeColumn:
    __slots__ = ("cpu", "free", "gpu", "model", "score")

    def __init__(self, free: np.ndarray, cpu: np.ndarray, model: np.ndarray, score: np.ndarray,
                 gpu: np.ndarray) -> None:
        self.free, self.cpu, self.model, self.score, self.gpu = free, cpu, model, score, gpu


class FGD(GpuPolicy):
    """The FGD policy. It reads the workload's task mix from the WorkloadSummary in the object
    store (kubeberth.io/v1alpha1, published by `kubeberth replay`, or given to simulate as a
    document); without one it fails the pod's cycle with an error naming the missing object."""

    name = "FGD"
    reads: ClassVar[tuple[ObjectKind, ...]] = (WORKLOAD_SUMMARY,)

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self._summary: Mapping[str, Any] | None = None
        self._typical: TypicalPods | None = None
        self._columns: OrderedDict[GpuRequest, _ShapeColumn] = OrderedDict()
        self._arrays: Any = None

    def typical(self) -> TypicalPods:
        """The typical pods of the store's WorkloadSummary (read again when it changes)."""
        found = find_summary(self.handle.objects)
        if found is None:
            raise PluginError(f"FGD needs a {WORKLOAD_SUMMARY.kind} ({WORKLOAD_SUMMARY.api_version}) in the "
                              "object store: none was found (replay publishes one; give simulate one)", self.name)
        if found[1] is not self._summary or self._typical is None:
            try:
                self._typical = typical_pods(found[1], summary_name(found))
            except SummaryError as exc:
                raise PluginError(str(exc), self.name) from None
            self._summary = found[1]
            self._columns.clear()
        return self._typical

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        tp = self.typical()
        nodes = NodeState.of_node(self.handle, node_info)
        return int(fgd_scores(tp, self.request(pod), nodes, tp.access(nodes.model))[0][0])

    def choose(self, state: CycleState, pod: Pod, req: GpuRequest, nodes: NodeState) -> tuple[int, ...]:
        if not req.sharing:
            return lowest_free(nodes.free[0], req) if req.count > 0 else ()
        tp = self.typical()
        gpu = int(fgd_scores(tp, req, nodes, tp.access(nodes.model))[1][0])
        return (gpu,) if gpu >= 0 else ()

    def score_all(self, state: CycleState, pod: Pod, nodes: NodeView) -> np.ndarray | None:
        if nodes.arrays is None:
            return None
        tp = self.typical()
        req = self.request(pod)
        if nodes.arrays is not self._arrays:
            self._arrays = nodes.arrays
            self._columns.clear()
        every = NodeState.of_nodes(self.handle, WholeSnapshot(nodes.arrays))
        col = self._columns.get(req)
        if col is None or col.free.shape != every.free.shape:
            score, gpu = fgd_scores(tp, req, every, tp.access(every.model))
            col = _ShapeColumn(every.free.copy(), every.cpu.copy(), every.model.copy(), score, gpu)
            if len(self._columns) >= SHAPES_CACHED:
                self._columns.popitem(last=False)
            self._columns[req] = col
        else:
            self._columns.move_to_end(req)
            dirty = np.flatnonzero((col.free != every.free).any(axis=1) | (col.cpu != every.cpu)
                                   | (col.model != every.model))
            if len(dirty):
                sub = NodeState(every.free[dirty], every.count[dirty], every.tags[dirty], every.cpu[dirty],
                                every.model[dirty])
                s, g = fgd_scores(tp, req, sub, tp.access(sub.model))
                col.score[dirty], col.gpu[dirty] = s, g
                col.free[dirty], col.cpu[dirty], col.model[dirty] = sub.free, sub.cpu, sub.model
        return col.score if nodes.idx is None else col.score[nodes.idx]



__all__ = ["FGD", "MILLI", "fgd_scores"]
