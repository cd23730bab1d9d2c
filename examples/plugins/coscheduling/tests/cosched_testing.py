"""Objects and scheduler set-ups for Coscheduling's tests (kubeberth's own test helpers are not
needed: these tests run from the plugin's directory as well as from kubeberth's)."""

from __future__ import annotations

import itertools
from typing import Any

from kubeberth_coscheduling import Coscheduling, CoschedulingArgs
from kubeberth_coscheduling.podgroup import API_VERSION, POD_GROUP_LABEL, PODGROUP

from kubeberth.clock import FakeClock
from kubeberth.config import parse_spec
from kubeberth.framework import Framework, Pod, SchedulerContext
from kubeberth.plugins import in_tree_registry
from kubeberth.scheduler import Scheduler

T0 = 1_700_000_000.0
_seq = itertools.count(1)


def pod_dict(name: str, *, group: str | None = None, namespace: str = "default", cpu: str = "1",
             node: str = "", priority: int | None = None, gated: bool = False, phase: str | None = None,
             created: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"}
    if group is not None:
        meta["labels"] = {POD_GROUP_LABEL: group}
    if created:
        meta["creationTimestamp"] = created
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "app:1", "resources": {"requests": {"cpu": cpu}}}]}
    if node:
        spec["nodeName"] = node
    if priority is not None:
        spec["priority"] = priority
    if gated:
        spec["schedulingGates"] = [{"name": "example.com/hold"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
            "status": {"phase": phase or ("Running" if node else "Pending")}}


def pod(name: str, **kw: Any) -> Pod:
    return Pod(pod_dict(name, **kw), seq=next(_seq))


def node_dict(name: str, *, cpu: str = "1", memory: str = "8Gi", pods: str = "110") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods},
                       "capacity": {"cpu": cpu, "memory": memory, "pods": pods}}}


def pod_group(name: str, min_member: int, *, namespace: str = "default", timeout: int | None = None,
              min_resources: dict[str, Any] | None = None,
              created: str = "2024-01-01T00:00:00Z") -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member}
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    if min_resources is not None:
        spec["minResources"] = min_resources
    return {"apiVersion": API_VERSION, "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": created}, "spec": spec}


class Setup:
    """A Coscheduling plugin on a handle whose pod lister gives `pods` (editable)."""

    def __init__(self, *groups: dict[str, Any], pods: list[Pod] | None = None, args: dict[str, Any] | None = None
                 ) -> None:
        self.clock = FakeClock(T0)
        self.ctx = SchedulerContext(clock=self.clock)
        self.pods: list[Pod] = list(pods or [])
        self.activated: list[str] = []
        self.ctx.list_pods = lambda namespace=None: [p for p in self.pods if namespace in (None, p.namespace)]
        self.ctx.activate = lambda pods: self.activated.extend(p.name for p in pods)
        for g in groups:
            self.ctx.objects.put(PODGROUP.group_kind, g)
        self.handle = Framework("default-scheduler", parse_spec({}), self.ctx)
        self.plugin = Coscheduling(CoschedulingArgs(**(args or {})), self.handle)


def coscheduling_profile(scheduler_name: str = "default-scheduler", args: dict[str, Any] | None = None
                         ) -> dict[str, Any]:
    """The profile scheduler-plugins' README gives: Coscheduling at every point it has, and as
    the only QueueSort."""
    spec: dict[str, Any] = {
        "schedulerName": scheduler_name,
        "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                    "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}},
    }
    if args is not None:
        spec["pluginConfig"] = [{"name": "Coscheduling", "args": args}]
    return spec


def scheduler(*objects: dict[str, Any], args: dict[str, Any] | None = None) -> Scheduler:
    """kubeberth's scheduler with the in-tree plugins plus Coscheduling, over an in-memory
    cluster of `objects` (Nodes, PodGroups; pods come with on_pod_add)."""
    from kubeberth.testing import InMemoryClient

    sched = Scheduler(clock=FakeClock(T0), seed=1)
    sched.ctx.client = InMemoryClient(sched)
    registry = in_tree_registry()
    registry.register(Coscheduling)
    sched.add_profile_spec(parse_spec(coscheduling_profile(args=args)), registry)
    for obj in objects:
        if obj["kind"] == "Node":
            sched.on_node_add(obj)
        elif obj["kind"] == PODGROUP.kind and obj.get("apiVersion") == API_VERSION:
            sched.on_object(PODGROUP.group_kind, obj)  # stored as the operator stores a declared kind
        else:
            sched.on_object(obj["kind"], obj)
    return sched


def bound(sched: Scheduler) -> dict[str, str]:
    """The pods bound (not merely assumed), by name."""
    return {p.name: p.node_name for p in sched.cache.pods() if p.node_name and not sched.cache.is_assumed(p.uid)}
