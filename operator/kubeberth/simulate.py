"""`kubeberth simulate`: the scheduler run offline on a dump of a cluster."""

from __future__ import annotations

import random
import sys
from collections.abc import Mapping
from typing import Any, TextIO

from .cache.objects import ObjectStore
from .cache.snapshot import Snapshot
from .config import DEFAULT_SCHEDULER_NAME, ConfigError, default_spec, parse_profile_object
from .config.models import SchedulingProfileSpec
from .framework import CycleState, FitError, Framework, SchedulerContext, build_framework
from .framework.registry import Registry
from .model import ModelError, Node, Pod
from .plugins import in_tree_registry
from .schedule_one import SchedulingError, schedule_pod
from .sim_io import PodOutcome

STORED_KINDS = {
    "PriorityClass", "PodDisruptionBudget", "Namespace", "PersistentVolume", "PersistentVolumeClaim",
    "StorageClass", "CSINode", "Service", "ReplicaSet", "ReplicationController", "StatefulSet",
}


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


def simulate(objects: list[dict[str, Any]], *, seed: int = 0, warn: TextIO = sys.stderr) -> list[PodOutcome]:
    """Schedule the pending pods of `objects`; one outcome per Pod, in input order."""
    store = ObjectStore()
    nodes: list[Node] = []
    for obj in objects:
        kind = obj.get("kind")
        if kind == "Node":
            try:
                nodes.append(Node(obj))
            except ModelError as exc:
                warn.write(f"skipping node: {exc}\n")
        elif kind in STORED_KINDS:
            store.put(kind, obj)
    ctx = SchedulerContext(objects=store, rng=random.Random(seed))
    frameworks = build_profiles(objects, ctx, in_tree_registry(), warn)

    outcomes: dict[str, PodOutcome] = {}
    order: list[str] = []
    running: list[Pod] = []
    pending: list[Pod] = []
    for seq, obj in enumerate(o for o in objects if o.get("kind") == "Pod"):
        key = _key(obj)
        order.append(key)
        try:
            pod = Pod(obj, seq=seq)
            prio, policy = store.priorities.resolve(obj.get("spec") or {})
            pod.priority, pod.preemption_policy = prio, policy
        except ModelError as exc:
            outcomes[key] = PodOutcome(key, "Unschedulable", message=str(exc))
            continue
        if pod.node_name:
            running.append(pod)
            outcomes[key] = PodOutcome(key, "Existing", node=pod.node_name)
        elif pod.scheduler_name not in frameworks:
            outcomes[key] = PodOutcome(key, "Ignored", message=f"no profile for schedulerName {pod.scheduler_name}")
        else:
            pending.append(pod)
    import asyncio

    asyncio.run(_schedule_all(frameworks, ctx, nodes, running, pending, outcomes))
    return [outcomes[k] for k in order]


async def _schedule_all(frameworks: dict[str, Framework], ctx: SchedulerContext, nodes: list[Node],
                        running: list[Pod], pending: list[Pod], outcomes: dict[str, PodOutcome]) -> None:
    pending.sort(key=lambda p: (-p.priority, p.seq))
    for pod in pending:
        fw = frameworks[pod.scheduler_name]
        ctx.snapshot = Snapshot.from_objects(nodes, running)
        try:
            result = await schedule_pod(fw, CycleState(), pod)
        except FitError as exc:
            outcomes[pod.key] = PodOutcome(pod.key, "Unschedulable", message=str(exc))
            continue
        except SchedulingError as exc:
            outcomes[pod.key] = PodOutcome(pod.key, "Unschedulable", message=str(exc))
            continue
        pod.node_name = result.suggested_host
        running.append(pod)
        outcomes[pod.key] = PodOutcome(pod.key, "Scheduled", node=result.suggested_host)
