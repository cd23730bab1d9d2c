"""Pod priority as admission resolves it from PriorityClasses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .model import ModelError

SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
HIGHEST_USER_PRIORITY = 1_000_000_000
_BUILTIN = {
    "system-cluster-critical": SYSTEM_CRITICAL_PRIORITY,
    "system-node-critical": SYSTEM_CRITICAL_PRIORITY + 1000,
}


class PriorityResolver:
    def __init__(self, classes: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.classes: dict[str, Mapping[str, Any]] = dict(classes or {})

    def put(self, obj: Mapping[str, Any]) -> None:
        self.classes[str((obj.get("metadata") or {}).get("name"))] = obj

    def delete(self, name: str) -> None:
        self.classes.pop(name, None)

    def global_default(self) -> Mapping[str, Any] | None:
        defaults = [c for c in self.classes.values() if c.get("globalDefault")]
        # Several defaults cannot be created upstream; pick the lowest value, like admission would.
        return min(defaults, key=lambda c: int(c.get("value", 0))) if defaults else None

    def resolve(self, spec: Mapping[str, Any]) -> tuple[int, str]:
        """(priority, preemptionPolicy) for a pod spec. Raises ModelError for an unknown class."""
        prio = spec.get("priority")
        name = spec.get("priorityClassName") or ""
        policy = spec.get("preemptionPolicy")
        if name:
            cls = self.classes.get(name)
            if cls is None and name in _BUILTIN:
                return (prio if prio is not None else _BUILTIN[name]), policy or "PreemptLowerPriority"
            if cls is None:
                if prio is not None:
                    return prio, policy or "PreemptLowerPriority"
                raise ModelError(f"no PriorityClass with name {name} was found", field="spec.priorityClassName")
        else:
            cls = self.global_default()
        if prio is None:
            prio = int(cls.get("value", 0)) if cls else 0
        if policy is None:
            policy = (cls.get("preemptionPolicy") if cls else None) or "PreemptLowerPriority"
        return prio, policy
