"""A stand-alone oracle of the FGD paper's protocol for two simple policies, in numpy.

It replays the artifact's protocol (operator/kubeberth/whatif/replay/protocol.py, the README of
../shared/traces/alibaba-openb-2023) outside kubeberth: the workload built for --tune by
protocol.build_artifact_workload, one task after the other on the 1,213 GPU nodes, each task
placed by one policy (`BestFit` or `GpuPacking`, the artifact's integer scores), ties going to
the first node in the same seeded fixed order as kubeberth's `--tie-break fixed-order`
(FixedNodeOrder), the GPUs within the node chosen as the artifact's Open-Gpu-Share plugin does
(tightest fit for a sharing task, lowest-index free GPUs for whole ones), a task that fits
nowhere dropped. It returns the per-task GPU samples and their gpuAllocation bins.

Its uses: checking the protocol module's workload and binning against the artifact's published
results (tests/whatif/replay/test_protocol_artifact.py), and, the same seed giving the same
workload and the same node order, an independent reference for `kubeberth replay --protocol
artifact` with the gpushare BestFit/GpuPacking profiles (their decisions should be identical).
Not used by kubeberth itself.

    python -m benchmarks.openb_oracle ../shared/traces/alibaba-openb-2023 default BestFit 42 43
"""

from __future__ import annotations

import csv
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kubeberth.framework.tie_break import FixedNodeOrder
from kubeberth.whatif.replay.protocol import GpuSample, build_artifact_workload, gpu_allocation_bins

MILLI = 1000
MAX_GPUS = 8
MAX_SPEC_CPU = 128000.0  # the artifact's normalisation of BestFit (one node's largest CPU, milli)
MAX_SPEC_GPU = 8000.0    # and GPU milli
MAX_PODS = 1001          # the artifact's node `pods` allocatable
POLICIES = ("BestFit", "GpuPacking")


@dataclass(frozen=True)
class OracleTask:
    """One row of an openb task list (GPU milli as the artifact's pod_csv_to_yaml.py writes it)."""

    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int  # per GPU; 0 for a CPU-only task
    gpu_spec: tuple[str, ...]


@dataclass
class OracleCluster:
    """The GPU nodes, in name order, as arrays."""

    names: list[str]
    cpu: np.ndarray        # milli
    memory: np.ndarray     # MiB
    gpus: np.ndarray       # GPUs per node
    model: list[str]

    @property
    def capacity(self) -> int:
        return int(self.gpus.sum()) * MILLI


def read_nodes(path: Path) -> OracleCluster:
    rows = sorted(csv.DictReader(path.open()), key=lambda r: r["sn"])
    rows = [r for r in rows if int(r["gpu"]) > 0]
    return OracleCluster([r["sn"] for r in rows], np.array([int(r["cpu_milli"]) for r in rows], dtype=np.int64),
                         np.array([int(r["memory_mib"]) for r in rows], dtype=np.int64),
                         np.array([int(r["gpu"]) for r in rows], dtype=np.int64), [r["model"] for r in rows])


def read_tasks(path: Path) -> list[OracleTask]:
    out = []
    for r in csv.DictReader(path.open()):
        num, milli = int(r["num_gpu"]), int(r["gpu_milli"])
        milli = 0 if num == 0 else (milli if 0 < milli <= MILLI else (MILLI if milli > MILLI else 0))
        spec = tuple(x for x in (r.get("gpu_spec") or "").split("|") if x)
        out.append(OracleTask(r["name"], int(r["cpu_milli"]), int(r["memory_mib"]), num, milli, spec))
    return out


class OracleRun:
    """One run: the cluster's state and the policy's choice per task."""

    def __init__(self, cluster: OracleCluster, policy: str, seed: int) -> None:
        if policy not in POLICIES:
            raise ValueError(f"policy {policy!r}: one of {', '.join(POLICIES)}")
        self.c = cluster
        self.policy = policy
        n = len(cluster.names)
        order = FixedNodeOrder(seed)
        ranked = order.order(cluster.names)
        position = {name: i for i, name in enumerate(ranked)}
        self.rank = np.array([position[name] for name in cluster.names], dtype=np.int64)
        self.cpu_left = cluster.cpu.copy()
        self.mem_left = cluster.memory.copy()
        self.pods = np.zeros(n, dtype=np.int64)
        self.exists = np.arange(MAX_GPUS)[None, :] < cluster.gpus[:, None]
        self.gpu_left = np.where(self.exists, MILLI, -1).astype(np.int64)  # -1: no such GPU
        self.models = sorted(set(cluster.model))
        self.model_id = np.array([self.models.index(m) for m in cluster.model], dtype=np.int64)

    def feasible(self, t: OracleTask) -> np.ndarray:
        fit = (self.cpu_left >= t.cpu_milli) & (self.mem_left >= t.memory_mib) & (self.pods < MAX_PODS)
        if t.gpu_milli > 0:
            fit &= ((self.gpu_left >= t.gpu_milli).sum(axis=1) >= t.num_gpu)
            if t.gpu_spec:
                allowed = [self.models.index(m) for m in t.gpu_spec if m in self.models]
                fit &= np.isin(self.model_id, allowed)
        return np.flatnonzero(fit)

    def scores(self, t: OracleTask, idx: np.ndarray) -> np.ndarray:
        left = self.gpu_left[idx]
        exists = self.exists[idx]
        if self.policy == "BestFit":
            total_left = np.where(exists, left, 0).sum(axis=1).astype(np.float64)
            cpu_term = (self.cpu_left[idx].astype(np.float64) - float(t.cpu_milli)) / MAX_SPEC_CPU * 0.5
            gpu_term = (total_left - float(t.num_gpu * t.gpu_milli)) / MAX_SPEC_GPU * 0.5
            raw = np.trunc((1.0 - ((0.0 + cpu_term) + gpu_term)) * 100).astype(np.int64)
            lo, hi = int(raw.min()), int(raw.max())
            if hi == lo:
                return np.zeros(len(idx), dtype=np.int64)
            return (raw - lo) * 100 // (hi - lo)
        # GpuPacking
        if t.gpu_milli <= 0:
            return np.zeros(len(idx), dtype=np.int64)
        free = (left == MILLI).sum(axis=1)
        all_free = free == self.c.gpus[idx]
        out = np.empty(len(idx), dtype=np.int64)
        out[all_free] = np.maximum(100 // 3 - free[all_free], free[all_free])
        if t.num_gpu == 1 and t.gpu_milli < MILLI:
            tight = np.where(left >= t.gpu_milli, left, 10 * MILLI).min(axis=1)
            shared = np.maximum(100 - (tight * 100 // MILLI) // 10, 50)
            partly = np.where(tight == MILLI, np.maximum(50 - 1, 100 // 3), shared)
        else:  # whole GPUs: all the chosen ones are fully free
            partly = np.full(len(idx), max(50 - t.num_gpu, 100 // 3), dtype=np.int64)
        out[~all_free] = partly[~all_free]
        return out

    def place(self, t: OracleTask) -> int | None:
        """The node the task goes to (reserved there), None when it fits nowhere."""
        idx = self.feasible(t)
        if idx.size == 0:
            return None
        if idx.size == 1:
            node = int(idx[0])
        else:
            s = self.scores(t, idx)
            top = idx[s == s.max()]
            node = int(top[np.argmin(self.rank[top])])
        self.cpu_left[node] -= t.cpu_milli
        self.mem_left[node] -= t.memory_mib
        self.pods[node] += 1
        if t.gpu_milli > 0:
            row = self.gpu_left[node]
            if t.num_gpu == 1 and t.gpu_milli < MILLI:
                fits = np.flatnonzero(row >= t.gpu_milli)
                gpu = int(fits[np.argmin(row[fits])])
                row[gpu] -= t.gpu_milli
            else:
                row[np.flatnonzero(row == MILLI)[:t.num_gpu]] = 0
        return node


def run(cluster: OracleCluster, tasks: Sequence[OracleTask], policy: str, seed: int, tune: float = 1.3
        ) -> tuple[list[GpuSample], int]:
    """The samples of one run (after every task) and the number of tasks dropped."""
    workload = build_artifact_workload(list(tasks), tune, seed, cluster.capacity)
    state = OracleRun(cluster, policy, seed)
    used = arrived = 0
    dropped = 0
    samples = []
    for t in workload:
        g = t.num_gpu * t.gpu_milli
        arrived += g
        if state.place(t) is None:
            dropped += 1
        else:
            used += g
        samples.append(GpuSample(used, arrived, cluster.capacity))
    return samples, dropped


def main(argv: Sequence[str]) -> int:
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    folder, trace, policy, *seeds = argv
    cluster = read_nodes(Path(folder) / "openb_node_list_gpu_node.csv")
    tasks = read_tasks(Path(folder) / f"openb_pod_list_{trace}.csv")
    for seed in seeds:
        started = time.perf_counter()
        samples, dropped = run(cluster, tasks, policy, int(seed))
        bins = gpu_allocation_bins(samples)
        print(f"{trace} {policy} seed {seed}: {len(samples)} tasks, {dropped} dropped, "
              f"100%: {bins.get('100')}, 130%: {bins.get('130')} ({time.perf_counter() - started:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
