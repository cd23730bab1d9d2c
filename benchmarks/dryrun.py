"""The dry-run service's cost: its latency at 5,000 nodes, and how much 100 dry runs a second slow
the scheduler binding at full speed.

    python -m benchmarks.dryrun                       # 5000 nodes, 1000 running pods, 5 pairs of rounds
    python -m benchmarks.dryrun --tls                 # the front with HTTPS and delegated authentication
    python -m benchmarks.dryrun --nodes 500 --pods 500 --rounds 1 --round-pods 500   # a quick look

In-process, without the API server: SchedulingBasic's nodes and pods put into the scheduler's cache
directly (benchmarks/run.py's Bench), the operator's loop (`Scheduler.run()`) binding through
simulate's in-memory client, and the dry runs served as the operator serves them: by the dry-run
front (kubeberth/operator/dryrun_front.py, a process of its own, started by dryrun_supervisor.py's
DryRunFront on this scheduler) answering from workers forked from this process.

Measured:
- latency: `--latency` dry runs of one pod (SchedulingBasic's pod), one at a time, while nothing
  else runs: the engine's own time in the loop (`engine_live`, on the live snapshot), on a copy
  (`engine_copy`, what a worker computes) and with the explanation (`engine_explain`); then the
  whole exchange: through the in-process service (`service`: one pod is answered in the loop; the
  Kueue check's path), through a forked worker alone (`worker`: a new fork whenever its copy is
  older than --refresh), and over HTTP through the front (`http`: this process posts, the front
  validates and hands the request to a worker forked from here), at 100 a second; p50/p99/max;
- slowdown: rounds of `--round-pods` pods created at once and bound by the loop, alternately
  without and with `--rate` dry runs a second (each with a pod of its own, none waiting on the one
  before), sent by another process over HTTP to the front (`--load http`: the scheduler's process
  only forks; the caller stands for a client on another machine and runs at nice --caller-nice, as
  the front and the workers run at nice 10) or by a task of the scheduler's process calling the
  in-process service (`--load inproc`, its own costs counted in; `--path worker` sends them all to
  its forked worker); pods/s
  of each round, the slowdown of each pair (1 - with/without) and their median, the same in CPU
  seconds of the scheduler's process, the forks and the CPU seconds of the front. The rounds are
  interleaved so that a machine shared with other work loads both kinds alike; the load average
  is recorded before and after each round.
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

from .dryrun_http import CALLER, TOKEN, cpu_seconds, start_front
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


async def measure_latency(bench: Bench, count: int, refresh: float, tls: bool) -> dict[str, Any]:
    """The engine's own time in the loop (`live`, what the service does for one pod), on a copy and
    with the explanation (on the scheduler itself: what a worker computes), then the whole exchange
    through the in-process service, through a forked worker alone, and over HTTP through the front."""
    from kubeberth.dryrun.service import DryRunService
    from kubeberth.dryrun.worker import DryRunWorkers, answer

    sched = bench.sched
    out: dict[str, Any] = {}
    for key, explain, live, n in (("engine_live", False, True, count), ("engine_copy", False, False, count),
                                  ("engine_explain", True, False, max(10, count // 10))):
        engine: list[float] = []
        for i in range(n):
            t0 = time.perf_counter()
            reply = answer(sched, _request(i, explain), time.monotonic(), live=live)
            engine.append(time.perf_counter() - t0)
            assert reply["pods"][0]["status"] == "Scheduled", reply
        out[key] = _stats(engine)
    for key in ("service", "worker"):
        workers = DryRunWorkers(lambda: sched, refresh=refresh)
        ask = DryRunService(lambda: sched, workers).ask if key == "service" else workers.ask
        asked: list[float] = []
        try:
            for i in range(count):
                t0 = time.perf_counter()
                reply = await ask(_request(i))
                asked.append(time.perf_counter() - t0)
                assert reply["pods"][0]["status"] == "Scheduled", reply
                await asyncio.sleep(0.01)  # 100 a second: the worker forks as often as under load
        finally:
            await workers.close()
        out[key] = {**_stats(asked), "forks": workers.forks,
                    "fork_ms_mean": round(workers.fork_seconds / max(1, workers.forks) * 1000, 3)}
    out["http"] = await _through_front(sched, count, refresh, tls)
    return out


async def _through_front(sched: Any, count: int, refresh: float, tls: bool) -> dict[str, Any]:
    """Dry runs posted over HTTP(S) to the front, one at a time, 100 a second."""
    import aiohttp

    front, api, url = await start_front(sched, refresh, tls)
    took: list[float] = []
    try:
        headers = {"Authorization": f"Bearer {TOKEN}"} if tls else {}
        async with aiohttp.ClientSession(headers=headers, connector=aiohttp.TCPConnector(ssl=False)) as session:
            for i in range(-1, count):  # the first one makes the connection and the first worker
                body = {"apiVersion": "kubeberth.io/v1alpha1", "kind": "DryRun",
                        "spec": {"pod": pod_default(f"http-{i}", "default")}}
                t0 = time.perf_counter()
                async with session.post(url, json=body) as resp:
                    data = await resp.json()
                if i >= 0:
                    took.append(time.perf_counter() - t0)
                assert resp.status == 201 and data["status"]["pods"][0]["status"] == "Scheduled", data
                assert data["status"]["servedBy"] == "worker", data
                await asyncio.sleep(0.01)  # 100 a second
    finally:
        await front.stop()
        if api is not None:
            await api.stop()
    return {**_stats(took), "forks": front.forks, "tls": tls,
            "fork_ms_mean": round(front.fork_seconds / max(1, front.forks) * 1000, 3)}


class _Front:
    """The front of the rounds with `--load http` (started once, idle in the rounds without)."""

    def __init__(self) -> None:
        self.front: Any = None
        self.api: Any = None
        self.url = ""


async def _round(bench: Bench, prefix: str, pods: int, rate: float, refresh: float, timeout: float,
                 path: str, load_kind: str, front: _Front, tls: bool, caller_nice: int) -> dict[str, Any]:
    from kubeberth.dryrun.service import DryRunService
    from kubeberth.dryrun.worker import DryRunWorkers, Overloaded

    sched = bench.sched
    done = bench.client.expect(prefix, pods)
    for i in range(pods):
        sched.on_pod_add(pod_default(f"{prefix}{i:06d}", "default"))
    workers = DryRunWorkers(lambda: sched, refresh=refresh)
    service = DryRunService(lambda: sched, workers)
    ask = service.ask if path == "service" else workers.ask
    caller = None
    forks0 = fork_s0 = 0.0
    if front.front is not None:
        forks0, fork_s0 = front.front.forks, front.front.fork_seconds
    front_cpu0 = cpu_seconds(front.front.pid if front.front is not None else None)
    if rate > 0 and load_kind == "http":
        caller = await asyncio.create_subprocess_exec(sys.executable, "-c", CALLER, front.url, str(rate),
                                                      TOKEN if tls else "", str(caller_nice),
                                                      stdin=asyncio.subprocess.PIPE,
                                                      stdout=asyncio.subprocess.PIPE)
        assert caller.stdout is not None
        await caller.stdout.readline()  # "ready": it sends from now on
    asked: dict[str, int] = {"sent": 0, "answered": 0, "refused": 0}
    http_latency: Any = None
    latencies: list[float] = []
    inflight: set[asyncio.Task[None]] = set()

    async def one(i: int) -> None:
        t0 = time.perf_counter()
        try:
            await ask(_request(i))
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
    load_before = [round(x, 2) for x in os.getloadavg()]
    t0, c0 = time.perf_counter(), time.process_time()
    runner = asyncio.get_running_loop().create_task(sched.run())
    loader = asyncio.get_running_loop().create_task(load()) if rate > 0 and caller is None else None
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
        if caller is not None:
            assert caller.stdin is not None
            caller.stdin.close()
            out, _ = await caller.communicate()
            got = json.loads(out.decode().strip().splitlines()[-1])
            asked = {k: got[k] for k in ("sent", "answered", "refused", "failed")}
            http_latency = got.get("latency_ms")
        await workers.close()
    served = {"forks": workers.forks, "fork_ms_total": round(workers.fork_seconds * 1000, 1)}
    if load_kind == "http" and front.front is not None:
        served = {"forks": front.front.forks - int(forks0),
                  "fork_ms_total": round((front.front.fork_seconds - fork_s0) * 1000, 1),
                  "front_cpu_s": round(cpu_seconds(front.front.pid) - front_cpu0, 3)}
    return {"rate": rate, "load": load_kind if rate > 0 else None, "pods": pods, "elapsed_s": round(elapsed, 3),
            "pods_per_s": round(pods / elapsed, 1),
            "cpu_s": round(cpu, 3), "dry_runs": {**asked, "in_loop": service.live, "over_budget": service.refused,
                                                 "loop_cpu_s": round(service.cpu, 4)},
            **served,
            **({"dry_run_latency": _stats(latencies)} if latencies else {}),
            **({"http_latency_ms": http_latency} if caller is not None else {}),
            "loadavg_before": load_before, "loadavg": [round(x, 2) for x in os.getloadavg()]}


async def measure_slowdown(bench: Bench, rounds: int, pods: int, rate: float, refresh: float,
                           path: str, load_kind: str = "http", tls: bool = False,
                           caller_nice: int = 10) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    front = _Front()
    if load_kind == "http":
        front.front, front.api, front.url = await start_front(bench.sched, refresh, tls)
    try:
        for r in range(rounds):
            for with_load in (False, True):
                res = await _round(bench, f"r{r}{'d' if with_load else 'n'}-", pods, rate if with_load else 0.0,
                                   refresh, timeout=max(120.0, pods / 10), path=path, load_kind=load_kind,
                                   front=front, tls=tls, caller_nice=caller_nice)
                results.append(res)
                sys.stderr.write(f"round {r} {'with' if with_load else 'without'} dry runs: {res['pods_per_s']} "
                                 f"pods/s, {res['cpu_s']} CPU s, {res['forks']} forks, {res['dry_runs']} "
                                 f"{res.get('http_latency_ms', '')} load {res['loadavg']}\n")
    finally:
        if front.front is not None:
            await front.front.stop()
        if front.api is not None:
            await front.api.stop()
    without = [x["pods_per_s"] for x in results if not x["rate"]]
    with_ = [x["pods_per_s"] for x in results if x["rate"]]
    pairs = [1 - b / a for a, b in zip(without, with_, strict=True)]
    cpu_pairs = [1 - a["cpu_s"] / b["cpu_s"] for a, b in zip(results[::2], results[1::2], strict=True)]
    cpu_without = sum(x["cpu_s"] for x in results if not x["rate"])
    cpu_with = sum(x["cpu_s"] for x in results if x["rate"])
    loop_cpu = sum(x["dry_runs"].get("loop_cpu_s", 0.0) for x in results if x["rate"])
    p99s = [x["http_latency_ms"]["p99"] for x in results if x.get("http_latency_ms")]
    return {"rounds": results, "without_pods_per_s": round(statistics.mean(without), 1),
            "with_pods_per_s": round(statistics.mean(with_), 1),
            "slowdown": round(1 - statistics.mean(with_) / statistics.mean(without), 4),
            "slowdown_median_pair": round(statistics.median(pairs), 4),
            "slowdown_per_pair": [round(x, 4) for x in pairs],
            # the scheduler's process' CPU seconds for the same pods bound: what the dry runs cost the
            # loop, whatever else the machine runs (an in-process load generator's own work counted in)
            "slowdown_cpu": round(1 - cpu_without / cpu_with, 4),
            "slowdown_cpu_median_pair": round(statistics.median(cpu_pairs), 4),
            "slowdown_cpu_per_pair": [round(x, 4) for x in cpu_pairs],
            # the loop thread's CPU time inside the dry runs, over the process' CPU time of those rounds
            "loop_share": round(loop_cpu / cpu_with, 4),
            **({"http_p99_ms_median": round(statistics.median(p99s), 3)} if p99s else {})}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.dryrun", description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods", type=int, default=1000, help="pods running before the measures")
    p.add_argument("--latency", type=int, default=300, help="dry runs timed for the latency")
    p.add_argument("--rounds", type=int, default=5, help="pairs of rounds (without, with dry runs)")
    p.add_argument("--round-pods", type=int, default=10000, help="pods bound per round")
    p.add_argument("--rate", type=float, default=100.0, help="dry runs a second during the rounds with them")
    p.add_argument("--refresh", type=float, default=2.0,
                   help="a worker's copy older than this is replaced while dry runs come (seconds; --dry-run-refresh)")
    p.add_argument("--load", choices=["http", "inproc"], default="http",
                   help="who sends the dry runs of the rounds: another process over HTTP to the dry-run front (a "
                        "process of its own, answering from workers forked from the scheduler's), or a task of the "
                        "scheduler's process calling the in-process service (its own costs counted in)")
    p.add_argument("--path", choices=["service", "worker"], default="service",
                   help="with --load inproc: through the service (one pod in the loop) or all to its forked worker")
    p.add_argument("--tls", action="store_true",
                   help="the front serves HTTPS with delegated authentication (TokenReview, SubjectAccessReview to "
                        "an API server double), as in production; default: plain HTTP on loopback")
    p.add_argument("--caller-nice", type=int, default=10,
                   help="the nice value of the --load http caller, which stands for a client on another machine "
                        "(default: 10: the scheduler gets the CPU first, as the front and the workers let it)")
    args = p.parse_args(argv)
    w = Workload("SchedulingBasic", f"{args.nodes}Nodes", args.nodes, args.pods, 0)
    bench = Bench(w)
    setup = bench.setup()
    sys.stderr.write(f"setup: {setup}\n")
    latency = asyncio.run(measure_latency(bench, args.latency, args.refresh, args.tls))
    sys.stderr.write(f"latency: {latency}\n")
    slowdown = asyncio.run(measure_slowdown(bench, args.rounds, args.round_pods, args.rate, args.refresh, args.path,
                                            args.load, args.tls, args.caller_nice))
    result = {"benchmark": "dryrun", "path": args.path if args.load == "inproc" else "front", "load": args.load,
              "tls": args.tls, "nodes": args.nodes,
              "running_pods": args.pods,
              "refresh_s": args.refresh, "caller_nice": args.caller_nice,
              "rate": args.rate, "latency": latency, "binding": slowdown, "setup": setup,
              "machine": machine(),
              "commit": git_commit(), "when": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")}
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%S")
    path = RESULTS_DIR / f"{stamp}-dryrun.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    for key in ("engine_live", "engine_copy", "engine_explain", "service", "http", "worker"):
        x = latency[key]
        print(f"dry run of one pod at {args.nodes} nodes, {key}: p50 {x['p50_ms']} ms, p99 {x['p99_ms']} ms, "
              f"max {x['max_ms']} ms ({x['n']} runs)")
    through = "the front" if args.load == "http" else f"the in-process {args.path}"
    print(f"binding: {slowdown['without_pods_per_s']} pods/s without, {slowdown['with_pods_per_s']} with "
          f"{args.rate:g} dry runs/s ({args.load}) through {through}: slowdown {slowdown['slowdown']:.1%} "
          f"of the mean "
          f"(median of the pairs {slowdown['slowdown_median_pair']:.1%}, per pair {slowdown['slowdown_per_pair']}); "
          f"in CPU seconds of the scheduler's process {slowdown['slowdown_cpu']:.1%} (median of the pairs "
          f"{slowdown['slowdown_cpu_median_pair']:.1%}, per pair {slowdown['slowdown_cpu_per_pair']}); the dry "
          f"runs' own share of the loop's CPU {slowdown['loop_share']:.1%}")
    if "http_p99_ms_median" in slowdown:
        print(f"HTTP latency while binding (the caller's): p99 {slowdown['http_p99_ms_median']} ms (median of rounds)")
    print(f"written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
