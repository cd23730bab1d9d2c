"""NodeResourcesFit's scoring strategies: LeastAllocated, MostAllocated and
RequestedToCapacityRatio, per node and as arrays (upstream's least_allocated.go,
most_allocated.go, requested_to_capacity_ratio.go)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..framework import MAX_NODE_SCORE
from ._resource_allocation import ResourceSpec, Scorer

# Shape scores are given on 0..MAX_CUSTOM_PRIORITY_SCORE and scaled to 0..MAX_NODE_SCORE.
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100


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
                                       shape: Sequence[tuple[int, int]]) -> Scorer:
    """`shape`: (utilization, score) points, scores on 0..MAX_CUSTOM_PRIORITY_SCORE."""
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    points = [(utilization, score * scale) for utilization, score in shape]
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


