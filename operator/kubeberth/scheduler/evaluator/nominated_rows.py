"""Upstream's two-pass filter for the rows with nominated pods, over the node arrays at once.

nominated_pass.py walks those rows one by one (a Python pass per row, up to one per
outstanding nomination). When the filters active in the cycle all have masks, are node-only
or NodeResourcesFit (no NodePorts: the pod asks for no host port), no active PreFilter plugin
has AddPod extensions, the pod asks for no extended resource and the arrays describe every
node, the first pass of every such row is NodeResourcesFit's bits (fit_statuses) over the
row's requests plus its nominated pods' requests, and the node-only masks: the rows then go
through the masks-only walk (vectorised._pass_masks) like any other, with their first-pass
verdict in place of the mask's. A row that passes the first pass takes the second (the masks
as for any row), as run_filter_with_nominated_pods does.

The statuses are those nominated_pass reports (NodeResourcesFit's shared status for its bits,
a node-only plugin's own `filter`), and so are the Filter call counts: a row failing the first
pass counts that pass; a row passing it counts both passes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...cache.node_arrays import NodeArrays
from ...framework.cycle_state import CycleState
from ...framework.runtime import Framework
from ...framework.status import Code, Status, filter_failure
from ...model import NodeInfo, Pod
from ...preemption.arithmetic_dry_run import NODE_ONLY_FILTERS, NODE_RESOURCES_FIT
from ...preemption.nominated import nominated_rows, nominated_usage
from .fit_statuses import UNRESOLVABLE, row_bits, shared_statuses, status_of

Rejected = Callable[[NodeInfo, int], Status]


class NominatedRows:
    """The first pass of the rows with nominated pods; `apply` folds it into the walk."""

    __slots__ = ("_at", "_before", "_bits", "_chain", "_first_ok", "_is_row", "_k_of_row", "_pod", "_rows",
                 "_state", "second_passes")

    def __init__(self, state: CycleState, pod: Pod, chain: Sequence[tuple[Any, Any]], n: int,
                 rows: np.ndarray, usage: np.ndarray, arrays: NodeArrays) -> None:
        self._state = state
        self._pod = pod
        self._chain = chain
        self._rows = rows
        self._at = {row: k for k, row in enumerate(rows.tolist())}
        self._is_row = np.zeros(n, dtype=bool)
        self._is_row[rows] = True
        self._k_of_row = np.zeros(n, dtype=np.intp)
        self._k_of_row[rows] = np.arange(len(rows))
        self._before: np.ndarray | None = None
        self.second_passes = 0  # rows that passed the first pass and failed the second
        if len(rows):
            used = arrays.req[rows] + usage
            self._bits = row_bits(pod.requests, arrays.alloc[self._rows], used)
            ok = (self._bits & ~UNRESOLVABLE) == 0
            for plugin, mask in chain:
                if plugin.name != NODE_RESOURCES_FIT:
                    ok &= mask[self._rows]
            self._first_ok = ok
        else:
            self._bits = np.zeros(0, dtype=np.int64)
            self._first_ok = np.zeros(0, dtype=bool)

    def apply(self, passed: np.ndarray, rejected: Rejected) -> tuple[np.ndarray, Rejected]:
        """The walk's mask (a row passes when both passes do) and its `rejected(node, row)`."""
        if not len(self._rows):
            return passed, rejected
        passed = passed.copy()
        passed[self._rows] &= self._first_ok
        at, first_ok = self._at, self._first_ok.tolist()

        def reject(node_info: NodeInfo, row: int) -> Status:
            k = at.get(row)
            if k is None:
                return rejected(node_info, row)
            if not first_ok[k]:
                status = self._first_pass(node_info, row, k)
                if status is not None:
                    return status
            self.second_passes += 1
            return rejected(node_info, row)

        base_many = getattr(rejected, "many", None)

        def many(rows: np.ndarray) -> list[Status | None]:
            """NodeResourcesFit's shared statuses at once: for the rows without nominated pods as
            `rejected.many` gives them, for those whose first pass NodeResourcesFit fails with
            the nominated pods added, from their bits; None for the others (ask `reject`)."""
            out: list[Status | None] = base_many(rows) if base_many is not None else [None] * len(rows)
            mine = np.flatnonzero(self._is_row[rows])
            if not len(mine):
                return out
            ours = rows[mine]
            k = self._k_of_row[ours]
            fit_first = ~self._first_ok[k] & self._before_fit()[ours] & ((self._bits[k] & ~UNRESOLVABLE) != 0)
            found = shared_statuses(np.where(fit_first, self._bits[k], -1))
            for m, status in zip(mine.tolist(), found):
                out[m] = status
            return out

        reject.many = many  # type: ignore[attr-defined]
        return passed, reject

    def _before_fit(self) -> np.ndarray:
        """Per row: the masks of the plugins before NodeResourcesFit in the chain all pass."""
        if self._before is None:
            ok = np.ones(len(self._is_row), dtype=bool)
            for plugin, mask in self._chain:
                if plugin.name == NODE_RESOURCES_FIT:
                    break
                ok &= mask
            self._before = ok
        return self._before

    def _first_pass(self, node_info: NodeInfo, row: int, k: int) -> Status | None:
        """The first failing plugin's status with the nominated pods added (as nominated_pass)."""
        state, pod = self._state, self._pod
        for plugin, mask in self._chain:
            if plugin.name == NODE_RESOURCES_FIT:
                status = status_of(int(self._bits[k]))
            elif mask[row]:
                continue
            else:
                status = plugin.filter(state, pod, node_info)
            if status is not None and status.code != Code.SUCCESS:
                return filter_failure(plugin.name, status)
        return None

    def extra_calls(self, feasible_rows: np.ndarray | None) -> int:
        """Filter passes beyond one per walked row: the second pass of the rows among the
        feasible ones and of those that failed only the second pass."""
        extra = self.second_passes
        if feasible_rows is not None and len(self._rows):
            extra += int(np.count_nonzero(self._is_row[feasible_rows]))
        return extra


def vector_nominated_rows(fw: Framework, state: CycleState, pod: Pod, arrays: NodeArrays | None,
                          chain: Sequence[tuple[Any, Any]]) -> NominatedRows | None:
    """The rows with nominated pods over the arrays, or None when this cycle needs the per-row
    pass (nominated_pass) or the per-node two-pass filter."""
    nominator = fw.ctx.nominator
    if nominator is None or arrays is None or not chain or not nominator.nominated_node_names() \
            or arrays.missing.any():
        return None  # (nobody nominated: the plain masked walk, which the caller takes then)
    for p, mask in chain:
        if mask is None or (p.name not in NODE_ONLY_FILTERS and p.name != NODE_RESOURCES_FIT):
            return None
    skip = state.skip_filter_plugins
    for p in fw.pre_filter_plugins:
        if p.name not in skip and p.pre_filter_extensions() is not None:
            return None
    if any(q for q in pod.requests.scalar.values()):
        return None
    per_row = nominated_usage(nominator, pod, arrays)
    if per_row is None:
        rows, usage = nominated_rows(nominator, pod, arrays.pos)
        return NominatedRows(state, pod, chain, arrays.n, np.asarray(rows, dtype=np.intp),
                             np.asarray(usage, dtype=np.int64).reshape(-1, 4), arrays)
    found = np.flatnonzero(per_row[:, 3])
    return NominatedRows(state, pod, chain, arrays.n, found, per_row[found], arrays)
