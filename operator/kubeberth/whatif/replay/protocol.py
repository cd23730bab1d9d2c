"""`replay --protocol artifact`: the FGD paper's protocol as its artifact runs it.

The artifact (github.com/hkust-adsl/kubernetes-scheduler-simulator, the simulator of "Beware of
Fragmentation", USENIX ATC'23) evaluates a scheduling policy on one trace as follows; this module
holds the parts that are not the scheduler's:

- The workload for `--tune R` (build_artifact_workload): every task of the trace, in a seeded
  shuffle of their name order, then, while the trace's GPU request is below R x the cluster's GPU
  capacity, extra copies of tasks drawn with replacement from the name-sorted trace, until the
  next draw would go past R x capacity (or, above it, tasks removed at random until it is not).
  Everything arrives, one task per instant; nothing leaves.
- A task that fits nowhere is dropped after its one attempt (no retry, no preemption), and counts
  as arrived.
- Every feasible node is scored (percentageOfNodesToScore 100) and ties go to the first node in
  a seeded fixed order (framework/tie_break.py, `fixed-order`).
- The metric (gpu_allocation_bins): after every task, the GPU milli in use and the GPU milli
  arrived; for each arrived percentage k in 0..130, the mean allocation percentage over the
  samples whose arrived percentage rounds to k (as the artifact's merge_alloc_discrete.py bins).

ArtifactProtocol bundles these for replay's engine (the `ReplayProtocol` interface below).
"""

from __future__ import annotations

import copy
import dataclasses
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol, TypeVar

import numpy as np

from ...framework.tie_break import FIXED_ORDER

GPU_MILLI = "alibabacloud.com/gpu-milli"   # resource (count x milli) and annotation (per GPU)
GPU_COUNT = "alibabacloud.com/gpu-count"
ARRIVAL_TIME = "kubeberth.io/arrival-time"
DEPARTURE_TIME = "kubeberth.io/departure-time"
DURATION = "kubeberth.io/duration"
MAX_BIN = 130             # the artifact's last column: 130% of the GPU capacity arrived
TUNED_SUFFIX = "-tuned-"  # the extra tasks' names: <name>-tuned-<k>, k = 0, 1, ... (the artifact's)

__all__ = ["ARTIFACT", "ArtifactProtocol", "GpuSample", "ReplayProtocol", "TaskShape", "build_artifact_workload",
           "gpu_allocation_bins", "pod_task_shape", "rename_pod"]

T = TypeVar("T")


class TaskShape(NamedTuple):
    """What the workload's construction reads of a task: its name and GPU request."""

    name: str
    num_gpu: int    # GPUs asked for (0: a CPU-only task)
    gpu_milli: int  # milli of each GPU (1..1000; 0 for a CPU-only task)

    @property
    def total_gpu_milli(self) -> int:
        """num_gpu x gpu_milli: the task's whole GPU request."""
        return self.num_gpu * self.gpu_milli


def _attribute_shape(task: Any) -> TaskShape:
    return TaskShape(str(task.name), int(task.num_gpu), int(task.gpu_milli))


def _replace_name(task: Any, name: str) -> Any:
    return dataclasses.replace(task, name=name)


def build_artifact_workload(tasks: Sequence[T], tune: float, seed: int, capacity: int, *,
                            shape: Callable[[T], TaskShape] = _attribute_shape,
                            rename: Callable[[T, str], T] = _replace_name) -> list[T]:
    """The arrival order of `tasks` as the artifact builds it for `--tune tune` with seed `seed`,
    on a cluster of `capacity` GPU milli (the sum over its nodes of GPUs x 1000).

    1. The tasks sorted by name, shuffled (random.Random(seed).shuffle).
    2. `total`, the tasks' GPU request, sums num_gpu x gpu_milli; the target is tune x capacity.
       tune <= 0, or total equal to the target: that is the workload.
    3. total below the target: draw a task uniformly, with replacement, from the name-sorted
       list (the same generator's randrange); if total plus the drawn task's gpu_milli (per GPU:
       the artifact's test, not num_gpu x gpu_milli) exceeds the target, stop (that draw is
       dropped); otherwise append a copy named `<name>-tuned-<k>` (k counts the copies from 0),
       add its num_gpu x gpu_milli to total, and draw again. A multi-GPU task can thus take
       total past the target (by up to (num_gpu - 1) x 1000); a CPU-only task is taken as long
       as total is at most the target.
    4. total above the target: remove a task drawn uniformly from the current list until total
       is at most the target.

    The artifact draws from Go's math/rand seeded with the seed; this draws from Python's
    random.Random(seed), so the workload of seed S is not the artifact's workload of seed S,
    only built by the same rules (the protocol's results are compared as means over seeds).
    `shape` reads a task's name and GPU request (default: its `name`, `num_gpu`, `gpu_milli`
    attributes); `rename` returns a copy of a task under another name (default:
    dataclasses.replace). Raises ValueError on duplicate names, or on no task and total below
    the target (nothing to draw)."""
    shapes = [shape(t) for t in tasks]
    order = sorted(range(len(tasks)), key=lambda i: shapes[i].name)
    names = [shapes[i].name for i in order]
    if len(set(names)) != len(names):
        dup = next(n for k, n in enumerate(names) if k and names[k - 1] == n)
        raise ValueError(f"task names must be unique: {dup!r} appears more than once")
    by_name = [tasks[i] for i in order]
    by_name_shapes = [shapes[i] for i in order]
    rng = random.Random(seed)
    workload = list(by_name)
    workload_shapes = list(by_name_shapes)
    perm = list(range(len(workload)))
    rng.shuffle(perm)
    workload = [workload[i] for i in perm]
    workload_shapes = [workload_shapes[i] for i in perm]
    total = sum(s.total_gpu_milli for s in by_name_shapes)
    target = tune * capacity
    if tune <= 0 or total == target:
        return workload
    if total > target:
        while total > target:
            k = rng.randrange(len(workload))
            total -= workload_shapes[k].total_gpu_milli
            del workload[k], workload_shapes[k]
        return workload
    if not by_name:
        raise ValueError("no task to draw from: the workload is empty")
    extra = 0
    while True:
        k = rng.randrange(len(by_name))
        drawn = by_name_shapes[k]
        if total + drawn.gpu_milli > target:
            return workload
        workload.append(rename(by_name[k], f"{drawn.name}{TUNED_SUFFIX}{extra}"))
        total += drawn.total_gpu_milli
        extra += 1


class GpuSample(NamedTuple):
    """The cluster after one task's attempt: GPU milli allocated (held by bound tasks), GPU milli
    arrived (num_gpu x gpu_milli of every task attempted so far, dropped ones included), and the
    cluster's GPU capacity in milli."""

    allocated: float
    arrived: float
    capacity: float


def gpu_allocation_bins(samples: Iterable[GpuSample | tuple[float, float, float]]) -> dict[str, float]:
    """The artifact's GPU allocation curve (experiments/analysis/merge_alloc_discrete.py) of one
    run: for each k in 0..130, the mean allocation percentage over the samples whose arrived
    percentage rounds to k.

    Per sample: arrived % = arrived / (capacity / 1000) / 10 rounded to an integer (Python's
    round: half to even on the float), allocation % = allocated / (capacity / 1000) / 10 rounded
    to 2 decimals. Bin k: the samples whose arrived % is k; when there are none, those whose
    arrived % is k-1, k or k+1; when there are none either, k has no entry. Its value: the mean
    of their allocation %, rounded to 2 decimals. Samples past 130.5% arrived count only for bin
    130's neighbourhood rule (131 is a neighbour of 130); bins above 130 are not reported.
    Keys are the bins as strings, in increasing order."""
    arrived_pct: list[float] = []
    alloc_pct: list[float] = []
    for allocated, arrived, capacity in samples:
        gpus = capacity / 1000
        arrived_pct.append(round(arrived / gpus / 10, 0))
        alloc_pct.append(round(allocated / gpus / 10, 2))
    arr = np.asarray(arrived_pct, dtype=np.float64)
    alloc = np.asarray(alloc_pct, dtype=np.float64)
    out: dict[str, float] = {}
    for k in range(MAX_BIN + 1):
        chosen = alloc[arr == k]
        if chosen.size == 0:
            chosen = alloc[(arr >= k - 1) & (arr <= k + 1)]
            if chosen.size == 0:
                continue
        out[str(k)] = round(float(chosen.mean()), 2)
    return out


def pod_task_shape(pod: Mapping[str, Any]) -> TaskShape:
    """A pod object's TaskShape from its name and the openb annotations (`alibabacloud.com/
    gpu-count`, `alibabacloud.com/gpu-milli`, per GPU); no annotation: a CPU-only task."""
    meta = pod.get("metadata") or {}
    ann = meta.get("annotations") or {}
    count = int(ann.get(GPU_COUNT, 0) or 0)
    milli = int(ann.get(GPU_MILLI, 0) or 0) if count else 0
    return TaskShape(str(meta.get("name", "")), count, milli)


def rename_pod(pod: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A deep copy of the pod object under `name` (its uid, if any, dropped: another pod)."""
    out = copy.deepcopy(dict(pod))
    meta = out.setdefault("metadata", {})
    meta["name"] = name
    meta.pop("uid", None)
    return out


class ReplayProtocol(Protocol):
    """What replay's engine takes from a protocol (`--protocol NAME`).

    The engine: replays `workload(pods, capacity)` instead of the input's pods; runs with
    `percentage_of_nodes_to_score` (None: the profile's) and the tie-break rule `tie_break`
    (framework/tie_break.py); when `drop_unschedulable`, a pod still unschedulable after its
    first attempt leaves the queue (status Dropped; it counted as arrived); after every sample
    calls `observe` with that instant's GPU sample; at the end calls `finish` with the result
    object, to which the protocol adds its own keys. The WorkloadSummary it publishes is
    computed over `summary_source(input pods, workload)`."""

    name: str
    percentage_of_nodes_to_score: int | None
    tie_break: str
    drop_unschedulable: bool

    def workload(self, pods: Sequence[Mapping[str, Any]], capacity: int) -> list[dict[str, Any]]: ...

    def summary_source(self, pods: Sequence[Mapping[str, Any]], workload: Sequence[Mapping[str, Any]]
                       ) -> Sequence[Mapping[str, Any]]: ...

    def observe(self, sample: GpuSample) -> None: ...

    def finish(self, result: dict[str, Any]) -> None: ...


class ArtifactProtocol:
    """The FGD artifact's protocol (module text): `--protocol artifact --tune TUNE --seed SEED`."""

    name = "artifact"
    percentage_of_nodes_to_score: int | None = 100
    tie_break = FIXED_ORDER
    drop_unschedulable = True

    def __init__(self, tune: float, seed: int) -> None:
        self.tune = tune
        self.seed = seed
        self.samples: list[GpuSample] = []

    def workload(self, pods: Sequence[Mapping[str, Any]], capacity: int) -> list[dict[str, Any]]:
        """The pods as the artifact's workload for `tune` on a cluster of `capacity` GPU milli
        (build_artifact_workload), the i-th arriving at instant i (`kubeberth.io/arrival-time`:
        "i"), none leaving (departure annotations removed)."""
        built = build_artifact_workload([dict(p) for p in pods], self.tune, self.seed, capacity,
                                        shape=pod_task_shape, rename=rename_pod)
        out = []
        for i, pod in enumerate(built):
            pod = copy.deepcopy(pod)
            meta = pod.setdefault("metadata", {})
            ann = dict(meta.get("annotations") or {})
            for key in (DEPARTURE_TIME, DURATION):
                ann.pop(key, None)
            ann[ARRIVAL_TIME] = str(float(i))
            meta["annotations"] = ann
            out.append(pod)
        return out

    def summary_source(self, pods: Sequence[Mapping[str, Any]], workload: Sequence[Mapping[str, Any]]
                       ) -> Sequence[Mapping[str, Any]]:
        """The pods the WorkloadSummary (FGD's task-type distribution) is computed over: the
        input trace, every task once, not the workload built for --tune (the artifact computes
        its typical pods from the trace before tuning)."""
        return pods

    def observe(self, sample: GpuSample) -> None:
        """One sample: after a task's attempt."""
        self.samples.append(GpuSample(*sample))

    def finish(self, result: dict[str, Any]) -> None:
        """Adds `gpuAllocation` (gpu_allocation_bins of the samples) to the result."""
        result["gpuAllocation"] = gpu_allocation_bins(self.samples)


ARTIFACT = ArtifactProtocol.name
