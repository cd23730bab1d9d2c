"""Shared scoring machinery of NodeResourcesFit and NodeResourcesBalancedAllocation
(upstream's noderesources/resource_allocation.go)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from ..framework.status import PluginError
from ..model import NodeInfo, Pod, Resource
from ..model.resources import CPU, EPHEMERAL_STORAGE, MEMORY, is_scalar_resource

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


Scorer = Callable[[list[int], list[int]], int]


class ResourceAllocationScorer:
    """Scores a node from (requested, allocatable) of the configured resources.

    `use_requested` False: cpu and memory count the node's non-zero requests and the pod's
    requests with the scoring defaults for containers that name none (100m, 200Mi);
    True: the plain requests.
    """

    __slots__ = ("kinds", "names", "scorer", "use_requested", "weights")

    def __init__(self, resources: Sequence[ResourceSpec], scorer: Scorer, *, use_requested: bool) -> None:
        self.names = [r.name for r in resources]
        self.weights = [r.weight for r in resources]
        self.kinds = [_kind(n) for n in self.names]
        self.scorer = scorer
        self.use_requested = use_requested

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
        return self.scorer(requested, allocatable)


def is_best_effort(pod_requests: Sequence[int]) -> bool:
    return not any(pod_requests)
