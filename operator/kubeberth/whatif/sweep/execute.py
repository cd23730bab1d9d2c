"""Running a sweep's replays on Dask distributed, resumably.

Each run is one task (`replay_task`): the replay package's `run_replay` called in a worker process
with the run's arguments, exactly as `kubeberth replay` calls it, its ReplayResult serialised as
`kubeberth replay -o json` prints it. The text comes back to this process, which writes it to
`<out>/runs/<name>.json` atomically (a temporary file renamed into place), so the workers need no
shared file system (a remote cluster's workers do need the input files at the same paths).

A run whose result file exists and is a ReplayResult of the same seed is not run again: an
interrupted sweep resumes with the missing runs only. A run that raises is recorded in
`<name>.error.json` (the error; the file goes when the run later succeeds) and does not stop the
others. Wall time and the runs' own times (measured in the workers) give the parallel efficiency.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from .plan import Run, Sweep, run_name
from .table import result_fields

Replay = Callable[..., Mapping[str, Any]]
_worker_state: dict[str, Any] = {}


# The replay package's entry point: `run_replay(files, *, format, nodes, profile, seed, protocol,
# tune, tie_break) -> ReplayResult dict`, what `kubeberth replay` runs.
REPLAY_MODULE, REPLAY_FUNCTION = "kubeberth.whatif.replay", "run_replay"
RENDER_MODULE, RENDER_FUNCTION = "kubeberth.whatif.replay.output", "render_json"


def result_text(result: Mapping[str, Any]) -> str:
    """A ReplayResult as `kubeberth replay -o json` prints it: the replay package's own renderer
    (RENDER_MODULE.RENDER_FUNCTION), so that a sweep's file and the command's output are the same
    bytes; its compact form when the replay package has none."""
    import importlib

    try:
        module = importlib.import_module(RENDER_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name != RENDER_MODULE:
            raise
        module = None
    render = getattr(module, RENDER_FUNCTION, None)
    if render is None:
        return json.dumps(result, separators=(",", ":"), allow_nan=False) + "\n"
    text: str = render(result)
    return text


def default_replay() -> Replay:
    """The replay package's entry point (REPLAY_MODULE.REPLAY_FUNCTION)."""
    import importlib

    replay: Replay | None = getattr(importlib.import_module(REPLAY_MODULE), REPLAY_FUNCTION, None)
    if replay is None:
        raise RuntimeError(f"the replay engine is not available: no {REPLAY_MODULE}.{REPLAY_FUNCTION}")
    return replay


def _prepare_worker(plugins: tuple[str, ...], gates: tuple[str, ...]) -> None:
    """Load the plugin sources and set the feature gates, once per worker process and setting."""
    if _worker_state.get("setting") == (plugins, gates):
        return
    from ...features import FeatureGates, set_current
    from ...plugins import use_plugins

    set_current(FeatureGates.parse(list(gates) or None))
    use_plugins(list(plugins))
    _worker_state["setting"] = (plugins, gates)


def replay_task(kwargs: Mapping[str, Any], plugins: tuple[str, ...] = (), gates: tuple[str, ...] = (),
                replay: Replay | None = None) -> dict[str, Any]:
    """One run, in a worker: {"text", "fields", "curve", "seconds", "worker"} or {"error", "seconds",
    "worker"}; `curve`: the result's gpuAllocation (for the page's means, without reading the files)."""
    started = time.perf_counter()
    worker = f"{os.uname().nodename}:{os.getpid()}"
    try:
        _prepare_worker(tuple(plugins), tuple(gates))
        result = (replay or default_replay())(**kwargs)
        out: dict[str, Any] = {"text": result_text(result), "fields": result_fields(result),
                               "curve": dict(result.get("gpuAllocation") or {})}
    except Exception as exc:
        out = {"error": f"{type(exc).__name__}: {exc}"}
    out |= {"seconds": time.perf_counter() - started, "worker": worker}
    return out


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to a temporary file beside `path` and rename it into place."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def finished_result(path: Path, run: Run) -> Mapping[str, Any] | None:
    """The run's result when its file is there and holds a ReplayResult of this run's seed."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("kind") != "ReplayResult" or \
            (doc.get("input") or {}).get("seed") != run.seed:
        return None
    return doc


@dataclass
class RunOutcome:
    """What became of one run: ok (ran now), resumed (found done) or failed."""

    run: Run
    name: str
    status: str
    fields: dict[str, float] = field(default_factory=dict)
    curve: dict[str, float] = field(default_factory=dict)  # gpuAllocation
    error: str | None = None
    seconds: float | None = None
    worker: str | None = None


@dataclass
class SweepRun:
    """The outcomes in the plan's order, and the timing of the runs that ran now."""

    outcomes: list[RunOutcome]
    workers: int
    scheduler: str | None
    wall_seconds: float
    startup_seconds: float

    @property
    def run_seconds(self) -> float:
        return sum(o.seconds or 0.0 for o in self.outcomes if o.status != "resumed")

    @property
    def parallel_efficiency(self) -> float | None:
        """Sum of the runs' times / (wall time x workers); None when nothing ran."""
        if self.wall_seconds <= 0 or self.workers <= 0 or self.run_seconds <= 0:
            return None
        return self.run_seconds / (self.wall_seconds * self.workers)

    def metadata(self) -> dict[str, Any]:
        ran = [o for o in self.outcomes if o.status != "resumed"]
        return {"runs": len(self.outcomes), "ran": len(ran), "resumed": len(self.outcomes) - len(ran),
                "failed": sum(o.status == "failed" for o in self.outcomes), "workers": self.workers,
                "scheduler": self.scheduler, "wallSeconds": round(self.wall_seconds, 3),
                "startupSeconds": round(self.startup_seconds, 3), "runSeconds": round(self.run_seconds, 3),
                "parallelEfficiency": None if self.parallel_efficiency is None else round(self.parallel_efficiency, 4),
                "perRun": {o.name: {"seconds": round(o.seconds or 0.0, 3), "worker": o.worker} for o in ran}}


class ClusterError(RuntimeError):
    """The Dask cluster could not be reached or started."""


def _cluster(stack: ExitStack, workers: int, scheduler: str | None, client: Any) -> tuple[Any, int]:
    """A Dask client (given, connected to `scheduler`, or over a new LocalCluster) and its threads."""
    if client is None:
        from distributed import Client, LocalCluster

        if scheduler:
            try:
                client = stack.enter_context(Client(scheduler))
            except (OSError, ValueError) as exc:  # refused, timed out (TimeoutError is an OSError), bad address
                raise ClusterError(f"--scheduler {scheduler}: {exc or type(exc).__name__}") from None
        else:
            # its HTTP server (dashboard, health) on a free loopback port: two sweeps at once do not clash on 8787
            cluster = stack.enter_context(LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                                       dashboard_address="127.0.0.1:0", silence_logs=40))
            client = stack.enter_context(Client(cluster))
    threads = sum(w.get("nthreads", 1) for w in client.scheduler_info().get("workers", {}).values())
    return client, threads or workers


def run_sweep(sweep: Sweep, out: str | Path, *, workers: int = 2, scheduler: str | None = None,
              client: Any = None, replay: Replay | None = None, progress: IO[str] | None = sys.stderr,
              on_result: Callable[[RunOutcome], None] | None = None) -> SweepRun:
    """Run the sweep's missing runs (see the module's docstring); `client`: a Dask client to use
    as is, else one to `scheduler`, else a LocalCluster of `workers` processes. `on_result` is
    called after each result is written (an exception there stops the sweep, the runs not yet
    written left for a resume). `progress`: where tqdm's bar goes (None: no bar)."""
    runs_dir = Path(out) / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    for stale in runs_dir.glob(".*.tmp"):  # half-written by a process killed while writing
        stale.unlink(missing_ok=True)
    outcomes: dict[str, RunOutcome] = {}
    todo: list[tuple[str, Run]] = []
    for run in sweep.runs:
        name = run_name(run, sweep)
        done = finished_result(runs_dir / f"{name}.json", run)
        if done is not None:
            outcomes[name] = RunOutcome(run, name, "resumed", result_fields(done),
                                        dict(done.get("gpuAllocation") or {}))
        else:
            todo.append((name, run))
    started = time.perf_counter()
    startup = wall = 0.0
    threads = workers
    if todo:
        with ExitStack() as stack:
            dask_client, threads = _cluster(stack, workers, scheduler, client)
            startup = time.perf_counter() - started
            from distributed import as_completed
            from tqdm import tqdm

            bar = stack.enter_context(tqdm(total=len(todo), desc="sweep", unit="run", file=progress,
                                           disable=progress is None, dynamic_ncols=True))

            def say(message: str) -> None:
                if progress is not None:
                    bar.write(message, file=progress)

            if outcomes:
                say(f"sweep: {len(outcomes)} of {len(sweep.runs)} runs already done (resumed)")
            token = uuid.uuid4().hex[:8]
            submitted, names = [], {}
            for name, run in todo:
                fut = dask_client.submit(replay_task, run.replay_kwargs(), sweep.plugins, sweep.feature_gates, replay,
                                         key=f"replay-{name}-{token}", pure=False, priority=_size(run))
                submitted.append(fut)
                names[fut.key] = (name, run)
            try:
                for fut in as_completed(submitted):
                    name, run = names[fut.key]
                    outcome = _record(runs_dir, name, run, fut)
                    outcomes[name] = outcome
                    bar.update(1)
                    if outcome.status == "failed":
                        say(f"sweep: {name}: {outcome.error}")
                    if on_result is not None:
                        on_result(outcome)
            except BaseException:
                dask_client.cancel(submitted)
                raise
            wall = time.perf_counter() - started - startup
    order = [run_name(run, sweep) for run in sweep.runs]
    return SweepRun([outcomes[n] for n in order], threads, scheduler, wall, startup)


def _size(run: Run) -> int:
    """The bytes of a run's inputs: the larger runs start first, so that the last to finish are
    short ones (less time with a worker idle at the end)."""
    return sum(os.path.getsize(f) for f in (*run.trace.files, *([run.trace.nodes] if run.trace.nodes else [])))


def _record(runs_dir: Path, name: str, run: Run, fut: Any) -> RunOutcome:
    """Write a finished task's result (or its error) and say what became of the run."""
    try:
        got = fut.result()
    except Exception as exc:
        got = {"error": f"{type(exc).__name__}: {exc}", "seconds": None, "worker": None}
    error_file = runs_dir / f"{name}.error.json"
    if "error" in got:
        write_atomic(error_file, json.dumps({"run": name, "input": run.replay_kwargs(), "error": got["error"]},
                                            indent=2, sort_keys=True) + "\n")
        return RunOutcome(run, name, "failed", error=got["error"], seconds=got["seconds"], worker=got["worker"])
    write_atomic(runs_dir / f"{name}.json", got["text"])
    error_file.unlink(missing_ok=True)
    return RunOutcome(run, name, "ok", got["fields"], got["curve"], seconds=got["seconds"], worker=got["worker"])
