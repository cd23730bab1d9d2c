"""kubeberth beside upstream kube-scheduler, each on a fresh real control plane of the same build.

`python -m benchmarks.run --e2e --peer kube-scheduler [-w WORKLOAD]`: for each scheduler in
turn (kube-scheduler, kubeberth, and the null binder: tools/k8s/cmd/nullbinder, which binds
round-robin and decides nothing, the API server's ceiling), etcd + kube-apiserver start
(tests/cluster/control_plane.py), the workload's cluster (benchmarks/peer_cases.py: nodes and,
per family, its other objects) and init pods are created over 50 concurrent connections, then
the scheduler is started as its own process: the time to its first binding is its start-up and
initial sync, the init pods' rate its throughput on a backlog. Once all are bound, the measured
pods are created while it runs (again over 50 connections; each followed by the controllers'
part the harness plays, the same for every scheduler): pods/s from the first create to the last binding, and how
long after the last create the last binding came, and the p99 of the scheduling-attempt
latency from each scheduler's own `scheduler_scheduling_attempt_duration_seconds`. Bindings are
seen through a watch on pods from this process, as another client of the cluster would see them.

`--sync NODES:PODS` measures start-up on a populated cluster; `--takeover NODES:PODS` two
replicas with leader election, the leader killed, the time until the standby binds.

`KUBEBERTH_BENCH_ARGS` adds arguments to `kubeberth run` (e.g. "--bind-concurrency=128").

Neither scheduler is throttled on the client side: kube-scheduler runs with
`clientConnection.qps/burst` 5000 (its default of 50/100 would cap it at about 100 pods/s),
kubeberth has no client rate limiter, the null binder runs with 5000 too. All use the admin token.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Coroutine, Iterable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families
from tests.cluster.control_plane import (
    ADMIN_TOKEN,
    ROOT,
    ControlPlane,
    ControlPlaneError,
    Process,
    free_port,
    k8s_version,
)
from tests.cluster.kube import Kube, as_created

from . import workloads as wl
from .bytecode import compile_sources
from .event_lag import lag_summary
from .peer_cases import CONNECTIONS, PeerCase, create_all

PEERS = ("kube-scheduler", "kubeberth", "nullbinder")
NULL_BINDER_WORKERS = 64  # kubeberth's default --bind-concurrency until it became 256 (PROFILE.md)


class BindingWatch:
    """Watches pods and notes when each one is first seen bound."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.bound_at: dict[str, float] = {}
        self._task: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()

    async def start(self) -> None:
        rv = await self._list()
        self._task = asyncio.get_running_loop().create_task(self._run(rv))

    def _seen(self, obj: dict[str, Any]) -> None:
        if (obj.get("spec") or {}).get("nodeName"):
            key = obj["metadata"]["name"]
            if key not in self.bound_at:
                self.bound_at[key] = time.monotonic()
                self._changed.set()

    async def _list(self) -> str:
        pods = await self.kube.request("GET", "/api/v1/pods")
        for obj in pods.get("items") or []:
            self._seen(obj)
        return str(pods["metadata"]["resourceVersion"])

    async def _run(self, rv: str) -> None:
        """Watches from `rv`; when the API server ends the watch (or sends an ERROR such as "too large
        resource version" while its cache catches up), lists again and watches on."""
        forever = aiohttp.ClientTimeout(total=None, sock_read=None)
        while True:
            params = {"watch": "true", "resourceVersion": rv, "allowWatchBookmarks": "true",
                      "timeoutSeconds": "3600"}
            async with self.kube.session.get(self.kube.url + "/api/v1/pods", params=params,
                                             timeout=forever) as resp:
                resp.raise_for_status()
                async for line in resp.content:
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        break
                    rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        self._seen(obj)
            await asyncio.sleep(0.1)
            rv = await self._list()

    async def wait(self, prefix: str, count: int, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while True:
            if self._task is not None and self._task.done():
                self._task.result()  # the watch failed: raise why
            seen = sum(1 for k in self.bound_at if k.startswith(prefix))
            if seen >= count or time.monotonic() > deadline:
                return seen
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), 1.0)

    def times(self, prefix: str) -> list[float]:
        return sorted(t for k, t in self.bound_at.items() if k.startswith(prefix))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task


async def scheduled_events(kube: Kube, namespace: str, settle: float = 3.0, limit: float = 60.0) -> int:
    """The Scheduled events of the measured pods, once their number has not changed for `settle`
    seconds (both schedulers write events in the background)."""
    count, since, deadline = -1, time.monotonic(), time.monotonic() + limit
    while time.monotonic() < deadline:
        events = await kube.list("events", namespace, fieldSelector="reason=Scheduled")
        now = sum(int(e.get("count") or 1) for e in events
                  if (e.get("involvedObject") or {}).get("name", "").startswith("pod-"))
        if now != count:
            count, since = now, time.monotonic()
        elif time.monotonic() - since >= settle:
            break
        await asyncio.sleep(0.5)
    return count


def synced_seconds(sched: Process) -> float | None:
    """kubeberth's own account of its initial sync ("Scheduler cache synced in 1.34s"), if logged."""
    for line in sched.log_path.read_text(errors="replace").splitlines():
        if "Scheduler cache synced in " in line:
            return float(line.split("synced in ", 1)[1].split("s", 1)[0])
    return None


class Scheduler:
    """A scheduler process and where its Prometheus metrics are served."""

    def __init__(self, process: Process, metrics_url: str | None) -> None:
        self.process = process
        self.metrics_url = metrics_url  # None: serves no metrics (the null binder)

    async def attempt_buckets(self) -> dict[float, float]:
        return (await self.attempts())[0]

    async def attempts(self) -> tuple[dict[float, float], dict[str, float]]:
        """scheduler_scheduling_attempt_duration_seconds as cumulative counts per bucket bound, over
        every result and profile, and scheduler_schedule_attempts_total per result. kube-scheduler
        serves them on its secure port to an authorised client: the admin token, its self-signed
        certificate not checked. Empty without metrics."""
        if self.metrics_url is None:
            return {}, {}
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        async with aiohttp.ClientSession() as session, session.get(
                self.metrics_url, headers=headers, ssl=False, timeout=aiohttp.ClientTimeout(total=10)) as resp:
            resp.raise_for_status()
            text = await resp.text()
        buckets: dict[float, float] = {}
        results: dict[str, float] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == "scheduler_scheduling_attempt_duration_seconds_bucket":
                    le = float(sample.labels["le"])
                    buckets[le] = buckets.get(le, 0.0) + sample.value
                elif sample.name == "scheduler_schedule_attempts_total":
                    result = sample.labels.get("result", "")
                    results[result] = results.get(result, 0.0) + sample.value
        return buckets, results


def histogram_quantile(q: float, before: dict[float, float], after: dict[float, float]) -> float | None:
    """Prometheus' histogram_quantile over the observations made between two scrapes: linear
    within the bucket the quantile falls in (the bucket bounds limit its precision)."""
    bounds = sorted(after)
    counts = [after[b] - before.get(b, 0.0) for b in bounds]
    if not counts or counts[-1] <= 0:
        return None
    rank = q * counts[-1]
    lower, below = 0.0, 0.0
    for bound, count in zip(bounds, counts, strict=True):
        if count >= rank:
            if bound == float("inf"):
                return lower  # beyond the last finite bound: its value is all that is known
            return lower + (bound - lower) * ((rank - below) / (count - below) if count > below else 1.0)
        lower, below = bound, count
    return lower


def start_scheduler(peer: str, plane: ControlPlane, *, name: str | None = None,
                    leader_elect: bool = False, profile_out: Path | None = None,
                    feature_gates: str = "") -> Scheduler:
    """`peer` on `plane`; with `leader_elect`, through the Lease in kube-system with kube-scheduler's
    timings (15 s duration, 10 s renew deadline, 2 s retry), both schedulers alike (the null binder
    has no leader election). `feature_gates`: both schedulers' --feature-gates (the null binder
    binds every pod it sees and has none)."""
    gates = [f"--feature-gates={feature_gates}"] if feature_gates else []
    name = name or peer
    kubeconfig = plane.dir / "admin.kubeconfig"
    port = free_port()
    url: str | None
    if peer == "nullbinder":
        if leader_elect:
            raise ValueError("the null binder has no leader election")
        binary = plane.bin / "nullbinder"
        if not os.access(binary, os.X_OK):
            raise FileNotFoundError(f"{binary} is missing: build it with `make control-plane`")
        argv = [str(binary), f"--kubeconfig={kubeconfig}", f"--workers={NULL_BINDER_WORKERS}"]
        url = None
    elif peer == "kube-scheduler":
        config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                  "clientConnection": {"kubeconfig": str(kubeconfig), "qps": 5000, "burst": 5000},
                  "leaderElection": {"leaderElect": leader_elect, "resourceNamespace": "kube-system",
                                     "resourceName": "kube-scheduler"}}
        path = plane.dir / f"{name}.yaml"
        path.write_text(json.dumps(config))
        argv = [str(plane.bin / "kube-scheduler"), f"--config={path}", f"--secure-port={port}",
                "--bind-address=127.0.0.1", f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}", f"--cert-dir={plane.dir / (name + '-certs')}", "-v=1",
                *gates]
        url = f"https://127.0.0.1:{port}/metrics"
    else:
        compile_sources()  # as the image has it (benchmarks/bytecode.py)
        # With `profile_out`, under cProfile (its statistics written there when the process ends).
        python = [sys.executable, "-m", "cProfile", "-o", str(profile_out), "-m", "kubeberth.cli"] \
            if profile_out is not None else [str(ROOT / ".venv" / "bin" / "kubeberth")]
        argv = [*python, "run", f"--kubeconfig={kubeconfig}",
                f"--metrics-port={port}", "--metrics-host=127.0.0.1", "--seed=0", *gates]
        if leader_elect:
            argv += ["--leader-elect", "--leader-elect-resource-namespace=kube-system"]
        argv += shlex.split(os.environ.get("KUBEBERTH_BENCH_ARGS", ""))  # e.g. "--bind-concurrency=128"
        url = f"https://127.0.0.1:{port}/metrics"  # the secure port, scraped as kube-scheduler's
    return Scheduler(Process.start(name, argv, plane.dir, env={**os.environ, "PYTHONUNBUFFERED": "1"}), url)


def holds_lease(sched: Process) -> bool:
    """Whether the process logged that it acquired the Lease (both schedulers log it once)."""
    text = sched.log_path.read_text(errors="replace").lower()
    return "successfully acquired lease" in text or "acquired the lease" in text


def process_usage(pid: int) -> tuple[float, float]:
    """CPU seconds (user + system) and peak RSS in MiB of a live process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    rss = 0.0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                rss = int(line.split()[1]) / 1024
    return cpu, rss


def plane_usage(plane: ControlPlane) -> dict[str, float]:
    """CPU seconds of the control plane's processes so far, by name (kube-apiserver, etcd)."""
    procs = [p for p in (plane.etcd, *plane.apiservers) if p is not None]
    return {p.name: process_usage(p.popen.pid)[0] for p in procs}


@contextlib.contextmanager
def started_control_plane(attempts: int = 8, pause: float = 2.0, feature_gates: str = "") -> Iterator[ControlPlane]:
    """A fresh control plane; started again on fresh ports, `pause` seconds later, when a port it
    was given was taken by another process meanwhile (free_port() can only pick a port that is free
    when asked; on a machine where other programs open connections by the thousand, their
    ephemeral ports can take it before kube-apiserver listens)."""
    for attempt in range(attempts):
        try:
            plane = ControlPlane(feature_gates=feature_gates).start()
            break
        except ControlPlaneError as exc:
            if "address already in use" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(pause)
    try:
        yield plane
    finally:
        plane.stop()


async def _run_peer(peer: str, w: PeerCase, profile_out: Path | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"scheduler": peer}
    if profile_out is not None and peer == "kubeberth":
        out["profile"] = str(profile_out)
    else:
        profile_out = None
    with started_control_plane(feature_gates=w.feature_gates) as plane:
        async with Kube(plane.url, ADMIN_TOKEN, plane.ssl_context(), connections=CONNECTIONS + 5) as kube:
            await w.setup(kube)
            await create_all(kube, "pods", w.pods("init"), after=w.created)
            watch = BindingWatch(kube)
            await watch.start()
            started = time.monotonic()
            scheduler = start_scheduler(peer, plane, profile_out=profile_out, feature_gates=w.feature_gates)
            sched = scheduler.process
            try:
                init_bound = await watch.wait("init-", w.init_count, timeout=max(120.0, w.init_count / 5))
                init_times = watch.times("init-")
                if init_times:
                    out["first_bind_after_start_s"] = round(init_times[0] - started, 3)
                if init_bound < w.init_count:
                    out["error"] = f"only {init_bound}/{w.init_count} init pods bound\n{sched.tail(20)}"
                    return out
                if w.init_pods > 1:
                    span = init_times[-1] - init_times[0]
                    out["init_pods_per_s"] = round((w.init_pods - 1) / span, 1) if span > 0 else None
                cpu0, _ = process_usage(sched.popen.pid)
                plane_cpu0 = plane_usage(plane)
                attempts0, results0 = await scheduler.attempts()
                t0, t_last_create = await create_all(kube, "pods", w.pods("measure"), after=w.created)
                bound = await watch.wait("pod-", w.measure_pods, timeout=max(120.0, w.measure_pods / 5))
                times = watch.times("pod-")
                cpu1, rss = process_usage(sched.popen.pid)
                plane_cpu1 = plane_usage(plane)
                attempts1, results1 = await scheduler.attempts()
                p99 = histogram_quantile(0.99, attempts0, attempts1)
                if results1:  # the measured phase's attempts by result: retries show here
                    out["attempts"] = {k: int(v - results0.get(k, 0.0)) for k, v in sorted(results1.items())}
                out.update({
                    "scheduled": bound,
                    "pods_per_s": round(bound / (times[-1] - t0), 1) if times else 0.0,
                    "create_s": round(t_last_create - t0, 3),
                    "last_bind_after_last_create_s": round(times[-1] - t_last_create, 3) if times else None,
                    "cpu_s": round(cpu1 - cpu0, 2),
                    "cpu_ms_per_pod": round((cpu1 - cpu0) * 1000 / max(1, bound), 2),
                    # What the scheduler's requests cost the control plane (kube-apiserver and
                    # etcd) in the same phase; the harness' pod creations are in it too, alike.
                    "plane_cpu_ms_per_pod": {
                        name: round((plane_cpu1[name] - plane_cpu0[name]) * 1000 / max(1, bound), 2)
                        for name in plane_cpu1},
                    "peak_rss_mib": round(rss, 1),
                    "p99_attempt_ms": round(p99 * 1000, 1) if p99 is not None else None,
                })
                if bound < w.measure_pods:
                    out["error"] = f"only {bound}/{w.measure_pods} measured pods bound\n{sched.tail(20)}"
                out["scheduled_events"] = await scheduled_events(kube, w.measure_namespace)
                out.update(await w.check(kube))
                await asyncio.sleep(1.5)  # the audit log's batch backend writes within a second
                out.update(lag_summary(plane.audit_log, w.measure_namespace, "pod-"))
                synced = synced_seconds(sched)
                if synced is not None:
                    out["synced_s"] = synced
            finally:
                await watch.stop()
                sched.stop()
    return out


POPULATED = wl.find("SchedulingBasic/500Nodes")  # the node and pod templates of the populated clusters


async def populate(kube: Kube, nodes: int, pods: int) -> BindingWatch:
    """`nodes` nodes and `pods` pods bound to them round-robin; then a watch for bindings."""
    await create_all(kube, "nodes", POPULATED.resized(nodes=nodes).node_objects())

    def bound(i: int) -> dict[str, Any]:
        obj = POPULATED.init_template(f"bound-{i:06d}", "default")
        obj["spec"]["nodeName"] = f"scheduler-perf-{i % nodes:05d}"
        return obj

    await create_all(kube, "pods", (bound(i) for i in range(pods)))
    watch = BindingWatch(kube)
    await watch.start()
    return watch


async def _run_sync(peer: str, nodes: int, pods: int) -> dict[str, Any]:
    """Start-up on a populated cluster: `nodes` nodes and `pods` bound pods exist, the scheduler
    starts, and one pending pod created right after it is bound: start-up, initial sync and one
    cycle, the time a pod waits for a freshly started scheduler."""
    out: dict[str, Any] = {"scheduler": peer}
    with ControlPlane() as plane:
        async with Kube(plane.url, ADMIN_TOKEN, plane.ssl_context(), connections=CONNECTIONS + 5) as kube:
            watch = await populate(kube, nodes, pods)
            started = time.monotonic()
            sched = start_scheduler(peer, plane).process
            try:
                await kube.create("pods", as_created(POPULATED.measure_template("probe-0", "default")))
                if await watch.wait("probe-", 1, timeout=900.0) < 1:
                    out["error"] = f"the probe pod was not bound\n{sched.tail(20)}"
                    return out
                out["probe_bound_after_start_s"] = round(watch.times("probe-")[0] - started, 3)
                cpu, rss = process_usage(sched.popen.pid)
                out.update({"cpu_s": round(cpu, 2), "peak_rss_mib": round(rss, 1)})
                synced = synced_seconds(sched)
                if synced is not None:
                    out["synced_s"] = synced
            finally:
                await watch.stop()
                sched.stop()
    return out


async def _run_takeover(peer: str, nodes: int, pods: int) -> dict[str, Any]:
    """Two replicas with leader election on a populated cluster; once the leader binds, it is
    killed (SIGKILL) and a pod created at once: the time from the kill to that pod's binding by
    the standby is the takeover (the lease must lapse first: 15 s at most after the last renewal)."""
    out: dict[str, Any] = {"scheduler": peer}
    with ControlPlane() as plane:
        async with Kube(plane.url, ADMIN_TOKEN, plane.ssl_context(), connections=CONNECTIONS + 5) as kube:
            watch = await populate(kube, nodes, pods)
            replicas = [start_scheduler(peer, plane, name=f"{peer}-{r}", leader_elect=True).process for r in "ab"]
            try:
                await kube.create("pods", as_created(POPULATED.measure_template("before-0", "default")))
                if await watch.wait("before-", 1, timeout=900.0) < 1:
                    out["error"] = "the first pod was not bound\n" + "\n".join(r.tail(10) for r in replicas)
                    return out
                leaders = [r for r in replicas if holds_lease(r)]
                if len(leaders) != 1:
                    out["error"] = f"{len(leaders)} replicas logged that they hold the Lease"
                    return out
                [leader] = leaders
                [standby] = [r for r in replicas if r is not leader]
                await asyncio.sleep(3.0)  # the standby's cache has settled; the leader renewed at least once
                killed = time.monotonic()
                leader.signal(9)
                await kube.create("pods", as_created(POPULATED.measure_template("after-0", "default")))
                if await watch.wait("after-", 1, timeout=120.0) < 1:
                    out["error"] = f"the standby did not bind within 120 s\n{standby.tail(20)}"
                    return out
                out["takeover_s"] = round(watch.times("after-")[0] - killed, 3)
                cpu, rss = process_usage(standby.popen.pid)
                out.update({"standby_cpu_s": round(cpu, 2), "standby_peak_rss_mib": round(rss, 1)})
            finally:
                await watch.stop()
                for r in replicas:
                    r.stop()
    return out


def run_takeover(nodes: int, pods: int, peers: Iterable[str] = PEERS) -> dict[str, Any]:
    return _on_populated("Takeover", "e2e-real-takeover", _run_takeover, nodes, pods, peers)


def print_takeover_table(results: list[dict[str, Any]]) -> None:
    _print_table(results, f"{'kill -9 to first bind':>22} {'standby CPU s':>14} {'standby RSS MiB':>16}",
                 lambda p: f"{p['takeover_s']:>21}s {p['standby_cpu_s']:>14} {p['standby_peak_rss_mib']:>16}")


def run_sync(nodes: int, pods: int, peers: Iterable[str] = PEERS) -> dict[str, Any]:
    return _on_populated("InitialSync", "e2e-real-sync", _run_sync, nodes, pods, peers)


def _on_populated(name: str, mode: str, run: Callable[[str, int, int], Coroutine[Any, Any, dict[str, Any]]],
                  nodes: int, pods: int, peers: Iterable[str]) -> dict[str, Any]:
    """`run` once per peer, each on its own fresh control plane; a failure is reported, not raised."""
    out: dict[str, Any] = {"workload": f"{name}/{nodes}Nodes_{pods}BoundPods", "mode": mode,
                           "kubernetes": k8s_version(), "nodes": nodes, "bound_pods": pods, "peers": {}}
    for peer in peers:
        try:
            out["peers"][peer] = asyncio.run(run(peer, nodes, pods))
        except Exception as exc:
            out["peers"][peer] = {"scheduler": peer, "error": f"{type(exc).__name__}: {exc}"}
    return out


def _print_table(results: list[dict[str, Any]], header: str, row: Callable[[dict[str, Any]], str]) -> None:
    print(f"{'workload':<42} {'scheduler':<15} {header}")
    for r in results:
        for peer, p in r["peers"].items():
            detail = f"error: {p['error'].splitlines()[0]}" if p.get("error") else row(p)
            print(f"{r['workload']:<42} {peer:<15} {detail}")


def print_sync_table(results: list[dict[str, Any]]) -> None:
    _print_table(results, f"{'probe bound after start':>24} {'synced in':>10} {'CPU s':>7} {'RSS MiB':>8}",
                 lambda p: f"{p['probe_bound_after_start_s']:>23}s {p.get('synced_s', '-'):>9}s {p['cpu_s']:>7} "
                           f"{p['peak_rss_mib']:>8}")


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run of median pods/s among those without an error (else the first), with every run's
    pods/s (and event lag p99, events within 1 s, p99 attempt, first binding, backlog pods/s, CPU
    per pod) beside it when there were several."""
    ok = sorted((r for r in runs if not r.get("error")), key=lambda r: r.get("pods_per_s") or 0.0)
    chosen = dict(ok[(len(ok) - 1) // 2] if ok else runs[0])
    if len(runs) > 1:
        chosen["runs_pods_per_s"] = [r.get("pods_per_s") for r in runs]
        chosen["runs_errors"] = sum(1 for r in runs if r.get("error"))
        for key in ("event_lag_p99_ms", "events_within_1s", "p99_attempt_ms", "first_bind_after_start_s",
                    "init_pods_per_s", "cpu_ms_per_pod", "plane_cpu_ms_per_pod"):
            if any(key in r for r in runs):
                chosen[f"runs_{key}"] = [r.get(key) for r in runs]
    return chosen


def write_profile_summary(prof: Path, lines: int = 40) -> Path:
    """The cProfile statistics of a run as text beside them: by cumulative and by own time."""
    import io
    import pstats

    text = io.StringIO()
    for key in ("cumulative", "tottime"):
        pstats.Stats(str(prof), stream=text).sort_stats(key).print_stats(lines)
    out = prof.with_suffix(".txt")
    out.write_text(text.getvalue())
    return out


def run_peers(w: PeerCase, peers: Iterable[str] = PEERS, repeat: int = 1,
              profile_dir: Path | None = None) -> dict[str, Any]:
    """`w` once per peer and round, the peers in turn within each round (so that a slow spell of
    the machine falls on all of them alike); per peer the run of median pods/s. `ratio`: kubeberth's
    pods/s over kube-scheduler's; `of_ceiling`: each scheduler's pods/s over the null binder's.
    With `profile_dir`, kubeberth runs under cProfile (slower: its figures are the profiled run's),
    its statistics in `<workload>-peer-kubeberth-<round>.prof` and `.txt` there."""
    peers = list(peers)
    out = w.describe()
    out.update({"mode": "e2e-real", "kubernetes": k8s_version(), "target": None, "rss_target_mib": None,
                "rounds": repeat})
    runs: dict[str, list[dict[str, Any]]] = {peer: [] for peer in peers}
    for round_ in range(max(1, repeat)):
        for peer in peers:
            prof = None
            if profile_dir is not None:
                profile_dir.mkdir(parents=True, exist_ok=True)
                prof = profile_dir / f"{w.id.replace('/', '_')}-peer-kubeberth-{round_}.prof"
            try:
                runs[peer].append(asyncio.run(_run_peer(peer, w, prof)))
                if prof is not None and peer == "kubeberth" and prof.exists():
                    write_profile_summary(prof)
            except Exception as exc:  # report, do not stop the other runs
                runs[peer].append({"scheduler": peer, "error": f"{type(exc).__name__}: {exc}"})
    out["peers"] = {peer: median_run(r) for peer, r in runs.items()}
    rates = {peer: p.get("pods_per_s") for peer, p in out["peers"].items() if not p.get("error")}
    if rates.get("kubeberth") and rates.get("kube-scheduler"):
        out["ratio"] = round(rates["kubeberth"] / rates["kube-scheduler"], 2)
    if rates.get("nullbinder"):
        out["of_ceiling"] = {peer: round(rate / rates["nullbinder"], 2) for peer, rate in rates.items()
                             if rate and peer != "nullbinder"}
    out.update(per_round(runs))
    return out


def per_round(runs: dict[str, list[dict[str, Any]]]) -> dict[str, list[float | None]]:
    """Round by round (the peers ran one after the other in each): kubeberth's pods/s over
    kube-scheduler's and over the null binder's, and its first binding minus kube-scheduler's."""
    def ratio(a: Any, b: Any, digits: int = 2) -> float | None:
        return round(a / b, digits) if a and b else None

    kb, ks, nb = (runs.get(p, []) for p in ("kubeberth", "kube-scheduler", "nullbinder"))
    out: dict[str, list[float | None]] = {}
    if kb and ks:
        out["rounds_ratio"] = [ratio(a.get("pods_per_s"), b.get("pods_per_s")) for a, b in zip(kb, ks)]
        out["rounds_first_bind_minus_peer_s"] = [
            round(a["first_bind_after_start_s"] - b["first_bind_after_start_s"], 3)
            if "first_bind_after_start_s" in a and "first_bind_after_start_s" in b else None
            for a, b in zip(kb, ks)]
    if kb and nb:
        out["rounds_of_null_binder"] = [ratio(a.get("pods_per_s"), b.get("pods_per_s")) for a, b in zip(kb, nb)]
    return out


def print_peer_table(results: list[dict[str, Any]]) -> None:
    print(f"{'workload':<50} {'scheduler':<15} {'pods/s':>8} {'last bind after':>16} {'p99 attempt':>12} "
          f"{'first bind':>11} {'backlog pods/s':>15} {'CPU s':>7} {'CPU ms/pod':>10} {'RSS MiB':>8} "
          f"{'Scheduled ev':>12}")
    for r in results:
        for peer, p in r["peers"].items():
            if p.get("error"):
                print(f"{r['workload']:<50} {peer:<15} error: {p['error'].splitlines()[0]}")
                continue
            p99 = p.get("p99_attempt_ms")
            runs = f"  (runs: {p['runs_pods_per_s']})" if p.get("runs_pods_per_s") else ""
            print(f"{r['workload']:<50} {peer:<15} {p['pods_per_s']:>8} {p['last_bind_after_last_create_s']:>15}s "
                  f"{(str(p99) + 'ms') if p99 is not None else '-':>12} "
                  f"{p.get('first_bind_after_start_s', '-'):>10}s {p.get('init_pods_per_s') or '-':>15} "
                  f"{p['cpu_s']:>7} {p.get('cpu_ms_per_pod', '-'):>10} {p['peak_rss_mib']:>8} "
                  f"{p.get('scheduled_events', '-'):>12}{runs}")
            if p.get("plane_cpu_ms_per_pod"):
                print(f"{'':<50} {'':<15} control plane CPU ms per pod: "
                      + ", ".join(f"{name} {ms}" for name, ms in p["plane_cpu_ms_per_pod"].items()))
            if p.get("event_lag_p50_ms") is not None:
                print(f"{'':<50} {'':<15} Scheduled event after its binding: p50 {p['event_lag_p50_ms']} ms, "
                      f"p99 {p['event_lag_p99_ms']} ms, max {p['event_lag_max_ms']} ms, "
                      f"{p['events_within_1s']} within 1 s, {p['event_lag_missing']} missing")
                if p.get("runs_events_within_1s"):
                    print(f"{'':<50} {'':<15} every run: within 1 s {p['runs_events_within_1s']}, "
                          f"event p99 {p.get('runs_event_lag_p99_ms')} ms, "
                          f"attempt p99 {p.get('runs_p99_attempt_ms')} ms")
                if p.get("event_sent_ms"):
                    print(f"{'':<50} {'':<15} of which sent after the binding (p50/p99/max) "
                          f"{p['event_sent_ms']} ms, served {p['event_served_ms']} ms")
        if r.get("ratio") is not None:
            ceiling = ", ".join(f"{peer} {v}" for peer, v in (r.get("of_ceiling") or {}).items())
            print(f"{'':<50} {'ratio':<15} {r['ratio']:>8}"
                  + (f"   of the null binder's: {ceiling}" if ceiling else ""))
        if r.get("rounds_ratio"):
            print(f"{'':<50} {'each round':<15} kubeberth / kube-scheduler {r['rounds_ratio']}, "
                  f"/ null binder {r.get('rounds_of_null_binder')}, "
                  f"first binding minus kube-scheduler's {r.get('rounds_first_bind_minus_peer_s')} s")
