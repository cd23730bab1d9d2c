"""Where kubeberth's start-up goes, on a real API server: a timeline from the process' start to its
first binding.

    python -m benchmarks.startup --nodes 5000 --pending 1000 [--bound 5000] [--repeat 3]

A fresh etcd + kube-apiserver, NODES nodes, BOUND pods bound to them and PENDING pods waiting;
then `kubeberth run` (its log in kopf's full format, with timestamps) and a watch on pods. The
timeline gives, from the process' start: the first log line (Python start-up and imports before
kopf runs), kopf's login, the start of the initial lists, the cache synced, the scheduling loop
started, and the first binding as the watch saw it. With `--peer`, kube-scheduler's time to its
first binding on the same kind of cluster, for comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.cluster.control_plane import ADMIN_TOKEN, ROOT, ControlPlane, Process, free_port
from tests.cluster.kube import Kube, as_created

from .bytecode import compile_sources
from .peer import CONNECTIONS, POPULATED, BindingWatch, create_all, start_scheduler

# Log lines that mark the steps (kubeberth's and kopf's own messages), first occurrence each.
MARKS = (
    ("first log line", re.compile(r".")),
    ("login accepted", re.compile(r"Activity 'kubeberth_login' succeeded|Initial authentication has finished")),
    ("startup handler ran", re.compile(r"Activity 'kubeberth_startup' succeeded")),
    ("cache synced", re.compile(r"Scheduler cache synced in")),
    ("scheduling loop started", re.compile(r"Scheduling pods of")),
)
STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]")


def cpu_seconds(pid: int) -> float | None:
    """The CPU time (user + system) process `pid` has used so far; None where /proc cannot tell.
    Taken when the watch has seen the first binding (a few milliseconds after it): the figure
    that holds under load, where the wall-clock times swing with the other processes."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return round((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), 2)


def timeline(log: str, started_wall: float) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in log.splitlines():
        m = STAMP.match(line)
        if m is None:
            continue
        t = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp() - started_wall
        for name, pattern in MARKS:
            if name not in out and pattern.search(line):
                out[name] = round(t, 3)
    return out


async def one(peer: str, nodes: int, bound: int, pending: int, profile: str | None = None,
              root: Path = ROOT) -> dict[str, Any]:
    """`peer`'s start on a fresh cluster; a kubeberth peer runs from the checkout at `root`."""
    profiled = [sys.executable, "-m", "cProfile", "-o", profile] if profile else []
    with ControlPlane() as plane:
        async with Kube(plane.url, ADMIN_TOKEN, plane.ssl_context(), connections=CONNECTIONS + 5) as kube:
            await create_all(kube, "nodes", POPULATED.resized(nodes=nodes).node_objects())

            def bound_pod(i: int) -> dict[str, Any]:
                obj = POPULATED.init_template(f"bound-{i:06d}", "default")
                obj["spec"]["nodeName"] = f"scheduler-perf-{i % nodes:05d}"
                return obj

            await create_all(kube, "pods", (bound_pod(i) for i in range(bound)))
            await create_all(kube, "pods", (as_created(POPULATED.init_template(f"init-{i:06d}", "default"))
                                            for i in range(pending)))
            watch = BindingWatch(kube)
            await watch.start()
            started, started_wall = time.monotonic(), time.time()
            if peer != "kube-scheduler":
                compile_sources(root)
                port = free_port()
                argv = [*profiled, str(root / ".venv" / "bin" / "kubeberth"), "run",
                        f"--kubeconfig={plane.dir / 'admin.kubeconfig'}", f"--metrics-port={port}",
                        "--metrics-host=127.0.0.1", "--seed=0", "--log-format=full"]
                sched = Process.start(peer, argv, plane.dir, env={**os.environ, "PYTHONUNBUFFERED": "1"})
            else:
                sched = start_scheduler(peer, plane).process
            try:
                if await watch.wait("init-", 1, timeout=300.0) < 1:
                    return {"error": f"nothing bound\n{sched.tail(20)}"}
                out: dict[str, Any] = {"first bind (watch)": round(watch.times("init-")[0] - started, 3),
                                       "CPU s at first bind": cpu_seconds(sched.popen.pid)}
                if peer != "kube-scheduler":
                    out.update(timeline(sched.log_path.read_text(errors="replace"), started_wall))
                return out
            finally:
                await watch.stop()
                sched.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.startup", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=500)
    p.add_argument("--bound", type=int, default=0, help="pods bound to the nodes before the start")
    p.add_argument("--pending", type=int, default=500, help="pending pods before the start")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--peer", action="store_true", help="kube-scheduler too, interleaved with kubeberth")
    p.add_argument("--cprofile", metavar="FILE", help="run kubeberth under cProfile, its stats written to FILE")
    p.add_argument("--baseline", metavar="ROOT", type=Path, action="append", default=[],
                   help="also the kubeberth of the checkout at ROOT (its own .venv), interleaved: an A/B run "
                        "(repeatable: one more kubeberth each, named after its directory)")
    args = p.parse_args(argv)
    peers = ["kube-scheduler", "kubeberth"] if args.peer else ["kubeberth"]
    roots = {"kubeberth": ROOT}
    for root in args.baseline:
        if not (root / ".venv" / "bin" / "kubeberth").exists():
            p.error(f"--baseline: {root}/.venv/bin/kubeberth does not exist (run `make install` there)")
        name = "baseline" if len(args.baseline) == 1 else f"baseline {root.name}"
        peers.append(name)
        roots[name] = root
    runs: dict[str, list[dict[str, Any]]] = {peer: [] for peer in peers}
    kubeberths = [peer for peer in peers if peer != "kube-scheduler"]
    for i in range(args.repeat):
        # kube-scheduler first; the kubeberths in turn, each round starting one further along
        shift = i % len(kubeberths)
        for peer in [*peers[:len(peers) - len(kubeberths)], *kubeberths[shift:], *kubeberths[:shift]]:
            r = asyncio.run(one(peer, args.nodes, args.bound, args.pending,
                                args.cprofile if peer == "kubeberth" else None, roots.get(peer, ROOT)))
            runs[peer].append(r)
            sys.stderr.write(f"{peer} run {i + 1}: {json.dumps(r)}\n")
    print(f"{args.nodes} nodes, {args.bound} bound pods, {args.pending} pending; seconds from the process' start")
    for peer, rs in runs.items():
        keys = [k for k in rs[0] if k != "error"]
        for k in keys:
            vals = [r[k] for r in rs if k in r]
            print(f"{peer:<15} {k:<26} median {statistics.median(vals):6.3f}  runs {vals}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
