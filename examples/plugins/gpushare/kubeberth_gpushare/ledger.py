"""Which GPU milli is in use on each node, for every node of the snapshot at once.

The table is a function of each NodeInfo (its node's GPUs, its pods): a bound pod holds the
GPUs its `gpu-index` annotation names; a pod assumed by this scheduler and not annotated yet
holds the GPUs Reserve chose (`GpuLedger.assigned`); a GPU pod with neither is packed as the
artifact does (on the fitting GPUs with the least milli left). kubeberth's RowCache keeps the
table current (only the rows of nodes whose NodeInfo changed are read again), so pods added or
removed by anyone, bound or assumed, are seen at the next cycle.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kubeberth.framework import Handle, NodeInfo
from kubeberth.framework.vector import NodeArrays, RowCache, node_column

from .model import GPU_INDEX, MILLI, GpuRequestError, gpu_request, node_gpu_count, node_gpu_model, parse_gpu_index

SHARED_KEY = "kubeberth_gpushare.ledger"
WIDTH = 8  # GPU columns of the table (nodes with more GPUs widen it)


def pack(free: np.ndarray, milli: int, count: int) -> tuple[int, ...]:
    """The artifact's NodeResource.Sub order: the `count` GPUs with the least milli left that
    still fit `milli` (lowest index on a tie); () when they are not there."""
    order = np.argsort(free, kind="stable")
    picked = [int(i) for i in order if free[i] >= milli][:count]
    return tuple(picked) if len(picked) == count else ()


class GpuLedger:
    """One per scheduler (in the handle's shared indexes): the plugins of every profile read it.

    `table(arrays)`: int64 (nodes, width + 2): columns [0, width) the milli left on each GPU
    (-1 where the node has no such GPU), `width` the node's GPU count, `width + 1` the GpuClustering
    tags of its GPU pods (bits: 1 sharing, 1 << k for k whole GPUs)."""

    def __init__(self) -> None:
        self.assigned: dict[str, tuple[str, tuple[int, ...]]] = {}  # uid -> (node, GPUs) since Reserve
        # uid -> (node, GPUs, milli, milli-CPU): reserved, not in a row read since (sample_metrics adds them)
        self.pending: dict[str, tuple[str, tuple[int, ...], int, int]] = {}
        self.width = WIDTH
        self._rows = RowCache(limit=2)

    def row(self, ni: NodeInfo, without: str = "") -> np.ndarray:
        """The table's row of one node, read from its NodeInfo (leaving out the pod of UID `without`)."""
        w = self.width
        out = np.full(w + 2, -1, dtype=np.int64)
        out[w + 1] = 0
        node = ni.node
        n = node_gpu_count(node) if node is not None else 0
        out[w] = n
        out[:min(n, w)] = MILLI
        pending = self.pending
        for pod in ni.pods:
            if pod.uid == without:
                continue
            if pending:
                pending.pop(pod.uid, None)
            try:
                req = gpu_request(pod)
            except GpuRequestError:
                continue
            if req.milli <= 0:
                continue
            out[w + 1] |= req.tag
            gpus = parse_gpu_index(pod.annotations.get(GPU_INDEX))
            if gpus is None:
                mine = self.assigned.get(pod.uid)
                gpus = mine[1] if mine is not None and mine[0] == ni.name else pack(out[:w], req.milli, req.count)
            for g in gpus:
                if 0 <= g < min(n, w):
                    out[g] -= req.milli
        return out

    def table(self, arrays: NodeArrays) -> np.ndarray:
        """The whole table for the snapshot's arrays (kept current: read it, never write it)."""
        counts = node_column(arrays, "kubeberth_gpushare.count",
                             lambda node: node_gpu_count(node) if node is not None else 0)
        need = int(counts.max()) if len(counts) else 0
        if need > self.width:
            self.width = need
            self._rows = RowCache(limit=2)
        got = self._rows.get(arrays, ("table", self.width), self._all, self.row)
        assert got is not None
        return got

    def _all(self, arrays: NodeArrays) -> np.ndarray:
        out = np.empty((len(arrays.infos), self.width + 2), dtype=np.int64)
        for i, ni in enumerate(arrays.infos):
            out[i] = self.row(ni)
        return out


def ledger(handle: Handle) -> GpuLedger:
    """The scheduler's ledger (made on first use)."""
    shared: dict[str, Any] = handle.shared_indexes
    got = shared.get(SHARED_KEY)
    if not isinstance(got, GpuLedger):
        got = shared[SHARED_KEY] = GpuLedger()
    return got


def model_column(arrays: Any) -> np.ndarray:
    """Each node's GPU model ("" without), as an object column."""
    return node_column(arrays, "kubeberth_gpushare.model",
                       lambda node: node_gpu_model(node) if node is not None else "", dtype=object, missing="")


def cpu_left(arrays: NodeArrays) -> np.ndarray:
    """Allocatable minus requested milli-CPU of each node (the artifact's MilliCpuLeft)."""
    from kubeberth.framework.vector import COL_CPU

    return arrays.alloc[:, COL_CPU] - arrays.req[:, COL_CPU]


def node_cpu_left(ni: NodeInfo) -> int:
    return int(ni.allocatable.milli_cpu - ni.requested.milli_cpu)
