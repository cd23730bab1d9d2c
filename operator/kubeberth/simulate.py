"""`kubeberth simulate`: the scheduler run offline on a dump of a cluster.

The real Scheduler (queue, cache, framework, preemption, binding cycle) runs against an
in-memory cluster client under a fake clock, until nothing more can change.
"""

from __future__ import annotations

import asyncio
import copy
import sys
from collections.abc import Collection, Mapping, Sequence
from typing import Any, TextIO

from . import features
from .client import BindConflict, UpdateRefused
from .clock import FakeClock
from .config import DEFAULT_SCHEDULER_NAME, ConfigError, default_spec, parse_profile_object
from .config.models import SHADOW, SchedulingProfileSpec
from .framework import Framework, SchedulerContext
from .framework.registry import Registry
from .model import ModelError, Node, Pod, PodGroup
from .model.pod import parse_time
from .plugins import plugin_registry
from .plugins._volume_util import ANN_SELECTED_NODE, PV, PVC, annotations_of
from .plugins.dynamic_resources.claims import claim_from_template
from .priority import Refused
from .profile import build_framework, check_buildable
from .scheduler import (
    DELETED,
    EVICTED,
    EXISTING,
    IGNORED,
    PENDING,
    SCHEDULED,
    UNSCHEDULABLE,
    PodRecord,
    Scheduler,
)
from .scheduler.watched import OBJECT_KINDS, POD_GROUP, declared_kinds, table_kind
from .sim_io import InputError, Origins, PodOutcome, outcome_dict
from .sim_volumes import bind_claimed_volume, provision_claim


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


def build_profiles(objects: list[dict[str, Any]], ctx: SchedulerContext, registry: Registry) -> dict[str, Framework]:
    """One framework per schedulerName served by an Active profile (for default-scheduler without
    one, upstream's default profile). A profile the operator would refuse (invalid, or a second one
    serving a schedulerName) is an InputError naming it and the field: nothing is simulated under a
    policy that was not asked for. Shadow profiles schedule nothing: checked, then left out."""
    specs: dict[str, tuple[str, SchedulingProfileSpec]] = {}
    for obj in objects:
        if obj.get("kind") != "SchedulingProfile":
            continue
        label = f"SchedulingProfile {(obj.get('metadata') or {}).get('name')}"
        try:
            name, spec = parse_profile_object(obj)
            if spec.mode == SHADOW:
                check_buildable(spec, registry)
                continue
        except ConfigError as exc:
            raise InputError(f"{label}: {exc}") from None
        if spec.schedulerName in specs:
            raise InputError(f"{label}: spec.schedulerName: {spec.schedulerName} is already served by "
                             f"SchedulingProfile {specs[spec.schedulerName][0]}")
        specs[spec.schedulerName] = (name, spec)
    frameworks: dict[str, Framework] = {}
    for scheduler_name, (name, spec) in specs.items():
        try:
            frameworks[scheduler_name] = build_framework(spec, registry, ctx, profile_name=scheduler_name)
        except ConfigError as exc:
            raise InputError(f"SchedulingProfile {name}: {exc}") from None
    if DEFAULT_SCHEDULER_NAME not in frameworks:
        frameworks[DEFAULT_SCHEDULER_NAME] = build_framework(default_spec(), registry, ctx)
    return frameworks


class InMemoryClient:
    """The ClusterClient of the simulation: each call changes the in-memory objects and is fed
    back to the scheduler as the watch event the API server would send."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self.events: list[tuple[str, str, str, str]] = []
        self._created = 0

    def _latest_raw(self, pod: Pod, section: str) -> dict[str, Any]:
        """The pod's latest raw object with its own copy of `section` to change. Raw objects are
        never changed in place (a change copies what it changes), so the rest can be shared."""
        raw = dict((self.scheduler.pending_pod(pod.uid) or pod).raw)
        raw[section] = dict(raw.get(section) or {})
        return raw

    async def bind(self, pod: Pod, node_name: str) -> None:
        if self.scheduler.pending_pod(pod.uid) is None:
            raise BindConflict(f"pod {pod.key} is gone or already bound")
        raw = self._latest_raw(pod, "spec")
        raw["spec"]["nodeName"] = node_name
        self.scheduler.on_pod_update(raw)

    async def set_nominated_node(self, pod: Pod, node_name: str) -> None:
        if self.scheduler.pending_pod(pod.uid) is None:
            return
        raw = self._latest_raw(pod, "status")
        status = raw["status"]
        if node_name:
            status["nominatedNodeName"] = node_name
        else:
            status.pop("nominatedNodeName", None)
        self.scheduler.on_pod_update(raw)

    async def write_resource_claim(self, claim: Mapping[str, Any], *, update_metadata: bool = False) -> dict[str, Any]:
        """A ResourceClaim's metadata and status (DynamicResources' PreBind and PostFilter)."""
        written = copy.deepcopy(dict(claim))
        self.scheduler.on_object("ResourceClaim", written)
        return written

    async def create_resource_claim(self, claim: Mapping[str, Any]) -> dict[str, Any]:
        """A claim DynamicResources makes (for extended resources), named as generateName would."""
        created = copy.deepcopy(dict(claim))
        meta = created.setdefault("metadata", {})
        self._created += 1
        meta["name"] = f"{meta.pop('generateName', 'claim-')}{self._created:05d}"
        meta["uid"] = f"{meta.get('namespace')}/{meta['name']}"
        self.scheduler.on_object("ResourceClaim", created)
        return created

    async def set_extended_resource_claim_status(self, pod: Pod, status: Mapping[str, Any]) -> None:
        if self.scheduler.pending_pod(pod.uid) is None:
            return
        raw = self._latest_raw(pod, "status")
        raw["status"]["extendedResourceClaimStatus"] = copy.deepcopy(status)
        self.scheduler.on_pod_update(raw)

    async def set_unschedulable(self, pod: Pod, message: str, reason: str = "Unschedulable") -> None:
        pass

    async def set_pod_group_condition(self, pod_group: PodGroup, condition: Mapping[str, Any]) -> None:
        """The condition merged (by type) into the PodGroup, fed back as the watch's update."""
        current = self.scheduler.ctx.objects.get("PodGroup", pod_group.key) or pod_group.raw
        written = copy.deepcopy(dict(current))
        status = written.setdefault("status", {})
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != condition.get("type")]
        status["conditions"] = [*conditions, dict(condition)]
        self.scheduler.on_object("PodGroup", written)

    async def delete_pod(self, pod: Pod, disruption_message: str) -> None:
        # Gone at once (no kubelet to end it gracefully): its DisruptionTarget condition would
        # never be read.
        self.scheduler.on_pod_delete(pod)

    async def record_event(self, pod: Pod, event_type: str, reason: str, message: str, *,
                           reporter: str | None = None) -> None:
        # The simulation's record of events is what happened to which pod; there is one reporter.
        self.events.append((pod.key, event_type, reason, message))

    async def update_persistent_volume(self, pv: Mapping[str, Any]) -> dict[str, Any]:
        written = self._replace(PV, pv)
        for kind, obj in bind_claimed_volume(self.scheduler.ctx.objects, written):
            self.scheduler.on_object(kind, obj)
        return written

    async def update_persistent_volume_claim(self, pvc: Mapping[str, Any]) -> dict[str, Any]:
        written = self._replace(PVC, pvc)
        node = self.scheduler.cache.get_node(str(annotations_of(written).get(ANN_SELECTED_NODE) or ""))
        labels = node.node.labels if node is not None and node.node is not None else None
        for kind, obj in provision_claim(self.scheduler.ctx.objects, written, labels):
            self.scheduler.on_object(kind, obj)
        return written

    def _replace(self, kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
        key = _key(obj) if kind == PVC else str((obj.get("metadata") or {}).get("name"))
        if self.scheduler.ctx.objects.get(kind, key) is None:
            raise UpdateRefused(f'{kind.lower()}s "{key}" not found')
        written = copy.deepcopy(dict(obj))
        self.scheduler.on_object(kind, written)
        return written


def _outcome(key: str, rec: PodRecord | None, sched: Scheduler) -> PodOutcome:
    if rec is None:
        return PodOutcome(key, UNSCHEDULABLE, message="not read")
    out = _plain_outcome(rec, sched)
    out.explanations = [x.to_dict() for x in rec.explanations]
    return out


def _plain_outcome(rec: PodRecord, sched: Scheduler) -> PodOutcome:
    key = rec.key
    status = rec.status
    if status == EXISTING:
        return PodOutcome(key, EXISTING, node=rec.node or None)
    if status == SCHEDULED:
        return PodOutcome(key, SCHEDULED, node=rec.node or None, victims=list(rec.victims))
    if status in (EVICTED, DELETED):
        return PodOutcome(key, EVICTED, victims=list(rec.victims), message=rec.message)
    if status == IGNORED:
        return PodOutcome(key, IGNORED, message=rec.message)
    message = rec.message
    if status == PENDING and not message:
        message = _gated_message(rec, sched)
    return PodOutcome(key, UNSCHEDULABLE, nominatedNode=rec.nominated_node or None,
                      victims=list(rec.victims), message=message)


def _gated_message(rec: PodRecord, sched: Scheduler) -> str:
    """Why a pod was never tried: what its PreEnqueue plugins say."""
    pod = sched.pending_pod(rec.uid)
    fw = sched.profiles.get(pod.scheduler_name) if pod is not None else None
    if pod is None or fw is None:
        return ""
    status = fw.run_pre_enqueue(pod)
    return status.message() if status is not None else ""


def by_creation(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pods in the order they enter the queue: by creationTimestamp; a pod without one counts as
    created with the pod before it in the document (document order stands in for the time)."""
    keyed = []
    last = float("-inf")
    for i, obj in enumerate(pods):
        try:
            ts = parse_time((obj.get("metadata") or {}).get("creationTimestamp"))
        except ModelError:
            ts = None
        if ts is not None:
            last = ts
        keyed.append((last, i, obj))
    keyed.sort(key=lambda k: (k[0], k[1]))
    return [obj for _, _, obj in keyed]


# Rounds of upstream's flushUnschedulablePodsLeftover run once the queue is idle (see _run_settled).
SETTLE_ROUNDS = 3


def _settled_state(sched: Scheduler) -> dict[str, tuple[Any, ...]]:
    return {k: (r.status, r.node, r.message, r.nominated_node, tuple(r.victims)) for k, r in sched.outcomes.items()}


async def _run_settled(sched: Scheduler, clock: FakeClock) -> None:
    """Run the loop until idle, then let the clock pass upstream's podMaxInUnschedulablePodsDuration
    so that pods left unschedulable are retried (flushUnschedulablePodsLeftover): a diagnosis made
    before later pods were bound is refreshed, as upstream does within minutes. Stops once a round
    changes no outcome."""
    await sched.run_until_idle()
    for _ in range(SETTLE_ROUNDS):
        before = _settled_state(sched)
        clock.advance(sched.queue.pod_max_in_unschedulable + 1.0)
        sched.queue.flush_unschedulable_leftover()
        await sched.run_until_idle()
        if _settled_state(sched) == before:
            return


class UnknownPods(ValueError):
    """--explain named pods that are not in the input."""


def explain_filter(pods: list[dict[str, Any]], names: Collection[str]) -> set[str]:
    """The keys of the pods to explain: all for no name; `ns/name`, or `name` in any namespace.
    Raises UnknownPods naming those that match no pod."""
    keys = {_key(obj) for obj in pods}
    if not names:
        return keys
    chosen: set[str] = set()
    missing = []
    for name in names:
        found = {k for k in keys if k == name or ("/" not in name and k.split("/", 1)[1] == name)}
        if not found:
            missing.append(name)
        chosen |= found
    if missing:
        raise UnknownPods(f"--explain: no pod {', '.join(missing)} in the input (name a pod as NAMESPACE/NAME or NAME)")
    return chosen


def with_template_claims(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the resourceclaim controller does before the scheduler sees a pending pod: a claim for
    each of its resourceClaimTemplateName entries, named in the pod's status. A template that does
    not exist leaves the entry without a claim (the pod then waits, as in a cluster)."""
    templates = {_key(o): o for o in objects if o.get("kind") == "ResourceClaimTemplate"}
    out: list[dict[str, Any]] = []
    for obj in objects:
        spec = obj.get("spec") or {}
        if obj.get("kind") != "Pod" or spec.get("nodeName") or not spec.get("resourceClaims"):
            out.append(obj)
            continue
        pod = copy.deepcopy(obj)
        status = pod.setdefault("status", {})
        named = {s.get("name") for s in status.get("resourceClaimStatuses") or ()}
        ns = (pod.get("metadata") or {}).get("namespace") or "default"
        for pc in spec["resourceClaims"]:
            template = templates.get(f"{ns}/{pc.get('resourceClaimTemplateName')}")
            if pc.get("name") in named or template is None:
                continue
            claim = claim_from_template(pod, str(pc.get("name")), template)
            out.append(claim)
            status.setdefault("resourceClaimStatuses", []).append(
                {"name": pc.get("name"), "resourceClaimName": claim["metadata"]["name"]})
        out.append(pod)
    return out


def simulate(objects: list[dict[str, Any]], *, seed: int = 0, warn: TextIO | None = None,
             percentage_of_nodes_to_score: int = 0, explain: Collection[str] | None = None,
             origins: Origins | None = None) -> list[PodOutcome]:
    """Schedule the pending pods of `objects`; one outcome per Pod, in input order.
    `percentage_of_nodes_to_score`: the scheduler-wide value (profiles may set their own).
    `explain`: pods to explain (NAMESPACE/NAME or NAME; empty: every pod; None: none); their
    outcomes carry the explanation of each attempt (the first and the latest ones,
    records.KEPT_EXPLANATIONS in all). Raises UnknownPods for a name that matches no pod, InputError
    for a SchedulingProfile the operator would refuse. `origins`: where each object was read, for
    the errors about one (a PodGroup admission refuses)."""
    return run_simulation(objects, seed=seed, warn=warn, percentage_of_nodes_to_score=percentage_of_nodes_to_score,
                          explain=explain, origins=origins)[0]


def run_simulation(objects: list[dict[str, Any]], *, seed: int = 0, warn: TextIO | None = None,
                   percentage_of_nodes_to_score: int = 0, explain: Collection[str] | None = None,
                   origins: Origins | None = None) -> tuple[list[PodOutcome], Scheduler]:
    """simulate(), and the scheduler it ran (for the report). `warn`: sys.stderr when None (the
    one of the call's time)."""
    if warn is None:
        warn = sys.stderr
    clock = FakeClock()
    sched = Scheduler(clock=clock, seed=seed)
    if explain is not None:
        wanted = explain_filter([obj for obj in objects if obj.get("kind") == "Pod"], explain)
        sched.explain_pods = lambda pod: pod.key in wanted
    sched.ctx.percentage_of_nodes_to_score = percentage_of_nodes_to_score
    client = InMemoryClient(sched)
    sched.ctx.client = client
    end_terminating_victims_at_once(sched)
    registry = plugin_registry()
    for fw in build_profiles(objects, sched.ctx, registry).values():
        sched.set_profile(fw)
    objects = with_template_claims(objects)
    # The kinds plugins of one's own declare they read: documents of that apiVersion and kind,
    # stored under their GroupKind (a PodGroup of scheduling.x-k8s.io is not scheduling.k8s.io's).
    declared = {(k.api_version, k.kind): k.store_key for k in declared_kinds(registry)}
    admitting = sched.pod_groups_enabled
    pod_groups = []
    for obj in objects:
        store_key = declared.get((str(obj.get("apiVersion")), str(obj.get("kind"))))
        if store_key is not None:
            sched.on_object(store_key, obj)
        elif admitting and table_kind(obj) == POD_GROUP:
            pod_groups.append(obj)  # once every PriorityClass is known
        elif table_kind(obj) in OBJECT_KINDS:
            sched.on_object(str(obj["kind"]), obj)
    for obj in pod_groups:
        admitted = admit_pod_group(sched, obj, origins)
        if admitted is not None:
            sched.on_object(POD_GROUP, admitted)
        else:
            warn.write(f"skipping podgroup: {sched.pod_group_errors[_key(obj)]}\n")
    for obj in objects:
        if obj.get("kind") == "Node" and sched.on_node_add(obj) is None:
            name = (obj.get("metadata") or {}).get("name")
            warn.write(f"skipping node: {sched.node_errors.get(str(name), name)}\n")
    order: list[str] = []
    pods = [obj for obj in objects if obj.get("kind") == "Pod"]
    for obj in pods:
        key = _key(obj)
        if key not in order:
            order.append(key)
    for obj in by_creation(pods):
        sched.on_pod_add(obj)
    asyncio.run(_run_settled(sched, clock))
    return [_outcome(key, sched.outcomes.get(key), sched) for key in order], sched


def admit_pod_group(sched: Scheduler, obj: Mapping[str, Any], origins: Origins | None = None
                    ) -> Mapping[str, Any] | None:
    """The PodGroup as the API server creates it (Priority admission fills its priority from its
    PriorityClass: priority.PriorityResolver.admit_pod_group, the resolver pods' priorities come
    from); None when admission refuses it: as in a cluster it does not exist, and its error (where
    the input gave it, from `origins`) is the scheduler's `pod_group_errors[key]`."""
    gates = features.current()
    try:
        return sched.ctx.objects.priorities.admit_pod_group(
            obj, preemption_policy_gate=gates.enabled(features.POD_GROUP_PREEMPTION_POLICY))
    except Refused as exc:
        where = origins.of(obj) if origins is not None else None
        sched.pod_group_errors[_key(obj)] = f"{where}: {exc}" if where else str(exc)
        return None


def end_terminating_victims_at_once(sched: Scheduler) -> None:
    """The simulation has no grace period. Preemption sends no deletion for a victim already
    being deleted (upstream waits for its kubelet to end it); here it ends when it is chosen."""
    record = sched.ctx.record_victims

    def recorded(preemptor: Pod, victims: Sequence[Pod]) -> None:
        if record is not None:
            record(preemptor, victims)
        for victim in victims:
            if victim.deletion_timestamp is not None:
                sched.on_pod_delete(victim)

    sched.ctx.record_victims = recorded


def _usage(milli_cpu: int, memory: int, pods: int) -> dict[str, int]:
    return {"cpu": milli_cpu, "memory": memory, "pods": pods}


def report_data(objects: list[dict[str, Any]], outcomes: list[PodOutcome], sched: Scheduler,
                seed: int) -> dict[str, Any]:
    """What the HTML report shows (report/html.py): the outcomes (and who preempted whom), each
    node's allocatable and the requests of its pods before (running pods) and after (running,
    not evicted, plus scheduled: cpu in millicores, memory in bytes, pods), the profiles, the pod
    groups (sim_groups.py)."""
    nodes: dict[str, dict[str, Any]] = {}
    for obj in objects:
        if obj.get("kind") != "Node":
            continue
        try:
            node = Node(obj)
        except ModelError:
            continue  # reported already; the scheduler skipped it
        a = node.allocatable
        nodes[node.name] = {"node": node.name, "allocatable": _usage(a.milli_cpu, a.memory, a.allowed_pod_number),
                            "before": _usage(0, 0, 0), "after": _usage(0, 0, 0)}
    by_key = {o.pod: o for o in outcomes}
    for obj in objects:
        if obj.get("kind") != "Pod":
            continue
        try:
            pod = Pod(obj)
        except ModelError:
            continue
        o = by_key.get(pod.key)
        placed = {"before": pod.node_name,
                  "after": o.node if o is not None and o.status in (EXISTING, SCHEDULED) else None}
        for when, name in placed.items():
            if name and name in nodes:
                use = nodes[name][when]
                use["cpu"] += pod.requests.milli_cpu
                use["memory"] += pod.requests.memory
                use["pods"] += 1
    profiles = []
    for name, fw in sorted(sched.profiles.items()):
        profiles.append({"schedulerName": name, "percentageOfNodesToScore": fw.percentage_of_nodes_to_score,
                         "filter": [p.name for p in fw.filter_plugins],
                         "score": [{"name": p.name, "weight": fw.score_weights[p.name]} for p in fw.score_plugins],
                         "postFilter": [p.name for p in fw.post_filter_plugins]})
    preempted_by = {k: r.preempted_by for k, r in sched.outcomes.items() if r.preempted_by}
    from .sim_groups import group_dict, group_outcomes

    return {"seed": seed, "pods": [outcome_dict(o) for o in outcomes], "preemptedBy": preempted_by,
            "nodes": list(nodes.values()), "profiles": profiles,
            "podGroups": [group_dict(g) for g in group_outcomes(sched, outcomes)]}
