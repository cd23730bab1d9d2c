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
  else runs: the engine's own time in the loop (`engine_live`, on the live snapshot), on a copy
  (`engine_copy`, what the worker computes) and with the explanation (`engine_explain`); then the
  whole exchange seen by the endpoint: through the service (`service`: one pod is answered in the
  loop), the same over HTTP (`http`: the endpoint on loopback, without TLS and authentication), and
  through the forked worker (`worker`: a new fork whenever its copy is older than
  --refresh, the socket, the JSON), at 100 a second; p50/p99/max;
- slowdown: rounds of `--round-pods` pods created at once and bound by the loop, alternately
  without and with `--rate` dry runs a second (each with a pod of its own, none waiting on the one
  before), sent by another process over HTTP to the endpoint served in the scheduler's process
  (`--load http`, plain HTTP on loopback: TLS and the cached authentication aside, the scheduler's
  process pays what it would in production) or by a task of the scheduler's process (`--load
  inproc`, its own costs counted in); pods/s of each round, the mean of each kind, and the slowdown
  (1 - with/without); the same in CPU seconds of the process. `--path worker` sends every dry run
  to the forked worker instead. The rounds are interleaved so that a machine shared with other
  work loads both kinds alike; the load average is recorded.
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
    """The engine's own time in the loop (`live`, what the service does for one pod) and with the
    explanation (on the scheduler itself: what the worker computes), then the whole exchange
    through the service (in the loop) and through the forked worker alone."""
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
    out["http"] = await _over_http(sched, count)
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
    return out


async def _over_http(sched: Any, count: int) -> dict[str, Any]:
    """The service behind the endpoint, over plain HTTP on loopback (--metrics-insecure: no TLS, no
    authentication; with them, a cached TokenReview and SubjectAccessReview add a lookup each)."""
    import aiohttp

    from kubeberth.dryrun.service import DryRunService
    from kubeberth.dryrun.worker import DryRunWorkers
    from kubeberth.metrics import SchedulerMetrics
    from kubeberth.operator.dryrun_endpoint import DryRunEndpoint
    from kubeberth.operator.secure_serving import make_server
    from kubeberth.operator.serving_options import ServingOptions

    service = DryRunService(lambda: sched, DryRunWorkers(lambda: sched))
    endpoint = DryRunEndpoint(service, lambda ns: ("counts", [ns]))
    server = await make_server(ServingOptions(insecure=True), SchedulerMetrics(), 0, "127.0.0.1", post=None, get=None,
                               resource_routes=endpoint.routes())
    await server.start()
    took: list[float] = []
    try:
        url = f"http://127.0.0.1:{server.port}/apis/kubeberth.io/v1alpha1/namespaces/default/dryruns"
        async with aiohttp.ClientSession() as session:
            for i in range(count):
                body = {"apiVersion": "kubeberth.io/v1alpha1", "kind": "DryRun",
                        "spec": {"pod": pod_default(f"http-{i}", "default")}}
                t0 = time.perf_counter()
                async with session.post(url, json=body) as resp:
                    data = await resp.json()
                took.append(time.perf_counter() - t0)
                assert resp.status == 201 and data["status"]["pods"][0]["status"] == "Scheduled", data
                await asyncio.sleep(0.01)  # 100 a second, as the service's budget allows
    finally:
        await server.stop()
        await service.close()
    return _stats(took)


# The caller of `--load http`: another process posting `rate` DryRuns a second to `url` until its stdin
# closes, then printing what it got (JSON): the scheduler's process pays for the HTTP handling only.
HTTP_CALLER = """
import asyncio, json, sys, time
import aiohttp
url, rate = sys.argv[1], float(sys.argv[2])
got = {"sent": 0, "answered": 0, "refused": 0, "failed": 0}
took = []
async def one(session, i):
    body = {"apiVersion": "kubeberth.io/v1alpha1", "kind": "DryRun", "spec": {"pod": {
        "metadata": {"name": f"http-{i}"}, "spec": {"containers": [{"name": "pause", "image": "pause",
        "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}}}]}}}}
    t0 = time.perf_counter()
    async with session.post(url, json=body) as resp:
        await resp.read()
    key = {201: "answered", 429: "refused"}.get(resp.status, "failed")
    got[key] += 1
    if resp.status == 201:
        took.append(time.perf_counter() - t0)
async def main():
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_reader(sys.stdin.fileno(), lambda: stop.set() if not sys.stdin.buffer.read1(1 << 16) else None)
    tasks = set()
    print("ready", flush=True)
    async with aiohttp.ClientSession() as session:
        next_at, i = time.perf_counter(), 0
        while not stop.is_set():
            next_at += 1.0 / rate
            t = loop.create_task(one(session, i)); tasks.add(t); t.add_done_callback(tasks.discard)
            got["sent"] += 1; i += 1
            try:
                await asyncio.wait_for(stop.wait(), max(0.0, next_at - time.perf_counter()))
            except asyncio.TimeoutError:
                pass
        for t in list(tasks):
            t.cancel()
    took.sort()
    n = len(took)
    got["latency_ms"] = {"p50": round(took[n // 2] * 1000, 3), "p99": round(took[int(n * .99)] * 1000, 3)} if n else {}
    print(json.dumps(got))
asyncio.run(main())
"""


async def _round(bench: Bench, prefix: str, pods: int, rate: float, refresh: float, timeout: float,
                 path: str, load_kind: str = "http") -> dict[str, Any]:
    from kubeberth.dryrun.service import DryRunService
    from kubeberth.dryrun.worker import DryRunWorkers, Overloaded
    from kubeberth.metrics import SchedulerMetrics
    from kubeberth.operator.dryrun_endpoint import DryRunEndpoint
    from kubeberth.operator.secure_serving import make_server
    from kubeberth.operator.serving_options import ServingOptions

    sched = bench.sched
    done = bench.client.expect(prefix, pods)
    for i in range(pods):
        sched.on_pod_add(pod_default(f"{prefix}{i:06d}", "default"))
    workers = DryRunWorkers(lambda: sched, refresh=refresh)
    service = DryRunService(lambda: sched, workers)
    ask = service.ask if path == "service" else workers.ask
    server = caller = None
    if rate > 0 and load_kind == "http":
        endpoint = DryRunEndpoint(service if path == "service" else workers, lambda ns: ("counts", [ns]))
        server = await make_server(ServingOptions(insecure=True), SchedulerMetrics(), 0, "127.0.0.1", post=None,
                                   get=None, resource_routes=endpoint.routes())
        await server.start()
        url = f"http://127.0.0.1:{server.port}/apis/kubeberth.io/v1alpha1/namespaces/default/dryruns"
        caller = await asyncio.create_subprocess_exec(sys.executable, "-c", HTTP_CALLER, url, str(rate),
                                                      stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
        assert caller.stdout is not None
        await caller.stdout.readline()  # "ready": it sends from now on
    asked = {"sent": 0, "answered": 0, "refused": 0}
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
            latencies = []
            http_latency = got.get("latency_ms")
        if server is not None:
            await server.stop()
        await workers.close()
    return {"rate": rate, "load": load_kind if rate > 0 else None, "pods": pods, "elapsed_s": round(elapsed, 3),
            "pods_per_s": round(pods / elapsed, 1),
            "cpu_s": round(cpu, 3), "dry_runs": {**asked, "in_loop": service.live, "over_budget": service.refused,
                                                 "loop_cpu_s": round(service.cpu, 4)},
            "forks": workers.forks,
            "fork_ms_total": round(workers.fork_seconds * 1000, 1),
            **({"dry_run_latency": _stats(latencies)} if latencies else {}),
            **({"http_latency_ms": http_latency} if caller is not None else {}),
            "loadavg": [round(x, 2) for x in os.getloadavg()]}


async def measure_slowdown(bench: Bench, rounds: int, pods: int, rate: float, refresh: float,
                           path: str, load_kind: str = "http") -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    for r in range(rounds):
        for with_load in (False, True):
            res = await _round(bench, f"r{r}{'d' if with_load else 'n'}-", pods, rate if with_load else 0.0,
                               refresh, timeout=max(120.0, pods / 10), path=path, load_kind=load_kind)
            results.append(res)
            sys.stderr.write(f"round {r} {'with' if with_load else 'without'} dry runs: {res['pods_per_s']} pods/s "
                             f"{res['dry_runs']}\n")
    without = [x["pods_per_s"] for x in results if not x["rate"]]
    with_ = [x["pods_per_s"] for x in results if x["rate"]]
    pairs = [1 - b / a for a, b in zip(without, with_, strict=True)]
    cpu_without = sum(x["cpu_s"] for x in results if not x["rate"])
    cpu_with = sum(x["cpu_s"] for x in results if x["rate"])
    loop_cpu = sum(x["dry_runs"].get("loop_cpu_s", 0.0) for x in results if x["rate"])
    return {"rounds": results, "without_pods_per_s": round(statistics.mean(without), 1),
            "with_pods_per_s": round(statistics.mean(with_), 1),
            "slowdown": round(1 - statistics.mean(with_) / statistics.mean(without), 4),
            "slowdown_median_pair": round(statistics.median(pairs), 4),
            "slowdown_per_pair": [round(x, 4) for x in pairs],
            # the scheduler's process' CPU seconds for the same pods bound: what the dry runs cost the
            # loop, whatever else the machine runs (the load generator's own work is counted in)
            "slowdown_cpu": round(1 - cpu_without / cpu_with, 4),
            # the loop thread's CPU time inside the dry runs, over the process' CPU time of those rounds
            "loop_share": round(loop_cpu / cpu_with, 4)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.dryrun", description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods", type=int, default=1000, help="pods running before the measures")
    p.add_argument("--latency", type=int, default=300, help="dry runs timed for the latency")
    p.add_argument("--rounds", type=int, default=4, help="pairs of rounds (without, with dry runs)")
    p.add_argument("--round-pods", type=int, default=10000, help="pods bound per round")
    p.add_argument("--rate", type=float, default=100.0, help="dry runs a second during the rounds with them")
    p.add_argument("--refresh", type=float, default=1.0, help="the worker's copy is at most this old (seconds)")
    p.add_argument("--load", choices=["http", "inproc"], default="http",
                   help="who sends the dry runs of the rounds: another process over HTTP to the endpoint served in "
                        "the scheduler's process (plain HTTP on loopback), or a task of the scheduler's process "
                        "calling the service directly (its own costs counted in)")
    p.add_argument("--path", choices=["service", "worker"], default="service",
                   help="the dry runs of the rounds: through the service (as the endpoint: one pod in the loop) "
                        "or all to the forked worker")
    args = p.parse_args(argv)
    w = Workload("SchedulingBasic", f"{args.nodes}Nodes", args.nodes, args.pods, 0)
    bench = Bench(w)
    setup = bench.setup()
    sys.stderr.write(f"setup: {setup}\n")
    latency = asyncio.run(measure_latency(bench, args.latency, args.refresh))
    sys.stderr.write(f"latency: {latency}\n")
    slowdown = asyncio.run(measure_slowdown(bench, args.rounds, args.round_pods, args.rate, args.refresh, args.path,
                                            args.load))
    result = {"benchmark": "dryrun", "path": args.path, "load": args.load, "nodes": args.nodes,
              "running_pods": args.pods,
              "refresh_s": args.refresh, "rate": args.rate, "latency": latency, "binding": slowdown, "setup": setup,
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
    print(f"binding: {slowdown['without_pods_per_s']} pods/s without, {slowdown['with_pods_per_s']} with "
          f"{args.rate:g} dry runs/s ({args.load}) through the {args.path}: slowdown {slowdown['slowdown']:.1%} "
          f"of the mean "
          f"(median of the pairs {slowdown['slowdown_median_pair']:.1%}, per pair {slowdown['slowdown_per_pair']}); "
          f"in CPU seconds of the scheduler's process {slowdown['slowdown_cpu']:.1%}; the dry runs' own share of "
          f"the loop's CPU {slowdown['loop_share']:.1%}")
    print(f"written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
