"""The what-if engine, shared by every tool that runs the scheduler on files: the real Scheduler
(queue, cache, framework, preemption, binding cycle) over an in-memory cluster (cluster.py) under a
fake clock, fed the input's objects as the API server's first lists would give them, and run
until nothing more can change.

The steps, for a tool that needs them apart (a trace replayed over time, say):
`new_scheduler` (the scheduler, its clock and its client), `load_objects` (profiles built and
the objects fed, pods last by creation), `run_settled` (the loop until idle, then the retries of
pods left unschedulable); `run_simulation` is the three in a row, with the outcome of each pod.
"""

from __future__ import annotations

import asyncio
import copy
import sys
from collections.abc import Collection, Mapping, Sequence
from typing import Any, TextIO

from .. import features
from ..clock import FakeClock
from ..config import DEFAULT_SCHEDULER_NAME, ConfigError, default_spec, parse_profile_object
from ..config.models import SHADOW, SchedulingProfileSpec
from ..framework import Framework, SchedulerContext
from ..framework.registry import Registry
from ..framework.tie_break import RESERVOIR, tie_break_rule
from ..model import ModelError, Pod
from ..model.pod import parse_time
from ..plugins import plugin_registry
from ..plugins.dynamic_resources.claims import claim_from_template
from ..priority import Refused
from ..profile import build_framework, check_buildable
from ..scheduler import Scheduler
from ..scheduler.records import raw_uid
from ..scheduler.watched import OBJECT_KINDS, POD_GROUP, declared_kinds, table_kind
from .cluster import InMemoryClient
from .inputs import InputError, Origins, object_key
from .outcomes import PodOutcome, pod_outcome


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


# Rounds of upstream's flushUnschedulablePodsLeftover run once the queue is idle (see run_settled).
SETTLE_ROUNDS = 3


def _settled_state(sched: Scheduler) -> dict[str, tuple[Any, ...]]:
    return {k: (r.status, r.node, r.message, r.nominated_node, tuple(r.victims)) for k, r in sched.outcomes.items()}


async def run_settled(sched: Scheduler, clock: FakeClock) -> None:
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
    keys = {object_key(obj) for obj in pods}
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
    templates = {object_key(o): o for o in objects if o.get("kind") == "ResourceClaimTemplate"}
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


def new_scheduler(seed: int = 0, tie_break: str = RESERVOIR) -> tuple[Scheduler, FakeClock]:
    """A Scheduler (no profile yet) under a FakeClock, writing through an InMemoryClient; a victim
    already being deleted ends when preemption chooses it (end_terminating_victims_at_once).
    `tie_break`: how it breaks score ties (framework/tie_break.py: reservoir, upstream's rule, or
    fixed-order, the seeded fixed node order); ValueError for another name."""
    clock = FakeClock()
    sched = Scheduler(clock=clock, seed=seed)
    sched.ctx.tie_break = tie_break_rule(tie_break, seed)
    sched.ctx.client = InMemoryClient(sched)
    end_terminating_victims_at_once(sched)
    return sched, clock


def load_objects(sched: Scheduler, objects: list[dict[str, Any]], registry: Registry, *, warn: TextIO,
                 origins: Origins | None = None) -> list[str]:
    """Give the scheduler its profiles (build_profiles) and the input, as the API server's first
    lists would: the objects of the kinds it reads (and those `registry`'s plugins declare), the
    PodGroups once admitted, the nodes, then the pods by creation (claims made from their templates
    first). Nodes and PodGroups refused are reported on `warn`. Returns the keys of the pods in
    input order."""
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
            warn.write(f"skipping podgroup: {sched.pod_group_errors[object_key(obj)]}\n")
    for obj in objects:
        if obj.get("kind") == "Node" and sched.on_node_add(obj) is None:
            name = (obj.get("metadata") or {}).get("name")
            warn.write(f"skipping node: {sched.node_errors.get(str(name), name)}\n")
    order: list[str] = []
    pods = [obj for obj in objects if obj.get("kind") == "Pod"]
    owners: dict[str, str] = {}  # uid -> the key of the first pod that has it
    kept = []
    for obj in pods:
        key = object_key(obj)
        if key not in order:
            order.append(key)
        uid = raw_uid(obj)
        owner = owners.setdefault(uid, key)
        if owner != key:
            # An API server gives every object its own uid: two pods with one would be one pod
            # to the cache and the queue. The later one is refused; the others go on.
            where = origins.of(obj) if origins is not None else None
            message = f"metadata.uid {uid!r} is also pod {owner}'s: a uid names one object"
            warn.write(f"skipping pod {key}{f' ({where})' if where else ''}: {message}\n")
            sched.refuse_pod(key, f"{where}: {message}" if where else message)
            continue
        kept.append(obj)
    for obj in by_creation(kept):
        sched.on_pod_add(obj)
    return order


def run_simulation(objects: list[dict[str, Any]], *, seed: int = 0, warn: TextIO | None = None,
                   percentage_of_nodes_to_score: int = 0, explain: Collection[str] | None = None,
                   origins: Origins | None = None, registry: Registry | None = None,
                   tie_break: str = RESERVOIR) -> tuple[list[PodOutcome], Scheduler]:
    """Schedule the pending pods of `objects`: one outcome per Pod, in input order, and the
    scheduler it ran (for the report, the groups' view). `percentage_of_nodes_to_score`: the
    scheduler-wide value (profiles may set their own). `explain`: pods to explain
    (NAMESPACE/NAME or NAME; empty: every pod; None: none); their outcomes carry the explanation
    of each attempt (the first and the latest ones, records.KEPT_EXPLANATIONS in all). `origins`:
    where each object was read, for the errors about one (a PodGroup admission refuses).
    `registry`: the plugins profiles are built from (default: the process's, plugin_registry()).
    `tie_break`: the score ties' rule (new_scheduler).
    `warn`: sys.stderr when None (the one of the call's time). Raises UnknownPods for a name that
    matches no pod, InputError for a SchedulingProfile the operator would refuse."""
    if warn is None:
        warn = sys.stderr
    sched, clock = new_scheduler(seed, tie_break)
    if explain is not None:
        wanted = explain_filter([obj for obj in objects if obj.get("kind") == "Pod"], explain)
        sched.explain_pods = lambda pod: pod.key in wanted
    sched.ctx.percentage_of_nodes_to_score = percentage_of_nodes_to_score
    order = load_objects(sched, objects, registry if registry is not None else plugin_registry(), warn=warn,
                         origins=origins)
    asyncio.run(run_settled(sched, clock))
    return [pod_outcome(key, sched.outcomes.get(key), sched) for key in order], sched


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
        sched.pod_group_errors[object_key(obj)] = f"{where}: {exc}" if where else str(exc)
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
