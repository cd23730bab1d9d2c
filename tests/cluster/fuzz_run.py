"""Running one fuzz case: upstream kube-scheduler on the real API server, kubeberth simulate beside it.

The case's objects but its pending pods are created (differential.py's machinery), then
kube-scheduler starts with the case's profile and `schedule_one.go` logging at verbosity 10. Each
pending pod is then, one at a time: created on the API server; given time until it is bound or
found unschedulable (the runner plays the kubelet: it ends the graceful deletions of victims and
starts the pods the scheduler bound); and given to `simulate` together with the cluster as the API
server returned it just before, the pod as the API server returned it, and the case's profile.
A pod upstream left unschedulable is deleted before the next one, so that each step decides one
pod on a cluster both schedulers saw alike.
"""

from __future__ import annotations

import asyncio
import copy
import io
import json
import time
from dataclasses import dataclass, field
from typing import Any

from kubeberth.simulate import simulate

from .control_plane import ADMIN_TOKEN, ControlPlane, Process
from .differential import create_objects, observe, play_kubelet, reset, scheduler_config
from .fuzz_judge import Decision, Known, Verdict, attempts, explain, judge, plugin_scores
from .kube import ApiError, Kube, as_created

# What simulate is given: every kind the scheduler reads that a case holds (apiVersion, plural).
SNAPSHOT_KINDS = {"Namespace": ("v1", "namespaces"), "PriorityClass": ("scheduling.k8s.io/v1", "priorityclasses"),
                  "Node": ("v1", "nodes"), "Pod": ("v1", "pods"),
                  "PodDisruptionBudget": ("policy/v1", "poddisruptionbudgets"), "Service": ("v1", "services"),
                  "ReplicaSet": ("apps/v1", "replicasets"), "StorageClass": ("storage.k8s.io/v1", "storageclasses"),
                  "PersistentVolume": ("v1", "persistentvolumes"),
                  "PersistentVolumeClaim": ("v1", "persistentvolumeclaims"),
                  "CSINode": ("storage.k8s.io/v1", "csinodes"), "CSIDriver": ("storage.k8s.io/v1", "csidrivers"),
                  "CSIStorageCapacity": ("storage.k8s.io/v1", "csistoragecapacities")}
OTHER_SEEDS = range(1, 8)
LOG_NAME = "kube-scheduler-fuzz"


@dataclass
class PodReport:
    pod: str
    upstream: Decision
    kubeberth: Decision
    verdict: Verdict
    scores: dict[str, int] | None = None
    plugins: dict[str, dict[str, int]] = field(default_factory=dict)
    inputs: list[dict[str, Any]] = field(default_factory=list)  # what simulate was given, kept on a disagreement


@dataclass
class CaseReport:
    seed: int
    index: int
    error: str = ""  # the case could not be run (a refused object, kube-scheduler exited)
    pods: list[PodReport] = field(default_factory=list)
    seconds: float = 0.0


async def cluster_objects(kube: Kube) -> list[dict[str, Any]]:
    """Every object simulate reads, as the API server returns it (with kind and apiVersion)."""
    out = []
    for kind, (api_version, plural) in SNAPSHOT_KINDS.items():
        for item in await kube.list(plural):
            out.append({"apiVersion": api_version, "kind": kind, **item})
    return out


async def create_pending(kube: Kube, pod: dict[str, Any]) -> dict[str, Any]:
    body = as_created(pod)
    ns = body["metadata"].get("namespace") or "default"
    created = await kube.create("pods", body, ns)
    return {"apiVersion": "v1", "kind": "Pod", **created}


async def settle(kube: Kube, key: str, sched: Process, terminating: set[str], *, timeout: float = 30.0,
                 quiet: float = 1.0, quiet_nominated: float = 6.0) -> dict[str, tuple[Any, ...]]:
    """Waits until `key` is bound with no deletion in flight, or has stayed unschedulable (its
    condition written, nothing changing) for `quiet` seconds (longer while it is nominated:
    its victims are going and it will be retried after its backoff)."""
    deadline = time.monotonic() + timeout
    last: dict[str, tuple[Any, ...]] = {}
    since = time.monotonic()
    while time.monotonic() < deadline:
        if not sched.alive():
            raise RuntimeError(f"kube-scheduler exited: {sched.tail(15)}")
        state = await play_kubelet(kube, await observe(kube), terminating)
        node, _, nominated, message = state.get(key, (None, False, None, ""))
        deleting = any(v[1] for k, v in state.items() if k not in terminating)
        if state != last:
            last, since = state, time.monotonic()
        if node and not deleting:
            return state
        waited = time.monotonic() - since
        if message and not deleting and waited >= (quiet_nominated if nominated else quiet):
            return state
        await asyncio.sleep(0.05)
    return last


def upstream_decision(key: str, before: set[str], after: dict[str, tuple[Any, ...]]) -> Decision:
    victims = sorted(k for k in before if k not in after)
    node, _, _, message = after.get(key, (None, False, None, "the pod is gone"))
    if node:
        return Decision("Scheduled", node, victims)
    return Decision("Unschedulable", None, victims, message)


def kubeberth_decision(objects: list[dict[str, Any]], key: str, seed: int) -> Decision:
    outcomes = simulate(copy.deepcopy(objects), seed=seed, warn=io.StringIO())
    for o in outcomes:
        if o.pod == key:
            if o.status == "Scheduled":
                return Decision("Scheduled", o.node, list(o.victims))
            return Decision(o.status, None, list(o.victims), o.message)
    return Decision("Missing", None, [], "simulate gave no outcome")


def _key(obj: dict[str, Any]) -> str:
    return f"{obj['metadata'].get('namespace') or 'default'}/{obj['metadata']['name']}"


async def start_bound_pod(kube: Kube, key: str) -> None:
    """What a kubelet would do: the pod runs, with a start time (preemption's tie-breaker)."""
    ns, name = key.split("/", 1)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    await kube.patch("pods", name, {"status": {"phase": "Running", "startTime": now}}, ns, subresource="status")


async def set_pdb_status(kube: Kube, case: dict[str, Any]) -> None:
    """No disruption controller runs here: the PDBs' status is the case's."""
    for obj in case["objects"]:
        if obj.get("kind") == "PodDisruptionBudget" and obj.get("status"):
            meta = obj["metadata"]
            await kube.patch("poddisruptionbudgets", meta["name"], {"status": obj["status"]},
                             meta.get("namespace") or "default", subresource="status")


def start_scheduler(plane: ControlPlane, config: dict[str, Any]) -> Process:
    path = plane.dir / "kube-scheduler-fuzz.yaml"
    path.write_text(json.dumps(config))
    return Process.start(LOG_NAME, [str(plane.bin / "kube-scheduler"), f"--config={path}", "--secure-port=0",
                                    "-v=1", "--vmodule=schedule_one=10"], plane.dir)


def read_log(sched: Process, offset: int) -> str:
    with open(sched.log_path, "rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace")


async def run_case(plane: ControlPlane, kube: Kube, case: dict[str, Any], seed: int, index: int,
                   known: list[Known]) -> CaseReport:
    started = time.monotonic()
    report = CaseReport(seed, index)
    kubeconfig = plane.dir / "kube-scheduler.kubeconfig"
    if not kubeconfig.exists():
        plane.write_kubeconfig(kubeconfig, token=ADMIN_TOKEN)
    config = scheduler_config(case, kubeconfig)
    if isinstance(config, str):
        report.error = config
        return report
    await reset(kube)
    created = await create_objects(kube, case)
    if created.refused:
        report.error = created.refused
        return report
    await set_pdb_status(kube, case)
    profiles = [o for o in case["objects"] if o.get("kind") == "SchedulingProfile"]
    sched = start_scheduler(plane, config)
    try:
        for pod in created.pending:
            report.pods.append(await run_pod(kube, sched, pod, profiles, created.terminating, seed, known))
    except (ApiError, RuntimeError) as exc:
        report.error = str(exc)
    finally:
        sched.stop()
        report.seconds = time.monotonic() - started
    return report


async def run_pod(kube: Kube, sched: Process, pod: dict[str, Any], profiles: list[dict[str, Any]],
                  terminating: set[str], seed: int, known: list[Known]) -> PodReport:
    key = _key(pod)
    snapshot = await cluster_objects(kube)
    before = {_key(o) for o in snapshot if o["kind"] == "Pod"}
    offset = sched.log_path.stat().st_size
    as_returned = await create_pending(kube, pod)
    after = await settle(kube, key, sched, terminating)
    up = upstream_decision(key, before, after)
    log = read_log(sched, offset)
    tried = attempts(log, key)
    scores = tried[-1] if tried else None
    objects = [*profiles, *snapshot, as_returned]
    ours = await asyncio.to_thread(kubeberth_decision, objects, key, seed)
    others = None
    if up.node != ours.node and up.status == ours.status == "Scheduled" and (not scores or up.victims):
        others = [await asyncio.to_thread(kubeberth_decision, objects, key, s) for s in OTHER_SEEDS]
    verdict = explain(judge(up, ours, scores, others), up, ours, known, scores)
    nodes = {n for n in (up.node, ours.node) if n}
    report = PodReport(key, up, ours, verdict, scores)
    if verdict.kind != "agree":
        report.plugins, report.inputs = plugin_scores(log, key, nodes), objects
    ns, name = key.split("/", 1)
    if up.status == "Scheduled":
        await start_bound_pod(kube, key)
    else:  # the next pod is decided without this one waiting in upstream's queue
        await kube.delete("pods", name, ns, grace_period=0)
        for _ in range(100):
            if await kube.get_or_none("pods", name, ns) is None:
                break
            await asyncio.sleep(0.05)
    return report
