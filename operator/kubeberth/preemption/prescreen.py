"""Deciding, before any clone, that a dry run on a node cannot find victims.

A dry run removes every pod the preemptor may evict, then filters with the nominated pods of
equal or higher priority added (upstream's two-pass filter). When NodeResourcesFit runs in the
cycle and the node, even emptied of all those pods and holding those nominated pods, lacks the
pods, cpu, memory or ephemeral storage the preemptor asks for, the first pass fails whatever
the other filters say: the node cannot be a candidate. Telling that costs a few additions over
the node's pods; the dry run costs a NodeInfo and CycleState clone, a removal per pod and a
filter pass per reprieve.

Nodes with no pod the preemptor may evict get the dry run's own status without cloning.

Only the verdict "not a candidate" is decided here. The status a skipped node would have had
is reported by the dry run itself, run lazily when a caller needs it (when no candidate is
found, the statuses make up the FitError message).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..cache.node_arrays import CPU, EPH, MEM, PODS, NodeArrays
from ..framework.cycle_state import CycleState
from ..framework.interfaces import Handle
from ..framework.vector import RowCache, snapshot_arrays
from ..model import NodeInfo, Pod
from .nominated import nominated_requests, nominated_usage

NODE_RESOURCES_FIT = "NodeResourcesFit"
TRY, NO_VICTIMS, HOPELESS = 0, 1, 2
_MEMO_LIMIT = 100_000
# (node generation, preemptor priority) -> what the node keeps after evictions, or None
_kept_memo: dict[tuple[int, int], tuple[int, int, int, int] | None] = {}
# preemptor priority -> per row: cpu, memory, ephemeral storage, pods kept, 1 if some pod is evictable
_kept_rows = RowCache(limit=8)


class Screened:
    """The prescreen of every potential node at once (Prescreen.screen_all)."""

    __slots__ = ("arrays", "kept", "rows", "usage", "verdicts", "visit")

    def __init__(self, arrays: NodeArrays, rows: list[int], verdicts: list[int], visit: list[int],
                 usage: np.ndarray | None, kept: np.ndarray) -> None:
        self.arrays = arrays
        self.kept = kept          # per row: cpu, memory, ephemeral storage, pods kept; 1 if some pod is evictable
        self.rows = rows          # per potential node, its row in the node arrays
        self.verdicts = verdicts  # per potential node, TRY, NO_VICTIMS or HOPELESS
        self.visit = visit        # the steps from the offset whose node is not HOPELESS, in order
        self.usage = usage        # per row, what the pods nominated there add (nominated_usage)


class Prescreen:
    """Per preemptor: which nodes a dry run can skip. Built once per `preempt` call."""

    __slots__ = ("_allowed", "_check_resources", "_enabled", "_fw", "_memoise", "_nominator", "_pod", "_request")

    def __init__(self, fw: Handle, state: CycleState, pod: Pod,
                 is_preemption_allowed: Callable[[NodeInfo, Pod, Pod], bool], memoisable: bool = False) -> None:
        # Off with the framework's vectorised path: the per-node path stays the reference that
        # tests/framework/test_vectorised.py compares against.
        self._enabled = bool(getattr(fw, "vectorise", True))
        self._fw = fw
        self._pod = pod
        self._allowed = is_preemption_allowed
        self._memoise = self._enabled and memoisable
        self._request = pod.requests
        self._nominator = fw.nominator
        self._check_resources = (
            NODE_RESOURCES_FIT not in state.skip_filter_plugins
            and any(p.name == NODE_RESOURCES_FIT for p in fw.filter_plugins))

    def _kept(self, node_info: NodeInfo) -> tuple[int, int, int, int] | None:
        """(cpu, memory, ephemeral storage, pods) the node uses without the pods the preemptor
        may evict; None when there is none. With the default eligibility (which reads only
        priorities) it is memoised by node generation and preemptor priority: between two
        preemptors most nodes have not changed."""
        pod, allowed = self._pod, self._allowed
        key = (node_info.generation, pod.priority) if self._memoise else None
        if key is not None:
            hit = _kept_memo.get(key, False)
            if hit is not False:
                return hit  # type: ignore[return-value]
        used = node_info.requested
        cpu, mem, eph = used.milli_cpu, used.memory, used.ephemeral_storage
        count = len(node_info.pods)
        evictable = False
        for p in node_info.pods:
            if allowed(node_info, p, pod):
                evictable = True
                r = p.requests
                cpu -= r.milli_cpu
                mem -= r.memory
                eph -= r.ephemeral_storage
                count -= 1
        kept = (cpu, mem, eph, count) if evictable else None
        if key is not None:
            if len(_kept_memo) >= _MEMO_LIMIT:
                _kept_memo.clear()
            _kept_memo[key] = kept
        return kept

    def verdict(self, node_info: NodeInfo) -> int:
        """TRY (dry-run the node), NO_VICTIMS (nothing the preemptor may evict: the dry run would
        report MSG_NO_VICTIMS before touching anything, on both paths) or HOPELESS (the dry run
        is sure to reject the node: NodeResourcesFit fails its first pass, the node without the
        evictable pods and with the nominated pods being short of pods, cpu, memory or
        ephemeral storage for the preemptor)."""
        pod = self._pod
        kept = self._kept(node_info)
        if kept is None:
            return NO_VICTIMS
        cpu, mem, eph, count = kept
        if not (self._enabled and self._check_resources):
            return TRY
        n_cpu, n_mem, n_eph, n_count = nominated_requests(self._nominator, pod, node_info.name)
        cpu, mem, eph, count = cpu + n_cpu, mem + n_mem, eph + n_eph, count + n_count
        alloc = node_info.allocatable
        req = self._request
        hopeless = (count + 1 > alloc.allowed_pod_number
                    or (0 < req.milli_cpu and req.milli_cpu > alloc.milli_cpu - cpu)
                    or (0 < req.memory and req.memory > alloc.memory - mem)
                    or (0 < req.ephemeral_storage and req.ephemeral_storage > alloc.ephemeral_storage - eph))
        return HOPELESS if hopeless else TRY

    def _kept_row(self, node_info: NodeInfo) -> tuple[int, int, int, int, int]:
        kept = self._kept(node_info)
        return (0, 0, 0, 0, 0) if kept is None else (*kept, 1)

    def _kept_all(self, arrays: NodeArrays) -> np.ndarray:
        return np.array([self._kept_row(ni) for ni in arrays.infos], dtype=np.int64).reshape(-1, 5)

    def screen_all(self, potential: Sequence[NodeInfo], offset: int,
                   known_rows: Sequence[int] | None = None) -> Screened | None:
        """`verdict` for every potential node at once, over the snapshot's node arrays, with the
        order of the dry runs from `offset`; None when it must be asked node by node (another
        eligibility hook than the default one, or nodes the arrays do not describe).
        `known_rows`: the potential nodes' rows (potential_rows), else looked up by name."""
        if not self._memoise:
            return None
        arrays = snapshot_arrays(self._fw)
        if arrays is None or arrays.missing.any():
            return None
        if known_rows is not None:
            rows = list(known_rows)
        else:
            pos, infos = arrays.pos, arrays.infos
            rows = []
            for ni in potential:
                row = pos.get(ni.name)
                if row is None or infos[row] is not ni:
                    return None
                rows.append(row)
        pod = self._pod
        kept_all = _kept_rows.get(arrays, pod.priority, self._kept_all, self._kept_row)
        assert kept_all is not None
        at = np.asarray(rows, dtype=np.intp)
        kept = kept_all[at]
        verdicts = np.where(kept[:, 4] == 0, NO_VICTIMS, TRY)
        usage = None
        if self._check_resources:
            usage = nominated_usage(self._nominator, pod, arrays)
            used = kept[:, :4].copy()
            if usage is not None:
                used += usage[at]
            else:
                used += np.array([nominated_requests(self._nominator, pod, ni.name) for ni in potential],
                                 dtype=np.int64).reshape(-1, 4)
            alloc = arrays.alloc[at]
            req = self._request
            hopeless = used[:, PODS] + 1 > alloc[:, PODS]
            for col, want in ((CPU, req.milli_cpu), (MEM, req.memory), (EPH, req.ephemeral_storage)):
                if want > 0:
                    hopeless |= want > alloc[:, col] - used[:, col]
            verdicts[(verdicts == TRY) & hopeless] = HOPELESS
        n = len(potential)
        steps = (np.arange(n) + offset) % n
        visit = np.flatnonzero(verdicts[steps] != HOPELESS).tolist()
        return Screened(arrays, rows, verdicts.tolist(), visit, usage, kept_all)
