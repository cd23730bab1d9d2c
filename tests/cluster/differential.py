"""Differential runner: each conformance case through upstream kube-scheduler and through kubeberth.

Upstream: the case's objects are created on a real API server (pending pods included), then
kube-scheduler is started with a KubeSchedulerConfiguration made from the case's
SchedulingProfiles; it lists everything before its first cycle, so every pending pod is queued
at once, as in `kubeberth simulate`. Its queue receives equal-priority pods in the order the
API server lists them (namespace, then name), so kubeberth is given the same order. The runner
plays the kubelet for preemption victims (it confirms their graceful deletion) and waits until
nothing changes any more.

kubeberth: `simulate` on the same objects, with several seeds: where upstream may pick any of
equally scored nodes, so may kubeberth, and a node is judged against all the seeds' choices.

Decisions compared per pod: Scheduled (and where), Unschedulable, Evicted; the FailedScheduling
message of unschedulable pods. Disagreements not explained in tests/conformance/differential.yaml
fail the test (test_differential.py); `python -m tests.cluster.differential [CASE...]` prints the
report.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import io
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kubeberth.simulate import simulate

from .control_plane import ADMIN_TOKEN, ROOT, ControlPlane, Process, kubectl
from .kube import CLUSTER_SCOPED, ApiError, Kube, as_created

CASE_DIRS = [ROOT / "tests" / "conformance" / "cases", ROOT.parent / "shared" / "conformance" / "cases"]
KNOWN = ROOT / "tests" / "conformance" / "differential.yaml"
SEEDS = range(8)
# The kinds a case holds, in the order they are created (what others refer to first).
KIND_ORDER = ["Namespace", "PriorityClass", "RuntimeClass", "StorageClass", "CSINode", "PersistentVolume",
              "PersistentVolumeClaim", "Node", "ReplicaSet", "StatefulSet", "Service", "PodDisruptionBudget", "Pod"]
RESOURCES = {"Namespace": "namespaces", "PriorityClass": "priorityclasses",
             "RuntimeClass": "runtimeclasses", "StorageClass": "storageclasses",
             "CSINode": "csinodes", "PersistentVolume": "persistentvolumes",
             "PersistentVolumeClaim": "persistentvolumeclaims", "Node": "nodes", "ReplicaSet": "replicasets",
             "StatefulSet": "statefulsets", "Service": "services", "PodDisruptionBudget": "poddisruptionbudgets",
             "Pod": "pods"}


@dataclass
class Outcome:
    status: str  # Existing | Scheduled | Unschedulable | Evicted | Ignored
    node: str | None = None
    message: str = ""


@dataclass
class Report:
    case: str
    skipped: str = ""
    disagreements: list[str] = field(default_factory=list)
    agreements: int = 0
    seconds: float = 0.0


def load_cases(names: list[str] | None = None) -> list[tuple[str, dict[str, Any]]]:
    seen: dict[str, dict[str, Any]] = {}
    for d in CASE_DIRS:
        for path in sorted(d.glob("*.yaml")) if d.is_dir() else []:
            case = yaml.safe_load(path.read_text())
            seen.setdefault(case.get("name") or path.stem, case)
    return [(n, c) for n, c in sorted(seen.items()) if not names or n in names]


# --- upstream's configuration, from the case's SchedulingProfiles ---

def scheduler_config(case: dict[str, Any], kubeconfig: Path) -> dict[str, Any] | str:
    """A KubeSchedulerConfiguration, or why the case cannot be given to kube-scheduler."""
    profiles = [o for o in case["objects"] if o.get("kind") == "SchedulingProfile"]
    config: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": 5000, "burst": 5000},
        "leaderElection": {"leaderElect": False}, "profiles": [],
    }
    names = set()
    for p in profiles:
        spec = copy.deepcopy(p.get("spec") or {})
        if spec.get("extenders"):
            return "extenders: the case's extender is not served here"
        for key in ("podInitialBackoffSeconds", "podMaxBackoffSeconds"):
            if key in spec:
                config[key] = spec.pop(key)
        profile = {"schedulerName": spec.pop("schedulerName", "default-scheduler")}
        if spec.get("percentageOfNodesToScore"):
            profile["percentageOfNodesToScore"] = spec["percentageOfNodesToScore"]
        spec.pop("percentageOfNodesToScore", None)
        for key in ("plugins", "pluginConfig"):
            if spec.get(key):
                profile[key] = spec.pop(key)
        if spec:
            return f"profile fields kube-scheduler has no place for: {sorted(spec)}"
        names.add(profile["schedulerName"])
        config["profiles"].append(profile)
    if "default-scheduler" not in names:  # as simulate: the default profile serves default-scheduler
        config["profiles"].append({"schedulerName": "default-scheduler"})
    return config


# --- objects as the API server takes them ---

def pending_order(case: dict[str, Any]) -> list[dict[str, Any]]:
    """The case's objects with pending pods in upstream's queue order (namespace, then name)."""
    objects = [o for o in case["objects"] if o.get("kind") != "Pod" or (o.get("spec") or {}).get("nodeName")]
    pending = [o for o in case["objects"] if o.get("kind") == "Pod" and not (o.get("spec") or {}).get("nodeName")]
    pending.sort(key=lambda o: (o["metadata"].get("namespace") or "default", o["metadata"]["name"]))
    return objects + pending


async def reset(kube: Kube) -> None:
    for ns in await kube.list("namespaces"):
        name = ns["metadata"]["name"]
        await kube.delete_all("pods", name, grace_period=0)
        for kind in ("poddisruptionbudgets", "persistentvolumeclaims", "services", "replicasets", "statefulsets"):
            await kube.delete_all(kind, name)
        if not name.startswith("kube-") and name != "kubeberth-system":
            await kube.patch("namespaces", name, {"metadata": {"labels": None}})
    for kind in ("nodes", "persistentvolumes", "storageclasses", "csinodes", "schedulingprofiles", "runtimeclasses"):
        await kube.delete_all(kind)
    for pc in await kube.list("priorityclasses"):
        if not pc["metadata"]["name"].startswith("system-"):
            await kube.delete("priorityclasses", pc["metadata"]["name"])
    for _ in range(100):  # deletions with finalizers take a moment
        if not await kube.list("persistentvolumes") and not await kube.list("nodes"):
            return
        await asyncio.sleep(0.1)


def priority_classes(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A pod with a bare `spec.priority` is refused by the Priority admission plugin: such pods get
    a PriorityClass of that value (and preemptionPolicy) made for them."""
    made: dict[str, dict[str, Any]] = {}
    for obj in objects:
        spec = obj.get("spec") or {}
        if obj.get("kind") != "Pod" or spec.get("priorityClassName") or spec.get("priority") is None:
            continue
        policy = spec.get("preemptionPolicy") or "PreemptLowerPriority"
        name = f"diff-{spec['priority']}-{policy.lower()}"
        made.setdefault(name, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                               "metadata": {"name": name}, "value": spec["priority"], "preemptionPolicy": policy})
        spec["priorityClassName"] = name
    return list(made.values())


def runtime_classes(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A pod's spec.overhead comes from its RuntimeClass (the API server refuses it otherwise):
    such pods get a RuntimeClass with that overhead made for them."""
    made: dict[str, dict[str, Any]] = {}
    for obj in objects:
        spec = obj.get("spec") or {}
        if obj.get("kind") != "Pod" or not spec.get("overhead"):
            continue
        overhead = spec.pop("overhead")
        name = spec.get("runtimeClassName") or "diff-" + "-".join(
            f"{k}-{v}".lower().replace(".", "-") for k, v in sorted(overhead.items()))
        made.setdefault(name, {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name},
                               "handler": "runc", "overhead": {"podFixed": overhead}})
        spec["runtimeClassName"] = name
    return list(made.values())


async def create_objects(kube: Kube, case: dict[str, Any]) -> tuple[str, set[str]]:
    """Creates the case's objects; returns why the API server refused one (or ""), and the pods
    that were terminating in the case (deleted with a grace period, which no kubelet ends here)."""
    objects = [copy.deepcopy(o) for o in pending_order(case) if o.get("kind") in RESOURCES]
    objects = priority_classes(objects) + runtime_classes(objects) + objects
    objects.sort(key=lambda o: KIND_ORDER.index(o["kind"]))  # stable: pending pods keep their order
    terminating: set[str] = set()
    for obj in objects:
        body = as_created(obj)
        resource = RESOURCES[obj["kind"]]
        ns = None if resource in CLUSTER_SCOPED else (body["metadata"].get("namespace") or "default")
        if resource == "namespaces":
            if await kube.get_or_none("namespaces", body["metadata"]["name"]) is not None:
                await kube.patch("namespaces", body["metadata"]["name"], {"metadata": {
                    "labels": body["metadata"].get("labels")}})
                continue
        elif ns and await kube.get_or_none("namespaces", ns) is None:
            await kube.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        try:
            created = await kube.create(resource, body, ns)
        except ApiError as exc:
            return f"the API server refuses {obj['kind']} {body['metadata'].get('name')}: {exc}", terminating
        name = created["metadata"]["name"]
        status = obj.get("status")
        if status and resource in ("persistentvolumes", "persistentvolumeclaims", "pods"):
            await kube.patch(resource, name, {"status": status}, ns, subresource="status")
        if resource == "pods" and obj["metadata"].get("deletionTimestamp"):
            grace = obj["metadata"].get("deletionGracePeriodSeconds") or 30
            await kube.delete("pods", name, ns, grace_period=max(int(grace), 1))
            terminating.add(f"{ns}/{name}")
    return "", terminating


def _key(pod: dict[str, Any]) -> str:
    return f"{pod['metadata'].get('namespace') or 'default'}/{pod['metadata']['name']}"


def _conditions_message(pod: dict[str, Any]) -> str:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c["type"] == "PodScheduled" and c["status"] == "False":
            return str(c.get("message") or "")
    return ""


async def observe(kube: Kube) -> dict[str, tuple[Any, ...]]:
    state = {}
    for p in await kube.list("pods"):
        state[_key(p)] = (p["spec"].get("nodeName"), bool(p["metadata"].get("deletionTimestamp")),
                          (p.get("status") or {}).get("nominatedNodeName"), _conditions_message(p))
    return state


async def run_upstream(plane: ControlPlane, kube: Kube, case: dict[str, Any], *, quiet: float = 3.0,
                       timeout: float = 60.0) -> dict[str, Outcome] | str:
    kubeconfig = plane.dir / "kube-scheduler.kubeconfig"
    if not kubeconfig.exists():
        plane.write_kubeconfig(kubeconfig, token=ADMIN_TOKEN)
    config = scheduler_config(case, kubeconfig)
    if isinstance(config, str):
        return config
    await reset(kube)
    refused, terminating = await create_objects(kube, case)
    if refused:
        return refused
    (plane.dir / "kube-scheduler.yaml").write_text(json.dumps(config))
    before = await observe(kube)
    sched = Process.start("kube-scheduler", [str(plane.bin / "kube-scheduler"),
                                             f"--config={plane.dir / 'kube-scheduler.yaml'}",
                                             "--secure-port=0", "-v=1"], plane.dir)
    try:
        deadline = time.monotonic() + timeout
        last, since = await observe(kube), time.monotonic()
        while time.monotonic() < deadline:
            if not sched.alive():
                return f"kube-scheduler exited: {sched.tail(15)}"
            await asyncio.sleep(0.2)
            for key, (_, deleting, _, _) in last.items():
                if deleting and key not in terminating:  # the kubelet's part of a graceful deletion
                    ns, name = key.split("/", 1)
                    await kube.delete("pods", name, ns, grace_period=0)
            now = await observe(kube)
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet and not any(
                    t for k, (_, t, _, _) in now.items() if k not in terminating):
                break
    finally:
        sched.stop()
    served = {p["schedulerName"] for p in config["profiles"]}
    out = {}
    for obj in case["objects"]:
        if obj.get("kind") != "Pod":
            continue
        key = _key(obj)
        if key in terminating or (obj["metadata"].get("deletionTimestamp") and key not in last):
            continue  # terminating in the case: compared as far as it decides for the others
        if key not in last:
            out[key] = Outcome("Evicted")
        elif key in before and before[key][0]:
            out[key] = Outcome("Existing", before[key][0])
        elif (obj.get("spec") or {}).get("schedulerName", "default-scheduler") not in served:
            out[key] = Outcome("Ignored")
        elif last[key][0]:
            out[key] = Outcome("Scheduled", last[key][0])
        else:
            out[key] = Outcome("Unschedulable", None, last[key][3])
    return out


def run_kubeberth(case: dict[str, Any]) -> list[dict[str, Outcome]]:
    objects = pending_order(case)
    runs = []
    for seed in SEEDS:
        outcomes = simulate(copy.deepcopy(objects), seed=seed, warn=io.StringIO())
        runs.append({o.pod: Outcome(o.status, o.node, o.message) for o in outcomes})
    return runs


def compare(upstream: dict[str, Outcome], ours: list[dict[str, Outcome]]) -> tuple[int, list[str]]:
    """Agreements, and one line per disagreeing pod. A node agrees when some seed chose it."""
    agree, found = 0, []
    for key, up in upstream.items():
        mine = [run.get(key) for run in ours]
        if any(m is not None and (m.status, m.node) == (up.status, up.node) for m in mine):
            if up.status == "Unschedulable" and all(m is not None and m.message != up.message for m in mine):
                found.append(f"{key}: message: upstream {up.message!r}, kubeberth {mine[0].message!r}")
            else:
                agree += 1
            continue
        choices = sorted({f"{m.status} {m.node or ''}".strip() for m in mine if m is not None})
        found.append(f"{key}: upstream {up.status} {up.node or ''}".rstrip() + f", kubeberth {' | '.join(choices)}")
    return agree, found


def known_disagreements() -> dict[str, dict[str, Any]]:
    if not KNOWN.exists():
        return {}
    return {entry["case"]: entry for entry in yaml.safe_load(KNOWN.read_text()) or []}


async def run_cases(plane: ControlPlane, names: list[str] | None = None) -> list[Report]:
    reports = []
    async with Kube(plane.url, ADMIN_TOKEN, plane.ssl_context()) as kube:
        for name, case in load_cases(names):
            started = time.monotonic()
            report = Report(name)
            upstream = await run_upstream(plane, kube, case)
            if isinstance(upstream, str):
                report.skipped = upstream
            else:
                ours = await asyncio.to_thread(run_kubeberth, case)  # simulate runs a loop of its own
                report.agreements, report.disagreements = compare(upstream, ours)
            report.seconds = time.monotonic() - started
            reports.append(report)
    return reports


def render(reports: list[Report]) -> str:
    known = known_disagreements()
    lines = []
    for r in reports:
        explained = known.get(r.case)
        if r.skipped:
            lines.append(f"SKIP {r.case}: {r.skipped}" + (" (explained)" if explained else ""))
        elif r.disagreements:
            lines.append(f"DIFF {r.case}" + (" (explained)" if explained else "") + f" [{r.seconds:.0f}s]")
            lines += [f"     {d}" for d in r.disagreements]
        else:
            lines.append(f"ok   {r.case}: {r.agreements} pods agree [{r.seconds:.0f}s]")
    same = sum(1 for r in reports if not r.skipped and not r.disagreements)
    lines.append(f"{same} agree, {sum(1 for r in reports if r.disagreements)} disagree, "
                 f"{sum(1 for r in reports if r.skipped)} not run, of {len(reports)} cases")
    return "\n".join(lines)


def unexplained(reports: list[Report]) -> list[Report]:
    known = known_disagreements()
    return [r for r in reports if (r.skipped or r.disagreements) and r.case not in known]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.cluster.differential", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", help="case names (default: all)")
    args = parser.parse_args(argv)
    with ControlPlane() as plane:
        kubectl(plane, "apply", "-f", "crds/")
        reports = asyncio.run(run_cases(plane, args.cases or None))
    print(render(reports))
    return 1 if unexplained(reports) else 0


if __name__ == "__main__":
    sys.exit(main())
