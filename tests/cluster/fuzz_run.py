"""Running one fuzz case: upstream kube-scheduler on the real API server, kubeberth simulate beside it.

The case's objects but its pending pods are created (differential.py's machinery), then
kube-scheduler starts with the case's profile and `schedule_one.go` logging at verbosity 10. Each
pending pod is then, one at a time: created on the API server; given time until it is bound or
found unschedulable (the runner plays the kubelet: it ends the graceful deletions of victims and
starts the pods the scheduler bound; a preemptor that no event re-queued after its victims went is
given until the queue's leftover flush has retried it, kube-scheduler running with
--pod-max-in-unschedulable-pods-duration=1s); and given to `simulate` together with the cluster as the API
server returned it just before, the pod as the API server returned it, and the case's profile.
A pod upstream left unschedulable is deleted before the next one, so that each step decides one
pod on a cluster both schedulers saw alike.

With feature gates (the workload flavour: `featureGates` in the case), kube-scheduler runs with
them and simulate under them, PodGroups are part of the cluster both are given, and a step is a
unit: one pod, or a PodGroup and all its pods (created together, judged together: every pod's
outcome and the group's PodGroupInitiallyScheduled condition). A pod neither bound nor given a
PodScheduled=False condition (a gang short of pods) is `Pending` on both sides.
"""

from __future__ import annotations

import asyncio
import copy
import io
import json
import time
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from kubeberth import features
from kubeberth.plugins.topology_placement_generator import offered_first
from kubeberth.scheduler import PENDING
from kubeberth.whatif.engine import run_simulation

from .control_plane import ADMIN_TOKEN, ControlPlane, Process
from .differential import create_objects, observe, play_kubelet, reset, scheduler_config
from .fuzz_judge import (
    Decision,
    Known,
    Verdict,
    attempts,
    awaiting_flush,
    explain,
    judge,
    judge_group,
    judge_group_victims,
    plugin_scores,
)
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
POD_GROUPS = {"PodGroup": ("scheduling.k8s.io/v1beta1", "podgroups")}  # read with GenericWorkload on
OTHER_SEEDS = range(1, 8)
# a group's step tries these until one places every pod as upstream did (a tie among n nodes is
# missed by all of them with odds ((n-1)/n)**24: about 1 in 17000 for three nodes)
GROUP_OTHER_SEEDS = range(1, 25)
LOG_NAME = "kube-scheduler-fuzz"
# kube-scheduler's queue retries a pod left among its unschedulable pods once it has been there
# this long (--pod-max-in-unschedulable-pods-duration; 5 min by default, far past a step), at its
# next leftover flush (every FLUSH_PERIOD seconds): settle waits for that retry of a preemptor no
# event re-queued, which simulate makes too (its settle rounds)
MAX_IN_UNSCHEDULABLE = 1.0
FLUSH_PERIOD = 30.0


@dataclass
class PodReport:
    pod: str
    upstream: Decision
    kubeberth: Decision
    verdict: Verdict
    scores: dict[str, int] | None = None
    plugins: dict[str, dict[str, int]] = field(default_factory=dict)
    inputs: list[dict[str, Any]] = field(default_factory=list)  # what simulate was given, kept on a disagreement

    @property
    def is_group(self) -> bool:
        """A PodGroup's condition (judged beside its pods), not a pod."""
        return self.pod.startswith(GROUP_PREFIX)


GROUP_PREFIX = "podgroup "


@dataclass
class CaseReport:
    seed: int
    index: int
    error: str = ""  # the case could not be run (a refused object, kube-scheduler exited)
    pods: list[PodReport] = field(default_factory=list)
    seconds: float = 0.0


async def cluster_objects(kube: Kube, groups: bool = False) -> list[dict[str, Any]]:
    """Every object simulate reads, as the API server returns it (with kind and apiVersion);
    `groups`: PodGroups too."""
    out = []
    for kind, (api_version, plural) in {**SNAPSHOT_KINDS, **(POD_GROUPS if groups else {})}.items():
        for item in await kube.list(plural):
            out.append({"apiVersion": api_version, "kind": kind, **item})
    return out


async def create_pending(kube: Kube, pod: dict[str, Any]) -> dict[str, Any]:
    body = as_created(pod)
    ns = body["metadata"].get("namespace") or "default"
    created = await kube.create("pods", body, ns)
    return {"apiVersion": "v1", "kind": "Pod", **created}


async def create_group(kube: Kube, group: dict[str, Any]) -> dict[str, Any]:
    created = await kube.create("podgroups", as_created(group), group["metadata"].get("namespace") or "default")
    return {"apiVersion": POD_GROUPS["PodGroup"][0], "kind": "PodGroup", **created}


async def settle(kube: Kube, keys: list[str], sched: Process, terminating: set[str], *, timeout: float = 30.0,
                 quiet: float = 1.0, quiet_nominated: float = 6.0, quiet_held: float = 3.0,
                 log_offset: int | None = None, flush_timeout: float = FLUSH_PERIOD + MAX_IN_UNSCHEDULABLE + 8.0
                 ) -> dict[str, tuple[Any, ...]]:
    """Waits until the pods `keys` are bound with no deletion in flight, or each is bound or has
    stayed unschedulable (its condition written, nothing changing) for `quiet` seconds (longer while
    one is nominated: its victims are going and it will be retried after its backoff), or nothing
    has changed for `quiet_held` seconds (pods a PreEnqueue plugin holds back get no condition).
    With `log_offset` (where kube-scheduler's log stood when the step began), a nominated pod that
    upstream's queue left waiting for its leftover flush (fuzz_judge.awaiting_flush: no event
    re-queued it after its victims went) is waited for until that flush has retried it, up to
    `flush_timeout` seconds from the start."""
    started = time.monotonic()
    deadline = started + timeout
    last: dict[str, tuple[Any, ...]] = {}
    since = time.monotonic()
    while time.monotonic() < deadline:
        if not sched.alive():
            raise RuntimeError(f"kube-scheduler exited: {sched.tail(15)}")
        state = await play_kubelet(kube, await observe(kube), terminating)
        mine = [state.get(k, (None, False, None, "")) for k in keys]
        deleting = any(v[1] for k, v in state.items() if k not in terminating)
        if state != last:
            last, since = state, time.monotonic()
        if deleting:
            await asyncio.sleep(0.05)
            continue
        if all(node for node, _, _, _ in mine):
            return state
        waited = time.monotonic() - since
        nominated = any(nom for node, _, nom, _ in mine if not node)
        conditioned = all(node or message for node, _, _, message in mine)
        if ((conditioned and waited >= (quiet_nominated if nominated else quiet))
                or waited >= max(quiet_held, quiet_nominated if nominated else 0.0)):
            if not (nominated and log_offset is not None and awaiting_any_flush(sched, log_offset, keys, state)):
                return state
            deadline = max(deadline, started + flush_timeout)
        await asyncio.sleep(0.05)
    return last


def awaiting_any_flush(sched: Process, log_offset: int, keys: list[str], state: dict[str, tuple[Any, ...]]) -> bool:
    """Whether a nominated, unbound pod of `keys` waits in upstream's queue for its leftover flush."""
    log = read_log(sched, log_offset)
    waiting = [k for k in keys if k in state and not state[k][0] and state[k][2]]
    return any(awaiting_flush(log, k) for k in waiting)


def upstream_decision(key: str, before: set[str], after: dict[str, tuple[Any, ...]]) -> Decision:
    victims = sorted(k for k in before if k not in after)
    node, _, _, message = after.get(key, (None, False, None, "the pod is gone"))
    if node:
        return Decision("Scheduled", node, victims)
    if not message:
        return Decision("Pending", None, victims)
    return Decision("Unschedulable", None, victims, message)


def group_condition(group: Mapping[str, Any] | None, bound: int = 0, pods: int = 0) -> Decision:
    """A PodGroup's PodGroupInitiallyScheduled condition as a decision (judged on status and message),
    with how many of the step's `pods` were bound: "False/Unschedulable: ... [1 of 3 pods bound]"."""
    cond = next((c for c in ((group or {}).get("status") or {}).get("conditions") or []
                 if c.get("type") == "PodGroupInitiallyScheduled"), None)
    tail = f" [{bound} of {pods} pods bound]"
    if group is None:
        return Decision("PodGroup", message="the PodGroup is gone" + tail)
    if cond is None:
        return Decision("PodGroup", message="no PodGroupInitiallyScheduled condition" + tail)
    return Decision("PodGroup", message=f"{cond.get('status')}/{cond.get('reason')}: {cond.get('message') or ''}"
                                        + tail)


@dataclass
class Simulated:
    pods: dict[str, Decision]
    group: Decision | None = None


def gated(gates: str) -> AbstractContextManager[Any]:
    return features.override(features.FeatureGates.parse(gates)) if gates else nullcontext()


def kubeberth_decisions(objects: list[dict[str, Any]], keys: list[str], seed: int, gates: str = "",
                        group: str = "", first: tuple[str, str] | None = None) -> Simulated:
    """simulate's decisions for the pods `keys` (and the PodGroup `group`'s condition), under `gates`;
    with `first`, those topology domains' placements offered first in the group's cycle and in group
    preemption's re-run."""
    with gated(gates), (offered_first(*first) if first is not None else nullcontext()):
        outcomes, sched = run_simulation(copy.deepcopy(objects), seed=seed, warn=io.StringIO())
    out = Simulated({})
    by_pod = {o.pod: o for o in outcomes}
    for key in keys:
        o = by_pod.get(key)
        rec = sched.outcomes.get(key)
        if o is None:
            out.pods[key] = Decision("Missing", None, [], "simulate gave no outcome")
        elif o.status == "Scheduled":
            out.pods[key] = Decision("Scheduled", o.node, list(o.victims))
        elif rec is not None and rec.status == PENDING and not rec.message:
            out.pods[key] = Decision("Pending", None, list(o.victims))  # never tried: no condition written
        else:
            out.pods[key] = Decision(o.status, None, list(o.victims), o.message)
    if group:
        bound = sum(1 for d in out.pods.values() if d.status == "Scheduled")
        out.group = group_condition(sched.ctx.objects.get("PodGroup", group), bound, len(keys))
    return out


# known entries on a group's victims whose cause also explains its pods' outcomes
GROUP_CAUSES = {"group-terminating-victim-without-kubelet"}
FIRST_PLACEMENT = "placements are available, first placement status: "


def placement_domains(objects: list[dict[str, Any]], group: dict[str, Any]) -> list[str]:
    """The values of the group's topology key over the nodes (node-list order): the domains its
    placements may be; none without a topology constraint."""
    topology = ((group.get("spec") or {}).get("schedulingConstraints") or {}).get("topology") or []
    key = topology[0].get("key") if topology else None
    if not key:
        return []
    out: list[str] = []
    for o in objects:
        value = ((o.get("metadata") or {}).get("labels") or {}).get(key) if o.get("kind") == "Node" else None
        if value is not None and value not in out:
            out.append(value)
    return out


def group_victims(sim: Simulated) -> list[str]:
    """The union of the victims kubeberth's pods of a group preempted, and their own cleared."""
    out = sorted({v for d in sim.pods.values() for v in d.victims})
    for d in sim.pods.values():
        d.victims = []
    return out


def other_group_run(objects: list[dict[str, Any]], keys: list[str], seed: int, gates: str, group: str
                    ) -> Simulated:
    """kubeberth's outcome for a group's step under another seed, judged as the step's own: the
    victims of its pods on the group's condition, the pods' cleared."""
    sim = kubeberth_decisions(objects, keys, seed, gates, group)
    condition = sim.group or group_condition(None, 0, len(keys))
    condition.victims = group_victims(sim)
    sim.group = condition
    return sim


def kubeberth_decision(objects: list[dict[str, Any]], key: str, seed: int, gates: str = "") -> Decision:
    return kubeberth_decisions(objects, [key], seed, gates).pods[key]


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


async def delete_group(kube: Kube, name: str, ns: str) -> None:
    """Deletes a PodGroup; the API server's podgroup-protection finalizer is taken off (the controller
    that does it, in kube-controller-manager, does not run here)."""
    await kube.delete("podgroups", name, ns)
    if await kube.get_or_none("podgroups", name, ns) is not None:
        await kube.patch("podgroups", name, {"metadata": {"finalizers": None}}, ns)
    for _ in range(100):
        if await kube.get_or_none("podgroups", name, ns) is None:
            return
        await asyncio.sleep(0.05)


async def reset_groups(kube: Kube) -> None:
    """Every PodGroup gone (after differential.reset has deleted the pods)."""
    for g in await kube.list("podgroups"):
        await delete_group(kube, g["metadata"]["name"], g["metadata"].get("namespace") or "default")


def start_scheduler(plane: ControlPlane, config: dict[str, Any], gates: str = "") -> Process:
    path = plane.dir / "kube-scheduler-fuzz.yaml"
    path.write_text(json.dumps(config))
    return Process.start(LOG_NAME, [str(plane.bin / "kube-scheduler"), f"--config={path}", "--secure-port=0",
                                    *([f"--feature-gates={gates}"] if gates else []),
                                    "-v=1", f"--pod-max-in-unschedulable-pods-duration={MAX_IN_UNSCHEDULABLE:g}s",
                                    # schedule_one: scores, attempts; the others: the queue's moves (awaiting_flush)
                                    "--vmodule=schedule_one=10,scheduling_queue=3,active_queue=5,backoff_queue=5"],
                         plane.dir)


def read_log(sched: Process, offset: int) -> str:
    with open(sched.log_path, "rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace")


def group_name(pod: dict[str, Any]) -> str:
    return str(((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName") or "")


def units(pending: list[dict[str, Any]], groups: dict[str, dict[str, Any]]
          ) -> Iterator[tuple[dict[str, Any] | None, list[dict[str, Any]]]]:
    """The steps of a case: (None, [pod]) for a pod of no group, (PodGroup, its pods) for a group,
    in the order their first pod comes in `pending`."""
    seen: set[str] = set()
    for pod in pending:
        name = group_name(pod)
        if not name or f"default/{name}" not in groups:
            yield None, [pod]
        elif name not in seen:
            seen.add(name)
            yield groups[f"default/{name}"], [p for p in pending if group_name(p) == name]


async def run_case(plane: ControlPlane, kube: Kube, case: dict[str, Any], seed: int, index: int,
                   known: list[Known]) -> CaseReport:
    started = time.monotonic()
    report = CaseReport(seed, index)
    gates = str(case.get("featureGates") or "")
    if gates and gates not in plane.feature_gates:
        report.error = f"the case needs feature gates {gates}; the control plane runs with {plane.feature_gates!r}"
        return report
    kubeconfig = plane.dir / "kube-scheduler.kubeconfig"
    if not kubeconfig.exists():
        plane.write_kubeconfig(kubeconfig, token=ADMIN_TOKEN)
    config = scheduler_config(case, kubeconfig)
    if isinstance(config, str):
        report.error = config
        return report
    await reset(kube)
    if gates:
        await reset_groups(kube)
    # PodGroups are created with their pods, step by step (run_group)
    without_groups = [o for o in case["objects"] if o.get("kind") != "PodGroup"]
    created = await create_objects(kube, {**case, "objects": without_groups})
    if created.refused:
        report.error = created.refused
        return report
    await set_pdb_status(kube, case)
    profiles = [o for o in case["objects"] if o.get("kind") == "SchedulingProfile"]
    groups = {_key(o): o for o in case["objects"] if o.get("kind") == "PodGroup"}
    sched = start_scheduler(plane, config, gates)
    step = Step(kube, sched, profiles, created.terminating, seed, known, gates)
    try:
        for group, pods in units(created.pending, groups):
            if group is None:
                report.pods.append(await run_pod(step, pods[0]))
            else:
                report.pods += await run_group(step, group, pods)
    except (ApiError, RuntimeError) as exc:
        report.error = str(exc)
    finally:
        sched.stop()
        report.seconds = time.monotonic() - started
    return report


@dataclass
class Step:
    """What every step of a case shares."""

    kube: Kube
    sched: Process
    profiles: list[dict[str, Any]]
    terminating: set[str]
    seed: int
    known: list[Known]
    gates: str = ""


async def run_pod(step: Step, pod: dict[str, Any]) -> PodReport:
    kube, sched = step.kube, step.sched
    key = _key(pod)
    snapshot = await cluster_objects(kube, bool(step.gates))
    before = {_key(o) for o in snapshot if o["kind"] == "Pod"}
    offset = sched.log_path.stat().st_size
    as_returned = await create_pending(kube, pod)
    after = await settle(kube, [key], sched, step.terminating, log_offset=offset)
    up = upstream_decision(key, before, after)
    log = read_log(sched, offset)
    tried = attempts(log, key)
    scores = tried[-1] if tried else None
    objects = [*step.profiles, *snapshot, as_returned]
    ours = await asyncio.to_thread(kubeberth_decision, objects, key, step.seed, step.gates)
    others = None
    if up.node != ours.node and up.status == ours.status == "Scheduled" and (not scores or up.victims):
        others = [await asyncio.to_thread(kubeberth_decision, objects, key, s, step.gates) for s in OTHER_SEEDS]
    verdict = explain(judge(up, ours, scores, others), up, ours, step.known, scores)
    nodes = {n for n in (up.node, ours.node) if n}
    report = PodReport(key, up, ours, verdict, scores)
    if verdict.kind != "agree":
        report.plugins, report.inputs = plugin_scores(log, key, nodes), objects
    await keep_or_delete(kube, key, up)
    return report


async def keep_or_delete(kube: Kube, key: str, up: Decision) -> None:
    """A bound pod starts; any other is deleted, so that the next step is decided without it
    waiting in upstream's queue."""
    ns, name = key.split("/", 1)
    if up.status == "Scheduled":
        await start_bound_pod(kube, key)
        return
    await kube.delete("pods", name, ns, grace_period=0)
    for _ in range(100):
        if await kube.get_or_none("pods", name, ns) is None:
            break
        await asyncio.sleep(0.05)


async def settled_group(kube: Kube, name: str, ns: str, attempted: bool, timeout: float = 3.0
                        ) -> dict[str, Any] | None:
    """The PodGroup; once its pods were attempted, with its condition: upstream patches it after
    handing the pods to their binding cycles, so a pod may be bound before the patch is written."""
    deadline = time.monotonic() + timeout
    while True:
        group = await kube.get_or_none("podgroups", name, ns)
        conditions = ((group or {}).get("status") or {}).get("conditions") or []
        if group is None or not attempted or conditions or time.monotonic() >= deadline:
            return group
        await asyncio.sleep(0.05)


async def run_group(step: Step, group: dict[str, Any], pods: list[dict[str, Any]]) -> list[PodReport]:
    """A PodGroup and its pods created together (the pods first); every pod and the group's
    condition judged."""
    kube, sched = step.kube, step.sched
    gkey = _key(group)
    keys = [_key(p) for p in pods]
    snapshot = await cluster_objects(kube, True)
    before = {_key(o) for o in snapshot if o["kind"] == "Pod"}
    offset = sched.log_path.stat().st_size
    # The pods first, then their PodGroup: the pods wait for it (incomplete), and it releases them
    # together into one cycle. Created the other way round, a basic group (no quorum) may be popped
    # with its first pods only, and a cycle after the first may then write its condition from
    # upstream's informer cache before the watch brought the condition the first wrote.
    as_returned = [await create_pending(kube, p) for p in pods]
    created_group = await create_group(kube, group)
    after = await settle(kube, keys, sched, step.terminating, log_offset=offset)
    ns, name = gkey.split("/", 1)
    ups = {k: upstream_decision(k, before, after) for k in keys}
    up_group = group_condition(await settled_group(kube, name, ns, any(d.status != "Pending" for d in ups.values())),
                               sum(1 for d in ups.values() if d.status == "Scheduled"), len(keys))
    log = read_log(sched, offset)
    objects = [*step.profiles, *snapshot, created_group, *as_returned]
    ours = await asyncio.to_thread(kubeberth_decisions, objects, keys, step.seed, step.gates, gkey)
    # the victims are the group's (every pod deleted during the step upstream; the union of what
    # kubeberth's pods preempted), judged on the group's line
    up_victims = sorted(k for k in before if k not in after)
    ours_victims = group_victims(ours)
    for d in ups.values():
        d.victims = []
    scores = {}
    for k in keys:
        tried = attempts(log, k)
        scores[k] = tried[-1] if tried else None
    others: list[Simulated] | None = None
    if any(ups[k].node != ours.pods[k].node and ups[k].status == ours.pods[k].status == "Scheduled" for k in keys):
        others = []
        for s in GROUP_OTHER_SEEDS:
            others.append(await asyncio.to_thread(other_group_run, objects, keys, s, step.gates, gkey))
            if all(others[-1].pods[k].status == ups[k].status and others[-1].pods[k].node == ups[k].node
                   for k in keys):
                break
    verdicts = judge_group(keys, ups, ours.pods, scores, [o.pods for o in others] if others else None)
    ours_group = ours.group or group_condition(None, 0, len(keys))
    up_group.victims, ours_group.victims = up_victims, ours_victims
    group_verdict = judge_group_victims(keys, ups, ours.pods, scores, up_group, ours_group,
                                        [(o.pods, o.group) for o in others if o.group is not None] if others
                                        else None)
    if (group_verdict.kind == "diff" or any(v.kind == "diff" for v in verdicts.values())) and FIRST_PLACEMENT in (
            up_group.message + ours_group.message):
        # upstream offers a group's placements in Go's map order (random) and reports the first's
        # results when none is feasible: accept them when kubeberth, with that placement first,
        # gives upstream's outcome for every pod and the group
        domains = placement_domains(objects, created_group)
        # each map walk its own: the cycle's first placement and the preemption re-run's
        for first in ((d, r) for d in domains for r in domains):
            alt = await asyncio.to_thread(kubeberth_decisions, objects, keys, step.seed, step.gates, gkey, first)
            alt_group = alt.group or group_condition(None, 0, len(keys))
            alt_group.victims = group_victims(alt)
            alt_verdicts = judge_group(keys, ups, alt.pods, scores)
            if judge(up_group, alt_group, None).kind != "diff" and all(
                    v.kind != "diff" for v in alt_verdicts.values()):
                why = (f"upstream offered placement {first[0]!r} first, {first[1]!r} in group preemption's re-run "
                       "(Go map order); kubeberth so agrees")
                verdicts = {k: Verdict("tie", "placement", f"{why} ({verdicts[k].detail})")
                            if verdicts[k].kind == "diff" else verdicts[k] for k in keys}
                if group_verdict.kind == "diff":
                    group_verdict = Verdict("tie", "placement", why)
                break
    verdict = group_verdict
    if verdict.kind == "diff" and verdict.field == "message":
        verdict.field = "group"  # the condition's status, reason and message (victims keep their field)
    verdict = explain(verdict, up_group, ours_group, step.known, None)
    reports = []
    for k in keys:
        pod_verdict = explain(verdicts[k], ups[k], ours.pods[k], step.known, scores[k])
        if pod_verdict.kind == "diff" and not pod_verdict.explained_by and verdict.explained_by in GROUP_CAUSES:
            # the group's victims differ for a known cause: its pods' outcomes follow from them
            pod_verdict.explained_by = verdict.explained_by
        report = PodReport(k, ups[k], ours.pods[k], pod_verdict, scores[k])
        if pod_verdict.kind != "agree":
            nodes = {n for n in (ups[k].node, ours.pods[k].node) if n}
            report.plugins, report.inputs = plugin_scores(log, k, nodes), objects
        reports.append(report)
    group_report = PodReport(GROUP_PREFIX + gkey, up_group, ours_group, verdict)
    if verdict.kind != "agree":
        group_report.inputs = objects
    reports.append(group_report)
    for k in keys:
        await keep_or_delete(kube, k, ups[k])
    if not any(ups[k].status == "Scheduled" for k in keys):
        await delete_group(kube, name, ns)
    return reports
