"""The dry-run service's cost: its latency at 5,000 nodes, and how much 100 dry runs a second slow
the scheduler binding at full speed.

    python -m benchmarks.dryrun                       # 5000 nodes, 1000 running pods, 3 pairs of rounds
    python -m benchmarks.dryrun --nodes 500 --pods 500 --rounds 1 --round-pods 500   # a quick look

In-process, without the API server: SchedulingBasic's nodes and pods put into the scheduler's cache
directly (benchmarks/run.py's Bench), the operator's loop (`Scheduler.run()`) binding through
simulate's in-memory client, and the dry runs sent to `DryRunWorkers` (kubeberth/dryrun/worker.py:
a fork of this process answering from its copy) as the endpoint sends them.

Measured:
- latency: `--latency` dry runs of one pod (SchedulingBasic's pod), one at a time, while nothing
  else runs: the worker's own time (the engine: `answer`), and the whole exchange seen by the
  caller (`ask`: a new fork whenever the copy is older than --refresh, the socket, the JSON);
  p50/p99/max; the same with the explanation asked for;
- slowdown: rounds of `--round-pods` pods created at once and bound by the loop, alternately
  without and with a task sending `--rate` dry runs a second (each with a pod of its own, none
  waiting on the one before); pods/s of each round, the mean of each kind, and the slowdown
  (1 - with/without). The rounds are interleaved so that a machine shared with other work loads
  both kinds alike; the load average is recorded.
Written to benchmarks/results/<stamp>-dryrun.json.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import gc
import json
import os
import statistics
import sys
import time
from typing import Any

from .record import RESULTS_DIR, git_commit, machine, percentile
from .run import Bench
from .workloads import Workload, pod_default


def _stats(values: list[float]) -> dict[str, float]:
    s = sorted(values)
    return {"p50_ms": round(percentile(s, 50) * 1000, 3), "p99_ms": round(percentile(s, 99) * 1000, 3),
            "max_ms": round(s[-1] * 1000, 3), "n": len(s)}


def _request(i: int, explain: bool = False) -> dict[str, Any]:
    return {"namespace": "default", "pods": [pod_default(f"dry-{i}", "default")], "explain": explain,
            "detail": "counts", "namespaces": ["default"]}


async def measure_latency(bench: Bench, count: int, refresh: float) -> dict[str, Any]:
    from kubeberth.dryrun.worker import DryRunWorkers, answer

    sched = bench.sched
    out: dict[str, Any] = {}
    for explain in (False, True):
        engine: list[float] = []
        for i in range(count):
            t0 = time.perf_counter()
            reply = answer(sched, _request(i, explain), time.monotonic())
            engine.append(time.perf_counter() - t0)
            assert reply["pods"][0]["status"] == "Scheduled", reply
        out["engine" + ("_explain" if explain else "")] = _stats(engine)
    workers = DryRunWorkers(lambda: sched, refresh=refresh)
    asked: list[float] = []
    try:
        for i in range(count):
            t0 = time.perf_counter()
            reply = await workers.ask(_request(i))
            asked.append(time.perf_counter() - t0)
            assert reply["pods"][0]["status"] == "Scheduled", reply
            await asyncio.sleep(0.01)  # 100 a second: forks as often as under load
    finally:
        await workers.close()
    out["ask"] = _stats(asked)
    out["forks"] = workers.forks
    out["fork_ms_mean"] = round(workers.fork_seconds / max(1, workers.forks) * 1000, 3)
    return out


async def _round(bench: Bench, prefix: str, pods: int, rate: float, refresh: float, timeout: float
                 ) -> dict[str, Any]:
    from kubeberth.dryrun.worker import DryRunWorkers, Overloaded

    sched = bench.sched
    done = bench.client.expect(prefix, pods)
    for i in range(pods):
        sched.on_pod_add(pod_default(f"{prefix}{i:06d}", "default"))
    workers = DryRunWorkers(lambda: sched, refresh=refresh)
    asked = {"sent": 0, "answered": 0, "refused": 0}
    latencies: list[float] = []
    inflight: set[asyncio.Task[None]] = set()

    async def one(i: int) -> None:
        t0 = time.perf_counter()
        try:
            await workers.ask(_request(i))
        except Overloaded:
            asked["refused"] += 1
            return
        latencies.append(time.perf_counter() - t0)
        asked["answered"] += 1

    async def load() -> None:
        interval, i = 1.0 / rate, 0
        next_at = time.perf_counter()
        while True:
            next_at += interval
            task = asyncio.get_running_loop().create_task(one(i))
            inflight.add(task)
            task.add_done_callback(inflight.discard)
            asked["sent"] += 1
            i += 1
            await asyncio.sleep(max(0.0, next_at - time.perf_counter()))

    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    runner = asyncio.get_running_loop().create_task(sched.run())
    loader = asyncio.get_running_loop().create_task(load()) if rate > 0 else None
    try:
        await asyncio.wait_for(done.wait(), timeout)
    finally:
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
        if loader is not None:
            loader.cancel()
        sched.stop()
        await runner
        for task in list(inflight):
            task.cancel()
        await workers.close()
    return {"rate": rate, "pods": pods, "elapsed_s": round(elapsed, 3), "pods_per_s": round(pods / elapsed, 1),
            "cpu_s": round(cpu, 3), "dry_runs": asked, "forks": workers.forks,
            "fork_ms_total": round(workers.fork_seconds * 1000, 1),
            **({"dry_run_latency": _stats(latencies)} if latencies else {}),
            "loadavg": [round(x, 2) for x in os.getloadavg()]}


async def measure_slowdown(bench: Bench, rounds: int, pods: int, rate: float, refresh: float) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    for r in range(rounds):
        for with_load in (False, True):
            res = await _round(bench, f"r{r}{'d' if with_load else 'n'}-", pods, rate if with_load else 0.0,
                               refresh, timeout=max(120.0, pods / 10))
            results.append(res)
            sys.stderr.write(f"round {r} {'with' if with_load else 'without'} dry runs: {res['pods_per_s']} pods/s "
                             f"{res['dry_runs']}\n")
    without = [x["pods_per_s"] for x in results if not x["rate"]]
    with_ = [x["pods_per_s"] for x in results if x["rate"]]
    pairs = [1 - b / a for a, b in zip(without, with_, strict=True)]
    return {"rounds": results, "without_pods_per_s": round(statistics.mean(without), 1),
            "with_pods_per_s": round(statistics.mean(with_), 1),
            "slowdown": round(1 - statistics.mean(with_) / statistics.mean(without), 4),
            "slowdown_per_pair": [round(x, 4) for x in pairs]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.dryrun", description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods", type=int, default=1000, help="pods running before the measures")
    p.add_argument("--latency", type=int, default=300, help="dry runs timed for the latency")
    p.add_argument("--rounds", type=int, default=3, help="pairs of rounds (without, with dry runs)")
    p.add_argument("--round-pods", type=int, default=1500, help="pods bound per round")
    p.add_argument("--rate", type=float, default=100.0, help="dry runs a second during the rounds with them")
    p.add_argument("--refresh", type=float, default=0.25, help="the worker's copy is at most this old (seconds)")
    args = p.parse_args(argv)
    w = Workload("SchedulingBasic", f"{args.nodes}Nodes", args.nodes, args.pods, 0)
    bench = Bench(w)
    setup = bench.setup()
    sys.stderr.write(f"setup: {setup}\n")
    latency = asyncio.run(measure_latency(bench, args.latency, args.refresh))
    sys.stderr.write(f"latency: {latency}\n")
    slowdown = asyncio.run(measure_slowdown(bench, args.rounds, args.round_pods, args.rate, args.refresh))
    result = {"benchmark": "dryrun", "nodes": args.nodes, "running_pods": args.pods, "refresh_s": args.refresh,
              "rate": args.rate, "latency": latency, "binding": slowdown, "setup": setup, "machine": machine(),
              "commit": git_commit(), "when": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    path = RESULTS_DIR / f"{stamp}-dryrun.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"dry run at {args.nodes} nodes: engine p50 {latency['engine']['p50_ms']} ms p99 "
          f"{latency['engine']['p99_ms']} ms (with explanation p99 {latency['engine_explain']['p99_ms']} ms); "
          f"asked through the worker p50 {latency['ask']['p50_ms']} ms p99 {latency['ask']['p99_ms']} ms")
    print(f"binding: {slowdown['without_pods_per_s']} pods/s without, {slowdown['with_pods_per_s']} with "
          f"{args.rate:g} dry runs/s: slowdown {slowdown['slowdown']:.1%} (per pair {slowdown['slowdown_per_pair']})")
    print(f"written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
