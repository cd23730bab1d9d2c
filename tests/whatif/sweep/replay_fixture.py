"""The one place the sweep's and the report's tests get their replays from.

`replay_result(...)` stands in for the replay package's entry point (`run_replay`, spec40.md's
ReplayResult) with the same keyword arguments: a small, seeded, made-up cluster run (4 nodes of 8
GPUs, a few dozen tasks arriving and leaving) whose result has every field the real one has, in
its shapes. Switching the tests to real replays is one change: make `replay_result` call
`kubeberth.whatif.replay.run_replay` on a small generated openb trace (`write_trace` writes one).

`replay_alone_text(kwargs)` is the same replay run alone, in a fresh interpreter, as the text
`kubeberth replay -o json` prints (with real replays: that command, run with the same arguments).

Hooks for the sweep's tests, read from the trace files' directory (the workers are other
processes): a file `FAIL` there lists trace stems whose runs raise; every call appends a line to
`calls.log` there (which runs really ran).

With real replays: `profiles()` (conftest.py) then names the gpushare plugins' profiles; a failing
run is one whose input the replay refuses as a whole (a profile enabling an unknown plugin, say:
a malformed row alone is reported and skipped); `calls.log` becomes the sweep's own record
(`SweepRun.outcomes`' statuses, which the tests check too).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

GPU = "alibabacloud.com/gpu-milli"
NODES, GPUS_PER_NODE, CPU_PER_NODE, MEMORY_PER_NODE = 4, 8, 96_000, 512 * 2**30
# how tightly each policy packs (the made-up runs' only difference between policies)
PACKING = {"Random": 0.80, "DotProd": 0.86, "GpuClustering": 0.88, "GpuPacking": 0.89, "BestFit": 0.91, "FGD": 0.95}


class BadTrace(ValueError):
    """A trace the made-up replay refuses (named in the FAIL file)."""


def write_trace(directory: Path, name: str, tasks: int = 30) -> Path:
    """A small openb tasks file (and nodes file `nodes.csv` beside it); returns the tasks file."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "nodes.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\n" + "".join(
        f"node-{i},{CPU_PER_NODE},{MEMORY_PER_NODE // 2**20},{GPUS_PER_NODE},V100M16\n" for i in range(NODES)))
    rng = random.Random(name)
    rows = []
    for i in range(tasks):
        gpus, milli = rng.choice([(0, 0), (1, 250), (1, 500), (1, 1000), (2, 1000)])
        created = rng.randrange(0, 3600)
        rows.append(f"task-{i:04d},{rng.choice([2000, 4000, 8000])},{rng.choice([4096, 16384])},{gpus},{milli},,"
                    f"LS,Running,{created},{created + rng.randrange(60, 7200)},{created}\n")
    path = directory / f"openb_pod_list_{name}.csv"
    path.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
                    "deletion_time,scheduled_time\n" + "".join(rows))
    return path


def _tasks(path: Path) -> list[list[str]]:
    return [line.split(",") for line in path.read_text().splitlines()[1:] if line]


def _binned(arrived: Sequence[float], allocated: Sequence[float]) -> dict[str, float]:
    out: dict[str, float] = {}
    for k in range(131):
        near = [a for x, a in zip(arrived, allocated, strict=True) if round(x) == k] or \
            [a for x, a in zip(arrived, allocated, strict=True) if k - 1 <= round(x) <= k + 1]
        if near:
            out[str(k)] = round(sum(near) / len(near), 2)
    return out


def replay_result(files: Sequence[str], *, format: str = "openb", nodes: str | None = None,
                  profile: str | None = None, seed: int = 0, protocol: str | None = None,
                  tune: float | None = None, tie_break: str | None = None) -> dict[str, Any]:
    """A ReplayResult of a made-up replay of `files` (see the module's docstring)."""
    trace = Path(files[-1])
    with open(trace.parent / "calls.log", "a") as log:
        log.write(f"{trace.stem} {Path(profile).stem if profile else '-'} {seed} {os.getpid()}\n")
    fail = trace.parent / "FAIL"
    if fail.exists() and trace.stem in fail.read_text().split():
        raise BadTrace(f"{trace}: line 2: column cpu_milli: not a number")
    policy = Path(profile).stem if profile else "default"
    rng = random.Random(zlib.crc32(f"{trace.stem}/{policy}/{seed}/{protocol}/{tune}".encode()))
    tasks = _tasks(trace)
    cap = {"cpu": NODES * CPU_PER_NODE, "memory": NODES * MEMORY_PER_NODE, GPU: NODES * GPUS_PER_NODE * 1000,
           "pods": NODES * 110}
    if protocol == "artifact":
        order = sorted(tasks, key=lambda t: t[0])
        rng.shuffle(order)
        pool = sorted(tasks, key=lambda t: t[0])
        total = sum(int(t[3]) * int(t[4]) for t in order)
        while tune:
            extra = rng.choice(pool)
            if total + int(extra[3]) * int(extra[4]) > tune * cap[GPU]:
                break
            order.append(extra)
            total += int(extra[3]) * int(extra[4])
        events = [(0.0, 0, i) for i in range(len(order))]
    else:
        order = tasks
        events = sorted([(float(t[8]), 0, i) for i, t in enumerate(order)] +
                        [(float(t[9]), 1, i) for i, t in enumerate(order)])
    packing = PACKING.get(policy, 0.9)
    used = {"cpu": 0, "memory": 0, GPU: 0}
    arrived_req = {"cpu": 0, "memory": 0, GPU: 0}
    counts = {"arrived": 0, "scheduled": 0, "pending": 0, "running": 0, "failed": 0, "preemptions": 0}
    columns = ["time", "arrived", "scheduled", "pending", "running", "failed", "preemptions", "queueingDelay",
               "oldestPending", "allocated.cpu", "allocated.memory", f"allocated.{GPU}", "capacity.cpu",
               "capacity.memory", f"capacity.{GPU}", "arrivedRequests.cpu", "arrivedRequests.memory",
               f"arrivedRequests.{GPU}", "GpuShareAccounting.fragmentationRatio"]
    rows, pods, on = [], [], set()
    reasons: dict[str, int] = {}
    delays: list[float] = []
    departed = 0
    arrived_pct, alloc_pct = [], []
    for time, kind, i in events:
        t = order[i]
        req = {"cpu": int(t[1]), "memory": int(t[2]) * 2**20, GPU: int(t[3]) * int(t[4])}
        if kind == 1:
            if i in on:
                on.discard(i)
                for r in used:
                    used[r] -= req[r]
                counts["running"] -= 1
                departed += 1
            continue
        counts["arrived"] += 1
        for r in arrived_req:
            arrived_req[r] += req[r]
        fits = all(used[r] + req[r] <= cap[r] * (packing if r == GPU else 1) for r in used)
        wait = round(rng.random() * 30, 3) if protocol is None else 0.0
        if fits:
            on.add(i)
            for r in used:
                used[r] += req[r]
            counts["scheduled"] += 1
            counts["running"] += 1
            delays.append(wait)
        else:
            counts["failed"] += 1
            reasons[f"Insufficient {GPU}"] = reasons.get(f"Insufficient {GPU}", 0) + 1
        pods.append({"pod": f"default/{t[0]}-{len(pods)}", "arrival": time, "bound": time + wait if fits else None,
                     "node": f"node-{rng.randrange(NODES)}" if fits else None,
                     "departure": float(t[9]) if fits and protocol is None else None,
                     "status": "Scheduled" if fits else ("Dropped" if protocol else "Unschedulable"),
                     "annotations": {"alibabacloud.com/gpu-index": "0"} if fits and req[GPU] else {}})
        arrived_pct.append(arrived_req[GPU] / cap[GPU] * 100)
        alloc_pct.append(used[GPU] / cap[GPU] * 100)
        rows.append([time, counts["arrived"], counts["scheduled"], counts["pending"], counts["running"],
                     counts["failed"], 0, wait if fits else 0.0, 0.0, used["cpu"], used["memory"], used[GPU],
                     cap["cpu"], cap["memory"], cap[GPU], arrived_req["cpu"], arrived_req["memory"], arrived_req[GPU],
                     round(rng.random() * 10, 3)])
    allocation = {}
    for r, name in (("cpu", "allocated.cpu"), ("memory", "allocated.memory"), (GPU, f"allocated.{GPU}")):
        pct = [row[columns.index(name)] / cap[r] * 100 for row in rows]
        allocation[r] = {"mean": sum(pct) / len(pct), "max": max(pct), "final": pct[-1]}
    delays.sort()
    result: dict[str, Any] = {
        "apiVersion": "kubeberth.io/v1alpha1", "kind": "ReplayResult",
        "input": {"format": format, "files": list(files), "profile": profile, "seed": seed, "protocol": protocol,
                  "tune": tune, "tieBreak": tie_break or ("fixed-order" if protocol else "reservoir")},
        "summary": {"arrived": counts["arrived"], "scheduled": counts["scheduled"], "failed": counts["failed"],
                    "departed": departed, "preemptions": 0,
                    "queueingDelay": {"p50": delays[len(delays) // 2], "p99": delays[int(len(delays) * 0.99)],
                                      "mean": sum(delays) / len(delays), "max": delays[-1]},
                    "unschedulableByReason": reasons, "duration": events[-1][0], "capacity": cap,
                    "allocation": allocation},
        "series": {"columns": columns, "rows": rows},
        "pods": pods,
    }
    if protocol == "artifact":
        result["gpuAllocation"] = _binned(arrived_pct, alloc_pct)
    return result


ROOT = Path(__file__).resolve().parents[3]
ALONE = """
import json, sys
from kubeberth.whatif.sweep.execute import result_text
from tests.whatif.sweep.replay_fixture import replay_result
sys.stdout.write(result_text(replay_result(**json.loads(sys.argv[1]))))
"""


def replay_alone_text(kwargs: dict[str, Any]) -> str:
    """One replay in a fresh interpreter (nothing run before it in that process), its JSON text."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "operator"), str(ROOT)])}
    proc = subprocess.run([sys.executable, "-c", ALONE, json.dumps(kwargs)], capture_output=True, text=True,
                          env=env, timeout=120, check=True)
    return proc.stdout
