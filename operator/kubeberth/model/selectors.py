"""Label selectors and node selector terms, with upstream matching rules."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import ModelError

# The one field a node selector term's matchFields may name.
OBJECT_NAME_FIELD = "metadata.name"

_LABEL_OPS = {"In", "NotIn", "Exists", "DoesNotExist"}
_INT64 = re.compile(r"^[+-]?[0-9]+$")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _parse_int64(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64), or None when it would fail."""
    if not _INT64.match(text):
        return None
    n = int(text)
    return n if _INT64_MIN <= n <= _INT64_MAX else None


_NODE_OPS = _LABEL_OPS | {"Gt", "Lt"}
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def is_label_value(value: str) -> bool:
    return len(value) <= 63 and _LABEL_VALUE.match(value) is not None


class Requirement:
    """One requirement of a selector.

    With `lenient` (node selector matchExpressions), what the API server admits but
    the scheduler cannot parse (a Gt/Lt value that is not an integer, a value that is
    not a valid label value) makes the requirement match nothing instead of raising,
    as upstream's lazy node selector parsing does.
    """

    __slots__ = ("int_value", "invalid", "key", "operator", "values")

    def __init__(self, key: str, operator: str, values: Sequence[str] = (), *, node: bool = False,
                 lenient: bool = False) -> None:
        allowed = _NODE_OPS if node else _LABEL_OPS
        if operator not in allowed:
            raise ModelError(f"unknown operator {operator!r} for key {key!r}")
        if not key:
            raise ModelError("a requirement needs a key")
        vals = tuple(str(v) for v in values or ())
        if operator in ("In", "NotIn") and not vals:
            raise ModelError(f"operator {operator} for key {key!r} needs at least one value")
        if operator in ("Exists", "DoesNotExist") and vals:
            raise ModelError(f"operator {operator} for key {key!r} takes no values")
        self.int_value: int | None = None
        self.invalid = False
        if operator in ("Gt", "Lt"):
            if len(vals) != 1:
                raise ModelError(f"operator {operator} for key {key!r} needs exactly one value")
            self.int_value = _parse_int64(vals[0])
            if self.int_value is None:
                if not lenient:
                    raise ModelError(f"operator {operator} for key {key!r} needs an integer value")
                self.invalid = True
        elif lenient and not all(is_label_value(v) for v in vals):
            self.invalid = True
        self.key = key
        self.operator = operator
        self.values = frozenset(vals)

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.invalid:
            return False
        op = self.operator
        present = self.key in labels
        if op == "In":
            return present and labels[self.key] in self.values
        if op == "NotIn":
            return not present or labels[self.key] not in self.values
        if op == "Exists":
            return present
        if op == "DoesNotExist":
            return not present
        if not present:
            return False
        have = _parse_int64(labels[self.key])
        if have is None:
            return False
        assert self.int_value is not None
        return have > self.int_value if op == "Gt" else have < self.int_value


def _requirements(raw: Any, *, node: bool, where: str, lenient: bool = False) -> list[Requirement]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ModelError(f"{where} must be a list")
    out = []
    for expr in raw:
        if not isinstance(expr, dict):
            raise ModelError(f"{where} entry {expr!r} is not a mapping")
        out.append(Requirement(str(expr.get("key") or ""), str(expr.get("operator") or ""),
                               expr.get("values") or (), node=node, lenient=lenient))
    return out


class LabelSelector:
    """metav1.LabelSelector. An empty selector matches everything."""

    __slots__ = ("match_labels", "requirements")

    def __init__(self, match_labels: Mapping[str, str] | None = None,
                 requirements: Sequence[Requirement] = ()) -> None:
        self.match_labels = dict(match_labels or {})
        self.requirements = list(requirements)

    @classmethod
    def from_dict(cls, raw: Any) -> LabelSelector:
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise ModelError(f"label selector {raw!r} is not a mapping")
        labels = raw.get("matchLabels") or {}
        if not isinstance(labels, dict):
            raise ModelError("matchLabels must be a mapping")
        return cls({str(k): str(v) for k, v in labels.items()},
                   _requirements(raw.get("matchExpressions"), node=False, where="matchExpressions"))

    def is_empty(self) -> bool:
        return not self.match_labels and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        for k, v in self.match_labels.items():
            if labels.get(k) != v:
                return False
        return all(r.matches(labels) for r in self.requirements)


class NodeSelectorTerm:
    """One term: all its expressions and fields must match. An empty term matches nothing."""

    __slots__ = ("fields", "requirements")

    def __init__(self, requirements: Sequence[Requirement], fields: Sequence[Requirement]) -> None:
        self.requirements = list(requirements)
        self.fields = list(fields)

    @classmethod
    def from_dict(cls, raw: Any) -> NodeSelectorTerm:
        if not isinstance(raw, dict):
            raise ModelError(f"node selector term {raw!r} is not a mapping")
        fields = _requirements(raw.get("matchFields"), node=True, where="matchFields")
        for f in fields:
            if f.key != OBJECT_NAME_FIELD:
                raise ModelError(f"matchFields supports only metadata.name, not {f.key!r}")
            if f.operator not in ("In", "NotIn"):
                raise ModelError(f"matchFields on metadata.name supports In and NotIn, not {f.operator}")
        return cls(_requirements(raw.get("matchExpressions"), node=True, where="matchExpressions", lenient=True),
                   fields)

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        if not self.requirements and not self.fields:
            return False
        if not all(r.matches(labels) for r in self.requirements):
            return False
        if self.fields:
            name_fields = {OBJECT_NAME_FIELD: node_name}
            return all(f.matches(name_fields) for f in self.fields)
        return True


class NodeSelector:
    """v1.NodeSelector: the terms are ORed."""

    __slots__ = ("terms",)

    def __init__(self, terms: Sequence[NodeSelectorTerm]) -> None:
        self.terms = list(terms)

    @classmethod
    def from_dict(cls, raw: Any) -> NodeSelector:
        if not isinstance(raw, dict):
            raise ModelError(f"node selector {raw!r} is not a mapping")
        terms = raw.get("nodeSelectorTerms") or []
        if not isinstance(terms, list):
            raise ModelError("nodeSelectorTerms must be a list")
        return cls([NodeSelectorTerm.from_dict(t) for t in terms])

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        return any(t.matches(node_name, labels) for t in self.terms)


class PreferredTerm:
    """A preferred node affinity term: a NodeSelectorTerm `term` and its `weight` (1-100)."""

    __slots__ = ("term", "weight")

    def __init__(self, weight: int, term: NodeSelectorTerm) -> None:
        self.weight = weight
        self.term = term

    @classmethod
    def from_dict(cls, raw: Any) -> PreferredTerm:
        if not isinstance(raw, dict):
            raise ModelError(f"preferred scheduling term {raw!r} is not a mapping")
        weight = raw.get("weight", 0)
        if not isinstance(weight, int) or not 0 <= weight <= 100:
            raise ModelError(f"preferred scheduling term weight {weight!r} must be 0..100")
        return cls(weight, NodeSelectorTerm.from_dict(raw.get("preference") or {}))
