"""A read-only view of a scheduling.k8s.io/v1beta1 PodGroup (k8s.io/api v0.37's types.go):
what the scheduler reads of it, parsed once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import ModelError

POD_GROUP_KIND = "PodGroup"
POD_GROUP_API_VERSION = "scheduling.k8s.io/v1beta1"
# status.conditions[].type and reasons (v1beta1's constants)
POD_GROUP_INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"
REASON_SCHEDULED = "Scheduled"  # upstream's literal for the True condition

PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"


class PodGroup:
    """`min_count`: the gang policy's minCount; None for the basic policy (no quorum)."""

    __slots__ = ("conditions", "creation_timestamp", "disruption_all", "generation", "has_constraints", "key",
                 "min_count", "name", "namespace", "preemption_policy", "priority", "priority_class_name", "raw",
                 "topology_keys", "uid")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        if not isinstance(raw, Mapping):
            raise ModelError(f"podgroup {raw!r} is not a mapping")
        meta = raw.get("metadata") or {}
        self.name = str(meta.get("name") or "")
        self.namespace = str(meta.get("namespace") or "default")
        self.key = f"{self.namespace}/{self.name}"
        where = f"podgroup {self.key}"
        if not self.name:
            raise ModelError("podgroup has no metadata.name")
        self.raw = raw
        self.uid = str(meta.get("uid") or self.key)
        gen = meta.get("generation")
        self.generation = int(gen) if isinstance(gen, int) and not isinstance(gen, bool) else 0
        self.creation_timestamp = str(meta.get("creationTimestamp") or "")
        spec = raw.get("spec") or {}
        if not isinstance(spec, Mapping):
            raise ModelError("spec must be a mapping", obj=where)
        policy = spec.get("schedulingPolicy") or {}
        if not isinstance(policy, Mapping):
            raise ModelError("spec.schedulingPolicy must be a mapping", obj=where)
        gang = policy.get("gang")
        if gang is not None:
            if not isinstance(gang, Mapping):
                raise ModelError("spec.schedulingPolicy.gang must be a mapping", obj=where)
            mc = gang.get("minCount")
            if isinstance(mc, bool) or not isinstance(mc, int):
                raise ModelError(f"spec.schedulingPolicy.gang.minCount {mc!r} is not an integer", obj=where)
            self.min_count: int | None = mc
        else:
            self.min_count = None
        prio = spec.get("priority")
        if prio is not None and (isinstance(prio, bool) or not isinstance(prio, int)):
            raise ModelError(f"spec.priority {prio!r} is not an integer", obj=where)
        # upstream's PodGroupPriority: a PodGroup without spec.priority counts as 0
        self.priority: int = prio if prio is not None else 0
        self.priority_class_name = str(spec.get("priorityClassName") or "")
        # nil -> PreemptLowerPriority (upstream's podGroupPreemptionPolicy)
        self.preemption_policy = str(spec.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY)
        # spec.schedulingConstraints.topology[].key (TopologyAwareWorkloadScheduling); the API allows one
        constraints = spec.get("schedulingConstraints") or {}
        if not isinstance(constraints, Mapping):
            raise ModelError("spec.schedulingConstraints must be a mapping", obj=where)
        topology = constraints.get("topology") or []
        if not isinstance(topology, list):
            raise ModelError("spec.schedulingConstraints.topology must be a list", obj=where)
        keys: list[str] = []
        for i, t in enumerate(topology):
            key = t.get("key") if isinstance(t, Mapping) else None
            if not isinstance(key, str) or not key:
                raise ModelError(f"spec.schedulingConstraints.topology[{i}].key must be a non-empty string", obj=where)
            keys.append(key)
        self.topology_keys: tuple[str, ...] = tuple(keys)
        # spec.schedulingConstraints present at all (upstream's non-nil pointer), even with no topology
        self.has_constraints: bool = spec.get("schedulingConstraints") is not None
        mode = spec.get("disruptionMode")
        if mode is not None and not isinstance(mode, Mapping):
            raise ModelError("spec.disruptionMode must be a mapping", obj=where)
        # disruptionMode.all: the group's scheduled pods are preemption victims only together
        self.disruption_all: bool = mode is not None and mode.get("all") is not None
        status = raw.get("status") or {}
        conds = status.get("conditions") if isinstance(status, Mapping) else None
        self.conditions: list[dict[str, Any]] = [dict(c) for c in conds or [] if isinstance(c, Mapping)]

    @property
    def topology_key(self) -> str:
        """The first topology constraint's key ("" when none), the one upstream places by."""
        return self.topology_keys[0] if self.topology_keys else ""

    @property
    def is_gang(self) -> bool:
        return self.min_count is not None

    def condition(self, cond_type: str) -> dict[str, Any] | None:
        for c in self.conditions:
            if c.get("type") == cond_type:
                return c
        return None

    def __repr__(self) -> str:
        return f"PodGroup({self.key}, minCount={self.min_count})"
