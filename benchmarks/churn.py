"""A long run keeps its size: kubeberth under churn on a real API server, its RSS and what it keeps.

    python -m benchmarks.run --churn 20            # 20 minutes of churn (make bench ARGS="--churn 20")
    python -m benchmarks.churn --minutes 2 --rate 5

A fresh etcd + kube-apiserver (tests/cluster/control_plane.py), kubeberth's CRDs, `NODES` nodes of
4 CPUs and `kubeberth run` as its own process. Then, for the given minutes: pods are created at
`rate` per second (one CPU each; one in five of a higher PriorityClass, which preempts when the
nodes are full; one in ten asking for more than any node has, unschedulable; one in twenty
annotated kubeberth.io/explain) and each is deleted
`lifetime` seconds after its creation; every minute a node is added and the oldest churned one
deleted; every two minutes the SchedulingProfile of default-scheduler is edited (its
NodeResourcesFit scoring strategy switched). With the example Coscheduling plugin installed (make
install), the profile enables it and a gang (a PodGroup of minMember 2 and its two pods) comes every
10 seconds, deleted after the same lifetime. Once the churn stops every pod is deleted and the
scheduler given `settle` seconds.

Measured: the scheduler process' RSS (VmRSS) every `sample` seconds; the RSS at the start (after a
warm-up minute of churn), after 10 minutes, at the end; the slope over the last half of the run
(least squares, MiB/hour); `kubeberth_retained_objects` (retained.py: the cache, the queue, the
nominator, the explanation and event state, the status writer, the plugins' containers, ...) and
the number of metric series on /metrics at the start, after the churn, and at the end. Written
to benchmarks/results/<stamp>-churn.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families
from tests.cluster.control_plane import ADMIN_TOKEN, ROOT, ControlPlane, Process, free_port, kubectl
from tests.cluster.kube import Kube, as_created, node, pod

RETAINED = "kubeberth_retained_objects"
HIGH_PRIORITY = "churn-high"
PROFILE = "churn-default"
# What must be back to its baseline once every churned pod is deleted: everything kept per pod.
PER_POD = ("cache.pods", "cache.assumed_pods", "scheduler.pending", "scheduler.records", "scheduler.uids",
           "scheduler.arrival_order", "scheduler.given_up", "scheduler.waiting_for_priority_class",
           "scheduler.reported_errors", "scheduler.binding_tasks", "queue.active", "queue.backoff",
           "queue.unschedulable", "queue.gated", "queue.in_flight_pods", "queue.in_flight_events",
           "nominator.pods", "nominator.nodes", "framework.waiting_pods", "framework.pods_in_pre_bind",
           "framework.preemption_tasks", "event_recorder.queued", "event_recorder.chains",
           "status_writer.pending", "status_writer.in_flight", "status_writer.returned", "status_writer.binding",
           "api_client.bound", "explain_publisher.last", "shadow.decisions", "shadow.pending")
# Kept for a while by design, then dropped: the Event series cache (client-go's: an entry goes once
# quiet for 6 minutes) and the per-object rate-limit buckets (once refilled, 5 minutes a token).
TIMED = ("event_recorder.series_cache", "event_recorder.rate_buckets")


def rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def slope_mib_per_hour(samples: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, MiB), in MiB per hour."""
    n = len(samples)
    if n < 2:
        return 0.0
    mx = sum(t for t, _ in samples) / n
    my = sum(v for _, v in samples) / n
    sxx = sum((t - mx) ** 2 for t, _ in samples)
    if sxx == 0:
        return 0.0
    sxy = sum((t - mx) * (v - my) for t, v in samples)
    return sxy / sxx * 3600.0


def parse_metrics(text: str) -> tuple[dict[str, int], int]:
    """(kubeberth_retained_objects by structure, the number of series on /metrics)."""
    retained, families = parse_families(text)
    return retained, sum(families.values())


def parse_families(text: str) -> tuple[dict[str, int], dict[str, int]]:
    """(kubeberth_retained_objects by structure, the number of series of each family)."""
    retained: dict[str, int] = {}
    families: dict[str, int] = {}
    for family in text_string_to_metric_families(text):
        families[family.name] = len(family.samples)
        for sample in family.samples:
            if sample.name == RETAINED:
                retained[sample.labels["structure"]] = int(sample.value)
    return retained, families


@dataclass
class Snapshot:
    at_s: float
    rss_mib: float | None
    retained: dict[str, int]
    families: dict[str, int]

    @property
    def series(self) -> int:
        return sum(self.families.values())

    def to_dict(self) -> dict[str, Any]:
        return {"at_s": round(self.at_s, 1), "rss_mib": round(self.rss_mib or 0.0, 1), "series": self.series,
                "retained": self.retained, "series_by_family": self.families}


COSCHEDULING = ROOT / "examples" / "plugins" / "coscheduling"
GANGS = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups"
GANG_LABEL = "scheduling.x-k8s.io/pod-group"


def coscheduling_installed() -> bool:
    """Whether kubeberth loads the example Coscheduling plugin (make install installs it)."""
    import importlib.util

    return importlib.util.find_spec("kubeberth_coscheduling") is not None


def scheduling_profile(strategy: str, gangs: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "default-scheduler",
                            "pluginConfig": [{"name": "NodeResourcesFit",
                                              "args": {"scoringStrategy": {"type": strategy}}}]}
    if gangs:  # scheduler-plugins' Coscheduling, as its README enables it
        spec["plugins"] = {"multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                           "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}}
        spec["pluginConfig"].append({"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 10}})
    return {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": PROFILE},
            "spec": spec}


@dataclass
class Churn:
    """Drives the churn on `kube`; counts what it did."""

    kube: Kube
    rate: float = 5.0
    lifetime: float = 20.0
    nodes: int = 20
    node_every: float = 60.0
    profile_every: float = 120.0
    gangs: bool = False  # also a gang (a Coscheduling PodGroup of 2 pods) every `gang_every` seconds
    gang_every: float = 10.0
    gangs_created: int = 0
    created: int = 0
    deleted: int = 0
    nodes_added: int = 0
    nodes_deleted: int = 0
    profile_edits: int = 0
    errors: int = 0
    _next_node: float | None = None
    _next_profile: float | None = None
    _next_gang: float | None = None
    _live_gangs: list[tuple[float, str]] = field(default_factory=list)
    _live: list[tuple[float, str]] = field(default_factory=list)
    _churn_nodes: list[str] = field(default_factory=list)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def setup(self) -> None:
        await self.kube.create("priorityclasses", {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                                   "metadata": {"name": HIGH_PRIORITY}, "value": 1000})
        await asyncio.gather(*(self.kube.create("nodes", node(f"churn-base-{i:03d}")) for i in range(self.nodes)))
        await self.kube.create("schedulingprofiles", scheduling_profile("LeastAllocated", self.gangs))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(self._guard(coro))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _guard(self, coro: Any) -> None:
        try:
            await coro
        except Exception as exc:  # counted; the churn goes on
            self.errors += 1
            if self.errors <= 5:
                sys.stderr.write(f"churn: {exc}\n")

    def _pod(self, i: int) -> dict[str, Any]:
        name = f"churn-{i:07d}"
        if i % 10 == 9:
            return as_created(pod(name, cpu="64"))  # no node has 64 CPUs: unschedulable
        if i % 5 == 4:
            return as_created(pod(name, cpu="1", priority_class=HIGH_PRIORITY))
        body = as_created(pod(name, cpu="1"))
        if i % 20 == 7:  # explained: its attempts published as an annotation and an Event
            body["metadata"]["annotations"] = {"kubeberth.io/explain": "true"}
        return body

    async def run(self, seconds: float) -> None:
        started = time.monotonic()
        if self._next_node is None or self._next_profile is None or self._next_gang is None:
            self._next_node, self._next_profile = started + self.node_every, started + self.profile_every
            self._next_gang = started
        i = self.created
        while (now := time.monotonic()) < started + seconds:
            target = i + int((now - started) * self.rate)
            while self.created < target:
                body = self._pod(self.created)
                self._live.append((now, body["metadata"]["name"]))
                self._spawn(self.kube.create("pods", body))
                self.created += 1
            while self._live and self._live[0][0] <= now - self.lifetime:
                _, name = self._live.pop(0)
                self._spawn(self.kube.delete("pods", name, "default", grace_period=0))
                self.deleted += 1
            if now >= self._next_node:
                self._next_node += self.node_every
                name = f"churn-node-{self.nodes_added:05d}"
                self._spawn(self.kube.create("nodes", node(name)))
                self.nodes_added += 1
                self._churn_nodes.append(name)
                if len(self._churn_nodes) > 2:
                    self._spawn(self.kube.delete("nodes", self._churn_nodes.pop(0)))
                    self.nodes_deleted += 1
            if now >= self._next_profile:
                self._next_profile += self.profile_every
                self.profile_edits += 1
                strategy = "MostAllocated" if self.profile_edits % 2 else "LeastAllocated"
                self._spawn(self.kube.patch("schedulingprofiles", PROFILE,
                                            {"spec": scheduling_profile(strategy, self.gangs)["spec"]}))
            if self.gangs:
                self._gang(now)
            await asyncio.sleep(0.05)

    def _gang(self, now: float) -> None:
        assert self._next_gang is not None
        if now >= self._next_gang:
            self._next_gang += self.gang_every
            name = f"churn-gang-{self.gangs_created:05d}"
            self.gangs_created += 1
            self._live_gangs.append((now, name))
            self._spawn(self._create_gang(name))
        while self._live_gangs and self._live_gangs[0][0] <= now - self.lifetime:
            _, name = self._live_gangs.pop(0)
            self._spawn(self._delete_gang(name))

    async def _create_gang(self, name: str) -> None:
        group = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                 "metadata": {"name": name, "namespace": "default"}, "spec": {"minMember": 2}}
        await self.kube.request("POST", GANGS, body=group)
        for i in range(2):
            await self.kube.create("pods", as_created(pod(f"{name}-{i}", cpu="500m", labels={GANG_LABEL: name})))

    async def _delete_gang(self, name: str) -> None:
        for i in range(2):
            await self.kube.delete("pods", f"{name}-{i}", "default", grace_period=0)
        await self.kube.request("DELETE", f"{GANGS}/{name}", ok=(200, 202, 404))

    async def drain(self) -> None:
        """Every churned pod and node deleted (the base nodes and the profile stay)."""
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        await self.kube.delete_all("pods", "default", grace_period=0)
        self.deleted += len(self._live)
        self._live.clear()
        for _, name in self._live_gangs:
            await self._delete_gang(name)
        self._live_gangs.clear()
        for name in self._churn_nodes:
            await self.kube.delete("nodes", name)
            self.nodes_deleted += 1
        self._churn_nodes.clear()

    def summary(self) -> dict[str, int]:
        return {"pods_created": self.created, "pods_deleted": self.deleted, "nodes_added": self.nodes_added,
                "nodes_deleted": self.nodes_deleted, "profile_edits": self.profile_edits,
                "gangs_created": self.gangs_created, "errors": self.errors}


class Kubeberth:
    """`kubeberth run` on the control plane (as admin), /metrics on plain HTTP on loopback."""

    def __init__(self, plane: ControlPlane, gangs: bool = False) -> None:
        self.metrics_port = free_port()
        self.health_port = free_port()
        exe = next((e for e in (ROOT / ".venv" / "bin" / "kubeberth", Path(sys.executable).parent / "kubeberth")
                    if e.exists()), None)
        argv = [str(exe)] if exe is not None else [sys.executable, "-m", "kubeberth.cli"]
        argv += ["run", f"--kubeconfig={plane.admin_kubeconfig}", f"--metrics-port={self.metrics_port}",
                 "--metrics-host=127.0.0.1", "--metrics-insecure", "--seed=0",
                 f"--liveness=http://127.0.0.1:{self.health_port}/healthz"]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        if gangs:  # this checkout's Coscheduling first
            env["PYTHONPATH"] = os.pathsep.join(p for p in (str(COSCHEDULING), env.get("PYTHONPATH", "")) if p)
        self.process = Process.start("kubeberth-churn", argv, plane.dir, env=env)

    @property
    def pid(self) -> int:
        return self.process.popen.pid

    def metrics_text(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10) as resp:
            return str(resp.read().decode())

    def synced(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/healthz", timeout=2) as resp:
                return b'"synced": true' in resp.read().replace(b'"synced":true', b'"synced": true')
        except OSError:
            return False

    async def wait_synced(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.process.alive():
                raise RuntimeError(f"kubeberth run exited:\n{self.process.tail(40)}")
            if self.synced():
                return
            await asyncio.sleep(0.2)
        raise RuntimeError(f"kubeberth run did not sync within {timeout:.0f}s:\n{self.process.tail(40)}")

    def snapshot(self, at: float) -> Snapshot:
        retained, families = parse_families(self.metrics_text())
        return Snapshot(at, rss_mib(self.pid), retained, families)


def per_pod_excess(base: Mapping[str, int], end: Mapping[str, int]) -> dict[str, tuple[int, int]]:
    """The per-pod structures above their baseline at the end: structure -> (baseline, end)."""
    return {k: (base.get(k, 0), end[k]) for k in PER_POD if k in end and end[k] > base.get(k, 0)}


async def run(minutes: float, *, rate: float = 5.0, lifetime: float = 20.0, nodes: int = 20,
              sample: float = 10.0, warmup: float = 60.0, settle: float = 30.0, gangs: bool | None = None,
              log: Any = sys.stderr) -> dict[str, Any]:
    from .record import git_commit, machine

    seconds = minutes * 60.0
    if gangs is None:
        gangs = coscheduling_installed()
    with ControlPlane() as plane:
        kubectl(plane, "apply", "-f", str(ROOT / "crds"))
        kubectl(plane, "wait", "--for", "condition=established", "--timeout=60s",
                "crd/schedulingprofiles.kubeberth.io")
        if gangs:
            kubectl(plane, "apply", "-f", str(COSCHEDULING / "crds"))
            kubectl(plane, "wait", "--for", "condition=established", "--timeout=60s", "-f",
                    str(COSCHEDULING / "crds"))
        async with Kube(plane.url, ADMIN_TOKEN, plane.ssl_context(), connections=20) as kube:
            churn = Churn(kube, rate=rate, lifetime=lifetime, nodes=nodes, gangs=gangs)
            await churn.setup()
            sched = Kubeberth(plane, gangs)
            try:
                await sched.wait_synced()
                await churn.run(warmup)
                t0 = time.monotonic()
                start = sched.snapshot(0.0)
                log.write(f"churn: start RSS {start.rss_mib:.1f} MiB, {start.series} series\n")
                samples: list[tuple[float, float]] = [(0.0, start.rss_mib or 0.0)]
                at_10: Snapshot | None = None
                while (elapsed := time.monotonic() - t0) < seconds:
                    await churn.run(min(sample, seconds - elapsed))
                    elapsed = time.monotonic() - t0
                    value = rss_mib(sched.pid)
                    if value is None:
                        raise RuntimeError(f"kubeberth run exited:\n{sched.process.tail(40)}")
                    samples.append((elapsed, value))
                    if at_10 is None and elapsed >= 600.0:
                        at_10 = sched.snapshot(elapsed)
                        log.write(f"churn: 10 min RSS {at_10.rss_mib:.1f} MiB\n")
                    if len(samples) % 6 == 0:
                        log.write(f"churn: {elapsed / 60:.1f} min, RSS {value:.1f} MiB, {churn.summary()}\n")
                churned = sched.snapshot(time.monotonic() - t0)
                await churn.drain()
                await asyncio.sleep(settle)
                end = sched.snapshot(time.monotonic() - t0)
                samples.append((end.at_s, end.rss_mib or 0.0))
            finally:
                sched.process.stop()
    half = [s for s in samples if s[0] >= seconds / 2]
    excess = per_pod_excess(start.retained, end.retained)
    return {
        "mode": "churn", "commit": git_commit(), "machine": machine(),
        "minutes": minutes, "rate_per_s": rate, "gangs": gangs, "pod_lifetime_s": lifetime, "nodes": nodes,
        "warmup_s": warmup,
        "churn": churn.summary(),
        "rss_mib": {"start": round(start.rss_mib or 0.0, 1),
                    "at_10_min": round(at_10.rss_mib or 0.0, 1) if at_10 is not None else None,
                    "end": round(end.rss_mib or 0.0, 1),
                    "max": round(max(v for _, v in samples), 1)},
        "slope_last_half_mib_per_hour": round(slope_mib_per_hour(half), 2),
        "slope_whole_mib_per_hour": round(slope_mib_per_hour(samples), 2),
        "samples": [(round(t, 1), round(v, 1)) for t, v in samples],
        "start": start.to_dict(), "at_10_min": at_10.to_dict() if at_10 is not None else None,
        "churned": churned.to_dict(), "end": end.to_dict(),
        "per_pod_above_baseline": {k: list(v) for k, v in excess.items()},
    }


SHOWN = ("cache.nodes", "cache.pods", "cache.assumed_pods", "queue.active", "queue.backoff", "queue.unschedulable",
         "queue.in_flight_pods", "queue.in_flight_events", "nominator.pods", "scheduler.records",
         "scheduler.pending", "explain_publisher.last", "event_recorder.queued", "event_recorder.chains",
         "event_recorder.series_cache", "event_recorder.rate_buckets", "status_writer.pending", "api_client.bound",
         "framework.waiting_pods", "pod_groups.states")


def print_report(r: dict[str, Any], out: Any = sys.stdout) -> None:
    m, rss = r["machine"], r["rss_mib"]
    out.write(f"kubeberth churn: {m['cpu']}, {m['nproc']} cpu, Python {m['python']}; {r['minutes']} min at "
              f"{r['rate_per_s']} pods/s (lifetime {r['pod_lifetime_s']} s), {r['nodes']} nodes\n")
    out.write(f"churn: {r['churn']}\n")
    out.write(f"RSS MiB: start {rss['start']}, at 10 min {rss['at_10_min']}, end {rss['end']}, max {rss['max']}\n")
    out.write(f"slope over the last half: {r['slope_last_half_mib_per_hour']} MiB/hour "
              f"(whole run: {r['slope_whole_mib_per_hour']})\n")
    out.write(f"metric series: start {r['start']['series']}, after the churn {r['churned']['series']}, "
              f"end {r['end']['series']}\n")
    out.write(f"{'structure':<34} {'start':>8} {'churned':>8} {'end':>8}\n")
    plugin_keys = sorted(k for k in r["end"]["retained"] if k.startswith("plugin.") and
                         (r["end"]["retained"][k] or r["churned"]["retained"].get(k)))
    for k in (*SHOWN, *plugin_keys):
        vals = [r[p]["retained"].get(k, "-") for p in ("start", "churned", "end")]
        out.write(f"{k:<34} {vals[0]!s:>8} {vals[1]!s:>8} {vals[2]!s:>8}\n")
    grown = {k: (r["start"]["series_by_family"].get(k, 0), r["at_10_min"]["series_by_family"].get(k, 0)
                 if r["at_10_min"] else "-", v)
             for k, v in r["end"]["series_by_family"].items() if v != r["start"]["series_by_family"].get(k, 0)}
    if grown:
        out.write("metric families whose series changed (start, 10 min, end): "
                  + ", ".join(f"{k} {v}" for k, v in sorted(grown.items())) + "\n")
    if r["per_pod_above_baseline"]:
        out.write(f"ABOVE BASELINE at the end: {r['per_pod_above_baseline']}\n")
    else:
        out.write("every per-pod structure back to its baseline at the end\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.churn", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=20.0)
    p.add_argument("--rate", type=float, default=5.0, help="pods created per second")
    p.add_argument("--lifetime", type=float, default=20.0, help="seconds from a pod's creation to its deletion")
    p.add_argument("--nodes", type=int, default=20)
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args(argv)
    return report(asyncio.run(run(args.minutes, rate=args.rate, lifetime=args.lifetime, nodes=args.nodes)),
                  write=not args.no_write)


def report(r: dict[str, Any], *, write: bool = True) -> int:
    import json

    from .record import RESULTS_DIR

    print_report(r)
    if write:
        import datetime as _dt

        stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        path = RESULTS_DIR / f"{stamp}-churn.json"
        with contextlib.suppress(OSError):
            RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"timestamp": stamp, **r}, indent=1) + "\n")
        (RESULTS_DIR / "latest-churn.json").write_text(json.dumps({"timestamp": stamp, **r}, indent=1) + "\n")
        print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
