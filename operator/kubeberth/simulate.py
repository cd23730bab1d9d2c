"""`kubeberth simulate`: the scheduler run offline on a dump of a cluster.

The real Scheduler (queue, cache, framework, preemption, binding cycle) runs against an
in-memory cluster client under a fake clock, until nothing more can change.
"""

from __future__ import annotations

import asyncio
import copy
import sys
from collections.abc import Mapping
from typing import Any, TextIO

from .client import BindConflict
from .clock import FakeClock
from .config import DEFAULT_SCHEDULER_NAME, ConfigError, default_spec, parse_profile_object
from .config.models import SchedulingProfileSpec
from .framework import Framework, SchedulerContext
from .framework.registry import Registry
from .model import ModelError, Pod
from .model.pod import parse_time
from .plugins import in_tree_registry
from .plugins.dynamic_resources.claims import claim_from_template
from .profile import build_framework
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
from .scheduler.watched import OBJECT_KINDS
from .sim_io import PodOutcome


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


def build_profiles(objects: list[dict[str, Any]], ctx: SchedulerContext, registry: Registry,
                   warn: TextIO) -> dict[str, Framework]:
    """One framework per schedulerName; an invalid profile is reported and left out
    (for default-scheduler the upstream default then applies)."""
    specs: dict[str, tuple[str, SchedulingProfileSpec]] = {}
    for obj in objects:
        if obj.get("kind") != "SchedulingProfile":
            continue
        try:
            name, spec = parse_profile_object(obj)
        except ConfigError as exc:
            warn.write(f"SchedulingProfile {(obj.get('metadata') or {}).get('name')}: rejected: {exc}\n")
            continue
        specs[spec.schedulerName] = (name, spec)
    frameworks: dict[str, Framework] = {}
    for scheduler_name, (name, spec) in specs.items():
        try:
            frameworks[scheduler_name] = build_framework(spec, registry, ctx, profile_name=scheduler_name)
        except ConfigError as exc:
            warn.write(f"SchedulingProfile {name}: rejected: {exc}\n")
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

    def _latest_raw(self, pod: Pod) -> dict[str, Any]:
        latest = self.scheduler.pending_pod(pod.uid)
        return copy.deepcopy(dict((latest or pod).raw))

    async def bind(self, pod: Pod, node_name: str) -> None:
        if self.scheduler.pending_pod(pod.uid) is None:
            raise BindConflict(f"pod {pod.key} is gone or already bound")
        raw = self._latest_raw(pod)
        raw.setdefault("spec", {})["nodeName"] = node_name
        self.scheduler.on_pod_update(raw)

    async def set_nominated_node(self, pod: Pod, node_name: str) -> None:
        if self.scheduler.pending_pod(pod.uid) is None:
            return
        raw = self._latest_raw(pod)
        status = raw.setdefault("status", {})
        if node_name:
            status["nominatedNodeName"] = node_name
        else:
            status.pop("nominatedNodeName", None)
        self.scheduler.on_pod_update(raw)

    async def write_resource_claim(self, claim: dict[str, Any], *, update_metadata: bool = False) -> dict[str, Any]:
        """A ResourceClaim's metadata and status (DynamicResources' PreBind and PostFilter)."""
        written = copy.deepcopy(claim)
        self.scheduler.on_object("ResourceClaim", written)
        return written

    async def create_resource_claim(self, claim: dict[str, Any]) -> dict[str, Any]:
        """A claim DynamicResources makes (for extended resources), named as generateName would."""
        created = copy.deepcopy(claim)
        meta = created.setdefault("metadata", {})
        self._created += 1
        meta["name"] = f"{meta.pop('generateName', 'claim-')}{self._created:05d}"
        meta["uid"] = f"{meta.get('namespace')}/{meta['name']}"
        self.scheduler.on_object("ResourceClaim", created)
        return created

    async def set_extended_resource_claim_status(self, pod: Pod, status: dict[str, Any]) -> None:
        if self.scheduler.pending_pod(pod.uid) is None:
            return
        raw = self._latest_raw(pod)
        raw.setdefault("status", {})["extendedResourceClaimStatus"] = copy.deepcopy(status)
        self.scheduler.on_pod_update(raw)

    async def set_unschedulable(self, pod: Pod, message: str, reason: str = "Unschedulable") -> None:
        pass

    async def delete_pod(self, pod: Pod) -> None:
        self.scheduler.on_pod_delete(pod)

    async def record_event(self, pod: Pod, event_type: str, reason: str, message: str) -> None:
        self.events.append((pod.key, event_type, reason, message))


def _outcome(key: str, rec: PodRecord | None, sched: Scheduler) -> PodOutcome:
    if rec is None:
        return PodOutcome(key, UNSCHEDULABLE, message="not read")
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


def simulate(objects: list[dict[str, Any]], *, seed: int = 0, warn: TextIO = sys.stderr,
             percentage_of_nodes_to_score: int = 0) -> list[PodOutcome]:
    """Schedule the pending pods of `objects`; one outcome per Pod, in input order.
    `percentage_of_nodes_to_score`: the scheduler-wide value (profiles may set their own)."""
    clock = FakeClock()
    sched = Scheduler(clock=clock, seed=seed)
    sched.ctx.percentage_of_nodes_to_score = percentage_of_nodes_to_score
    client = InMemoryClient(sched)
    sched.ctx.client = client
    for fw in build_profiles(objects, sched.ctx, in_tree_registry(), warn).values():
        sched.set_profile(fw)
    objects = with_template_claims(objects)
    for obj in objects:
        if obj.get("kind") in OBJECT_KINDS:
            sched.on_object(str(obj["kind"]), obj)
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
    return [_outcome(key, sched.outcomes.get(key), sched) for key in order]
