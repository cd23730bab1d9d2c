"""The GPU-sharing resource model of the FGD paper's artifact (Alibaba's open-gpu-share), read
from kubeberth's objects: a pod's GPU request from its annotations, a node's GPUs from its
allocatable and labels, the GPUs a bound pod holds from its `gpu-index` annotation."""

from __future__ import annotations

from dataclasses import dataclass

from kubeberth.framework import Node, Pod

GPU_MILLI = "alibabacloud.com/gpu-milli"        # pod: milli of each GPU it takes (1..1000)
GPU_COUNT = "alibabacloud.com/gpu-count"        # pod: GPUs it takes; node: GPUs it has
GPU_MODEL = "alibabacloud.com/gpu-card-model"   # pod: allowed models, `|`-separated; node: label
GPU_INDEX = "alibabacloud.com/gpu-index"        # pod: the GPUs it holds, `-`-separated
MILLI = 1000                                    # one whole GPU
MAX_SPEC_CPU = 128000                           # the artifact's normalisation of CPU (milli)
MAX_SPEC_GPU = 8000                             # ... and of GPU (milli: 8 GPUs)
_CACHE_KEY = "kubeberth_gpushare.request"


class GpuRequestError(ValueError):
    """A pod's GPU annotations cannot be read (the message names the annotation)."""


@dataclass(frozen=True)
class GpuRequest:
    """What a pod asks: `milli` of each of `count` GPUs (0, 0: no GPU), of one of `models` (empty:
    any), and `cpu` (its non-zero CPU request, milli, as the artifact counts it)."""

    milli: int
    count: int
    models: tuple[str, ...]
    cpu: int

    @property
    def total(self) -> int:
        return self.milli * self.count

    @property
    def sharing(self) -> bool:
        """Whether it takes part of one GPU (the rest whole GPUs, or none)."""
        return 0 < self.milli < MILLI

    @property
    def tag(self) -> int:
        """Its GpuClustering affinity as a bit: 1 sharing, 1 << k for k whole GPUs, 0 no GPU."""
        if self.count <= 0 or self.milli <= 0:
            return 0
        return 1 if self.sharing else 1 << min(self.count, 62)


def _int_annotation(pod: Pod, key: str, low: int, high: int) -> int:
    raw = pod.annotations.get(key)
    if raw is None or raw == "":
        return 0
    try:
        value = int(raw)
    except ValueError:
        raise GpuRequestError(f"annotation {key}={raw!r} of pod {pod.key} is not an integer") from None
    if not low <= value <= high:
        raise GpuRequestError(f"annotation {key}={raw!r} of pod {pod.key} is outside {low}..{high}")
    return value


def gpu_request(pod: Pod) -> GpuRequest:
    """The pod's request (parsed once per pod object). Raises GpuRequestError."""
    got = pod.cache.get(_CACHE_KEY)
    if isinstance(got, GpuRequest):
        return got
    milli = _int_annotation(pod, GPU_MILLI, 0, MILLI)
    count = _int_annotation(pod, GPU_COUNT, 0, 1 << 16)
    if milli > 0 and count == 0:
        count = 1  # gpu-milli alone: one GPU (the conventions always give both)
    if count > 1 and 0 < milli < MILLI:
        raise GpuRequestError(f"pod {pod.key} asks {count} GPUs of {milli} milli each: "
                              "a pod sharing a GPU takes one")
    if milli == 0:
        count = 0
    models = tuple(m for m in (pod.annotations.get(GPU_MODEL) or "").split("|") if m)
    req = GpuRequest(milli, count, models, int(pod.non_zero_requests.milli_cpu))
    pod.cache[_CACHE_KEY] = req
    return req


def node_gpu_count(node: Node) -> int:
    """The node's GPUs: allocatable `gpu-count` (capacity when absent; 0 without)."""
    for res in (node.allocatable, node.capacity):
        n = res.scalar.get(GPU_COUNT)
        if n:
            return int(n)
    return 0


def node_gpu_model(node: Node) -> str:
    return node.labels.get(GPU_MODEL, "")


def model_allowed(models: tuple[str, ...], node_model: str) -> bool:
    """The artifact's IsNodeAccessibleToPodByType: any model when none is named."""
    return not models or node_model in models


def parse_gpu_index(value: str | None) -> tuple[int, ...] | None:
    """`"0-1"` -> (0, 1); None when absent or unreadable."""
    if not value:
        return None
    try:
        return tuple(int(x) for x in value.split("-"))
    except ValueError:
        return None


def format_gpu_index(gpus: tuple[int, ...]) -> str:
    return "-".join(str(g) for g in gpus)
