"""DynamicResources benchmark: upstream's scheduler_perf DRA workloads at their sizes, in-process.

`python -m benchmarks.dra [--workload NAME ...] [--loop sim|operator]`. The workloads and their
objects are upstream's (test/integration/scheduler_perf/dra/performance-config.yaml and its
templates): nodes with a DRA test driver, one ResourceSlice of 10 GPU-like devices per node, the
DeviceClass `test-class`, `initClaims` claims allocated beforehand (upstream's allocResourceClaims:
straight through the allocator, node after node), then `measurePods` pods created at once, each
with a claim from the template (SchedulingWithResourceClaimTemplate; the claims made as the
resourceclaim controller would) or naming a claim of its own (SchedulingWithResourceClaim).
Prints a table and writes benchmarks/results/latest-dra.json.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import gc
import json
import sys
import time
from dataclasses import dataclass
from typing import Any

from .record import RESULTS_DIR, git_commit, machine, peak_rss_mib

DRIVER = "test-driver.cdi.k8s.io"
CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "test-class"},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}
REQUESTS = [{"name": "req-0", "exactly": {"deviceClassName": "test-class"}}]


@dataclass(frozen=True)
class DraWorkload:
    name: str          # upstream's test case
    variant: str       # upstream's workload
    nodes_with_dra: int
    nodes_without_dra: int
    init_claims: int
    measure_pods: int
    threshold: float | None = None  # upstream's CI threshold (pods/s, with an API server)

    @property
    def id(self) -> str:
        return f"{self.name}/{self.variant}"


WORKLOADS = [
    DraWorkload("SchedulingWithResourceClaimTemplate", "fast", 1, 1, 0, 10),
    DraWorkload("SchedulingWithResourceClaimTemplate", "2000pods_200nodes", 200, 0, 1000, 1000),
    DraWorkload("SchedulingWithResourceClaimTemplate", "5000pods_500nodes", 500, 0, 2500, 2500, threshold=56),
    DraWorkload("SchedulingWithResourceClaim", "2000pods_200nodes", 200, 0, 1000, 1000),
    DraWorkload("SchedulingWithResourceClaim", "5000pods_500nodes", 500, 0, 2500, 2500),
]


def node(name: str, dra: bool) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                  **({"node-with-dra": "true"} if dra else {})}},
            "spec": {}, "status": {"capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"},
                                   "conditions": [{"type": "Ready", "status": "True"}], "phase": "Running"}}


def resource_slice(index: int, devices: int = 10, pci_roots: int = 2) -> dict[str, Any]:
    """templates/resourceslice-basic-devices.yaml."""
    out = []
    for d in range(devices):
        root = d % pci_roots
        out.append({"name": f"basic-device-{d}", "attributes": {
            "driver": {"string": "xe"}, "driverVersion": {"version": "1.2.3"},
            "resource.k8s.io/pciRoot": {"string": str(root)}, "family": {"string": "Arc Pro B-Series"},
            "health": {"string": "Healthy"}, "model": {"string": "B60"},
            "pciAddress": {"string": f"0000:0{d}:00.0"}, "pciId": {"string": "0xe211"},
            "pciRoot": {"string": f"0{root}"}, "resource.kubernetes.io/pciBusID": {"string": f"0000:0{d}:00.0"},
            "resource.kubernetes.io/pciRoot": {"string": f"pci0000:0{root}"}, "sriov": {"bool": True},
            "type": {"string": "gpu"}},
            "capacity": {"memory": {"value": "24480Mi"}, "millicores": {"value": "1k"}}})
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"resourceslice-{index}"},
            "spec": {"driver": DRIVER, "nodeName": f"scheduler-perf-dra-{index}", "devices": out,
                     "pool": {"name": f"resourceslice-{index}", "generation": 1, "resourceSliceCount": 1}}}


def claim(name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-claim-{namespace}-{name}"},
            "spec": {"devices": {"requests": copy.deepcopy(REQUESTS)}}}


def pod(name: str, namespace: str, source: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace,
                                                           "uid": f"uid-{namespace}-{name}"},
            "spec": {"containers": [{"image": "registry.k8s.io/pause:3.10.1", "name": "pause",
                                     "resources": {"claims": [{"name": "resource"}]}}],
                     "resourceClaims": [{"name": "resource", **source}]}}


class DraBench:
    def __init__(self, w: DraWorkload, loop: str) -> None:
        from kubeberth.clock import FakeClock, RealClock
        from kubeberth.config import default_spec
        from kubeberth.plugins import in_tree_registry
        from kubeberth.profile import build_framework
        from kubeberth.scheduler import Scheduler
        from kubeberth.testing import InMemoryClient

        self.w = w
        self.loop = loop
        self.sched = Scheduler(clock=RealClock() if loop == "operator" else FakeClock(), seed=0)
        self.sched.ctx.client = InMemoryClient(self.sched)
        self.sched.set_profile(build_framework(default_spec(), in_tree_registry(), self.sched.ctx))

    def setup(self) -> float:
        from kubeberth.plugins.dynamic_resources.allocator import Allocator
        from kubeberth.plugins.dynamic_resources.claims import allocated_device_ids
        from kubeberth.plugins.dynamic_resources.devices import parse_slices

        w, sched = self.w, self.sched
        t0 = time.perf_counter()
        for i in range(w.nodes_without_dra):
            sched.on_node_add(node(f"scheduler-perf-{i}", False))
        nodes = [node(f"scheduler-perf-dra-{i}", True) for i in range(w.nodes_with_dra)]
        for n in nodes:
            sched.on_node_add(n)
        slices = [resource_slice(i) for i in range(w.nodes_with_dra)]
        for s in slices:
            sched.on_object("ResourceSlice", s)
        sched.on_object("DeviceClass", CLASS)
        # allocResourceClaims: each init claim allocated on the first node with a free device.
        parsed, _ = parse_slices(slices)
        taken: set[tuple[str, str, str]] = set()
        from kubeberth.model import Node
        node_models = [Node(n) for n in nodes]
        first = 0
        for i in range(w.init_claims):
            c = claim(f"test-claim-{i}", "init")
            allocator = Allocator(lambda name: CLASS if name == "test-class" else None, parsed, taken, {})
            for j in range(first, len(node_models)):
                result = allocator.allocate(node_models[j], [c])
                if result:
                    c["status"] = {"allocation": result[0]}
                    taken.update(allocated_device_ids(result[0]))
                    break
                first = j + 1
            sched.on_object("ResourceClaim", c)
        if w.name == "SchedulingWithResourceClaimTemplate":
            sched.on_object("ResourceClaimTemplate", {
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "test-claim-template", "namespace": "test"},
                "spec": {"spec": {"devices": {"requests": copy.deepcopy(REQUESTS)}}}})
        else:
            for i in range(w.measure_pods):
                sched.on_object("ResourceClaim", claim(f"test-claim-{i}", "test"))
        return time.perf_counter() - t0

    def _create_measured(self) -> None:
        from kubeberth.whatif.engine import with_template_claims

        templates = [{"kind": "ResourceClaimTemplate", "metadata": {"name": "test-claim-template", "namespace": "test"},
                      "spec": {"spec": {"devices": {"requests": copy.deepcopy(REQUESTS)}}}}]
        for i in range(self.w.measure_pods):
            if self.w.name == "SchedulingWithResourceClaimTemplate":
                objs = with_template_claims([*templates, pod(f"test-dra-{i}", "test",
                                                            {"resourceClaimTemplateName": "test-claim-template"})])
                for o in objs[1:]:
                    if o["kind"] == "ResourceClaim":
                        self.sched.on_object("ResourceClaim", o)
                self.sched.on_pod_add(objs[-1])
            else:
                self.sched.on_pod_add(pod(f"test-dra-{i}", "test", {"resourceClaimName": f"test-claim-{i}"}))

    async def _run(self) -> None:
        self._create_measured()
        if self.loop == "sim":
            await self.sched.run_until_idle()
            return
        runner = asyncio.get_running_loop().create_task(self.sched.run())
        deadline = time.monotonic() + max(120.0, self.w.measure_pods / 5)
        while time.monotonic() < deadline and self._scheduled() < self.w.measure_pods:
            await asyncio.sleep(0.05)
        self.sched.stop()
        await runner

    def _scheduled(self) -> int:
        from kubeberth.scheduler import SCHEDULED
        return sum(1 for k, r in self.sched.outcomes.items() if r.status == SCHEDULED and k.startswith("test/"))

    def measure(self) -> dict[str, Any]:
        gc.collect()
        t0 = time.perf_counter()
        c0 = time.process_time()
        asyncio.run(self._run())
        elapsed = time.perf_counter() - t0
        cpu = time.process_time() - c0
        scheduled = self._scheduled()
        return {"scheduled": scheduled, "elapsed_s": round(elapsed, 3), "cpu_s": round(cpu, 3),
                "pods_per_s": round(scheduled / elapsed, 1) if elapsed > 0 else 0.0,
                "pods_per_cpu_s": round(scheduled / cpu, 1) if cpu > 0 else 0.0}


def run(w: DraWorkload, loop: str) -> dict[str, Any]:
    bench = DraBench(w, loop)
    setup_s = bench.setup()
    result = bench.measure()
    return {"workload": w.id, "nodes": w.nodes_with_dra + w.nodes_without_dra, "init_claims": w.init_claims,
            "measure_pods": w.measure_pods, "threshold": w.threshold, "setup_s": round(setup_s, 3), "loop": loop,
            **result, "peak_rss_mib": round(peak_rss_mib(), 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.dra", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", action="append", default=[],
                        help="workload id (Name/variant); default: all")
    parser.add_argument("--loop", choices=("operator", "sim"), default="operator")
    parser.add_argument("--repeat", type=int, default=1, help="run each workload N times; report the median run "
                        "(by pods/s), with every run's pods/s")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")
    chosen = [w for w in WORKLOADS if not args.workload or w.id in args.workload]
    if not chosen:
        parser.error(f"no such workload: {args.workload}; known: {[w.id for w in WORKLOADS]}")
    rows = []
    print(f"{'workload':58} {'pods':>6} {'scheduled':>9} {'pods/s':>8} {'/cpu-s':>8} {'upstream threshold':>18}")
    for w in chosen:
        runs = sorted((run(w, args.loop) for _ in range(args.repeat)), key=lambda r: r["pods_per_s"])
        r = {**runs[len(runs) // 2], "runs_pods_per_s": [x["pods_per_s"] for x in runs],
             "runs_pods_per_cpu_s": [x["pods_per_cpu_s"] for x in runs]}
        rows.append(r)
        print(f"{r['workload']:58} {r['measure_pods']:>6} {r['scheduled']:>9} {r['pods_per_s']:>8} "
              f"{r['pods_per_cpu_s']:>8} {r['threshold'] or '-':>18}", flush=True)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    out = RESULTS_DIR / "latest-dra.json"
    out.write_text(json.dumps({"machine": machine(), "commit": git_commit(), "results": rows}, indent=1) + "\n")
    print(f"written to {out}")
    return 0 if all(r["scheduled"] == r["measure_pods"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
