"""Taints and tolerations (v1 Toleration.ToleratesTaint)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth.model import ModelError, Taint, Toleration, find_untolerated
from kubeberth.model.taints import NO_EXECUTE, NO_SCHEDULE, PREFER_NO_SCHEDULE, tolerated

TAINT = Taint("foo", "bar", NO_SCHEDULE)

# (id, toleration, tolerates TAINT foo=bar:NoSchedule)
TOLERATION_CASES = [
    ("empty key with Exists tolerates everything", {"operator": "Exists"}, True),
    ("empty key Exists with the same effect", {"operator": "Exists", "effect": NO_SCHEDULE}, True),
    ("empty key Exists with another effect", {"operator": "Exists", "effect": NO_EXECUTE}, False),
    ("key and value equal", {"key": "foo", "operator": "Equal", "value": "bar"}, True),
    ("operator defaults to Equal", {"key": "foo", "value": "bar"}, True),
    ("value differs", {"key": "foo", "operator": "Equal", "value": "baz"}, False),
    ("key differs", {"key": "other", "operator": "Exists"}, False),
    ("Exists ignores the value", {"key": "foo", "operator": "Exists"}, True),
    ("empty effect matches every effect", {"key": "foo", "value": "bar", "effect": ""}, True),
    ("effect must match when set", {"key": "foo", "value": "bar", "effect": PREFER_NO_SCHEDULE}, False),
    ("same effect", {"key": "foo", "value": "bar", "effect": NO_SCHEDULE}, True),
    ("Equal with empty value against a valued taint", {"key": "foo"}, False),
]


@pytest.mark.parametrize(("raw", "want"), [c[1:] for c in TOLERATION_CASES], ids=[c[0] for c in TOLERATION_CASES])
def test_toleration_tolerates_taint(raw: dict[str, Any], want: bool) -> None:
    assert Toleration.from_dict(raw).tolerates(TAINT) is want


def test_empty_value_taint() -> None:
    assert Toleration.from_dict({"key": "k"}).tolerates(Taint("k", "", NO_EXECUTE))


def test_find_untolerated() -> None:
    taints = [Taint("a", "1", PREFER_NO_SCHEDULE), Taint("b", "2", NO_SCHEDULE), Taint("c", "3", NO_EXECUTE)]
    assert find_untolerated(taints, []) == taints[1]
    tol_b = Toleration("b", "Exists")
    assert find_untolerated(taints, [tol_b]) == taints[2]
    assert find_untolerated(taints, [tol_b, Toleration("c", "Equal", "3")]) is None
    assert find_untolerated(taints, [], frozenset({PREFER_NO_SCHEDULE})) == taints[0]
    assert tolerated(taints[0], [Toleration(operator="Exists")])
    assert not tolerated(taints[0], [])


@pytest.mark.parametrize(("raw", "ok"), [
    ({"key": "k", "value": "v", "effect": "NoSchedule"}, True),
    ({"key": "k", "effect": "PreferNoSchedule"}, True),
    ({"key": "k", "effect": "NoExecute"}, True),
    ({"key": "k", "effect": "Sometimes"}, False),
    ({"key": "k"}, False),
    ({"value": "v", "effect": "NoSchedule"}, False),
    ("k=v:NoSchedule", False),
])
def test_taint_from_dict(raw: Any, ok: bool) -> None:
    if ok:
        t = Taint.from_dict(raw)
        assert (t.key, t.value, t.effect) == (raw["key"], raw.get("value", ""), raw["effect"])
    else:
        with pytest.raises(ModelError):
            Taint.from_dict(raw)


@pytest.mark.parametrize(("raw", "ok"), [
    ({"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}, True),
    ({"operator": "Lt"}, False),
    ({"effect": "Never"}, False),
    (["k"], False),
])
def test_toleration_from_dict(raw: Any, ok: bool) -> None:
    if ok:
        assert Toleration.from_dict(raw).toleration_seconds == 30
    else:
        with pytest.raises(ModelError):
            Toleration.from_dict(raw)


def test_taint_equality() -> None:
    assert Taint("a", "b", NO_SCHEDULE) == Taint("a", "b", NO_SCHEDULE)
    assert Taint("a", "b", NO_SCHEDULE) != Taint("a", "b", NO_EXECUTE)
    assert len({Taint("a", "b", NO_SCHEDULE), Taint("a", "b", NO_SCHEDULE)}) == 1
