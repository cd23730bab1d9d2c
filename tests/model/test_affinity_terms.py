"""A pod's pod (anti-)affinity terms, parsed once in the model (upstream's PodInfo terms)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth.model import AffinityTerm, Pod, pod_affinity_terms
from kubeberth.model.affinity_terms import default_namespace_labels
from tests.builders import make_pod

NS_LABELS = {"dev": {"team": "a"}, "prod": {"team": "b"}}


def ns_labels(namespace: str) -> dict[str, str]:
    return NS_LABELS.get(namespace, {})


def with_terms(labels: dict[str, str] | None = None, ns: str = "dev", **sections: list[Any]) -> Pod:
    """A pod whose affinity has the given sections: req, anti, pref, pref_anti."""
    where = {"req": ("podAffinity", "requiredDuringSchedulingIgnoredDuringExecution"),
             "anti": ("podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution"),
             "pref": ("podAffinity", "preferredDuringSchedulingIgnoredDuringExecution"),
             "pref_anti": ("podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution")}
    aff: dict[str, Any] = {}
    for name, terms in sections.items():
        kind, field = where[name]
        aff.setdefault(kind, {})[field] = terms
    return make_pod("p", namespace=ns, labels=labels or {}, affinity=aff)


def app(value: str, topo: str = "zone", **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": value}}, "topologyKey": topo, **extra}


def term_of(raw: dict[str, Any], labels: dict[str, str] | None = None) -> AffinityTerm:
    (t,) = pod_affinity_terms(with_terms(labels, req=[raw])).required_affinity
    return t


# ---- which pods a term selects ------------------------------------------------------------

# (id, term, the selecting pod's labels, candidate namespace, candidate labels, selected)
MATCH_CASES = [
    ("own namespace by default", app("db"), None, "dev", {"app": "db"}, True),
    ("other namespace not by default", app("db"), None, "prod", {"app": "db"}, False),
    ("labels differ", app("db"), None, "dev", {"app": "web"}, False),
    ("listed namespaces only", app("db", namespaces=["prod"]), None, "dev", {"app": "db"}, False),
    ("listed namespace", app("db", namespaces=["prod"]), None, "prod", {"app": "db"}, True),
    ("namespaceSelector by labels", app("db", namespaceSelector={"matchLabels": {"team": "b"}}), None,
     "prod", {"app": "db"}, True),
    ("namespaceSelector excludes own", app("db", namespaceSelector={"matchLabels": {"team": "b"}}), None,
     "dev", {"app": "db"}, False),
    ("empty namespaceSelector: all", app("db", namespaceSelector={}), None, "elsewhere", {"app": "db"}, True),
    ("no labelSelector selects nothing", {"topologyKey": "zone"}, None, "dev", {}, False),
    ("empty labelSelector selects all", {"labelSelector": {}, "topologyKey": "zone"}, None, "dev", {"x": "1"}, True),
    ("matchLabelKeys: same value", app("db", matchLabelKeys=["rev"]), {"rev": "1"}, "dev",
     {"app": "db", "rev": "1"}, True),
    ("matchLabelKeys: other value", app("db", matchLabelKeys=["rev"]), {"rev": "1"}, "dev",
     {"app": "db", "rev": "2"}, False),
    ("matchLabelKeys absent on the pod are ignored", app("db", matchLabelKeys=["rev"]), None, "dev",
     {"app": "db", "rev": "2"}, True),
    ("mismatchLabelKeys: same value", app("db", mismatchLabelKeys=["rev"]), {"rev": "1"}, "dev",
     {"app": "db", "rev": "1"}, False),
    ("mismatchLabelKeys: other value", app("db", mismatchLabelKeys=["rev"]), {"rev": "1"}, "dev",
     {"app": "db", "rev": "2"}, True),
]


@pytest.mark.parametrize(("raw", "own_labels", "namespace", "labels", "selected"), [c[1:] for c in MATCH_CASES],
                         ids=[c[0] for c in MATCH_CASES])
def test_which_pods_a_term_selects(raw: dict[str, Any], own_labels: dict[str, str] | None, namespace: str,
                                   labels: dict[str, str], selected: bool) -> None:
    t = term_of(raw, own_labels)
    candidate = make_pod("c", namespace=namespace, labels=labels)
    assert t.matches(candidate, ns_labels) is selected
    assert t.matches_labels(namespace, labels, ns_labels) is selected


def test_sections_weights_and_topology_keys() -> None:
    p = with_terms(req=[app("a", "zone")], anti=[app("b", "host")],
                   pref=[{"weight": 5, "podAffinityTerm": app("c", "rack")}],
                   pref_anti=[{"weight": 7, "podAffinityTerm": app("d", "region")}])
    terms = pod_affinity_terms(p)
    assert terms.error == ""
    got = [[(t.topology_key, t.weight) for t in section] for section in
           (terms.required_affinity, terms.required_anti, terms.preferred_affinity, terms.preferred_anti)]
    assert got == [[("zone", 0)], [("host", 0)], [("rack", 5)], [("region", 7)]]


# (id, sections, where the error is, what it says)
ERROR_CASES = [
    ("bad operator", {"req": [{"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Near"}]},
                               "topologyKey": "zone"}]}, "requiredAffinityTerms", "unknown operator"),
    ("bad key", {"anti": [{"labelSelector": {"matchLabels": {"-x": "1"}}, "topologyKey": "zone"}]},
     "requiredAntiAffinityTerms", "key: Invalid value: '-x'"),
    ("bad value", {"pref": [{"weight": 1, "podAffinityTerm": {
        "labelSelector": {"matchLabels": {"a": "-"}}, "topologyKey": "zone"}}]},
     "preferredAffinityTerms", 'values[0][a]: Invalid value: "-"'),
    ("term not a mapping", {"pref_anti": ["zone"]}, "preferredAntiAffinityTerms", "is not a mapping"),
    ("bad namespaceSelector", {"req": [app("a", namespaceSelector={"matchLabels": {"t": "a b"}})]},
     "requiredAffinityTerms", "Invalid value"),
]


@pytest.mark.parametrize(("sections", "where", "says"), [c[1:] for c in ERROR_CASES],
                         ids=[c[0] for c in ERROR_CASES])
def test_a_bad_term_is_an_error_naming_where_and_drops_every_term(sections: dict[str, Any], where: str,
                                                                  says: str) -> None:
    terms = pod_affinity_terms(with_terms(**{"req": [app("ok")], **sections}))
    assert terms.error.startswith(f"{where}: ") and says in terms.error
    assert not (terms.required_affinity or terms.required_anti or terms.preferred_affinity or terms.preferred_anti)


def test_parsed_once_per_pod_and_shared_by_replicas() -> None:
    a = with_terms({"app": "web"}, anti=[app("web")])
    b = with_terms({"app": "web", "other": "x"}, anti=[app("web")])
    assert pod_affinity_terms(a) is pod_affinity_terms(a) is pod_affinity_terms(b)
    assert pod_affinity_terms(with_terms({"app": "web"}, ns="prod", anti=[app("web")])) is not pod_affinity_terms(a)
    # With matchLabelKeys the terms depend on the pod's own labels.
    r1 = with_terms({"rev": "1"}, anti=[app("web", matchLabelKeys=["rev"])])
    r2 = with_terms({"rev": "2"}, anti=[app("web", matchLabelKeys=["rev"])])
    assert pod_affinity_terms(r1) is not pod_affinity_terms(r2)


def test_a_pod_without_pod_affinity_has_no_terms() -> None:
    terms = pod_affinity_terms(make_pod("plain", affinity={"nodeAffinity": {}}))
    assert terms.error == "" and not terms.required_affinity and not terms.preferred_anti


def test_default_namespace_labels_name_the_namespace() -> None:
    assert default_namespace_labels("dev") == {"kubernetes.io/metadata.name": "dev"}
