"""Run the scheduler_perf-style workloads and report throughput, latency and memory.

    python -m benchmarks.run                      # the default set (see workloads.DEFAULT)
    python -m benchmarks.run --quick              # small variants, under a minute
    python -m benchmarks.run -w SchedulingBasic/5000Nodes_10000Pods -w 'TopologySpreading*'
    python -m benchmarks.run -w SchedulingBasic/500Nodes --nodes 2000 --pods 5000
    python -m benchmarks.run --scale              # SchedulingBasic at 500..15000 nodes
    python -m benchmarks.run --rss                # 5000 nodes, 50000 pods: peak RSS
    python -m benchmarks.run --per-node           # without the vectorised filter/score path
    python -m benchmarks.run --profile cprofile   # profile the measured phase (or: pyinstrument)
    python -m benchmarks.run --e2e                # through the operator and the API emulator
    python -m benchmarks.run --churn 20           # 20 minutes of churn on a real API server: RSS, what is kept
    python -m benchmarks.run --fgd-table          # the FGD paper's table, 300 replays as one sweep (fgd_table.py)

In-process mode drives the real `Scheduler` (queue, cache, snapshot, framework, preemption,
binding cycle) with the in-memory cluster client `kubeberth simulate` uses, under a fake clock
(backoffs elapse instantly, as nothing else would happen meanwhile). Each workload runs in a
fresh interpreter, so that its peak RSS is its own.

Per workload: measured pods/s (measured pods / wall time from their creation to the last one
bound), pods per CPU second of the scheduler's process (/cpu-s: the figure to compare on a
machine others are loading), p50/p90/p99 of the scheduling-attempt latency (upstream's
scheduler_scheduling_attempt_duration_seconds: algorithm + binding, every attempt of the
measured phase), and the peak RSS. Results are written as JSON to benchmarks/results/.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kubeberth.framework.context import NoMetrics

from . import workloads as wl
from .record import RESULTS_DIR, ROOT, describe, git_commit, machine, peak_rss_mib, percentile

# What --e2e runs without -w (the 5000-node variants take minutes to set up: ask for them with -w).
E2E_DEFAULT = ("SchedulingBasic/500Nodes",)


# ---- in-process -------------------------------------------------------------------------------

class Recorder(NoMetrics):
    """The metrics the Scheduler reports, kept for the measured phase only."""

    def __init__(self) -> None:
        self.attempts: list[tuple[str, float]] = []
        self.recording = False

    def schedule_attempt(self, result: str, profile: str, seconds: float) -> None:
        if self.recording:
            self.attempts.append((result, seconds))

    def extension_point_duration(self, point: str, status: str, profile: str, seconds: float) -> None:
        pass


def _namespace(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {**(labels or {}), "kubernetes.io/metadata.name": name}}}


class _CountingClient:
    """The simulate InMemoryClient, counting the binds of the pods whose name has a prefix."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.prefix = ""
        self.target = 0
        self.bound = 0
        self.done: asyncio.Event | None = None

    def expect(self, prefix: str, target: int) -> asyncio.Event:
        self.prefix, self.target, self.bound = prefix, target, 0
        self.done = asyncio.Event()
        if target <= 0:
            self.done.set()
        return self.done

    async def bind(self, pod: Any, node_name: str) -> None:
        await self.inner.bind(pod, node_name)
        if self.prefix and pod.name.startswith(self.prefix):
            self.bound += 1
            if self.bound >= self.target and self.done is not None:
                self.done.set()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Bench:
    """One workload on one Scheduler.

    loop "operator" (default): the operator's `Scheduler.run()` under a real clock, as in
    production: backoffs take their real time and backoffQ is flushed every second, churn
    happens at upstream's intervals (200 ms / 1 s). loop "sim": simulate's `run_until_idle()`
    under a fake clock (no waiting, every run the same), churn every `Churn.every` cycles."""

    def __init__(self, w: wl.Workload, seed: int = 0, vectorise: bool = True, loop: str = "operator",
                 profile_spec: dict[str, Any] | None = None) -> None:
        from kubeberth import features
        from kubeberth.clock import FakeClock, RealClock
        from kubeberth.config import default_spec, parse_spec
        from kubeberth.plugins import plugin_registry
        from kubeberth.profile import build_framework
        from kubeberth.scheduler import Scheduler
        from kubeberth.testing import InMemoryClient

        self.w = w
        self.loop = loop
        # the workload's feature gates (GenericWorkload for the pod-group cases), process-wide
        # as kube-scheduler's: set before the scheduler and its plugins are built, kept after;
        # a workload without gates runs with v1.37's defaults
        self.gates = features.FeatureGates.parse(w.feature_gates or None)
        features.set_current(self.gates)
        self.recorder = Recorder()
        clock = RealClock() if loop == "operator" else FakeClock()
        self.sched = Scheduler(clock=clock, seed=seed, metrics=self.recorder)
        self.client = _CountingClient(InMemoryClient(self.sched))
        self.sched.ctx.client = self.client
        spec = parse_spec(profile_spec) if profile_spec is not None else default_spec()
        self.fw = build_framework(spec, plugin_registry(), self.sched.ctx)
        if hasattr(self.fw, "vectorise"):
            self.fw.vectorise = vectorise
        self.sched.set_profile(self.fw)
        self._churn_round = 0
        self._churn_live: list[tuple[str, Any]] = []

    # -- setup --
    def setup(self) -> dict[str, float]:
        w, sched = self.w, self.sched
        t0 = time.perf_counter()
        for ns in w.all_namespaces():
            sched.on_object("Namespace", _namespace(ns, dict(w.namespace_labels)))
        for obj in w.node_objects():
            sched.on_node_add(obj)
        for obj in w.pod_group_objects():
            sched.on_object("PodGroup", obj)
        t1 = time.perf_counter()
        for i in range(w.init_pods):
            sched.on_pod_add(w.init_template(f"init-{i:06d}", w.init_namespace_of(i)))
        asyncio.run(sched.run_until_idle())
        t2 = time.perf_counter()
        return {"nodes_s": t1 - t0, "init_pods_s": t2 - t1,
                "init_scheduled": float(self._count_scheduled("init-"))}

    def _count_scheduled(self, prefix: str) -> int:
        from kubeberth.scheduler import SCHEDULED

        return sum(1 for k, r in self.sched.outcomes.items()
                   if r.status == SCHEDULED and k.split("/", 1)[1].startswith(prefix))

    # -- churn --
    def _churn(self) -> None:
        c = self.w.churn
        assert c is not None
        sched = self.sched
        self._churn_round += 1
        r = self._churn_round
        if c.mode == "recreate":
            for kind, key in self._churn_live:
                if kind == "Node":
                    sched.on_node_delete(key)
                elif kind == "Pod":
                    sched.on_pod_delete(key)
                else:
                    sched.on_object_delete(kind, key)
            self._churn_live = []
            if c.nodes:
                name = f"node-churn-{r:05d}"
                sched.on_node_add(wl.node_churn(name))
                self._churn_live.append(("Node", name))
            for tmpl in c.pods:
                sched.on_pod_add(tmpl(f"churn-{r:05d}", "default"))
                self._churn_live.append(("Pod", f"default/churn-{r:05d}"))
            if c.services:
                sched.on_object("Service", wl.service_churn(f"service-churn-{r:05d}"))
                self._churn_live.append(("Service", f"default/service-churn-{r:05d}"))
        else:
            for tmpl in c.pods:
                sched.on_pod_add(tmpl(f"churn-{r:05d}", "default"))

    async def _churn_every(self, seconds: float) -> None:
        while True:
            await asyncio.sleep(seconds)
            self._churn()

    # -- measured phase --
    def _create_measured(self) -> None:
        w, sched = self.w, self.sched
        for i in range(w.measure_pods):
            sched.on_pod_add(w.measured_pod(i))

    async def _measure_operator(self, timeout: float) -> int:
        sched = self.sched
        done = self.client.expect("pod-", self.w.measure_pods)
        self._create_measured()
        runner = asyncio.get_running_loop().create_task(sched.run())
        churn = None
        if self.w.churn is not None:
            churn = asyncio.get_running_loop().create_task(self._churn_every(self.w.churn.interval_s))
        try:
            await asyncio.wait_for(done.wait(), timeout)
        except TimeoutError:
            sys.stderr.write(f"{self.w.id}: timed out after {timeout:.0f}s\n")
        finally:
            if churn is not None:
                churn.cancel()
            sched.stop()
            await runner
        return sched.queue.scheduling_cycle

    async def _measure_sim(self) -> int:
        sched = self.sched
        self._create_measured()
        cycles = 0
        if self.w.churn is None:
            return await sched.run_until_idle()
        while True:
            n = await sched.run_until_idle(max_cycles=self.w.churn.every)
            cycles += n
            if n < self.w.churn.every:
                return cycles
            self._churn()

    def measure(self, profiler: str | None = None, profile_out: Path | None = None) -> dict[str, Any]:
        from kubeberth.scheduler import SCHEDULED

        gc.collect()
        cycles_before = self.sched.queue.scheduling_cycle
        self.recorder.recording = True
        prof: Any = None
        if profiler == "cprofile":
            import cProfile

            prof = cProfile.Profile()
            prof.enable()
        elif profiler == "pyinstrument":
            from pyinstrument import Profiler

            prof = Profiler(interval=0.0005)
            prof.start()
        t0, c0 = time.perf_counter(), time.process_time()
        if self.loop == "operator":
            timeout = max(120.0, self.w.measure_pods / 20.0)
            asyncio.run(self._measure_operator(timeout))
        else:
            asyncio.run(self._measure_sim())
        elapsed = time.perf_counter() - t0
        cpu = time.process_time() - c0
        if prof is not None and profile_out is not None:
            profile_out.parent.mkdir(parents=True, exist_ok=True)
            if profiler == "cprofile":
                import pstats

                prof.disable()
                prof.dump_stats(str(profile_out.with_suffix(".prof")))
                with profile_out.with_suffix(".txt").open("w") as f:
                    pstats.Stats(prof, stream=f).sort_stats("cumulative").print_stats(60)
                    pstats.Stats(prof, stream=f).sort_stats("tottime").print_stats(60)
            else:
                prof.stop()
                profile_out.with_suffix(".txt").write_text(prof.output_text(unicode=False, color=False))
                profile_out.with_suffix(".html").write_text(prof.output_html())
        self.recorder.recording = False
        scheduled = sum(1 for k, r in self.sched.outcomes.items()
                        if r.status == SCHEDULED and k.split("/", 1)[1].startswith("pod-"))
        lat = sorted(s for _, s in self.recorder.attempts)
        results: dict[str, int] = {}
        for res, _ in self.recorder.attempts:
            results[res] = results.get(res, 0) + 1
        return {
            "scheduled": scheduled,
            "elapsed_s": round(elapsed, 3),
            "pods_per_s": round(scheduled / elapsed, 1) if elapsed > 0 else 0.0,
            # CPU seconds of this process: on a shared (loaded) machine, pods per CPU second
            # tells what pods/s the wall clock would show on an idle one.
            "cpu_s": round(cpu, 3),
            "pods_per_cpu_s": round(scheduled / cpu, 1) if cpu > 0 else 0.0,
            "cycles": self.sched.queue.scheduling_cycle - cycles_before,
            "attempts": results,
            "latency_ms": {f"p{q}": round(percentile(lat, q) * 1000, 3) for q in (50, 90, 99)},
            "churn_rounds": self._churn_round,
            "loop": self.loop,
        }


def load_profile_spec(path: str | None) -> dict[str, Any] | None:
    """--scheduling-profile: a SchedulingProfile (or its bare spec) for default-scheduler."""
    if path is None:
        return None
    import yaml

    doc = yaml.safe_load(Path(path).read_text())
    spec = dict(doc.get("spec", doc) if doc.get("kind") == "SchedulingProfile" else doc)
    spec["schedulerName"] = "default-scheduler"  # the workloads' pods
    return spec


def run_workload(w: wl.Workload, *, seed: int = 0, vectorise: bool = True, profiler: str | None = None,
                 profile_out: Path | None = None, loop: str = "operator",
                 profile_spec: dict[str, Any] | None = None) -> dict[str, Any]:
    b = Bench(w, seed=seed, vectorise=vectorise, loop=loop, profile_spec=profile_spec)
    setup = b.setup()
    m = b.measure(profiler, profile_out)
    out = describe(w)
    out.update(m)
    out["setup_s"] = {k: round(v, 3) for k, v in setup.items() if k.endswith("_s")}
    out["init_scheduled"] = int(setup["init_scheduled"])
    out["peak_rss_mib"] = round(peak_rss_mib(), 1)
    out["vectorised"] = vectorise
    out["mode"] = "in-process"
    if profile_spec is not None:
        out["profile"] = profile_spec
    return out


# ---- driver -----------------------------------------------------------------------------------

def _child_args(w: wl.Workload, args: argparse.Namespace) -> list[str]:
    base = wl.find(w.id) if "custom" not in w.tags else None
    out = [sys.executable, "-m", "benchmarks.run", "--child", w.id, "--seed", str(args.seed)]
    if base is None:
        # A resized workload: name the original and the sizes.
        # (a pod-group workload: one with its group size, which a resize keeps)
        original = next(x for x in [*wl.WORKLOADS, *wl.scale_workloads()]
                        if x.name == w.name and x.pods_per_group == w.pods_per_group)
        out = [sys.executable, "-m", "benchmarks.run", "--child", original.id, "--seed", str(args.seed),
               "--nodes", str(w.nodes), "--init", str(w.init_pods), "--pods", str(w.measure_pods)]
    if args.per_node:
        out.append("--per-node")
    out += ["--loop", args.loop]
    if args.profile:
        out += ["--profile", args.profile]
    for source in args.plugins or []:
        out += ["--plugins", source]
    if args.scheduling_profile:
        out += ["--scheduling-profile", args.scheduling_profile]
    return out


def _run_child(w: wl.Workload, args: argparse.Namespace) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), env.get("PYTHONPATH", "")] if p)
    proc = subprocess.run(_child_args(w, args), cwd=ROOT, env=env, capture_output=True, text=True)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])  # type: ignore[no-any-return]
    sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
    out = describe(w)
    out["error"] = f"exit {proc.returncode}"
    return out


def _profile_path(w: wl.Workload, profiler: str) -> Path:
    safe = w.id.replace("/", "_")
    return RESULTS_DIR / "profiles" / f"{safe}-{profiler}"


def _status(r: dict[str, Any]) -> str:
    if r.get("error"):
        return "ERROR"
    if r.get("scheduled", 0) < r.get("measure_pods", 0):
        return "INCOMPLETE"
    notes = []
    if r.get("target"):
        notes.append("met" if r["pods_per_s"] >= r["target"] else f"MISSED by {r['target'] - r['pods_per_s']:.0f}")
    if r.get("rss_target_mib"):
        ok = r["peak_rss_mib"] <= r["rss_target_mib"]
        notes.append("rss ok" if ok else f"RSS over by {r['peak_rss_mib'] - r['rss_target_mib']:.0f} MiB")
    return ", ".join(notes)


def print_table(results: list[dict[str, Any]], out: Any = sys.stdout) -> None:
    header = (f"{'workload':<50} {'pods/s':>8} {'/cpu-s':>8} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'RSS MiB':>8} "
              f"{'target':>7} {'upstr.':>7}  status")
    out.write(header + "\n" + "-" * len(header) + "\n")
    for r in results:
        lat = r.get("latency_ms", {})
        out.write(f"{r['workload']:<50} {r.get('pods_per_s', 0):>8.1f} {r.get('pods_per_cpu_s', 0):>8.1f} "
                  f"{lat.get('p50', 0):>8.2f} "
                  f"{lat.get('p90', 0):>8.2f} {lat.get('p99', 0):>8.2f} {r.get('peak_rss_mib', 0):>8.0f} "
                  f"{r.get('target') or '':>7} {r.get('threshold') or '':>7}  {_status(r)}\n")
    out.flush()


def _write(results: list[dict[str, Any]], args: argparse.Namespace, mode: str) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    doc = {"timestamp": stamp, "commit": git_commit(), "machine": machine(), "mode": mode,
           "seed": args.seed, "vectorised": not args.per_node, "results": results}
    path = RESULTS_DIR / f"{stamp}-{mode}.json"
    path.write_text(json.dumps(doc, indent=2) + "\n")
    (RESULTS_DIR / f"latest-{mode}.json").write_text(json.dumps(doc, indent=2) + "\n")
    return path


def _selected(args: argparse.Namespace) -> list[wl.Workload]:
    chosen: list[wl.Workload] = []
    if args.workload:
        chosen = wl.select(args.workload)
        if not chosen:
            raise SystemExit(f"no workload matches {args.workload}; try --list")
    if args.quick:
        chosen += wl.select([wl.QUICK])
    if args.rss:
        chosen += wl.select([wl.RSS])
    if args.all:
        chosen += list(wl.WORKLOADS)
    if args.scale:
        chosen += wl.scale_workloads(measure_pods=args.pods or wl.SCALE_MEASURE_PODS)
    if not chosen:
        chosen = wl.select([wl.DEFAULT])
    seen: set[str] = set()
    out = []
    for w in chosen:
        if w.id in seen:
            continue
        seen.add(w.id)
        if not args.scale or "scale" not in w.tags:
            w = w.resized(nodes=args.nodes, init_pods=args.init, measure_pods=args.pods)
        out.append(w)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--fgd-table"]:  # the FGD paper's table as one sweep: its own options follow
        from . import fgd_table

        return fgd_table.main(argv[1:])
    p = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-w", "--workload", action="append", default=[],
                   help="workload id, name or tag (glob; repeatable), e.g. 'SchedulingBasic/500Nodes'")
    p.add_argument("--quick", action="store_true", help="the small (500-node) variants")
    p.add_argument("--all", action="store_true", help="every variant")
    p.add_argument("--rss", action="store_true", help="the 5000-node / 50000-pod memory run")
    p.add_argument("--scale", action="store_true", help="SchedulingBasic at 500, 1000, 2000, 5000, 15000 nodes")
    p.add_argument("--nodes", type=int, help="override the number of nodes")
    p.add_argument("--init", type=int, help="override the number of init pods")
    p.add_argument("--pods", type=int, help="override the number of measured pods")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=1,
                   help="run each workload N times and report the median run (--peer: N rounds of the "
                        "schedulers in turn, the median run of each)")
    p.add_argument("--per-node", action="store_true", help="disable the vectorised filter/score path")
    p.add_argument("--loop", choices=["operator", "sim"], default="operator",
                   help="operator: Scheduler.run() in real time (default); sim: simulate's loop, fake clock")
    p.add_argument("--profile", choices=["cprofile", "pyinstrument"],
                   help="profile the measured phase; writes benchmarks/results/profiles/")
    p.add_argument("--plugins", action="append", default=None, metavar="PATH_OR_MODULE",
                   help="plugins of your own, as kubeberth's --plugins (repeatable)")
    p.add_argument("--scheduling-profile", dest="scheduling_profile", metavar="FILE",
                   help="a SchedulingProfile (or its spec) to schedule the workloads with instead of the default "
                        "profile, e.g. benchmarks/plugins/prefer-label.yaml")
    p.add_argument("--same-process", action="store_true", help="run every workload in this process")
    p.add_argument("--e2e", action="store_true", help="through the operator and the API emulator (loopback)")
    p.add_argument("--peer", choices=["kube-scheduler"], default=None,
                   help="with --e2e: on a real kube-apiserver (make control-plane), once with upstream "
                        "kube-scheduler, once with kubeberth and once with the null binder (the API server's "
                        "ceiling), side by side; -w also finds the DRA workloads (benchmarks/dra.py; 'dra': all)")
    p.add_argument("--schedulers", default="kube-scheduler,kubeberth,nullbinder", metavar="A,B,...",
                   help="with --e2e --peer: which to run, in this order in each round (default: all three)")
    p.add_argument("--sync", metavar="NODES:PODS", action="append", default=[],
                   help="with --e2e --peer: start-up on a cluster of NODES nodes and PODS bound pods "
                        "(the time until a pod created at start is bound), e.g. 5000:5000")
    p.add_argument("--takeover", metavar="NODES:PODS", action="append", default=[],
                   help="with --e2e --peer: two replicas with leader election on NODES nodes and PODS bound "
                        "pods; the leader is killed (SIGKILL): the time until the standby binds, e.g. 5000:5000")
    p.add_argument("--churn", type=float, metavar="MINUTES",
                   help="a long run on a real API server (make control-plane): pods created and deleted, nodes "
                        "added and removed, the SchedulingProfile edited for MINUTES; kubeberth's RSS (start, "
                        "10 min, end, slope over the last half) and kubeberth_retained_objects (benchmarks/churn.py)")
    p.add_argument("--churn-rate", type=float, default=5.0, metavar="PODS_PER_S",
                   help="with --churn: pods created per second (each deleted 20 s after its creation)")
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    p.add_argument("--no-write", action="store_true", help="do not write JSON results")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.plugins:
        from kubeberth.plugins import use_plugins

        for failure in use_plugins(args.plugins).failures:
            sys.stderr.write(f"plugin unavailable: {failure}\n")
    profile_spec = load_profile_spec(args.scheduling_profile)

    if args.list:
        for w in [*wl.WORKLOADS, *wl.scale_workloads()]:
            print(f"{w.id:<50} nodes={w.nodes:<6} init={w.init_pods:<6} measured={w.measure_pods:<6} "
                  f"tags={','.join(w.tags)}")
        from .dra import WORKLOADS as DRA_WORKLOADS

        for d in DRA_WORKLOADS:  # through the API with --e2e --peer; in-process: python -m benchmarks.dra
            print(f"{d.id:<50} nodes={d.nodes_with_dra + d.nodes_without_dra:<6} init={0:<6} "
                  f"measured={d.measure_pods:<6} tags=dra (init claims: {d.init_claims})")
        return 0

    if args.child:
        w = wl.find(args.child).resized(nodes=args.nodes, init_pods=args.init, measure_pods=args.pods)
        prof_out = _profile_path(w, args.profile) if args.profile else None
        r = run_workload(w, seed=args.seed, vectorise=not args.per_node, profiler=args.profile,
                         profile_out=prof_out, loop=args.loop, profile_spec=profile_spec)
        print("RESULT " + json.dumps(r))
        return 0

    if args.churn is not None:
        from . import churn

        sys.stderr.write(f"churn for {args.churn:g} minutes at {args.churn_rate:g} pods/s on a real API server...\n")
        return churn.report(asyncio.run(churn.run(args.churn, rate=args.churn_rate)), write=not args.no_write)

    if args.e2e and args.peer and (args.sync or args.takeover):
        from . import peer

        m = machine()
        print(f"kubeberth bench (real control plane): {m['cpu']}, {m['nproc']} cpu, Python {m['python']}\n")
        runs = [("sync", spec, "start-up", peer.run_sync, peer.print_sync_table) for spec in args.sync]
        runs += [("takeover", spec, "takeover", peer.run_takeover, peer.print_takeover_table)
                 for spec in args.takeover]
        for mode, spec, what, run, show in runs:
            nodes, pods = (int(x) for x in spec.split(":"))
            sys.stderr.write(f"{what} with {nodes} nodes and {pods} bound pods: {args.peer}, then kubeberth...\n")
            results = [run(nodes, pods, (args.peer, "kubeberth"))]
            show(results)
            if not args.no_write:
                print(f"\nwrote {_write(results, args, f'e2e-real-{mode}')}")
        return 0

    if args.e2e and not (args.workload or args.quick or args.all or args.rss or args.scale):
        args.workload = list(E2E_DEFAULT)
    if args.e2e and args.peer:
        from .peer import PEERS, print_peer_table, run_peers
        from .peer_cases import select as select_cases

        # Every family's workloads: scheduler_perf's (workloads.py) and the DRA ones (dra.py).
        patterns = list(args.workload) + [wl.QUICK] * args.quick + [wl.RSS] * args.rss + ["*"] * args.all
        cases = select_cases(patterns, nodes=args.nodes, init=args.init, pods=args.pods)
        if not cases:
            raise SystemExit(f"no workload matches {patterns}; try --list")
        peers = tuple(args.schedulers.split(","))
        unknown = set(peers) - set(PEERS)
        if unknown or not peers:
            raise SystemExit(f"--schedulers: {', '.join(sorted(unknown)) or 'none given'}; known: {', '.join(PEERS)}")
        if args.profile not in (None, "cprofile"):
            raise SystemExit("--e2e --peer profiles kubeberth's process with --profile cprofile only")
        profile_dir = RESULTS_DIR / "profiles" if args.profile else None
        m = machine()
        print(f"kubeberth bench (real control plane): {m['cpu']}, {m['nproc']} cpu, Python {m['python']}\n")
        results = []
        for case in cases:
            sys.stderr.write(f"running {case.id} on a real API server with {', '.join(peers)} in turn "
                             f"({max(1, args.repeat)} round(s); {case.nodes} nodes, {case.init_pods} init, "
                             f"{case.measure_pods} measured)...\n")
            results.append(run_peers(case, peers, repeat=args.repeat, profile_dir=profile_dir))
        print_peer_table(results)
        for r in results:
            for peer, p in r["peers"].items():
                if p.get("error"):
                    print(f"\n{r['workload']} {peer}: {p['error']}")
        if not args.no_write:
            print(f"\nwrote {_write(results, args, 'e2e-real')}")
        return 0
    selected = _selected(args)
    if args.e2e:
        from .e2e import describe_time, run_e2e

        results = []
        for w in selected:
            sys.stderr.write(f"running {w.id} end to end ({w.nodes} nodes, {w.init_pods} init, "
                             f"{w.measure_pods} measured)...\n")
            results.append(run_e2e(w, seed=args.seed))
        print_table(results)
        for r in results:
            if r.get("error"):
                print(f"\n{r['workload']}: {r['error']}")
            else:
                print("\n" + describe_time(r))
        if not args.no_write:
            print(f"\nwrote {_write(results, args, 'e2e')}")
        return 0

    m = machine()
    print(f"kubeberth bench: {m['cpu']}, {m['nproc']} cpu, Python {m['python']}, numpy {m['numpy']}; "
          f"{'per-node' if args.per_node else 'vectorised'} path, seed {args.seed}"
          + (f"; profile {args.scheduling_profile}, plugins {', '.join(args.plugins or [])}"
             if args.scheduling_profile else "") + "\n")
    results = []
    for w in selected:
        sys.stderr.write(f"running {w.id} ({w.nodes} nodes, {w.init_pods} init, {w.measure_pods} measured)...\n")
        runs = []
        for _ in range(max(1, args.repeat)):
            if args.same_process:
                prof_out = _profile_path(w, args.profile) if args.profile else None
                runs.append(run_workload(w, seed=args.seed, vectorise=not args.per_node, profiler=args.profile,
                                         profile_out=prof_out, loop=args.loop, profile_spec=profile_spec))
            else:
                runs.append(_run_child(w, args))
        ok = [r for r in runs if not r.get("error")] or runs
        r = sorted(ok, key=lambda x: x.get("pods_per_s", 0.0))[len(ok) // 2]  # the median run
        if len(runs) > 1:
            r["runs_pods_per_s"] = [x.get("pods_per_s", 0.0) for x in runs]
            r["peak_rss_mib"] = max(x.get("peak_rss_mib", 0.0) for x in runs)
        results.append(r)
    print_table(results)
    if args.profile:
        print(f"\nprofiles in {RESULTS_DIR / 'profiles'}")
    if not args.no_write:
        print(f"\nwrote {_write(results, args, 'in-process')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
