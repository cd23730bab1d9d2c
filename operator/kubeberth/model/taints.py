"""Taints and tolerations (k8s.io/api/core/v1 toleration matching)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .errors import ModelError

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"
_EFFECTS = {NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE}


class Taint:
    """A node's taint: `key`, `value`, `effect` (NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE)."""

    __slots__ = ("effect", "key", "value")

    def __init__(self, key: str, value: str, effect: str) -> None:
        self.key = key
        self.value = value
        self.effect = effect

    @classmethod
    def from_dict(cls, raw: dict) -> Taint:
        if not isinstance(raw, dict) or not raw.get("key"):
            raise ModelError(f"taint {raw!r} has no key")
        effect = raw.get("effect", "")
        if effect not in _EFFECTS:
            raise ModelError(f"taint {raw.get('key')!r} has unknown effect {effect!r}")
        return cls(str(raw["key"]), str(raw.get("value") or ""), effect)

    def __repr__(self) -> str:
        return f"Taint({self.key}={self.value}:{self.effect})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Taint) and (self.key, self.value, self.effect) == (
            other.key, other.value, other.effect)

    def __hash__(self) -> int:
        return hash((self.key, self.value, self.effect))


class Toleration:
    """A pod's toleration: `key` ("" with Exists: every key), `operator` (Equal, Exists),
    `value`, `effect` ("" : every effect), `toleration_seconds`; `tolerates(taint)` as upstream's
    ToleratesTaint."""

    __slots__ = ("effect", "key", "operator", "toleration_seconds", "value")

    def __init__(self, key: str = "", operator: str = "Equal", value: str = "", effect: str = "",
                 toleration_seconds: int | None = None) -> None:
        self.key = key
        self.operator = operator
        self.value = value
        self.effect = effect
        self.toleration_seconds = toleration_seconds

    @classmethod
    def from_dict(cls, raw: dict) -> Toleration:
        if not isinstance(raw, dict):
            raise ModelError(f"toleration {raw!r} is not a mapping")
        operator = raw.get("operator") or "Equal"
        if operator not in ("Equal", "Exists"):
            raise ModelError(f"toleration has unknown operator {operator!r}")
        effect = raw.get("effect") or ""
        if effect and effect not in _EFFECTS:
            raise ModelError(f"toleration has unknown effect {effect!r}")
        return cls(str(raw.get("key") or ""), operator, str(raw.get("value") or ""), effect,
                   raw.get("tolerationSeconds"))

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


def tolerated(taint: Taint, tolerations: Iterable[Toleration]) -> bool:
    """Whether some toleration of `tolerations` tolerates `taint`."""
    return any(t.tolerates(taint) for t in tolerations)


def find_untolerated(taints: Sequence[Taint], tolerations: Sequence[Toleration],
                     effects: frozenset[str] = frozenset({NO_SCHEDULE, NO_EXECUTE})) -> Taint | None:
    """The first taint with one of `effects` that no toleration matches."""
    for taint in taints:
        if taint.effect in effects and not tolerated(taint, tolerations):
            return taint
    return None
