"""Priority as the API server's Priority admission resolves it from PriorityClasses: a pod's
(`PriorityResolver.resolve`) and a scheduling.k8s.io/v1beta1 PodGroup's (`admit_pod_group`),
from the same classes (the input's, the system-* ones, the globalDefault one)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .model import ModelError

SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
HIGHEST_USER_PRIORITY = 1_000_000_000
_BUILTIN = {
    "system-cluster-critical": SYSTEM_CRITICAL_PRIORITY,
    "system-node-critical": SYSTEM_CRITICAL_PRIORITY + 1000,
}
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
PREEMPT_NEVER = "Never"
# upstream's scheduling.DefaultPriorityWhenNoDefaultClassExists
DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS = 0
POD_GROUPS_RESOURCE = "podgroups.scheduling.k8s.io"
POD_GROUP_GROUP_KIND = "PodGroup.scheduling.k8s.io"


class Refused(ModelError):
    """The API server would not create the object: its error, word for word."""


class Forbidden(Refused):
    """Admission refused it (`<resource> "<name>" is forbidden: <reason>`)."""

    def __init__(self, resource: str, name: str, reason: str) -> None:
        self.resource, self.name, self.reason = resource, name, reason
        super().__init__(f"{resource} {_go_quote(name)} is forbidden: {reason}" if name else f"forbidden: {reason}")


class Invalid(Refused):
    """Validation refused it (`<Kind.group> "<name>" is invalid: <field>: Invalid value: ...`)."""

    def __init__(self, group_kind: str, name: str, field_path: str, value: int, detail: str) -> None:
        super().__init__(f"{group_kind} {_go_quote(name)} is invalid: {field_path}: Invalid value: {value}: {detail}")


def _go_quote(text: str) -> str:
    """Go's %q of a Kubernetes name (names have no characters it would escape)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class AdmittedPriority:
    """What admission writes into a PodGroup's spec: the class's name ("" when none), its priority
    and (PodGroupPreemptionPolicy) its preemption policy (None: left as it was)."""

    priority_class_name: str
    priority: int
    preemption_policy: str | None


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

    def named(self, name: str) -> tuple[int, str] | None:
        """(value, preemptionPolicy) of the class `name`: the input's, else a system-* one (the API
        server creates them at start); None when there is none. A class's unset policy is
        PreemptLowerPriority (the PriorityClass's defaulting)."""
        cls = self.classes.get(name)
        if cls is not None:
            return int(cls.get("value", 0)), str(cls.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY)
        if name in _BUILTIN:
            return _BUILTIN[name], PREEMPT_LOWER_PRIORITY
        return None

    def establish(self, name: str, resource: str, obj_name: str) -> AdmittedPriority:
        """Admission's establishPriority: the class named (Forbidden when there is none), or with
        no name the globalDefault class, or the system default (priority 0, PreemptLowerPriority)."""
        if not name:
            default = self.global_default()
            if default is None:
                return AdmittedPriority("", DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS, PREEMPT_LOWER_PRIORITY)
            return AdmittedPriority(str((default.get("metadata") or {}).get("name") or ""),
                                    int(default.get("value", 0)),
                                    str(default.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY))
        got = self.named(name)
        if got is None:
            raise Forbidden(resource, obj_name, f"no PriorityClass with name {name} was found")
        return AdmittedPriority(name, got[0], got[1])

    def resolve(self, spec: Mapping[str, Any]) -> tuple[int, str]:
        """(priority, preemptionPolicy) for a pod spec. Raises ModelError for an unknown class."""
        prio = spec.get("priority")
        name = spec.get("priorityClassName") or ""
        policy = spec.get("preemptionPolicy")
        if name:
            cls = self.classes.get(name)
            if cls is None and name in _BUILTIN:
                return (prio if prio is not None else _BUILTIN[name]), policy or PREEMPT_LOWER_PRIORITY
            if cls is None:
                if prio is not None:
                    return prio, policy or PREEMPT_LOWER_PRIORITY
                raise ModelError(f"no PriorityClass with name {name} was found", field="spec.priorityClassName")
        else:
            cls = self.global_default()
        if prio is None:
            prio = int(cls.get("value", 0)) if cls else 0
        if policy is None:
            policy = (cls.get("preemptionPolicy") if cls else None) or PREEMPT_LOWER_PRIORITY
        return prio, policy

    def admit_pod_group(self, raw: Mapping[str, Any], *, preemption_policy_gate: bool) -> Mapping[str, Any]:
        """A scheduling.k8s.io/v1beta1 PodGroup as kube-apiserver v1.37.2 stores it on create
        (GenericWorkload): Priority admission's admitPodGroup fills spec.priority and
        spec.priorityClassName from its class (none named: the globalDefault class, else priority
        0), and with `preemption_policy_gate` (PodGroupPreemptionPolicy) spec.preemptionPolicy,
        defaulted to PreemptLowerPriority first as the API's defaulting does (without the gate the
        field is dropped). Raises Forbidden
        with admission's message for an unknown class, or a spec.priority or preemptionPolicy
        other than the class's.

        A PodGroup that carries spec.priority already and names no class, or a class the input
        lacks, is one the API server stored (a dump of a cluster): it is taken as it is, as a
        pod's spec.priority is (`resolve`). Returns `raw` itself when nothing changes, else a copy."""
        spec = raw.get("spec")
        if not isinstance(spec, Mapping):
            return raw  # the model says what is wrong with it
        name = spec.get("priorityClassName") or ""
        given = spec.get("priority")
        if not isinstance(name, str) or (given is not None and (isinstance(given, bool) or not isinstance(given, int))):
            return raw
        obj_name = str((raw.get("metadata") or {}).get("name") or "")
        if given is not None and (not name or self.named(name) is None):
            _check_highest(obj_name, given)
            return raw
        admitted = self.establish(name, POD_GROUPS_RESOURCE, obj_name)
        if given is not None and given != admitted.priority:
            raise Forbidden(POD_GROUPS_RESOURCE, obj_name,
                            f"priority set in the pod group ({given}) must match the priority computed "
                            f"({admitted.priority}) based on the priority class set in the spec")
        out = dict(spec)
        out["priority"] = admitted.priority
        if admitted.priority_class_name:
            out["priorityClassName"] = admitted.priority_class_name
        if preemption_policy_gate and admitted.preemption_policy is not None:
            policy = admitted.preemption_policy
            if policy not in (PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER):
                raise Forbidden(POD_GROUPS_RESOURCE, obj_name,
                                f"preemptionPolicy set in the PriorityClass object ({policy}) must match one of "
                                "the allowed values of PreemptionPolicy type in pod group")
            own = spec.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY  # v1beta1's defaulting
            if own != policy:
                raise Forbidden(POD_GROUPS_RESOURCE, obj_name,
                                f"the string value of PreemptionPolicy ({own}) must not be provided in pod group "
                                f"spec; priority admission controller computed {policy} from the given "
                                "PriorityClass name")
            out["preemptionPolicy"] = policy
        elif not preemption_policy_gate:
            out.pop("preemptionPolicy", None)  # a field of a disabled gate is dropped on create
        _check_highest(obj_name, admitted.priority)
        if out == spec:
            return raw
        return {**raw, "spec": out}


def _check_highest(name: str, priority: int) -> None:
    """v1beta1 PodGroup's spec.priority: at most HighestUserDefinablePriority."""
    if priority > HIGHEST_USER_PRIORITY:
        raise Invalid(POD_GROUP_GROUP_KIND, name, "spec.priority", priority,
                      f"must be less than or equal to {HIGHEST_USER_PRIORITY}")
