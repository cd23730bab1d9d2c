"""`kubeberth capacity` at scale: one answer for a plain pod on a large cluster, timed, and checked
by simulation.

    python -m benchmarks.capacity [--nodes 5000] [--per-node-copies 10] [--check-nodes 200] [--full-check]
                                  [--one-per-node]

NODES nodes (8 CPUs, 32Gi, 110 pods; one pod of 1 CPU running on every fifth), a template asking
for 8/(COPIES) CPUs: every node takes COPIES copies (one fewer where a pod runs; one with
--one-per-node, the template then excluding itself per hostname by anti-affinity). The time of one
answer (the scheduler built over the cluster, the per-node count, copy N+1's diagnosis) is the
figure; the answer is checked against the exact path (copies scheduled one by one) and against
simulate of N+1 copies on a cluster of CHECK_NODES nodes of the same shapes, and, with
--full-check, against simulate of N+1 copies on the full cluster (half a minute). Written to
benchmarks/results/latest-capacity.json (with the machine, the commit and its load average).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from kubeberth.plugins import plugin_registry
from kubeberth.scheduler import SCHEDULED
from kubeberth.whatif.capacity import Answer, Options, capacity, read_template
from kubeberth.whatif.capacity.copies import CopyMaker, base_time
from kubeberth.whatif.engine import run_simulation

from .record import RESULTS_DIR, git_commit, machine


def cluster(nodes: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(nodes):
        name = f"node-{i:05d}"
        out.append({"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                          "topology.kubernetes.io/zone": f"zone-{i % 3}"}},
                    "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}})
        if i % 5 == 0:
            out.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"run-{i}", "namespace": "default"},
                        "spec": {"nodeName": name, "containers": [{"name": "c", "image": "app",
                                                                   "resources": {"requests": {"cpu": "1"}}}]}})
    return out


def template(copies: int, one_per_node: bool = False) -> dict[str, Any]:
    cpu = f"{8000 // copies}m"
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "app", "resources": {"requests": {
        "cpu": cpu, "memory": "1Gi"}}}]}
    if one_per_node:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default",
                                                           "labels": {"app": "web"}}, "spec": spec}


def answer(objects: list[dict[str, Any]], pod_file: Path, exact: bool = False) -> tuple[Answer, float]:
    started = time.perf_counter()
    got = capacity(objects, read_template(pod_file), plugin_registry(), Options(per_node=not exact),
                   warn=io.StringIO())
    return got, time.perf_counter() - started


def simulate_check(objects: list[dict[str, Any]], pod_file: Path, got: Answer) -> dict[str, Any]:
    """simulate of copies 1..N+1: placed, per node, copy N+1's message, as capacity says?"""
    maker = CopyMaker(read_template(pod_file), base_time(objects))
    copies = [o for i in range(1, got.total + 2) for o in maker.make(i)]
    started = time.perf_counter()
    outcomes, _ = run_simulation(objects + copies, warn=io.StringIO())
    by_key = {o.pod: o for o in outcomes}
    placed = Counter(str(by_key[k].node) for i in range(1, got.total + 2) for k in maker.pod_keys(i)
                     if by_key[k].status == SCHEDULED)
    last = by_key[maker.pod_keys(got.total + 1)[0]]
    ok = (sum(placed.values()) == got.total and dict(placed) == got.per_node and last.status != SCHEDULED
          and last.message == got.stopped_by)
    return {"ok": ok, "simulated": sum(placed.values()), "seconds": round(time.perf_counter() - started, 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.capacity", description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--per-node-copies", dest="copies", type=int, default=10)
    parser.add_argument("--check-nodes", dest="check_nodes", type=int, default=200)
    parser.add_argument("--full-check", dest="full_check", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--one-per-node", dest="one_per_node", action="store_true",
                        help="the template has required anti-affinity to itself per hostname (one copy a node)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        pod_file = Path(tmp) / "pod.yaml"
        pod_file.write_text(yaml.safe_dump(template(args.copies, args.one_per_node)))
        objects = cluster(args.nodes)
        times = []
        for _ in range(args.repeat):
            got, seconds = answer(objects, pod_file)
            times.append(seconds)
        result: dict[str, Any] = {"nodes": args.nodes, "onePerNode": args.one_per_node, "total": got.total,
                                  "path": got.path, "stoppedBy": got.stopped_by,
                                  "seconds": [round(t, 3) for t in times],
                                  "best": round(min(times), 3), "machine": machine(), "commit": git_commit(),
                                  "loadavg": os.getloadavg()}
        small = cluster(args.check_nodes)
        fast, _ = answer(small, pod_file)
        exact, exact_seconds = answer(small, pod_file, exact=True)
        result["check"] = {"nodes": args.check_nodes, "total": fast.total,
                           "exactPathAgrees": (exact.total, exact.per_node, exact.stopped_by)
                           == (fast.total, fast.per_node, fast.stopped_by),
                           "exactSeconds": round(exact_seconds, 2),
                           "simulate": simulate_check(small, pod_file, fast)}
        if args.full_check:
            result["fullCheck"] = simulate_check(objects, pod_file, got)
    print(json.dumps(result, indent=2))
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    out = RESULTS_DIR / f"latest-capacity{'-one-per-node' if args.one_per_node else ''}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    check = result["check"]
    ok = check["exactPathAgrees"] and check["simulate"]["ok"] and result.get("fullCheck", {"ok": True})["ok"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
