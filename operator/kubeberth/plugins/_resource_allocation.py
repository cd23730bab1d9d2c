"""Shared scoring machinery of NodeResourcesFit and NodeResourcesBalancedAllocation
(upstream's noderesources/resource_allocation.go)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..framework import CPU, EPHEMERAL_STORAGE, MEMORY, NodeInfo, PluginError, Pod, Resource, is_scalar_resource
from ..framework.vector import COL_CPU as _COL_CPU
from ..framework.vector import COL_EPH as _COL_EPH
from ..framework.vector import COL_MEM as _COL_MEM
from ..framework.vector import AllNodes, RowCache

# How each configured resource is read from a NodeInfo.
_KIND_CPU, _KIND_MEMORY, _KIND_EPHEMERAL, _KIND_SCALAR = range(4)

_QUALIFIED_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def qualified_name_error(value: str) -> str | None:
    """Why `value` is not a qualified name (metav1validation.ValidateLabelName), or None."""
    prefix, sep, name = value.rpartition("/")
    if sep and not prefix:
        return "prefix part must be non-empty"
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return "prefix part must be a lowercase RFC 1123 subdomain"
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not _QUALIFIED_NAME.match(name):
        return ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
                "and end with an alphanumeric character")
    return None


class ResourceSpec(BaseModel):
    """A resource scored by its weight (weight 0 or absent defaults to 1, as upstream)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    weight: int = 0


def default_resources() -> list[ResourceSpec]:
    return [ResourceSpec(name=CPU, weight=1), ResourceSpec(name=MEMORY, weight=1)]


def _kind(name: str) -> int | None:
    if name == CPU:
        return _KIND_CPU
    if name == MEMORY:
        return _KIND_MEMORY
    if name == EPHEMERAL_STORAGE:
        return _KIND_EPHEMERAL
    return _KIND_SCALAR


# upstream's scorer(requested, allocated, allocatable): the node's requests with the pod, without
# it, and its allocatable, per configured resource (0/0/0 for a resource that is not scored).
Scorer = Callable[[list[int], list[int], list[int]], int]
# A scorer's vectorised twin, set as its `vector` attribute: the same three as int64 arrays of
# shape (nodes, resources) -> int64 scores, or None.
VectorScorer = Callable[[np.ndarray, np.ndarray, np.ndarray], "np.ndarray | None"]

# Beyond this, int64 products or float64 conversions could differ from Python's ints.
_EXACT_LIMIT = 1 << 52


class ResourceAllocationScorer:
    """Scores a node from (requested, allocatable) of the configured resources.

    `use_requested` False: cpu and memory count the node's non-zero requests and the pod's
    requests with the scoring defaults for containers that name none (100m, 200Mi);
    True: the plain requests.
    """

    __slots__ = ("_rows", "kinds", "names", "scorer", "use_requested", "weights")

    def __init__(self, resources: Sequence[ResourceSpec], scorer: Scorer, *, use_requested: bool) -> None:
        self.names = [r.name for r in resources]
        self.weights = [r.weight for r in resources]
        self.kinds = [_kind(n) for n in self.names]
        self.scorer = scorer
        self.use_requested = use_requested
        # Scores of every node per pod request, recomputed per node as nodes change.
        self._rows = RowCache()

    def pod_requests(self, pod: Pod) -> list[int]:
        reqs: Resource = pod.requests if self.use_requested else pod.non_zero_requests
        return [reqs.get(n) for n in self.names]

    def score(self, node_info: NodeInfo, pod_requests: Sequence[int]) -> int:
        if not self.names:
            raise PluginError("resources not found")
        node = node_info.node
        if node is None:
            raise PluginError("node not found")
        alloc_res = node.allocatable
        requested_all = node_info.requested
        requested_cpu_mem = requested_all if self.use_requested else node_info.non_zero_requested
        n = len(self.names)
        requested = [0] * n
        allocated = [0] * n
        allocatable = [0] * n
        for i in range(n):
            kind = self.kinds[i]
            pod_req = pod_requests[i]
            if kind == _KIND_CPU:
                alloc, req = alloc_res.milli_cpu, requested_cpu_mem.milli_cpu + pod_req
            elif kind == _KIND_MEMORY:
                alloc, req = alloc_res.memory, requested_cpu_mem.memory + pod_req
            elif kind == _KIND_EPHEMERAL:
                alloc, req = alloc_res.ephemeral_storage, requested_all.ephemeral_storage + pod_req
            else:
                name = self.names[i]
                # An extended resource the pod does not request is not scored.
                if pod_req == 0 and is_scalar_resource(name):
                    continue
                if name not in alloc_res.scalar:
                    continue
                alloc = alloc_res.scalar[name]
                req = requested_all.scalar.get(name, 0) + pod_req
            if alloc == 0:
                continue
            allocatable[i] = alloc
            requested[i] = req
            allocated[i] = req - pod_req
        return self.scorer(requested, allocated, allocatable)

    def score_placement(self, nodes: Sequence[NodeInfo], pods_requests: Sequence[Sequence[int]]) -> int:
        """upstream's scorePlacement: the placement's nodes as one node (allocatable and requests
        summed) with the requests of the group's pods placed there (`pods_requests`, one list per
        pod) added. An extended resource none of them requests is not scored."""
        n = len(self.names)
        requested = [0] * n
        for reqs in pods_requests:
            for i in range(n):
                requested[i] += reqs[i]
        allocated = [0] * n
        allocatable = [0] * n
        for ni in nodes:
            node = ni.node
            if node is None:
                continue
            alloc_res = node.allocatable
            requested_all = ni.requested
            requested_cpu_mem = requested_all if self.use_requested else ni.non_zero_requested
            for i in range(n):
                kind = self.kinds[i]
                if kind == _KIND_CPU:
                    alloc, used = alloc_res.milli_cpu, requested_cpu_mem.milli_cpu
                elif kind == _KIND_MEMORY:
                    alloc, used = alloc_res.memory, requested_cpu_mem.memory
                elif kind == _KIND_EPHEMERAL:
                    alloc, used = alloc_res.ephemeral_storage, requested_all.ephemeral_storage
                else:
                    name = self.names[i]
                    if requested[i] == 0 and is_scalar_resource(name):
                        continue
                    if name not in alloc_res.scalar:
                        continue
                    alloc, used = alloc_res.scalar[name], requested_all.scalar.get(name, 0)
                if alloc == 0:
                    continue
                allocatable[i] += alloc
                allocated[i] += used
                requested[i] += used
        return self.scorer(requested, allocated, allocatable)

    def vector_inputs(self, nodes: Any, pod_requests: Sequence[int]
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """`score`'s (requested, allocated, allocatable) for every node of a NodeView, as int64 arrays of shape
        (nodes, resources); None when only the per-node path can tell (a scalar resource the pod
        requests, a node without node, values too large for exact integer arithmetic)."""
        if not self.names:
            return None
        a = nodes.arrays
        if a.missing.any() and nodes.take(a.missing).any():
            return None
        alloc_cols = nodes.take(a.alloc)
        req_all = nodes.take(a.req)
        req_cm = req_all if self.use_requested else nodes.take(a.nz)
        m = alloc_cols.shape[0]
        n = len(self.names)
        requested = np.zeros((m, n), dtype=np.int64)
        allocated = np.zeros((m, n), dtype=np.int64)
        allocatable = np.zeros((m, n), dtype=np.int64)
        for i in range(n):
            kind = self.kinds[i]
            pod_req = pod_requests[i]
            if kind == _KIND_CPU:
                alloc, req = alloc_cols[:, _COL_CPU], req_cm[:, 0] + pod_req
            elif kind == _KIND_MEMORY:
                alloc, req = alloc_cols[:, _COL_MEM], req_cm[:, 1] + pod_req
            elif kind == _KIND_EPHEMERAL:
                alloc, req = alloc_cols[:, _COL_EPH], req_all[:, _COL_EPH] + pod_req
            else:
                name = self.names[i]
                if pod_req == 0 and is_scalar_resource(name):
                    continue
                if not is_scalar_resource(name):
                    continue  # never in a node's scalar resources
                return None
            valid = alloc != 0
            allocatable[:, i] = np.where(valid, alloc, 0)
            requested[:, i] = np.where(valid, req, 0)
            allocated[:, i] = np.where(valid, req - pod_req, 0)
        if not a.small_values(_EXACT_LIMIT) or max(abs(r) for r in pod_requests) >= _EXACT_LIMIT:
            return None
        return requested, allocated, allocatable

    def score_all(self, nodes: Any, pod_requests: Sequence[int]) -> np.ndarray | None:
        """`score` for every node of a NodeView (None: use the per-node path).

        The scores of all nodes for this pod request are kept between cycles: only the nodes
        that changed since are scored again (with `score` itself)."""
        vector = getattr(self.scorer, "vector", None)
        if vector is None:
            return None
        a = nodes.arrays
        if a.missing.any() and nodes.take(a.missing).any():
            return None
        reqs = list(pod_requests)

        def compute_all(arrays: Any) -> np.ndarray | None:
            inputs = self.vector_inputs(AllNodes(arrays.infos, arrays), reqs)
            return vector(*inputs) if inputs is not None else None

        def compute_row(ni: NodeInfo) -> int:
            # A node without node is never scored from here (see the check above).
            return self.score(ni, reqs) if ni.node is not None else 0

        values = self._rows.get(a, tuple(reqs), compute_all, compute_row)
        if values is not None:
            return nodes.take(values)
        inputs = self.vector_inputs(nodes, reqs)
        if inputs is None:
            return None
        return vector(*inputs)


def is_best_effort(pod_requests: Sequence[int]) -> bool:
    return not any(pod_requests)
