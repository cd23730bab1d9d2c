"""Differential runner: each conformance case through upstream kube-scheduler and through kubeberth.

Upstream: the case's nodes, bound pods and other objects are created on a real API server, then
kube-scheduler is started with a KubeSchedulerConfiguration made from the case's
SchedulingProfiles, and the pending pods are created one at a time in the order kubeberth's queue
pops them (priority, then creation, as `simulate` reads them), each once the previous one was
bound or found unschedulable. Creating them all before the scheduler starts would leave the order
of equal-priority pods to the queue timestamps kube-scheduler takes while listing them, which tie
on coarse clocks and then come out in any order. The runner plays the kubelet for preemption
victims (it confirms their graceful deletion) and waits until nothing changes any more.

A case with `featureGates` (e.g. GenericWorkload=true) runs on a control plane started with them
(kube-apiserver's --feature-gates, and --runtime-config=scheduling.k8s.io/v1beta1=true for
GenericWorkload), kube-scheduler with the same --feature-gates, and simulate under them; its
PodGroups are created before its pods, a group's pods one after the other without waiting for
each (a gang's first pods wait for the rest), and each PodGroup's PodGroupInitiallyScheduled
condition is compared too (as `podgroup NAMESPACE/NAME`): the one kube-scheduler decided, which
is not always the one it leaves (upstream_groups.py). The wait for nothing changing any more
watches the conditions beside the pods. `main` starts one control plane per set of gates among
the cases.
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

from kubeberth import features
from kubeberth.model import ModelError
from kubeberth.plugins.dynamic_resources.claims import claim_from_template
from kubeberth.priority import PriorityResolver
from kubeberth.whatif.engine import by_creation, run_simulation

from .control_plane import ADMIN_TOKEN, ROOT, ControlPlane, Process, kubectl
from .kube import CLUSTER_SCOPED, ApiError, Kube, as_created, reset_devices
from .upstream_groups import ConditionWatch, condition_of

CASE_DIRS = [ROOT / "tests" / "conformance" / "cases", ROOT.parent / "shared" / "conformance" / "cases"]
KNOWN = ROOT / "tests" / "conformance" / "differential.yaml"
SEEDS = range(8)
# The kinds a case holds, in the order they are created (what others refer to first).
KIND_ORDER = ["Namespace", "PriorityClass", "RuntimeClass", "StorageClass", "CSINode", "CSIDriver",
              "CSIStorageCapacity", "PersistentVolume",
              "PersistentVolumeClaim", "Node", "ReplicaSet", "StatefulSet", "Service", "PodDisruptionBudget",
              "DeviceClass", "ResourceSlice", "DeviceTaintRule", "ResourceClaimTemplate", "ResourceClaim", "PodGroup",
              "Pod"]
RESOURCES = {"Namespace": "namespaces", "PriorityClass": "priorityclasses",
             "RuntimeClass": "runtimeclasses", "StorageClass": "storageclasses",
             "CSINode": "csinodes", "CSIDriver": "csidrivers", "CSIStorageCapacity": "csistoragecapacities",
             "PersistentVolume": "persistentvolumes",
             "PersistentVolumeClaim": "persistentvolumeclaims", "Node": "nodes", "ReplicaSet": "replicasets",
             "StatefulSet": "statefulsets", "Service": "services", "PodDisruptionBudget": "poddisruptionbudgets",
             "DeviceClass": "deviceclasses", "ResourceSlice": "resourceslices", "DeviceTaintRule": "devicetaintrules",
             "ResourceClaimTemplate": "resourceclaimtemplates", "ResourceClaim": "resourceclaims",
             "PodGroup": "podgroups", "Pod": "pods"}
GROUP_PREFIX = "podgroup "


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

def is_pending(obj: dict[str, Any]) -> bool:
    return obj.get("kind") == "Pod" and not (obj.get("spec") or {}).get("nodeName")


def queue_order(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pending pods among `objects` in the order kubeberth's queue pops them: higher priority first,
    then as `simulate` queues them (creationTimestamp, else document order)."""
    resolver = PriorityResolver()
    for obj in objects:
        if obj.get("kind") == "PriorityClass":
            resolver.put(obj)

    def priority(pod: dict[str, Any]) -> int:
        try:
            return resolver.resolve(pod.get("spec") or {})[0]
        except ModelError:
            return 0

    return sorted(by_creation([o for o in objects if is_pending(o)]), key=lambda p: -priority(p))


async def reset(kube: Kube) -> None:
    for ns in await kube.list("namespaces"):
        name = ns["metadata"]["name"]
        await kube.delete_all("pods", name, grace_period=0)
        for kind in ("poddisruptionbudgets", "persistentvolumeclaims", "services", "replicasets", "statefulsets",
                     "csistoragecapacities"):
            await kube.delete_all(kind, name)
        if not name.startswith("kube-") and name != "kubeberth-system":
            await kube.patch("namespaces", name, {"metadata": {"labels": None}})
    await reset_devices(kube)
    for kind in ("nodes", "persistentvolumes", "storageclasses", "csinodes", "csidrivers", "schedulingprofiles",
                 "runtimeclasses"):
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


@dataclass
class Created:
    refused: str = ""  # why the API server refused an object
    pending: list[dict[str, Any]] = field(default_factory=list)  # as the API server takes them
    terminating: set[str] = field(default_factory=set)  # deleted with a grace period no kubelet ends here


async def create_objects(kube: Kube, case: dict[str, Any]) -> Created:
    """Creates the case's objects but its pending pods, which are returned in queue order."""
    objects = [copy.deepcopy(o) for o in case["objects"] if o.get("kind") in RESOURCES]
    created = Created(pending=queue_order(objects))  # before the classes below rename priorities
    objects = priority_classes(objects) + runtime_classes(objects) + objects
    pending = {id(o) for o in created.pending}
    for obj in sorted((o for o in objects if id(o) not in pending), key=lambda o: KIND_ORDER.index(o["kind"])):
        created.refused = await create_one(kube, obj, created.terminating)
        if created.refused:
            break
    return created


async def create_one(kube: Kube, obj: dict[str, Any], terminating: set[str]) -> str:
    """Creates one object (its namespace first, its status after); returns why it was refused."""
    body = as_created(obj)
    resource = RESOURCES[obj["kind"]]
    ns = None if resource in CLUSTER_SCOPED else (body["metadata"].get("namespace") or "default")
    if resource == "namespaces":
        if await kube.get_or_none("namespaces", body["metadata"]["name"]) is not None:
            await kube.patch("namespaces", body["metadata"]["name"], {"metadata": {
                "labels": body["metadata"].get("labels")}})
            return ""
    elif ns and await kube.get_or_none("namespaces", ns) is None:
        await kube.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    try:
        created = await kube.create(resource, body, ns)
    except ApiError as exc:
        return f"the API server refuses {obj['kind']} {body['metadata'].get('name')}: {exc}"
    name = created["metadata"]["name"]
    status = obj.get("status")
    if status and resource in ("persistentvolumes", "persistentvolumeclaims", "pods", "resourceclaims"):
        await kube.patch(resource, name, {"status": status}, ns, subresource="status")
    if resource == "pods":
        await play_claim_controller(kube, created)
    if resource == "pods" and obj["metadata"].get("deletionTimestamp"):
        grace = obj["metadata"].get("deletionGracePeriodSeconds") or 30
        await kube.delete("pods", name, ns, grace_period=max(int(grace), 1))
        terminating.add(f"{ns}/{name}")
    return ""


async def play_claim_controller(kube: Kube, pod: dict[str, Any]) -> None:
    """The resourceclaim controller's part (none runs here): a claim for each template the pod
    names, owned by the pod, then the pod's status.resourceClaimStatuses naming it."""
    ns = pod["metadata"]["namespace"]
    statuses = []
    for pc in (pod.get("spec") or {}).get("resourceClaims") or ():
        template = pc.get("resourceClaimTemplateName")
        if not template:
            continue
        found = await kube.get_or_none("resourceclaimtemplates", template, ns)
        if found is None:
            continue
        body = claim_from_template(pod, pc["name"], found)
        body["metadata"].pop("uid", None)
        claim = await kube.create("resourceclaims", body, ns)
        statuses.append({"name": pc["name"], "resourceClaimName": claim["metadata"]["name"]})
    if statuses:
        await kube.patch("pods", pod["metadata"]["name"], {"status": {"resourceClaimStatuses": statuses}}, ns,
                         subresource="status")


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


async def play_kubelet(kube: Kube, state: dict[str, tuple[Any, ...]],
                       terminating: set[str]) -> dict[str, tuple[Any, ...]]:
    """Ends the graceful deletions a scheduler started (a kubelet's part); returns `state`."""
    for key, (_, deleting, _, _) in state.items():
        if deleting and key not in terminating:
            ns, name = key.split("/", 1)
            await kube.delete("pods", name, ns, grace_period=0)
    return state


def case_gates(case: dict[str, Any]) -> str:
    """The case's featureGates as --feature-gates takes them ("" for none)."""
    gates = case.get("featureGates") or ""
    if isinstance(gates, dict):
        gates = ",".join(f"{k}={str(v).lower()}" for k, v in gates.items())
    return str(gates)


def group_condition(group: dict[str, Any] | None) -> Outcome:
    return condition_outcome(condition_of(group or {}))


def condition_outcome(cond: dict[str, Any] | None) -> Outcome:
    if cond is None:
        return Outcome("NoCondition")
    return Outcome(f"{cond.get('status')}/{cond.get('reason')}: {cond.get('message') or ''}")


async def reset_groups(kube: Kube) -> None:
    """PodGroups gone (their podgroup-protection finalizer taken off: no controller runs here)."""
    for g in await kube.list("podgroups"):
        name, ns = g["metadata"]["name"], g["metadata"].get("namespace") or "default"
        await kube.delete("podgroups", name, ns)
        if await kube.get_or_none("podgroups", name, ns) is not None:
            await kube.patch("podgroups", name, {"metadata": {"finalizers": None}}, ns)


async def run_upstream(plane: ControlPlane, kube: Kube, case: dict[str, Any], *, quiet: float = 3.0,
                       timeout: float = 60.0, per_pod: float = 5.0) -> dict[str, Outcome] | str:
    gates = case_gates(case)
    if gates != plane.feature_gates:
        return f"the case's feature gates {gates!r} are not the control plane's {plane.feature_gates!r}"
    kubeconfig = plane.dir / "kube-scheduler.kubeconfig"
    if not kubeconfig.exists():
        plane.write_kubeconfig(kubeconfig, token=ADMIN_TOKEN)
    config = scheduler_config(case, kubeconfig)
    if isinstance(config, str):
        return config
    await reset(kube)
    if gates:
        await reset_groups(kube)
    created = await create_objects(kube, case)
    if created.refused:
        return created.refused
    (plane.dir / "kube-scheduler.yaml").write_text(json.dumps(config))
    if not gates:
        return await schedule_upstream(plane, kube, case, config, created, None, quiet, timeout, per_pod)
    async with ConditionWatch(kube) as watch:  # from before kube-scheduler starts
        return await schedule_upstream(plane, kube, case, config, created, watch, quiet, timeout, per_pod)


async def schedule_upstream(plane: ControlPlane, kube: Kube, case: dict[str, Any], config: dict[str, Any],
                            created: Created, watch: ConditionWatch | None, quiet: float, timeout: float,
                            per_pod: float) -> dict[str, Outcome] | str:
    """kube-scheduler started on the created objects, the pending pods created as the module says,
    and the outcome once nothing changes any more."""
    gates = case_gates(case)
    terminating = created.terminating
    before = await observe(kube)
    served = {p["schedulerName"] for p in config["profiles"]}
    sched = Process.start("kube-scheduler", [str(plane.bin / "kube-scheduler"),
                                             f"--config={plane.dir / 'kube-scheduler.yaml'}",
                                             *([f"--feature-gates={gates}"] if gates else []),
                                             "--secure-port=0", "-v=1"], plane.dir)
    try:
        deadline = time.monotonic() + timeout
        for i, pod in enumerate(created.pending):
            refused = await create_one(kube, pod, terminating)
            if refused:
                return refused
            key = _key(pod)
            if key in terminating or (pod.get("spec") or {}).get("schedulerName", "default-scheduler") not in served:
                continue
            group = _group_of(pod)
            if group and any(_group_of(p) == group for p in created.pending[i + 1:]):
                continue  # the group's later pods come at once: its first ones may wait for them
            settle = min(deadline, time.monotonic() + per_pod)
            while time.monotonic() < settle:  # until it is bound, or found unschedulable (or stuck in PreBind)
                if not sched.alive():
                    return f"kube-scheduler exited: {sched.tail(15)}"
                state = await play_kubelet(kube, await observe(kube), terminating)
                if key not in state or state[key][0] or state[key][3]:
                    break
                await asyncio.sleep(0.05)
        last, since = await observe(kube), time.monotonic()
        conditions = await observe_groups(kube, gates)
        while time.monotonic() < deadline:
            if not sched.alive():
                return f"kube-scheduler exited: {sched.tail(15)}"
            await asyncio.sleep(0.2)
            now = await play_kubelet(kube, await observe(kube), terminating)
            now_conditions = await observe_groups(kube, gates)
            if now != last or now_conditions != conditions:
                last, conditions, since = now, now_conditions, time.monotonic()
            elif time.monotonic() - since >= quiet and not any(
                    t for k, (_, t, _, _) in now.items() if k not in terminating):
                break
    finally:
        sched.stop()
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
    if watch is not None:  # the condition upstream decided (upstream_groups.py), not a later stale write
        for key, cond in (await watch.decided(await kube.list("podgroups"))).items():
            out[GROUP_PREFIX + key] = condition_outcome(cond)
    return out


def _group_of(pod: dict[str, Any]) -> str:
    return str(((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName") or "")


async def observe_groups(kube: Kube, gates: str) -> dict[str, str]:
    """Each PodGroup's condition (none without feature gates: no PodGroups are served then)."""
    if not gates:
        return {}
    return {_key(g): group_condition(g).status for g in await kube.list("podgroups")}


def run_kubeberth(case: dict[str, Any]) -> list[dict[str, Outcome]]:
    objects = case["objects"]
    gates = case_gates(case)
    runs = []
    for seed in SEEDS:
        with features.override(features.FeatureGates.parse(gates)):
            outcomes, sched = run_simulation(copy.deepcopy(objects), seed=seed, warn=io.StringIO())
        run = {o.pod: Outcome(o.status, o.node, o.message) for o in outcomes}
        if gates:
            for g in sched.ctx.objects.list("PodGroup"):
                run[GROUP_PREFIX + _key(dict(g))] = group_condition(dict(g))
        runs.append(run)
    return runs


def pod_groups(case: dict[str, Any]) -> dict[str, list[str]]:
    """PodGroup name -> the keys of the case's pending pods naming it."""
    out: dict[str, list[str]] = {}
    for obj in case["objects"]:
        if is_pending(obj) and _group_of(obj):
            out.setdefault(f"{obj['metadata'].get('namespace') or 'default'}/{_group_of(obj)}", []).append(_key(obj))
    return out


def compare(upstream: dict[str, Outcome], ours: list[dict[str, Outcome]],
            groups: dict[str, list[str]] | None = None) -> tuple[int, list[str]]:
    """Agreements, and one line per disagreeing pod. A node agrees when some seed chose it. The pods
    of a group agree together when some seed gave them upstream's outcomes in another order of
    the pods (which of a released gang's pods upstream takes first is its queue's map order)."""
    agree, found = 0, []
    settled: set[str] = set()
    for keys in (groups or {}).values():
        wanted = sorted(str(upstream.get(k)) for k in keys)
        if any(sorted(str(run.get(k)) for k in keys) == wanted for run in ours):
            settled.update(keys)
            agree += len(keys)
    for key, up in upstream.items():
        if key in settled:
            continue
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
    """The cases (all, or those named) whose feature gates are the plane's."""
    reports = []
    async with Kube(plane.url, ADMIN_TOKEN, plane.ssl_context()) as kube:
        for name, case in load_cases(names):
            if case_gates(case) != plane.feature_gates:
                continue
            started = time.monotonic()
            report = Report(name)
            upstream = await run_upstream(plane, kube, case)
            if isinstance(upstream, str):
                report.skipped = upstream
            else:
                ours = await asyncio.to_thread(run_kubeberth, case)  # simulate runs a loop of its own
                report.agreements, report.disagreements = compare(upstream, ours, pod_groups(case))
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
    reports = []
    for gates in sorted({case_gates(c) for _, c in load_cases(args.cases or None)}):
        with ControlPlane(feature_gates=gates) as plane:
            kubectl(plane, "apply", "-f", "crds/")
            reports += asyncio.run(run_cases(plane, args.cases or None))
    print(render(reports))
    return 1 if unexplained(reports) else 0


if __name__ == "__main__":
    sys.exit(main())
