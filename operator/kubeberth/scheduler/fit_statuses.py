"""NodeResourcesFit's statuses for many nodes at once, for the vectorised filter path.

When no node fits (a preemptor on a full cluster), every node needs the status of the first
filter that rejects it, and that is mostly NodeResourcesFit's. Its status depends only on which
of pods, cpu, memory and ephemeral storage are short and whether the request exceeds the node's
allocatable (Unresolvable); so it is computed as a bit set per row from the node arrays, and
the nodes with the same bits share one Status with upstream's reasons in upstream's order (the
ones NodeResourcesFit.filter writes). Statuses are never changed once recorded in a Diagnosis.

This applies when the pod requests no extended resource that NodeResourcesFit checks (its
`filter_all` then gives a mask); otherwise the plugin's own per-node filter runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..cache.node_arrays import CPU as COL_CPU
from ..cache.node_arrays import EPH as COL_EPH
from ..cache.node_arrays import MEM as COL_MEM
from ..cache.node_arrays import PODS as COL_PODS
from ..framework.status import Code, Status
from ..model import NodeInfo, Pod, Resource

NODE_RESOURCES_FIT = "NodeResourcesFit"
PODS, CPU, MEM, EPH = 1, 2, 4, 8
UNRESOLVABLE = 16
_REASONS = ((PODS, "Too many pods"), (CPU, "Insufficient cpu"), (MEM, "Insufficient memory"),
            (EPH, "Insufficient ephemeral-storage"))
_shared: dict[int, Status] = {}

Rejected = Callable[[NodeInfo, int], Status]


def status_of(bits: int) -> Status | None:
    """The shared status for a bit set (None: it fits)."""
    if not bits & ~UNRESOLVABLE:
        return None
    status = _shared.get(bits)
    if status is None:
        reasons = [r for bit, r in _REASONS if bits & bit]
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if bits & UNRESOLVABLE else Code.UNSCHEDULABLE
        status = _shared[bits] = Status(code, *reasons, plugin=NODE_RESOURCES_FIT)
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


def shared_rejections(pod: Pod, arrays: Any, chain: Sequence[tuple[Any, Any]], rejected: Rejected) -> Rejected:
    """A drop-in for the vectorised path's `rejected(node_info, row)`: the shared status when the
    first plugin whose mask rejects the row is NodeResourcesFit (and every plugin before it has
    a mask), else `rejected` itself. Costs nothing in a cycle that rejects no node."""
    # [per row whether NodeResourcesFit is the first mask to reject it (a list), or None when
    # its status never comes from here; the bits per row or None]
    setup: list[Any] = []

    def reject(node_info: NodeInfo, row: int) -> Status:
        if not setup:
            at = next((k for k, (p, _) in enumerate(chain) if p.name == NODE_RESOURCES_FIT), None)
            if at is not None and any(m is None for _, m in chain[:at + 1]):
                at = None
            fit_first = None
            if at is not None:  # one pass over the masks, not a look at each of them per row
                first = ~chain[at][1]
                for _, m in chain[:at]:
                    first &= m
                fit_first = first.tolist()
            setup.extend((fit_first, None))
        fit_first = setup[0]
        if fit_first is None or not fit_first[row]:
            return rejected(node_info, row)
        if setup[1] is None:
            setup[1] = row_bits(pod.requests, arrays.alloc, arrays.req)
        status = status_of(int(setup[1][row]))
        return status if status is not None else rejected(node_info, row)

    return reject
