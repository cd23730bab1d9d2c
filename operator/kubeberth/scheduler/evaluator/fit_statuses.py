"""NodeResourcesFit's statuses for many nodes at once, for the vectorised filter path.

When no node fits (a preemptor on a full cluster), every node needs the status of the first
filter that rejects it, and that is mostly NodeResourcesFit's. Its status depends only on which
of pods, cpu, memory and ephemeral storage are short and whether the request exceeds the node's
allocatable (Unresolvable); so it is computed as a bit set per row from the node arrays, and
the nodes with the same bits share one Status with upstream's reasons in upstream's order (the
ones NodeResourcesFit.filter writes). Statuses are never changed once recorded in a Diagnosis.

Scalar resources (extended, hugepages) the pod asks take one bit each after those, from
NodeResourcesFit's own columns (`scalar_shortages`), named in its order. Other plugins
give their rejected rows' statuses in bulk through `FilterPlugin.filter_statuses`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...cache.node_arrays import CPU as COL_CPU
from ...cache.node_arrays import EPH as COL_EPH
from ...cache.node_arrays import MEM as COL_MEM
from ...cache.node_arrays import PODS as COL_PODS
from ...framework.cycle_state import CycleState
from ...framework.status import Code, Status, filter_failure
from ...model import NodeInfo, Pod, Resource

NODE_RESOURCES_FIT = "NodeResourcesFit"
PODS, CPU, MEM, EPH = 1, 2, 4, 8
UNRESOLVABLE = 16
_REASONS = ((PODS, "Too many pods"), (CPU, "Insufficient cpu"), (MEM, "Insufficient memory"),
            (EPH, "Insufficient ephemeral-storage"))
SCALAR = 32  # the first scalar resource's bit (the k-th one: SCALAR << k)
_shared: dict[tuple[int, tuple[str, ...]], Status] = {}

Rejected = Callable[[NodeInfo, int], Status]


def status_of(bits: int, scalars: tuple[str, ...] = ()) -> Status | None:
    """The shared status for a bit set (None: it fits); `scalars` names the scalar resources'
    bits, in the order NodeResourcesFit checks them."""
    if not bits & ~UNRESOLVABLE:
        return None
    key = (bits, scalars if bits >= SCALAR else ())
    status = _shared.get(key)
    if status is None:
        reasons = [r for bit, r in _REASONS if bits & bit]
        reasons += [f"Insufficient {name}" for k, name in enumerate(scalars) if bits & (SCALAR << k)]
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if bits & UNRESOLVABLE else Code.UNSCHEDULABLE
        status = _shared[key] = Status(code, *reasons, plugin=NODE_RESOURCES_FIT)
    return status


def bits_of(request: Resource, alloc: Resource, cpu: int, mem: int, eph: int, count: int) -> int:
    """The bits for a node with this allocatable using this much (fits_request's tests)."""
    bits = PODS if count + 1 > alloc.allowed_pod_number else 0
    for bit, want, have, used in ((CPU, request.milli_cpu, alloc.milli_cpu, cpu),
                                  (MEM, request.memory, alloc.memory, mem),
                                  (EPH, request.ephemeral_storage, alloc.ephemeral_storage, eph)):
        if 0 < want and want > have - used:
            bits |= bit
            if want > have:
                bits |= UNRESOLVABLE
    return bits


def row_bits(request: Resource, alloc: np.ndarray, used: np.ndarray) -> np.ndarray:
    """bits_of for every row of the node arrays."""
    bits = np.where(used[:, COL_PODS] + 1 > alloc[:, COL_PODS], PODS, 0).astype(np.int64)
    for bit, col, want in ((CPU, COL_CPU, request.milli_cpu), (MEM, COL_MEM, request.memory),
                           (EPH, COL_EPH, request.ephemeral_storage)):
        if want > 0:
            short = want > alloc[:, col] - used[:, col]
            bits |= np.where(short, bit, 0)
            bits |= np.where(short & (want > alloc[:, col]), UNRESOLVABLE, 0)
    return bits


class SharedRejections:
    """A drop-in for the vectorised path's `rejected(node_info, row)`: the shared status when the
    first plugin whose mask rejects the row is NodeResourcesFit (and every plugin before it has
    a mask), else `rejected` itself. Costs nothing in a cycle that rejects no node. `many(rows)`
    gives the statuses of many rows at once: NodeResourcesFit's shared ones, and those of the
    plugins that answer `filter_statuses` (None where `rejected` must answer)."""

    __slots__ = ("_arrays", "_at", "_bits", "_chain", "_fit_first", "_pod", "_ready", "_rejected", "_scalars",
                 "_state")

    def __init__(self, state: CycleState, pod: Pod, arrays: Any, chain: Sequence[tuple[Any, Any]],
                 rejected: Rejected) -> None:
        self._state = state
        self._pod = pod
        self._arrays = arrays
        self._chain = chain
        self._rejected = rejected
        self._ready = False
        self._at: int | None = None   # position of NodeResourcesFit in the chain, if it applies
        self._bits: np.ndarray | None = None
        self._scalars: tuple[str, ...] = ()
        self._fit_first: list[bool] | None = None  # per row: NodeResourcesFit is its first rejecting mask

    def _setup(self) -> None:
        chain = self._chain
        at = next((k for k, (p, _) in enumerate(chain) if p.name == NODE_RESOURCES_FIT), None)
        if at is not None and any(m is None for _, m in chain[:at + 1]):
            at = None
        if at is not None and any(self._pod.requests.scalar.values()):
            shortages = getattr(chain[at][0], "scalar_shortages", None)
            got = shortages(self._state, self._arrays) if shortages is not None else None
            if got is None:
                at = None  # its own filter gives the statuses
            else:
                bits = row_bits(self._pod.requests, self._arrays.alloc, self._arrays.req)
                for k, (_, short, over) in enumerate(got):
                    bits |= np.where(short, SCALAR << k, 0)
                    bits |= np.where(short & over, UNRESOLVABLE, 0)
                self._bits = bits
                self._scalars = tuple(name for name, _, _ in got)
        self._at = at
        self._ready = True

    def _row_bits(self) -> np.ndarray:
        if self._bits is None:
            self._bits = row_bits(self._pod.requests, self._arrays.alloc, self._arrays.req)
        return self._bits

    def __call__(self, node_info: NodeInfo, row: int) -> Status:
        if not self._ready:
            self._setup()
        at = self._at
        if at is None:
            return self._rejected(node_info, row)
        fit_first = self._fit_first
        if fit_first is None:  # one pass over the masks, not a look at each of them per row
            first = ~self._chain[at][1]
            for _, m in self._chain[:at]:
                first &= m
            fit_first = self._fit_first = first.tolist()
        if not fit_first[row]:
            return self._rejected(node_info, row)
        status = status_of(int(self._row_bits()[row]), self._scalars)
        return status if status is not None else self._rejected(node_info, row)

    def many(self, rows: np.ndarray) -> list[Status | None]:
        """The status of each row that its first rejecting plugin gives in bulk (None: ask
        `self(node_info, row)`). Only plugins with a mask before any without one are asked."""
        out: list[Status | None] = [None] * len(rows)
        if not len(rows):
            return out
        undecided = np.ones(len(rows), dtype=bool)
        for p, mask in self._chain:
            if mask is None:
                break
            first = undecided & ~mask[rows]
            if not first.any():
                continue
            undecided &= ~first
            at = np.flatnonzero(first)
            if p.name == NODE_RESOURCES_FIT:
                if not self._ready:
                    self._setup()
                if self._at is None:
                    continue  # its own filter gives them
                statuses = shared_statuses(self._row_bits()[rows[at]], self._scalars)
            else:
                statuses = p.filter_statuses(self._state, self._pod, self._arrays, rows[at])
                if statuses is None:
                    continue
                wrapped: dict[int, Status] = {}  # a plugin shares one status among many rows
                statuses = [wrapped.get(id(st)) or wrapped.setdefault(id(st), filter_failure(p.name, st))
                            for st in statuses]
            for k, st in zip(at.tolist(), statuses):
                out[k] = st
            if not undecided.any():
                break
        return out


def shared_statuses(bits: np.ndarray, scalars: tuple[str, ...] = ()) -> list[Status | None]:
    """status_of for each entry of `bits` (None for a negative one)."""
    keys, inverse = np.unique(bits, return_inverse=True)
    table = np.array([status_of(int(b), scalars) if b >= 0 else None for b in keys.tolist()] + [None], dtype=object)
    return table[inverse.reshape(-1)].tolist()  # type: ignore[no-any-return]


def shared_rejections(state: CycleState, pod: Pod, arrays: Any, chain: Sequence[tuple[Any, Any]],
                      rejected: Rejected) -> Rejected:
    """SharedRejections (kept as a function for its callers)."""
    return SharedRejections(state, pod, arrays, chain, rejected)


BULK_ROWS = 32


def record_rejections(nodes: Sequence[NodeInfo], names: Sequence[str], rows: np.ndarray, rejected: Rejected,
                      diagnosis: Any) -> tuple[dict[str, int], Status | None]:
    """The masks-only walk's rejected rows, in walk order: each row's status into the diagnosis
    (and its plugin, once per (plugin, code)); returns how many rows each plugin rejected, or
    the first Error status met (nothing recorded then). `rejected.many`, when there, gives
    the statuses of many rows at once."""
    many = getattr(rejected, "many", None)
    row_list = rows.tolist()
    if not row_list:
        return {}, None
    # Asking row by row costs less than the bulk look-up's set-up for a handful of rows.
    statuses: list[Status | None] = (many(rows) if many is not None and len(row_list) > BULK_ROWS
                                     else [None] * len(row_list))
    for k, status in enumerate(statuses):
        if status is None:
            i = row_list[k]
            status = statuses[k] = rejected(nodes[i], i)
            if status.code == Code.ERROR:
                return {}, status
    done: list[Status] = statuses  # type: ignore[assignment]
    diagnosis.node_to_status.statuses.update(zip(map(names.__getitem__, row_list), done))
    distinct = dict(zip(map(id, done), done))
    stops: dict[str, int] = {}
    kinds: dict[tuple[str, Code], Status] = {}
    for key, count in Counter(map(id, done)).items():
        status = distinct[key]
        plugin = status.plugin
        stops[plugin] = stops.get(plugin, 0) + count
        kinds.setdefault((plugin, status.code), status)
    for status in kinds.values():
        diagnosis.add_plugin_status(status)
    return stops, None
