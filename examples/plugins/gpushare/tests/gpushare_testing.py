"""Builders of the objects the gpushare tests and benchmark use (spec conventions: nodes carry
`alibabacloud.com/gpu-count` / `gpu-milli` and the model label; pods the GPU annotations)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

GPU = "alibabacloud.com/"


def node(name: str, cpu: int, gpus: int, model: str = "", memory_mib: int = 262144) -> dict[str, Any]:
    res = {"cpu": f"{cpu}m", "memory": f"{memory_mib}Mi", "pods": "110"}
    if gpus:
        res |= {GPU + "gpu-count": str(gpus), GPU + "gpu-milli": str(gpus * 1000)}
    labels = {"kubernetes.io/hostname": name}
    if gpus and model:
        labels[GPU + "gpu-card-model"] = model
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"capacity": dict(res), "allocatable": dict(res)}}


def pod_annotations(milli: int, count: int, models: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    if count:
        out = {GPU + "gpu-milli": str(milli), GPU + "gpu-count": str(count)}
    if models:
        out[GPU + "gpu-card-model"] = models
    return out


def pod_requests(cpu: int, milli: int, count: int, memory_mib: int = 1024) -> dict[str, str]:
    req = {"cpu": f"{cpu}m", "memory": f"{memory_mib}Mi"}
    if count:
        req[GPU + "gpu-milli"] = str(milli * count)
    return req


def pod(name: str, cpu: int, milli: int = 0, count: int = 0, models: str = "", *, node_name: str = "",
        index: str = "", memory_mib: int = 1024, uid: str = "") -> dict[str, Any]:
    ann = pod_annotations(milli, count, models)
    if index:
        ann[GPU + "gpu-index"] = index
    meta: dict[str, Any] = {"name": name, "namespace": "default", "annotations": ann}
    if uid:
        meta["uid"] = uid
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {
        "requests": pod_requests(cpu, milli, count, memory_mib)}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
            "status": {"phase": "Running" if node_name else "Pending"}}


def summary(pods: Iterable[Mapping[str, Any]], name: str = "replay") -> dict[str, Any]:
    """The WorkloadSummary of `pods` (spec40's shape: one per distinct requests and annotations)."""
    counts: Counter[tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]] = Counter()
    for p in pods:
        req = p["spec"]["containers"][0]["resources"]["requests"]
        ann = {k: v for k, v in (p["metadata"].get("annotations") or {}).items()
               if not k.startswith("kubeberth.io/") and not k.endswith("gpu-index")}
        counts[(tuple(sorted(req.items())), tuple(sorted(ann.items())))] += 1
    shapes = [{"count": n, "requests": dict(r), "annotations": dict(a)}
              for (r, a), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return {"apiVersion": "kubeberth.io/v1alpha1", "kind": "WorkloadSummary", "metadata": {"name": name},
            "spec": {"total": sum(counts.values()), "shapes": shapes}}


def shapes_summary(shapes: Sequence[tuple[int, int, int, int, str]]) -> dict[str, Any]:
    """A WorkloadSummary from (count, cpu, milli, gpus, models) rows."""
    pods = [pod(f"s{i}-{j}", cpu, milli, gpus, models)
            for i, (n, cpu, milli, gpus, models) in enumerate(shapes) for j in range(n)]
    return summary(pods)
