"""NodeResourcesBalancedAllocation: favours nodes whose resource fractions stay close together,
scored as v1.37 does: by how much the pod improves the node's balance."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..framework import MAX_NODE_SCORE, CycleState, Handle, NodeInfo, Pod, PreScorePlugin, ScorePlugin, Status
from ._resource_allocation import ResourceAllocationScorer, ResourceSpec, default_resources, is_best_effort

NAME = "NodeResourcesBalancedAllocation"
PRE_SCORE_STATE_KEY = "PreScore" + NAME


class NodeResourcesBalancedAllocationArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    resources: list[ResourceSpec] = Field(default_factory=default_resources)

    @field_validator("resources")
    @classmethod
    def _resources(cls, resources: list[ResourceSpec]) -> list[ResourceSpec]:
        if not resources:
            return default_resources()
        seen: set[str] = set()
        for i, r in enumerate(resources):
            if r.name in seen:
                raise ValueError(f"[{i}].name: Duplicate value: {r.name!r}")
            seen.add(r.name)
            if r.weight == 0:
                r.weight = 1
            if r.weight != 1:
                raise ValueError(f"[{i}].weight: Invalid value: {r.weight}: must be 1")
        return resources


def balanced_resource_score(requested: list[int], allocatable: list[int]) -> int:
    """How balanced the fractions requested/allocatable are: (1 - their std) * 100."""
    fractions: list[float] = []
    total = 0.0
    for req, alloc in zip(requested, allocatable):
        if alloc == 0:
            continue
        fraction = min(req / alloc, 1.0)
        total += fraction
        fractions.append(fraction)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / len(fractions)
        acc = 0.0
        for f in fractions:
            acc = acc + (f - mean) * (f - mean)
        std = math.sqrt(acc / len(fractions))
    return int((1 - std) * float(MAX_NODE_SCORE))


def balanced_resource_score_vector(requested: np.ndarray, allocatable: np.ndarray) -> np.ndarray | None:
    """balanced_resource_score for every row, with the same float operations in the same order
    (None when some row skips a resource and there are more than two: use the per-node path)."""
    m, n = requested.shape
    valid = allocatable != 0
    counts = valid.sum(axis=1)
    fractions = np.minimum(requested / np.where(valid, allocatable, 1), 1.0)
    if n == 0:
        std = np.zeros(m)
    elif n <= 2:
        if n == 2:
            std = np.where(counts == 2, np.abs((fractions[:, 0] - fractions[:, 1]) / 2), 0.0)
        else:
            std = np.zeros(m)
    else:
        if not bool(valid.all()):
            return None
        total = np.zeros(m)
        for i in range(n):
            total = total + fractions[:, i]
        mean = total / n
        acc = np.zeros(m)
        for i in range(n):
            d = fractions[:, i] - mean
            acc = acc + d * d
        std = np.sqrt(acc / n)
    return np.trunc((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)


HALF_SCORE = MAX_NODE_SCORE // 2


def balanced_resource_scorer(requested: list[int], allocated: list[int], allocatable: list[int]) -> int:
    """v1.37: the improvement in balance the pod brings. Both balances lie in [50, 100], their
    difference in [-50, 50]; mapped back into [50, 100] (75: no change, towards 100: better
    balanced with the pod, towards 50: worse)."""
    with_pod = balanced_resource_score(requested, allocatable)
    without_pod = balanced_resource_score(allocated, allocatable)
    return HALF_SCORE + _go_half(HALF_SCORE + with_pod - without_pod)


def _go_half(x: int) -> int:
    """x / 2 as Go's integer division (towards zero)."""
    return x // 2 if x >= 0 else -((-x) // 2)


def balanced_resource_vector(requested: np.ndarray, allocated: np.ndarray,
                             allocatable: np.ndarray) -> np.ndarray | None:
    with_pod = balanced_resource_score_vector(requested, allocatable)
    without_pod = balanced_resource_score_vector(allocated, allocatable)
    if with_pod is None or without_pod is None:
        return None
    x = HALF_SCORE + with_pod - without_pod
    return HALF_SCORE + np.where(x >= 0, x // 2, -((-x) // 2))


balanced_resource_scorer.vector = balanced_resource_vector  # type: ignore[attr-defined]


class _PreScoreState:
    __slots__ = ("pod_requests",)

    def __init__(self, pod_requests: list[int]) -> None:
        self.pod_requests = pod_requests

    def clone(self) -> _PreScoreState:
        return self


class NodeResourcesBalancedAllocation(PreScorePlugin, ScorePlugin):
    name = NAME
    args_model = NodeResourcesBalancedAllocationArgs

    def __init__(self, args: NodeResourcesBalancedAllocationArgs | None = None, handle: Handle | None = None) -> None:
        args = args if args is not None else NodeResourcesBalancedAllocationArgs()
        self.handle = handle
        self.scorer = ResourceAllocationScorer(args.resources, balanced_resource_scorer, use_requested=True)

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        reqs = self.scorer.pod_requests(pod)
        if is_best_effort(reqs):
            # Best-effort pods would all land on the same node otherwise (upstream #129138).
            return Status.skip()
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(reqs))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        s = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(s, _PreScoreState):
            reqs = s.pod_requests
        else:
            reqs = self.scorer.pod_requests(pod)
            if is_best_effort(reqs):
                return 0
        return self.scorer.score(node_info, reqs)

    def score_all(self, state: CycleState, pod: Pod, nodes: Any) -> np.ndarray | None:
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            return None
        return self.scorer.score_all(nodes, s.pod_requests)


PLUGINS = [NodeResourcesBalancedAllocation]
