"""Feature gates, taken as kube-scheduler v1.37.2 takes `--feature-gates` (component-base's
featuregate): the gates its binary knows at v1.37 with their defaults, stability, locks and
dependencies (features_v1_37.json, written by tools/k8s/cmd/featuregates), parsed and checked
with upstream's messages word for word.

Gates are process-wide, as upstream's DefaultFeatureGate: `set_current(gates)` once at start
(`kubeberth run`, `simulate`), `current()` where behaviour depends on a gate; `override(gates)`
scopes a set to a block (a `kubeberth test` case, a unit test).

kubeberth acts on the gates it implements (IMPLEMENTED); any other gate set away from its
default is refused with a message that says so, never silently ignored.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import resources

# The kube-scheduler release whose behaviour kubeberth reproduces (the one source of truth: its
# gates are features_v1_37.json, tools/k8s/go.mod pins the same k8s.io/kubernetes, and
# `kubeberth --version` prints it as kube-scheduler's own --version does).
KUBE_SCHEDULER_VERSION = "v1.37.2"

GENERIC_WORKLOAD = "GenericWorkload"
TOPOLOGY_AWARE_WORKLOAD_SCHEDULING = "TopologyAwareWorkloadScheduling"
POD_GROUP_PREEMPTION_POLICY = "PodGroupPreemptionPolicy"
ALL_ALPHA = "AllAlpha"
ALL_BETA = "AllBeta"

# The gates whose behaviour kubeberth has (besides those locked to their default, which cannot move).
IMPLEMENTED = frozenset({GENERIC_WORKLOAD, POD_GROUP_PREEMPTION_POLICY, TOPOLOGY_AWARE_WORKLOAD_SCHEDULING})

ALPHA, BETA = "ALPHA", "BETA"


class FeatureGateError(ValueError):
    """A --feature-gates value kube-scheduler would refuse (its message), or one kubeberth cannot honour."""


@dataclass(frozen=True)
class GateSpec:
    name: str
    default: bool
    pre_release: str  # ALPHA, BETA, "" (GA) or DEPRECATED
    locked: bool
    depends_on: tuple[str, ...]


def _load_known() -> dict[str, GateSpec]:
    data = json.loads(resources.files(__package__).joinpath("features_v1_37.json").read_text())
    return {g["name"]: GateSpec(g["name"], bool(g["default"]), g.get("preRelease", ""),
                                bool(g.get("lockedToDefault", False)), tuple(g.get("dependsOn", ())))
            for g in data["gates"]}


KNOWN: Mapping[str, GateSpec] = _load_known()


def _parse_bool(text: str) -> bool | None:
    """Go's strconv.ParseBool."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    return None


def _aggregate(errs: list[str]) -> str:
    """apimachinery's NewAggregate(...).Error()."""
    return errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"


class FeatureGates:
    """An immutable set of gate values: the explicitly set ones over the v1.37 defaults."""

    __slots__ = ("_enabled", "explicit")

    def __init__(self, explicit: Mapping[str, bool] | None = None) -> None:
        self.explicit: dict[str, bool] = dict(explicit or {})
        enabled = {name: spec.default for name, spec in KNOWN.items()}
        # AllAlpha / AllBeta (upstream's "special" gates) turn on every gate of their stage that is not set.
        for special, stage in ((ALL_ALPHA, ALPHA), (ALL_BETA, BETA)):
            if self.explicit.get(special):
                for name, spec in KNOWN.items():
                    if spec.pre_release == stage and not spec.locked and name not in self.explicit:
                        enabled[name] = True
        enabled.update(self.explicit)
        self._enabled = enabled

    @classmethod
    def defaults(cls) -> FeatureGates:
        return cls()

    @classmethod
    def parse(cls, values: str | list[str] | None) -> FeatureGates:
        """One or more `--feature-gates` values ("Name=bool,..." with an optional "kube:" before a name),
        checked as kube-scheduler checks them, then against what kubeberth implements.
        Raises FeatureGateError with upstream's message."""
        if values is None:
            values = []
        if isinstance(values, str):
            values = [values]
        wanted: dict[str, bool] = {}
        for value in values:
            for item in value.split(","):
                if not item:
                    continue
                key, sep, raw = item.partition("=")
                key = key.strip()
                component, colon, name = key.rpartition(":")
                if colon and component != "kube":
                    raise FeatureGateError(f"component not registered: {component}")
                if not sep:
                    raise FeatureGateError(f"missing bool value for {name}")
                raw = raw.strip()
                parsed = _parse_bool(raw)
                if parsed is None:
                    raise FeatureGateError(
                        f'invalid value of {name}={raw}, err: strconv.ParseBool: parsing "{raw}": invalid syntax')
                wanted[name] = parsed
        errs: list[str] = []
        for gate, on in wanted.items():
            spec = KNOWN.get(gate)
            if spec is None:
                errs.append(f"unrecognized feature gate: {gate}")
                raise FeatureGateError(_aggregate(errs))  # upstream returns at the first unknown gate
            if spec.locked and spec.default != on:
                errs.append(f"cannot set feature gate {gate} to {str(on).lower()}, feature is locked to "
                            f"{str(spec.default).lower()}")
        if errs:
            raise FeatureGateError(_aggregate(errs))
        gates = cls(wanted)
        for name in sorted(KNOWN):
            deps = KNOWN[name].depends_on
            if not deps or not gates.enabled(name):
                continue
            off = [d for d in deps if not gates.enabled(d)]
            if off:
                errs.append(f"{name} is enabled, but depends on features that are disabled: [{' '.join(off)}]")
        if errs:
            raise FeatureGateError(_aggregate(errs))
        gates.check_implemented()
        return gates

    def check_implemented(self) -> None:
        """kubeberth's own check: a gate it has no behaviour for must stay at its default."""
        moved = sorted(name for name, value in self._enabled.items()
                       if name not in IMPLEMENTED and name not in (ALL_ALPHA, ALL_BETA)
                       and value != KNOWN[name].default)
        if moved:
            listed = ", ".join(f"{n}={str(self._enabled[n]).lower()}" for n in moved)
            raise FeatureGateError(
                f"kubeberth does not implement feature gate(s) {listed} (kube-scheduler {KUBE_SCHEDULER_VERSION} "
                f"knows them; kubeberth can only leave them at their defaults); gates kubeberth implements: "
                f"{', '.join(sorted(IMPLEMENTED))}")

    def enabled(self, name: str) -> bool:
        try:
            return self._enabled[name]
        except KeyError:
            raise KeyError(f"feature gate {name!r} is not known to kube-scheduler {KUBE_SCHEDULER_VERSION}") from None

    @property
    def generic_workload(self) -> bool:
        return self._enabled[GENERIC_WORKLOAD]

    @property
    def topology_aware_workload_scheduling(self) -> bool:
        return self._enabled[TOPOLOGY_AWARE_WORKLOAD_SCHEDULING]

    def as_flag(self) -> str:
        """The explicitly set gates as a --feature-gates value (sorted; "" when none)."""
        return ",".join(f"{n}={str(v).lower()}" for n, v in sorted(self.explicit.items()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FeatureGates) and other._enabled == self._enabled

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._enabled.items())))

    def __repr__(self) -> str:
        return f"FeatureGates({self.as_flag() or 'defaults'})"


_current = FeatureGates()


def current() -> FeatureGates:
    """The process's gates (upstream's utilfeature.DefaultFeatureGate)."""
    return _current


def set_current(gates: FeatureGates) -> None:
    global _current
    _current = gates


@contextlib.contextmanager
def override(gates: FeatureGates) -> Iterator[FeatureGates]:
    """Use `gates` for the block, then restore the previous set."""
    global _current
    previous, _current = _current, gates
    try:
        yield gates
    finally:
        _current = previous
