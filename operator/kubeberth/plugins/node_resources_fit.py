"""NodeResourcesFit: the node must have room for the pod's requests; scores by a strategy."""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Final, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..cache.node_arrays import CPU as COL_CPU
from ..cache.node_arrays import EPH as COL_EPH
from ..cache.node_arrays import MEM as COL_MEM
from ..cache.node_arrays import PODS as COL_PODS
from ..extender.cycle import ignored_resources
from ..framework.cycle_state import CycleState
from ..framework.events import NODE, POD, ActionType, ClusterEvent
from ..framework.interfaces import FilterPlugin, PreFilterPlugin, PreScorePlugin, ScorePlugin
from ..framework.status import Status
from ..framework.types import MAX_NODE_SCORE, PreFilterResult
from ..model import NodeInfo, Pod, Resource
from ._resource_allocation import (
    ResourceAllocationScorer,
    ResourceSpec,
    Scorer,
    default_resources,
    qualified_name_error,
)
from .dynamic_resources.extended import delegated_resources

NAME = "NodeResourcesFit"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

LEAST_ALLOCATED: Final = "LeastAllocated"
MOST_ALLOCATED: Final = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO: Final = "RequestedToCapacityRatio"

# Shape scores are given on 0..MAX_CUSTOM_PRIORITY_SCORE and scaled to 0..MAX_NODE_SCORE.
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100

# ---- args ------------------------------------------------------------------------------------
class UtilizationShapePoint(BaseModel):
    model_config = ConfigDict(extra="forbid")
    utilization: int
    score: int


class RequestedToCapacityRatioParam(BaseModel):
    model_config = ConfigDict(extra="forbid")
    shape: list[UtilizationShapePoint] = Field(default_factory=list)

    @field_validator("shape")
    @classmethod
    def _shape(cls, shape: list[UtilizationShapePoint]) -> list[UtilizationShapePoint]:
        if not shape:
            raise ValueError("at least one point must be specified")
        for i in range(1, len(shape)):
            if shape[i - 1].utilization >= shape[i].utilization:
                raise ValueError(f"[{i}].utilization: Invalid value: {shape[i].utilization}: "
                                 "Utilization values must be sorted in increasing order")
        for i, p in enumerate(shape):
            if not 0 <= p.utilization <= MAX_UTILIZATION:
                raise ValueError(f"[{i}].utilization: Invalid value: {p.utilization}: "
                                 f"not in valid range [0, {MAX_UTILIZATION}]")
            if not 0 <= p.score <= MAX_CUSTOM_PRIORITY_SCORE:
                raise ValueError(f"[{i}].score: Invalid value: {p.score}: "
                                 f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]")
        return shape


class ScoringStrategy(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"] = LEAST_ALLOCATED
    resources: list[ResourceSpec] = Field(default_factory=default_resources)
    requestedToCapacityRatio: RequestedToCapacityRatioParam | None = None

    @field_validator("resources")
    @classmethod
    def _resources(cls, resources: list[ResourceSpec]) -> list[ResourceSpec]:
        if not resources:
            return default_resources()
        for i, r in enumerate(resources):
            if r.weight == 0:
                r.weight = 1
            if not 0 < r.weight <= 100:
                raise ValueError(f"[{i}].weight: Invalid value: {r.weight}: "
                                 f"resource weight of {r.name} not in valid range (0, 100]")
        return resources

    @model_validator(mode="after")
    def _ratio(self) -> ScoringStrategy:
        if self.type == REQUESTED_TO_CAPACITY_RATIO and self.requestedToCapacityRatio is None:
            raise ValueError("requestedToCapacityRatio.shape: Required value: at least one point must be "
                             "specified for the RequestedToCapacityRatio strategy")
        return self


class NodeResourcesFitArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ignoredResources: list[str] = Field(default_factory=list)
    ignoredResourceGroups: list[str] = Field(default_factory=list)
    scoringStrategy: ScoringStrategy = Field(default_factory=ScoringStrategy)

    @field_validator("ignoredResources")
    @classmethod
    def _ignored(cls, names: list[str]) -> list[str]:
        for i, n in enumerate(names):
            err = qualified_name_error(n)
            if err:
                raise ValueError(f"[{i}]: Invalid value: {n!r}: {err}")
        return names

    @field_validator("ignoredResourceGroups")
    @classmethod
    def _groups(cls, groups: list[str]) -> list[str]:
        for i, g in enumerate(groups):
            if "/" in g:
                raise ValueError(f"[{i}]: Invalid value: {g!r}: resource group name can't contain '/'")
            err = qualified_name_error(g)
            if err:
                raise ValueError(f"[{i}]: Invalid value: {g!r}: {err}")
        return groups


# ---- scorers -----------------------------------------------------------------------------------
def _go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, as Go's."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    # Pods without requests count the defaults, so requested may exceed capacity.
    requested = min(requested, capacity)
    return requested * MAX_NODE_SCORE // capacity


def _weighted(per_resource: Any, weights: Sequence[int], vector_per_resource: Any = None) -> Scorer:
    def scorer(requested: list[int], _allocated: list[int], allocatable: list[int]) -> int:
        node_score = weight_sum = 0
        for i, alloc in enumerate(allocatable):
            if alloc == 0:
                continue
            node_score += per_resource(requested[i], alloc) * weights[i]
            weight_sum += weights[i]
        return node_score // weight_sum if weight_sum else 0

    if vector_per_resource is not None:
        w = np.asarray(weights, dtype=np.int64)

        def vector(requested: np.ndarray, _allocated: np.ndarray, allocatable: np.ndarray) -> np.ndarray:
            valid = allocatable != 0
            per = vector_per_resource(requested, np.where(valid, allocatable, 1))
            node_score = np.where(valid, per * w, 0).sum(axis=1)
            weight_sum = np.where(valid, w, 0).sum(axis=1)
            return np.where(weight_sum > 0, node_score // np.maximum(weight_sum, 1), 0)

        scorer.vector = vector  # type: ignore[attr-defined]
    return scorer


def _least_requested_vector(requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """least_requested_score per element (capacity > 0)."""
    return np.where(requested > capacity, 0, (capacity - requested) * MAX_NODE_SCORE // capacity)


def _most_requested_vector(requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """most_requested_score per element (capacity > 0)."""
    return np.minimum(requested, capacity) * MAX_NODE_SCORE // capacity


def least_resource_scorer(resources: Sequence[ResourceSpec]) -> Scorer:
    return _weighted(least_requested_score, [r.weight for r in resources], _least_requested_vector)


def most_resource_scorer(resources: Sequence[ResourceSpec]) -> Scorer:
    return _weighted(most_requested_score, [r.weight for r in resources], _most_requested_vector)


def broken_linear_function(shape: Sequence[tuple[int, int]]) -> Any:
    """Piecewise linear through (utilization, score) points, flat beyond the ends."""
    def f(p: int) -> int:
        for i, (u, s) in enumerate(shape):
            if p <= u:
                if i == 0:
                    return s
                pu, ps = shape[i - 1]
                return ps + _go_div((s - ps) * (p - pu), u - pu)
        return shape[-1][1]
    return f


def broken_linear_vector(shape: Sequence[tuple[int, int]], p: np.ndarray) -> np.ndarray:
    """broken_linear_function(shape) applied to every element of `p`."""
    out = np.full(p.shape, shape[-1][1], dtype=np.int64)
    done = np.zeros(p.shape, dtype=bool)
    for i, (u, s) in enumerate(shape):
        hit = (p <= u) & ~done
        if i == 0:
            val = np.full(p.shape, s, dtype=np.int64)
        else:
            pu, ps = shape[i - 1]
            num = (s - ps) * (p - pu)
            q = np.abs(num) // (u - pu)
            val = ps + np.where(num >= 0, q, -q)
        out = np.where(hit, val, out)
        done |= hit
    return out


def requested_to_capacity_ratio_scorer(resources: Sequence[ResourceSpec],
                                       shape: Sequence[UtilizationShapePoint]) -> Scorer:
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    points = [(p.utilization, p.score * scale) for p in shape]
    raw = broken_linear_function(points)
    weights = [r.weight for r in resources]
    w = np.asarray(weights, dtype=np.int64)
    full_score = raw(MAX_UTILIZATION)

    def vector(requested: np.ndarray, _allocated: np.ndarray, allocatable: np.ndarray) -> np.ndarray:
        valid = allocatable != 0
        cap = np.where(valid, allocatable, 1)
        over = requested > allocatable
        util = np.where(over, MAX_UTILIZATION, requested * MAX_UTILIZATION // cap)
        s = np.where(over, full_score, broken_linear_vector(points, util))
        counted = valid & (s > 0)
        node_score = np.where(counted, s * w, 0).sum(axis=1)
        weight_sum = np.where(counted, w, 0).sum(axis=1)
        safe = np.maximum(weight_sum, 1)
        return np.where(weight_sum > 0, (2 * node_score + weight_sum) // (2 * safe), 0)

    def resource_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return raw(MAX_UTILIZATION)
        return raw(requested * MAX_UTILIZATION // capacity)

    def scorer(requested: list[int], _allocated: list[int], allocatable: list[int]) -> int:
        node_score = weight_sum = 0
        for i, alloc in enumerate(allocatable):
            if alloc == 0:
                continue
            s = resource_score(requested[i], alloc)
            if s > 0:
                node_score += s * weights[i]
                weight_sum += weights[i]
        if weight_sum == 0:
            return 0
        # math.Round of a non-negative ratio: half away from zero.
        return (2 * node_score + weight_sum) // (2 * weight_sum)

    scorer.vector = vector  # type: ignore[attr-defined]
    return scorer


def build_scorer(strategy: ScoringStrategy) -> ResourceAllocationScorer:
    resources = strategy.resources
    if strategy.type == LEAST_ALLOCATED:
        fn = least_resource_scorer(resources)
    elif strategy.type == MOST_ALLOCATED:
        fn = most_resource_scorer(resources)
    else:
        assert strategy.requestedToCapacityRatio is not None
        fn = requested_to_capacity_ratio_scorer(resources, strategy.requestedToCapacityRatio.shape)
    return ResourceAllocationScorer(resources, fn, use_requested=False)


# ---- fit ---------------------------------------------------------------------------------------
def is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName: a qualified name outside kubernetes.io/, not requests.*."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return qualified_name_error("requests." + name) is None


class InsufficientResource:
    __slots__ = ("capacity", "reason", "requested", "resource_name", "unresolvable", "used")

    def __init__(self, resource_name: str, reason: str, requested: int, used: int, capacity: int,
                 unresolvable: bool = False) -> None:
        self.resource_name = resource_name
        self.reason = reason
        self.requested = requested
        self.used = used
        self.capacity = capacity
        self.unresolvable = unresolvable

    def __repr__(self) -> str:
        return (f"InsufficientResource({self.resource_name}, requested={self.requested}, "
                f"used={self.used}, capacity={self.capacity}, unresolvable={self.unresolvable})")


class _PreFilterState:
    __slots__ = ("delegated", "ignored", "ignored_groups", "request")

    def __init__(self, request: Resource, ignored: frozenset[str], ignored_groups: frozenset[str],
                 delegated: frozenset[str] = frozenset()) -> None:
        self.request = request
        self.ignored = ignored
        self.ignored_groups = ignored_groups
        self.delegated = delegated  # extended resources a DeviceClass serves (DynamicResources')

    def clone(self) -> _PreFilterState:
        return self


def fits_request(request: Resource, node_info: NodeInfo, ignored: AbstractSet[str] = frozenset(),
                 ignored_groups: AbstractSet[str] = frozenset(),
                 delegated: AbstractSet[str] = frozenset()) -> list[InsufficientResource]:
    """Every resource the node lacks for the pod, in upstream's order."""
    out: list[InsufficientResource] = []
    alloc = node_info.allocatable
    used = node_info.requested
    num_pods = len(node_info.pods)
    if num_pods + 1 > alloc.allowed_pod_number:
        out.append(InsufficientResource("pods", "Too many pods", 1, num_pods, alloc.allowed_pod_number))
    if (request.milli_cpu == 0 and request.memory == 0 and request.ephemeral_storage == 0
            and not request.scalar):
        return out
    if request.milli_cpu > 0 and request.milli_cpu > alloc.milli_cpu - used.milli_cpu:
        out.append(InsufficientResource("cpu", "Insufficient cpu", request.milli_cpu, used.milli_cpu,
                                        alloc.milli_cpu, request.milli_cpu > alloc.milli_cpu))
    if request.memory > 0 and request.memory > alloc.memory - used.memory:
        out.append(InsufficientResource("memory", "Insufficient memory", request.memory, used.memory,
                                        alloc.memory, request.memory > alloc.memory))
    if request.ephemeral_storage > 0 and request.ephemeral_storage > alloc.ephemeral_storage - used.ephemeral_storage:
        out.append(InsufficientResource(
            "ephemeral-storage", "Insufficient ephemeral-storage", request.ephemeral_storage,
            used.ephemeral_storage, alloc.ephemeral_storage, request.ephemeral_storage > alloc.ephemeral_storage))
    if request.scalar:
        for name, quant in request.scalar.items():
            if quant == 0:
                continue
            # Ignoring applies to extended resources only (not hugepages, not kubernetes.io/).
            if (ignored or ignored_groups) and is_extended_resource_name(name) and (
                    name in ignored or name.split("/", 1)[0] in ignored_groups):
                continue
            have = alloc.scalar.get(name, 0)
            if have == 0 and name in delegated:
                continue  # not advertised by the node: DynamicResources allocates devices for it
            in_use = used.scalar.get(name, 0)
            if quant > have - in_use:
                out.append(InsufficientResource(name, f"Insufficient {name}", quant, in_use, have, quant > have))
    return out


def fits(pod: Pod, node_info: NodeInfo) -> list[InsufficientResource]:
    """Upstream's noderesources.Fits, for callers outside the framework (no ignored resources)."""
    return fits_request(pod.requests, node_info)


class NodeResourcesFit(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    name = NAME
    args_model = NodeResourcesFitArgs

    def __init__(self, args: NodeResourcesFitArgs | None = None, handle: Any = None) -> None:
        args = args if args is not None else NodeResourcesFitArgs()
        self.handle = handle
        self.args = args
        self.ignored_resources = frozenset(args.ignoredResources)
        self.ignored_resource_groups = frozenset(args.ignoredResourceGroups)
        self.scorer = build_scorer(args.scoringStrategy)

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent(POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE
                             | ActionType.UPDATE_NODE_TAINT | ActionType.UPDATE_NODE_LABEL)]

    def _ignored(self) -> frozenset[str]:
        """The args' ignoredResources plus the resources this profile's extenders manage with
        ignoredByScheduler (read each cycle: extenders are attached after plugins are built)."""
        extenders = getattr(self.handle, "extenders", None)
        if not extenders:
            return self.ignored_resources
        return self.ignored_resources | frozenset(ignored_resources(extenders))

    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        objects = getattr(self.handle, "objects", None)
        delegated = frozenset(delegated_resources(objects, pod)) if pod.requests.scalar and objects else frozenset()
        state.write(PRE_FILTER_STATE_KEY,
                    _PreFilterState(pod.requests, self._ignored(), self.ignored_resource_groups, delegated))
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return Status.error(f"error reading {PRE_FILTER_STATE_KEY!r} from cycleState: not found")
        request = s.request
        if not request.scalar:
            # The common case, without building InsufficientResource objects: it fits.
            alloc = node_info.allocatable
            used = node_info.requested
            if (len(node_info.pods) < alloc.allowed_pod_number
                    and request.milli_cpu <= alloc.milli_cpu - used.milli_cpu
                    and request.memory <= alloc.memory - used.memory
                    and request.ephemeral_storage <= alloc.ephemeral_storage - used.ephemeral_storage):
                return None
        insufficient = fits_request(request, node_info, s.ignored, s.ignored_groups, s.delegated)
        if not insufficient:
            return None
        reasons = [r.reason for r in insufficient]
        if any(r.unresolvable for r in insufficient):
            return Status.unresolvable(*reasons)
        return Status.unschedulable(*reasons)

    def filter_all(self, state: CycleState, pod: Pod, nodes: Any) -> np.ndarray | None:
        """`filter` for every node of a NodeView (None when the pod requests a scalar resource)."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return None
        request = s.request
        for name, quant in request.scalar.items():
            if quant == 0:
                continue
            if (s.ignored or s.ignored_groups) and is_extended_resource_name(name) and (
                    name in s.ignored or name.split("/", 1)[0] in s.ignored_groups):
                continue
            return None
        a = nodes.arrays
        alloc = nodes.take(a.alloc)
        used = nodes.take(a.req)
        ok = used[:, COL_PODS] + 1 <= alloc[:, COL_PODS]
        for col, want in ((COL_CPU, request.milli_cpu), (COL_MEM, request.memory),
                          (COL_EPH, request.ephemeral_storage)):
            if want > 0:
                ok &= want <= alloc[:, col] - used[:, col]
        return ok

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(self.scorer.pod_requests(pod)))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        s = state.get(PRE_SCORE_STATE_KEY)
        reqs = s.pod_requests if isinstance(s, _PreScoreState) else self.scorer.pod_requests(pod)
        return self.scorer.score(node_info, reqs)

    def score_all(self, state: CycleState, pod: Pod, nodes: Any) -> np.ndarray | None:
        s = state.get(PRE_SCORE_STATE_KEY)
        reqs = s.pod_requests if isinstance(s, _PreScoreState) else self.scorer.pod_requests(pod)
        return self.scorer.score_all(nodes, reqs)


class _PreScoreState:
    __slots__ = ("pod_requests",)

    def __init__(self, pod_requests: list[int]) -> None:
        self.pod_requests = pod_requests

    def clone(self) -> _PreScoreState:
        return self


PLUGINS = [NodeResourcesFit]
