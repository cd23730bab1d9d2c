"""The one place the sweep's and the report's tests get their replays from.

`replay_result(...)` is the replay package's entry point (`kubeberth.whatif.replay.run_replay`)
with the same keyword arguments, run for real on a small generated openb trace (`write_trace`
writes one: 4 nodes of 8 GPUs, a few dozen tasks), with two hooks for the sweep's tests read from
the trace files' directory (the workers are other processes): a file `FAIL` there lists trace
stems whose runs raise instead of replaying (the one failure injected); every call appends a line
to `calls.log` there (which runs really ran).

`replay_alone_text(kwargs)` is the same replay run alone, in a fresh interpreter: the text
`kubeberth replay ... -o json` prints with the same arguments.

`profiles()` (conftest.py) copies the gpushare plugins' profiles (the policies' own files).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

NODES, GPUS_PER_NODE, CPU_PER_NODE, MEMORY_PER_NODE = 4, 8, 96_000, 512 * 2**30


class BadTrace(ValueError):
    """The injected failure of a run whose trace the FAIL file names."""


def write_trace(directory: Path, name: str, tasks: int = 30) -> Path:
    """A small openb tasks file (and nodes file `nodes.csv` beside it); returns the tasks file. Its GPU
    shares are small, so that --tune 1.3 leaves no arrived percentage without a bin."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "nodes.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\n" + "".join(
        f"node-{i},{CPU_PER_NODE},{MEMORY_PER_NODE // 2**20},{GPUS_PER_NODE},V100M16\n" for i in range(NODES)))
    rng = random.Random(name)
    rows = []
    for i in range(tasks):
        gpus, milli = rng.choice([(0, 0), (1, 100), (1, 250), (1, 300), (1, 500)])
        created = rng.randrange(0, 3600)
        rows.append(f"task-{i:04d},{rng.choice([500, 1000, 2000])},{rng.choice([4096, 16384])},{gpus},{milli},,"
                    f"LS,Running,{created},{created + rng.randrange(60, 7200)},{created}\n")
    path = directory / f"openb_pod_list_{name}.csv"
    path.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
                    "deletion_time,scheduled_time\n" + "".join(rows))
    return path


def replay_result(files: Sequence[str], *, format: str = "openb", nodes: str | None = None,
                  profile: str | None = None, seed: int = 0, protocol: str | None = None,
                  tune: float | None = None, tie_break: str | None = None) -> dict[str, Any]:
    """The ReplayResult of the real replay of `files`, unless the FAIL file names the trace (see
    the module's docstring)."""
    from kubeberth.whatif.replay import run_replay

    trace = Path(files[-1])
    with open(trace.parent / "calls.log", "a") as log:
        log.write(f"{trace.stem} {Path(profile).stem if profile else '-'} {seed} {os.getpid()}\n")
    fail = trace.parent / "FAIL"
    if fail.exists() and trace.stem in fail.read_text().split():
        raise BadTrace(f"{trace}: line 2: column cpu_milli: not a number")
    return run_replay(files, format=format, nodes=nodes, profile=profile, seed=seed, protocol=protocol, tune=tune,
                      tie_break=tie_break)


ROOT = Path(__file__).resolve().parents[3]


def replay_alone_text(kwargs: dict[str, Any]) -> str:
    """`kubeberth replay ... -o json` with the arguments `kwargs` name, in a fresh interpreter."""
    argv = [*kwargs["files"], "--format", kwargs.get("format") or "openb", "--seed", str(kwargs.get("seed", 0)),
            "-o", "json"]
    for key, flag in (("nodes", "--nodes"), ("profile", "--profile"), ("protocol", "--protocol"), ("tune", "--tune"),
                      ("tie_break", "--tie-break")):
        if kwargs.get(key) is not None:
            argv += [flag, str(kwargs[key])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "operator"), str(ROOT)])}
    proc = subprocess.run([sys.executable, "-m", "kubeberth.entry", "replay", *argv], capture_output=True, text=True,
                          env=env, timeout=120, check=True)
    return proc.stdout
