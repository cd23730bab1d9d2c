"""What every benchmark records beside its own figures: where results go, the machine, the commit,
the peak RSS, percentiles, a workload's description. The lowest module of the benchmarks: run.py,
dra.py, e2e.py and peer_cases.py take these from here (none of them imports run.py back)."""

from __future__ import annotations

import math
import os
import platform
import resource
import subprocess
from pathlib import Path
from typing import Any

from . import workloads as wl

RESULTS_DIR = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parent.parent


# ---- machine ----------------------------------------------------------------------------------

def machine() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        import numpy

        np_version = numpy.__version__
    except ImportError:  # pragma: no cover
        np_version = ""
    mem_gib = 0.0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gib = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return {"cpu": model or platform.processor(), "nproc": os.cpu_count(), "mem_gib": mem_gib,
            "python": platform.python_version(), "numpy": np_version, "platform": platform.platform()}


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             timeout=5)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, timeout=5)
        return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return ""


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of already sorted values."""
    if not sorted_values:
        return 0.0
    k = max(0, min(len(sorted_values) - 1, math.ceil(q / 100.0 * len(sorted_values)) - 1))
    return sorted_values[k]


def describe(w: wl.Workload) -> dict[str, Any]:
    return {"workload": w.id, "name": w.name, "variant": w.variant, "nodes": w.nodes, "init_pods": w.init_pods,
            "measure_pods": w.measure_pods, "threshold": w.threshold, "target": w.target,
            "rss_target_mib": w.rss_target_mib, "pod_groups": w.pod_groups, "pods_per_group": w.pods_per_group,
            "feature_gates": w.feature_gates}
