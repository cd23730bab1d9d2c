"""A claim's constraints: matchAttribute and distinctAttribute over the devices of the named
requests (all requests when none is named), checked as devices are added and removed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .devices import Device


class ConstraintError(Exception):
    pass


class Constraint:
    """matchAttribute / distinctAttribute over the devices of the named requests (all if none)."""

    def __init__(self, requests: list[str], attribute: str, distinct: bool) -> None:
        self.requests = set(requests)
        self.attribute = attribute
        self.distinct = distinct
        self.values: list[Any] = []

    @classmethod
    def parse(cls, claim: Mapping[str, Any], i: int, raw: Mapping[str, Any]) -> Constraint:
        requests = [str(r) for r in raw.get("requests") or ()]
        if raw.get("matchAttribute"):
            return cls(requests, str(raw["matchAttribute"]), False)
        if raw.get("distinctAttribute"):
            return cls(requests, str(raw["distinctAttribute"]), True)
        raise ConstraintError(f"constraint #{i}: empty constraint (unsupported constraint type?)")

    def _applies(self, base: str, sub: str) -> bool:
        return not self.requests or base in self.requests or (bool(sub) and f"{base}/{sub}" in self.requests)

    def add(self, base: str, sub: str, device: Device) -> bool:
        if not self._applies(base, sub):
            return True
        attr = device.attribute(self.attribute)
        if attr is None:
            return False
        value = tuple(sorted((k, str(v)) for k, v in attr.items()))
        if self.distinct and value in self.values:
            return False
        if not self.distinct and self.values and value != self.values[0]:
            return False
        self.values.append(value)
        return True

    def remove(self, base: str, sub: str) -> None:
        if self._applies(base, sub):
            self.values.pop()
