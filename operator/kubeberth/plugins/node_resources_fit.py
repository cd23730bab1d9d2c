"""NodeResourcesFit: the node must have room for the pod's requests; scores by a strategy."""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Final, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..framework import (
    ASSIGNED_POD,
    NODE,
    TARGET_POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    FilterPlugin,
    Handle,
    Node,
    NodeInfo,
    PlacementScorePlugin,
    Pod,
    PodGroup,
    PodGroupAssignments,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHint,
    Resource,
    ScorePlugin,
    Status,
)
from ..framework.vector import COL_CPU, COL_EPH, COL_MEM, COL_PODS, RowCache
from ._resource_allocation import (
    ResourceAllocationScorer,
    ResourceSpec,
    default_resources,
    qualified_name_error,
)
from ._scoring_strategies import (
    MAX_CUSTOM_PRIORITY_SCORE,
    MAX_UTILIZATION,
    least_resource_scorer,
    most_resource_scorer,
    requested_to_capacity_ratio_scorer,
)
from .dynamic_resources.extended import delegated_resources

NAME = "NodeResourcesFit"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

LEAST_ALLOCATED: Final = "LeastAllocated"
MOST_ALLOCATED: Final = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO: Final = "RequestedToCapacityRatio"


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


def build_scorer(strategy: ScoringStrategy) -> ResourceAllocationScorer:
    resources = strategy.resources
    if strategy.type == LEAST_ALLOCATED:
        fn = least_resource_scorer(resources)
    elif strategy.type == MOST_ALLOCATED:
        fn = most_resource_scorer(resources)
    else:
        assert strategy.requestedToCapacityRatio is not None
        shape = [(p.utilization, p.score) for p in strategy.requestedToCapacityRatio.shape]
        fn = requested_to_capacity_ratio_scorer(resources, shape)
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


class NodeResourcesFit(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, PlacementScorePlugin):
    name = NAME
    args_model = NodeResourcesFitArgs

    def __init__(self, args: NodeResourcesFitArgs | None, handle: Handle) -> None:
        args = args if args is not None else NodeResourcesFitArgs()
        self.handle = handle
        self.args = args
        self.ignored_resources = frozenset(args.ignoredResources)
        self.ignored_resource_groups = frozenset(args.ignoredResourceGroups)
        self.scorer = build_scorer(args.scoringStrategy)
        self._scalars = RowCache(limit=16)  # filter_all's (allocatable, requested) of scalar resources
        # The placement score (TopologyAwareWorkloadScheduling) is MostAllocated over the strategy's
        # resources whatever the strategy's type, as upstream's placementScorer.
        self.placement_scorer = ResourceAllocationScorer(
            args.scoringStrategy.resources, most_resource_scorer(args.scoringStrategy.resources), use_requested=False)

    def events_to_register(self) -> list[ClusterEvent | ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.DELETE), self._after_assigned_pod_deleted),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
                                 self._after_node_change),
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_DOWN),
                                 self._after_assigned_pod_scaled_down),
            ClusterEventWithHint(ClusterEvent(TARGET_POD, ActionType.UPDATE_POD_SCALE_DOWN)),
        ]

    # ---- QueueingHints -----------------------------------------------------------------
    def _after_assigned_pod_deleted(self, pod: Pod, old: Pod, new: Any) -> QueueingHint:
        """Any placed (or nominated) pod going away may free room."""
        if not old.node_name and not old.nominated_node_name:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def _after_assigned_pod_scaled_down(self, pod: Pod, old: Pod, new: Pod) -> QueueingHint:
        """A placed pod now asks for less of a resource this pod requests."""
        if not new.node_name:
            return QueueingHint.QUEUE_SKIP
        want, before, after = pod.requests, old.requests, new.requests
        for name in want.names():
            if want.get(name) and before.get(name) > after.get(name):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _after_node_change(self, pod: Pod, old: Node | None, new: Node) -> QueueingHint:
        """The new or changed node could hold the pod on its own, and (for a change) offers more
        of something the pod requests than before."""
        if fits(pod, NodeInfo(new)):  # something is short even with the node empty
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        before, after, want = old.allocatable, new.allocatable, pod.requests
        if after.allowed_pod_number > before.allowed_pod_number:
            return QueueingHint.QUEUE
        for name in want.names():
            if want.get(name) and after.get(name) > before.get(name):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _ignored(self) -> frozenset[str]:
        """The args' ignoredResources plus the resources this profile's extenders manage with
        ignoredByScheduler (read each cycle: extenders are attached after plugins are built)."""
        extenders = self.handle.extenders
        if not extenders:
            return self.ignored_resources
        return self.ignored_resources.union(*(e.ignored_resources for e in extenders))

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
        """`filter` for every node of a NodeView; a scalar resource (extended, hugepages) is read
        from a per-resource column of (allocatable, requested), kept current row by row."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return None
        request = s.request
        a = nodes.arrays
        alloc = nodes.take(a.alloc)
        used = nodes.take(a.req)
        ok = used[:, COL_PODS] + 1 <= alloc[:, COL_PODS]
        for col, want in ((COL_CPU, request.milli_cpu), (COL_MEM, request.memory),
                          (COL_EPH, request.ephemeral_storage)):
            if want > 0:
                ok &= want <= alloc[:, col] - used[:, col]
        for name, quant in request.scalar.items():
            if quant == 0:
                continue
            if (s.ignored or s.ignored_groups) and is_extended_resource_name(name) and (
                    name in s.ignored or name.split("/", 1)[0] in s.ignored_groups):
                continue
            have_used = nodes.take(self._scalar_column(a, name))
            have = have_used[:, 0]
            fit = quant <= have - have_used[:, 1]
            ok &= (fit | (have == 0)) if name in s.delegated else fit
        return ok

    def scalar_shortages(self, state: CycleState, arrays: Any) -> list[tuple[str, np.ndarray, np.ndarray]] | None:
        """For the vectorised path's bulk statuses (fit_statuses.py): each scalar resource the pod
        asks that `filter` checks, in its order, with where it is short and where the request
        exceeds the allocatable, over every row of `arrays`; None without PreFilter's state."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return None
        out = []
        for name, quant in s.request.scalar.items():
            if quant == 0 or ((s.ignored or s.ignored_groups) and is_extended_resource_name(name) and (
                    name in s.ignored or name.split("/", 1)[0] in s.ignored_groups)):
                continue
            col = self._scalar_column(arrays, name)
            short = quant > col[:, 0] - col[:, 1]
            if name in s.delegated:
                short &= col[:, 0] != 0
            out.append((name, short, quant > col[:, 0]))
        return out

    def _scalar_column(self, arrays: Any, name: str) -> np.ndarray:
        """(allocatable, requested) of scalar resource `name` on every node of `arrays`."""
        def row(ni: NodeInfo) -> np.ndarray:
            return np.array([ni.allocatable.scalar.get(name, 0), ni.requested.scalar.get(name, 0)], dtype=np.int64)

        def whole(arrs: Any) -> np.ndarray:
            out = np.zeros((len(arrs.infos), 2), dtype=np.int64)
            for i, ni in enumerate(arrs.infos):
                out[i] = row(ni)
            return out

        got = self._scalars.get(arrays, name, whole, row)
        assert got is not None
        return got

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

    # ---- PlacementScore ------------------------------------------------------------------
    def score_placement(self, state: CycleState, pod_group: PodGroup, assignments: PodGroupAssignments) -> int:
        """How full the placement's nodes would be, taken together, with the group's pods the
        placement's attempt put there (MostAllocated: fuller scores higher)."""
        scorer = self.placement_scorer
        return scorer.score_placement(assignments.nodes, [scorer.pod_requests(a.pod) for a in assignments.proposed])


class _PreScoreState:
    __slots__ = ("pod_requests",)

    def __init__(self, pod_requests: list[int]) -> None:
        self.pod_requests = pod_requests

    def clone(self) -> _PreScoreState:
        return self


PLUGINS = [NodeResourcesFit]
