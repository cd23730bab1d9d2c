"""OpenGpuShare's `sample_metrics`: the GPU milli in use and the paper's fragmentation of the
cluster (frag.go: per node, the GPU milli the typical pods could not use, weighted by their
frequency; the ratio is over the idle GPU milli). Per-node values are kept and recomputed only
for the nodes whose GPUs or CPU changed: replay samples after every event."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from kubeberth.framework import Handle

from .ledger import ledger
from .policy_base import NodeState, WholeSnapshot
from .typical import SummaryError, TypicalPods, find_summary, frag_of, typical_pods


class FragMeter:
    """The metrics of one accounting plugin (its caches)."""

    def __init__(self) -> None:
        self._summary: Mapping[str, Any] | None = None
        self._typical: TypicalPods | None = None
        self._rows: tuple[Any, dict[str, int]] | None = None
        self._kept: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    def typical(self, handle: Handle) -> TypicalPods | None:
        found = find_summary(handle.objects)
        if found is None:
            return None
        if found[1] is not self._summary:
            self._summary, self._kept = found[1], None
            try:
                self._typical = typical_pods(found[1])
            except SummaryError:
                self._typical = None
        return self._typical

    def _row_of(self, arrays: Any) -> dict[str, int]:
        if self._rows is None or self._rows[0] is not arrays.infos:
            self._rows = (arrays.infos, {ni.name: i for i, ni in enumerate(arrays.infos)})
        return self._rows[1]

    def sample(self, handle: Handle) -> dict[str, float]:
        snapshot = handle.snapshot
        if len(snapshot.node_infos) == 0:
            return {"gpuMilliUsed": 0.0}
        arrays = snapshot.arrays()
        every = NodeState.of_nodes(handle, WholeSnapshot(arrays))
        free, cpu = every.free, every.cpu
        pending = ledger(handle).pending
        if pending:
            free, cpu = free.copy(), cpu.copy()
            rows = self._row_of(arrays)
            for node, gpus, milli, pod_cpu in pending.values():
                i = rows.get(node)
                if i is not None:
                    free[i, list(gpus)] -= milli
                    cpu[i] -= pod_cpu
        idle = float(np.maximum(free, 0).sum())
        out = {"gpuMilliUsed": float(np.minimum(every.count, free.shape[1]).sum() * 1000 - idle)}
        tp = self.typical(handle)
        if tp is None:
            return out
        frag = float(self._node_frag(tp, free, cpu, every.model).sum())
        out["fragMilli"] = frag
        out["fragRatio"] = 100.0 * frag / idle if idle > 0 else 0.0
        return out

    def _node_frag(self, tp: TypicalPods, free: np.ndarray, cpu: np.ndarray, model: np.ndarray) -> np.ndarray:
        kept = self._kept
        if kept is None or kept[0].shape != free.shape:
            values = frag_of(tp, free, cpu, tp.access(model))
            self._kept = (free.copy(), cpu.copy(), model.copy(), values)
            return values
        k_free, k_cpu, k_model, values = kept
        dirty = np.flatnonzero((k_free != free).any(axis=1) | (k_cpu != cpu) | (k_model != model))
        if len(dirty):
            values[dirty] = frag_of(tp, free[dirty], cpu[dirty], tp.access(model[dirty]))
            k_free[dirty], k_cpu[dirty], k_model[dirty] = free[dirty], cpu[dirty], model[dirty]
        return values
