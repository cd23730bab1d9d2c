"""The workload's typical pods (the artifact's GetTypicalPods, with the run's settings: CPU-only
pods included, popularity threshold 95 %, step 1, no GPU weight), from the WorkloadSummary
that replay publishes into the object store, and the fragmentation they define (frag.go)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubeberth.framework import ObjectKind, ObjectStore, milli_value

from .model import GPU_COUNT, GPU_MILLI, GPU_MODEL, MILLI

WORKLOAD_SUMMARY = ObjectKind("kubeberth.io", "v1alpha1", "workloadsummaries", "WorkloadSummary", namespaced=False)
POPULARITY = 95      # % of the pods the typical ones cover
DEFAULT_CPU = 100    # milli-CPU counted for a container that requests none (upstream's non-zero request)


class SummaryError(ValueError):
    """The WorkloadSummary is missing or unreadable (the message says which and where)."""


@dataclass(frozen=True)
class TypicalPods:
    """Typical pods as arrays (T,): milli-CPU, milli per GPU, GPUs, weight (sum 1), models."""

    cpu: np.ndarray
    milli: np.ndarray
    count: np.ndarray
    weight: np.ndarray
    models: tuple[tuple[str, ...], ...]

    def access(self, node_models: np.ndarray) -> np.ndarray:
        """(nodes, T) bool: the node's model is one the typical pod allows (any when none)."""
        out = np.ones((len(node_models), len(self.models)), dtype=bool)
        for t, models in enumerate(self.models):
            if models:
                out[:, t] = np.isin(node_models, list(models))
        return out


def _shape_key(shape: Mapping[str, Any], where: str) -> tuple[int, int, int, str]:
    requests = shape.get("requests") or {}
    annotations = shape.get("annotations") or {}
    if not isinstance(requests, Mapping) or not isinstance(annotations, Mapping):
        raise SummaryError(f"{where}: requests and annotations must be mappings")
    try:
        cpu = milli_value(requests["cpu"]) if "cpu" in requests else DEFAULT_CPU
        milli = int(annotations.get(GPU_MILLI) or 0)
        count = int(annotations.get(GPU_COUNT) or 0)
    except (ValueError, TypeError) as exc:
        raise SummaryError(f"{where}: {exc}") from None
    if milli <= 0:
        milli = count = 0
    elif count == 0:
        count = 1
    return cpu, milli, count, str(annotations.get(GPU_MODEL) or "")


def typical_pods(summary: Mapping[str, Any], name: str = "WorkloadSummary") -> TypicalPods:
    """The typical pods of a WorkloadSummary's shapes. Raises SummaryError."""
    spec = summary.get("spec") or {}
    shapes = spec.get("shapes") if isinstance(spec, Mapping) else None
    if not isinstance(shapes, list) or not shapes:
        raise SummaryError(f"{name}: spec.shapes is missing or empty")
    counts: dict[tuple[int, int, int, str], float] = {}
    for i, shape in enumerate(shapes):
        where = f"{name}: spec.shapes[{i}]"
        if not isinstance(shape, Mapping):
            raise SummaryError(f"{where}: not a mapping")
        try:
            n = float(shape.get("count") or 0)
        except (TypeError, ValueError):
            raise SummaryError(f"{where}.count: not a number") from None
        if n <= 0:
            continue
        key = _shape_key(shape, where)
        counts[key] = counts.get(key, 0.0) + n
    total = sum(counts.values())
    if total <= 0:
        raise SummaryError(f"{name}: no shape has a positive count")
    # Most frequent first; on a tie the larger (cpu, milli, count, model) first, as the artifact sorts.
    ordered = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    expected = POPULARITY * total / 100.0
    chosen: list[tuple[tuple[int, int, int, str], float]] = []
    cum = 0.0
    for key, n in ordered:
        if cum >= expected:
            break
        chosen.append((key, n))
        cum += n
    return TypicalPods(
        cpu=np.array([k[0] for k, _ in chosen], dtype=np.int64),
        milli=np.array([k[1] for k, _ in chosen], dtype=np.int64),
        count=np.array([k[2] for k, _ in chosen], dtype=np.int64),
        weight=np.array([(n / total) / (cum / total) for _, n in chosen], dtype=np.float64),
        models=tuple(tuple(m for m in k[3].split("|") if m) for k, _ in chosen))


def find_summary(objects: ObjectStore) -> tuple[str, Mapping[str, Any]] | None:
    """The store's WorkloadSummary (the one named `replay` when there are several, else the first
    by name), with its name."""
    found = sorted(((str((o.get("metadata") or {}).get("name") or ""), o)
                    for o in objects.list(WORKLOAD_SUMMARY.group_kind)), key=lambda x: (x[0] != "replay", x[0]))
    return found[0] if found else None


def frag_of(tp: TypicalPods, free: np.ndarray, cpu: np.ndarray, access: np.ndarray) -> np.ndarray:
    """frag.go's NodeGpuShareFragAmountScore of each node (rows of `free` (nodes, width), -1 for
    absent GPUs): sum over typical pods of weight x the GPU milli the pod could not use."""
    fz = np.maximum(free, 0)
    left = fz.sum(axis=1)
    m = tp.milli[None, None, :]
    fits = free[:, :, None] >= m
    cnt = fits.sum(axis=1)
    small = np.where(fits, 0, fz[:, :, None]).sum(axis=1)
    ok = (tp.milli > 0)[None, :] & access & (cnt >= tp.count[None, :]) & (cpu[:, None] >= tp.cpu[None, :])
    return np.where(ok, small, left[:, None]) @ tp.weight  # type: ignore[no-any-return]


def summary_name(found: tuple[str, Mapping[str, Any]]) -> str:
    return f"WorkloadSummary {found[0]!r} ({WORKLOAD_SUMMARY.api_version})"


__all__ = ["MILLI", "WORKLOAD_SUMMARY", "SummaryError", "TypicalPods", "find_summary", "frag_of", "typical_pods"]
