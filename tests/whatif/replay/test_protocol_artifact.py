"""The protocol's workload and binning against the artifact's published results, through the
stand-alone numpy oracle (benchmarks/openb_oracle.py), and the oracle itself on a hand-made
cluster. The artifact's runs need ../shared (skipped without it)."""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

import numpy as np
import pytest
from benchmarks.openb_oracle import OracleCluster, OracleRun, OracleTask, read_nodes, read_tasks, run

from kubeberth.framework.tie_break import FixedNodeOrder
from kubeberth.whatif.replay.protocol import gpu_allocation_bins

SHARED = Path(__file__).resolve().parents[3] / ".." / "shared" / "traces" / "alibaba-openb-2023"
SEEDS = range(42, 52)


def cluster(*nodes: tuple[str, int, int]) -> OracleCluster:
    """(name, cpu milli, GPUs) per node, 64 GiB each, model V100M16."""
    return OracleCluster([n for n, _, _ in nodes], np.array([c for _, c, _ in nodes], dtype=np.int64),
                         np.full(len(nodes), 65536, dtype=np.int64), np.array([g for _, _, g in nodes], dtype=np.int64),
                         ["V100M16"] * len(nodes))


def task(name: str, cpu: int = 1000, num_gpu: int = 0, gpu_milli: int = 0, spec: tuple[str, ...] = ()) -> OracleTask:
    return OracleTask(name, cpu, 1024, num_gpu, gpu_milli, spec)


def test_oracle_gpu_packing_by_hand() -> None:
    c = cluster(("a", 32000, 2), ("b", 32000, 2), ("c", 32000, 4))
    state = OracleRun(c, "GpuPacking", seed=1)
    first = FixedNodeOrder(1).order(c.names)
    # all nodes free: max(33 - free GPUs, free GPUs): a and b 31, c 29
    assert c.names[state.place(task("s1", num_gpu=1, gpu_milli=300)) or 0] == min(["a", "b"], key=first.index)
    used = state.gpu_left.copy()
    # a share task now prefers the partly used GPU (score 100 - 7 = 93 against 31, 29)
    node = state.place(task("s2", num_gpu=1, gpu_milli=500))
    assert c.names[node or 0] == min(["a", "b"], key=first.index)
    row = state.gpu_left[node or 0]
    assert sorted(row[:2].tolist()) == [200, 1000] and (used[node or 0] != row).sum() == 1  # the tightest GPU
    # a CPU-only task scores 0 everywhere: the first node of the fixed order
    assert c.names[state.place(task("cpu")) or 0] == first[0]
    # two whole GPUs: the other of a and b (all free: 31) and c (29) have two free
    other = max(["a", "b"], key=first.index)
    assert c.names[state.place(task("w", num_gpu=2, gpu_milli=1000)) or 0] == other
    assert state.gpu_left[c.names.index(other)][:2].tolist() == [0, 0]
    assert state.place(task("big", cpu=64000)) is None  # fits nowhere


def test_oracle_best_fit_by_hand() -> None:
    c = cluster(("a", 64000, 2), ("b", 32000, 2), ("c", 32000, 8))
    state = OracleRun(c, "BestFit", seed=0)
    # the least left after the task: b (32000 CPU and 2000 GPU milli left)
    assert c.names[state.place(task("t", cpu=8000, num_gpu=1, gpu_milli=1000)) or 0] == "b"
    # GPU model constraint: none of the nodes has a P100
    assert state.place(task("p", num_gpu=1, gpu_milli=100, spec=("P100",))) is None


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared (the openb trace and the artifact's results) is missing")
@pytest.mark.parametrize(("policy", "column"), [("BestFit", "05-BestFit"), ("GpuPacking", "04-GpuPacking")])
def test_ten_seed_means_match_the_artifact(policy: str, column: str) -> None:
    nodes = read_nodes(SHARED / "openb_node_list_gpu_node.csv")
    assert (len(nodes.names), nodes.capacity) == (1213, 6212 * 1000)
    tasks = read_tasks(SHARED / "openb_pod_list_default.csv")
    curves = [gpu_allocation_bins(run(nodes, tasks, policy, seed)[0]) for seed in SEEDS]
    assert all(list(b) == [str(k) for k in range(131)] for b in curves)  # every bin, 0..130
    with (SHARED / "expected_gpu_allocation.csv").open() as f:
        expected = [r for r in csv.DictReader(f)
                    if r["workload"] == "openb_pod_list_default" and r["sc_policy"] == column]
    assert len(expected) == len(SEEDS)
    for k in ("50", "100", "130"):
        ours = statistics.mean(b[k] for b in curves)
        theirs = statistics.mean(float(r[k]) for r in expected)
        assert abs(ours - theirs) <= 0.5, (k, ours, theirs)
