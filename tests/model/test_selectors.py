"""Label selectors, node selector terms (matchExpressions, matchFields, Gt/Lt)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth.model import LabelSelector, ModelError, NodeSelector, NodeSelectorTerm, PreferredTerm, Requirement

LABELS = {"zone": "a", "tier": "web", "cores": "8", "neg": "-3", "word": "eight", "big": "99999999999999999999"}

# (id, key, operator, values, node operators allowed, matches LABELS)
REQUIREMENT_CASES = [
    ("In present", "zone", "In", ["a", "b"], False, True),
    ("In other value", "zone", "In", ["b"], False, False),
    ("In absent key", "missing", "In", ["a"], False, False),
    ("NotIn present other value", "zone", "NotIn", ["b"], False, True),
    ("NotIn present same value", "zone", "NotIn", ["a"], False, False),
    ("NotIn absent key", "missing", "NotIn", ["a"], False, True),
    ("Exists present", "tier", "Exists", [], False, True),
    ("Exists absent", "missing", "Exists", [], False, False),
    ("DoesNotExist absent", "missing", "DoesNotExist", [], False, True),
    ("DoesNotExist present", "tier", "DoesNotExist", [], False, False),
    ("Gt greater", "cores", "Gt", ["4"], True, True),
    ("Gt equal", "cores", "Gt", ["8"], True, False),
    ("Gt smaller", "cores", "Gt", ["16"], True, False),
    ("Lt smaller", "cores", "Lt", ["16"], True, True),
    ("Lt equal", "cores", "Lt", ["8"], True, False),
    ("Gt negative label", "neg", "Gt", ["-5"], True, True),
    ("Gt signed value", "cores", "Gt", ["+7"], True, True),
    ("Gt non-integer label", "word", "Gt", ["1"], True, False),
    ("Gt label beyond int64", "big", "Gt", ["1"], True, False),
    ("Gt absent key", "missing", "Gt", ["1"], True, False),
    ("Lt absent key", "missing", "Lt", ["1"], True, False),
]


@pytest.mark.parametrize(("key", "op", "values", "node", "want"), [c[1:] for c in REQUIREMENT_CASES],
                         ids=[c[0] for c in REQUIREMENT_CASES])
def test_requirement_matches(key: str, op: str, values: list[str], node: bool, want: bool) -> None:
    assert Requirement(key, op, values, node=node).matches(LABELS) is want


@pytest.mark.parametrize(("key", "op", "values", "node"), [
    ("k", "Gt", ["1"], False),          # Gt/Lt only in node selectors
    ("k", "Lt", ["1"], False),
    ("k", "Near", ["1"], True),
    ("", "Exists", [], False),
    ("k", "In", [], False),
    ("k", "NotIn", [], True),
    ("k", "Exists", ["x"], False),
    ("k", "DoesNotExist", ["x"], True),
    ("k", "Gt", ["1", "2"], True),
    ("k", "Gt", [], True),
    ("k", "Gt", ["1.5"], True),
    ("k", "Lt", ["x"], True),
    ("k", "Lt", [" 5"], True),
    ("k", "Gt", ["9223372036854775808"], True),
])
def test_invalid_requirements(key: str, op: str, values: list[str], node: bool) -> None:
    with pytest.raises(ModelError):
        Requirement(key, op, values, node=node)


@pytest.mark.parametrize(("raw", "labels", "want"), [
    ({}, {}, True),
    (None, {"a": "b"}, True),
    ({"matchLabels": {"zone": "a"}}, LABELS, True),
    ({"matchLabels": {"zone": "b"}}, LABELS, False),
    ({"matchLabels": {"zone": "a"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["db"]}]},
     LABELS, False),
    ({"matchExpressions": [{"key": "tier", "operator": "Exists"},
                           {"key": "gone", "operator": "DoesNotExist"}]}, LABELS, True),
], ids=["empty", "nil", "labels", "labels mismatch", "labels and expressions ANDed", "expressions"])
def test_label_selector(raw: Any, labels: dict[str, str], want: bool) -> None:
    sel = LabelSelector.from_dict(raw)
    assert sel.matches(labels) is want
    assert sel.is_empty() is (not raw)


@pytest.mark.parametrize("raw", [
    "x", {"matchLabels": ["a"]}, {"matchExpressions": {"key": "a"}},
    {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
])
def test_invalid_label_selectors(raw: Any) -> None:
    with pytest.raises(ModelError):
        LabelSelector.from_dict(raw)


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)}


# (id, term, node name, matches)
TERM_CASES = [
    ("empty term matches nothing", {}, "n1", False),
    ("empty lists match nothing", {"matchExpressions": [], "matchFields": []}, "n1", False),
    ("expression", {"matchExpressions": [expr("zone", "In", "a")]}, "n1", True),
    ("expressions are ANDed", {"matchExpressions": [expr("zone", "In", "a"), expr("tier", "In", "db")]},
     "n1", False),
    ("matchFields In", {"matchFields": [expr("metadata.name", "In", "n1")]}, "n1", True),
    ("matchFields In other node", {"matchFields": [expr("metadata.name", "In", "n2")]}, "n1", False),
    ("matchFields NotIn", {"matchFields": [expr("metadata.name", "NotIn", "n2")]}, "n1", True),
    ("matchFields NotIn this node", {"matchFields": [expr("metadata.name", "NotIn", "n1")]}, "n1", False),
    ("fields and expressions ANDed",
     {"matchExpressions": [expr("zone", "In", "a")], "matchFields": [expr("metadata.name", "In", "n2")]},
     "n1", False),
    ("a Gt value that is not an integer matches nothing (lazy parse error)",
     {"matchExpressions": [expr("cores", "Gt", "many")]}, "n1", False),
    ("an invalid label value makes even NotIn match nothing",
     {"matchExpressions": [expr("zone", "NotIn", "invalid value: ___@#$%^")]}, "n1", False),
    ("a valid NotIn value", {"matchExpressions": [expr("zone", "NotIn", "b")]}, "n1", True),
    ("fields and expressions both match",
     {"matchExpressions": [expr("cores", "Gt", "2")], "matchFields": [expr("metadata.name", "In", "n1")]},
     "n1", True),
]


@pytest.mark.parametrize(("term", "node", "want"), [c[1:] for c in TERM_CASES], ids=[c[0] for c in TERM_CASES])
def test_node_selector_term(term: dict[str, Any], node: str, want: bool) -> None:
    assert NodeSelectorTerm.from_dict(term).matches(node, LABELS) is want


@pytest.mark.parametrize("term", [
    {"matchFields": [expr("metadata.labels", "In", "x")]},
    {"matchFields": [expr("metadata.name", "Exists")]},
    {"matchExpressions": [expr("a", "Bogus", "x")]},
    "term",
])
def test_invalid_node_selector_terms(term: Any) -> None:
    with pytest.raises(ModelError):
        NodeSelectorTerm.from_dict(term)


def test_node_selector_terms_are_ored() -> None:
    sel = NodeSelector.from_dict({"nodeSelectorTerms": [
        {"matchExpressions": [expr("zone", "In", "b")]},
        {"matchExpressions": [expr("tier", "In", "web")]},
    ]})
    assert sel.matches("n1", LABELS)
    assert not sel.matches("n1", {"zone": "c"})
    assert not NodeSelector.from_dict({"nodeSelectorTerms": []}).matches("n1", LABELS)
    with pytest.raises(ModelError):
        NodeSelector.from_dict({"nodeSelectorTerms": {"a": 1}})
    with pytest.raises(ModelError):
        NodeSelector.from_dict([])


@pytest.mark.parametrize(("raw", "ok"), [
    ({"weight": 1, "preference": {"matchExpressions": [expr("a", "Exists")]}}, True),
    ({"weight": 100, "preference": {}}, True),
    ({"weight": 101, "preference": {}}, False),
    ({"weight": -1, "preference": {}}, False),
    ({"weight": "5", "preference": {}}, False),
    ("x", False),
])
def test_preferred_term(raw: Any, ok: bool) -> None:
    if ok:
        t = PreferredTerm.from_dict(raw)
        assert t.weight == raw["weight"]
    else:
        with pytest.raises(ModelError):
            PreferredTerm.from_dict(raw)
