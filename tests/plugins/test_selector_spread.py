"""SelectorSpread (the legacy SelectorSpreadPriority), after upstream's selector_spread_test.go
(TestSelectorSpreadScore, TestZoneSelectorSpreadPriority) and helper.DefaultSelector's tests."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth.framework import CycleState, NodeScore
from kubeberth.model import Node, NodeInfo, Pod
from kubeberth.plugins.selector_spread import SelectorSpread, default_selector, get_zone_key
from tests.builders import make_node, make_pod
from tests.doubles import handle, store_of

LABELS1 = {"foo": "bar", "baz": "blah"}
LABELS2 = {"bar": "foo", "baz": "blah"}
ZONE = "failure-domain.beta.kubernetes.io/zone"


def svc(selector: dict[str, str], ns: str = "default", name: str = "s") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": selector}}


def controller(kind: str, selector: Any, name: str = "c", ns: str = "default") -> dict[str, Any]:
    return {"apiVersion": "v1" if kind == "ReplicationController" else "apps/v1", "kind": kind,
            "metadata": {"name": name, "namespace": ns}, "spec": {"selector": selector}}


def owned(kind: str, name: str = "c") -> list[dict[str, Any]]:
    api = "v1" if kind == "ReplicationController" else "apps/v1"
    return [{"apiVersion": api, "kind": kind, "name": name, "uid": "owner-uid", "controller": True}]


_N = [0]


def pod(labels: dict[str, str] | None = None, node: str = "", ns: str = "default",
        owner: list[dict[str, Any]] | None = None, deleting: bool = False, **spec: Any) -> Pod:
    _N[0] += 1
    p = make_pod(f"p{_N[0]}", ns, labels=labels, node=node, **spec)
    meta = dict(p.raw["metadata"])
    if owner:
        meta["ownerReferences"] = owner
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return Pod({**p.raw, "metadata": meta})


def scores(incoming: Pod, existing: list[Pod], nodes: list[Node], objects: list[dict[str, Any]]) -> dict[str, int]:
    infos = [NodeInfo(n, [p for p in existing if p.node_name == n.name]) for n in nodes]
    plugin = SelectorSpread(None, handle(objects=store_of(*objects), node_infos=infos))
    state = CycleState()
    assert plugin.pre_score(state, incoming, infos) is None
    result = [NodeScore(ni.name, plugin.score(state, incoming, ni)) for ni in infos]
    assert plugin.normalize_score(state, incoming, result) is None
    return {s.name: s.score for s in result}


M1, M2 = "machine1", "machine2"
TWO = [make_node(M1), make_node(M2)]

SPREAD_CASES = [
    ("nothing scheduled", pod(), [], [], {M1: 100, M2: 100}),
    ("no services", pod(LABELS1), [pod(node=M1)], [], {M1: 100, M2: 100}),
    ("different services", pod(LABELS1), [pod(LABELS2, M1)], [svc({"key": "value"})], {M1: 100, M2: 100}),
    ("two pods, one service pod", pod(LABELS1), [pod(LABELS2, M1), pod(LABELS1, M2)], [svc(LABELS1)],
     {M1: 100, M2: 0}),
    ("five pods, one service pod in no namespace", pod(LABELS1),
     [pod(LABELS2, M1), pod(LABELS1, M1, ns="ns1"), pod(LABELS1, M2, ns="ns1"), pod(LABELS1, M2)],
     [svc(LABELS1)], {M1: 100, M2: 0}),
    ("four pods, one service pod in default namespace", pod(LABELS1),
     [pod(LABELS1, M1, ns="ns1"), pod(LABELS1, M1), pod(LABELS1, M2, ns="ns2")],
     [svc(LABELS1)], {M1: 0, M2: 100}),
    ("five pods, one service pod in specific namespace", pod(LABELS1, ns="ns1"),
     [pod(LABELS2, M1), pod(LABELS1, M1), pod(LABELS1, M1, ns="ns2"), pod(LABELS1, M2, ns="ns1")],
     [svc(LABELS1, ns="ns1")], {M1: 100, M2: 0}),
    ("three pods, two service pods on different machines", pod(LABELS1),
     [pod(LABELS2, M1), pod(LABELS1, M1), pod(LABELS1, M2)], [svc(LABELS1)], {M1: 0, M2: 0}),
    ("four pods, three service pods", pod(LABELS1),
     [pod(LABELS2, M1), pod(LABELS1, M1), pod(LABELS1, M2), pod(LABELS1, M2)], [svc(LABELS1)],
     {M1: 50, M2: 0}),
    ("service with partial pod label matches", pod(LABELS1),
     [pod(LABELS2, M1), pod(LABELS1, M1), pod(LABELS1, M2)], [svc({"baz": "blah"})], {M1: 0, M2: 50}),
    ("service pod being deleted is not counted", pod(LABELS1),
     [pod(LABELS1, M1, deleting=True), pod(LABELS1, M2)], [svc(LABELS1)], {M1: 100, M2: 0}),
    ("service that does not select the incoming pod", pod(LABELS1), [pod(LABELS1, M1)],
     [svc({"foo": "other"})], {M1: 100, M2: 100}),
    ("replication controller", pod(LABELS1, owner=owned("ReplicationController")),
     [pod(LABELS2, M1), pod(LABELS1, M1), pod(LABELS1, M2), pod(LABELS1, M2)],
     [controller("ReplicationController", {"foo": "bar"})], {M1: 50, M2: 0}),
    ("service and replication controller narrow each other", pod(LABELS1, owner=owned("ReplicationController")),
     [pod(LABELS2, M1), pod(LABELS1, M1), pod({"foo": "bar"}, M2), pod({"foo": "bar"}, M2)],
     [svc({"baz": "blah"}), controller("ReplicationController", {"foo": "bar"})], {M1: 0, M2: 100}),
    ("replica set", pod(LABELS1, owner=owned("ReplicaSet")),
     [pod(LABELS2, M1), pod(LABELS1, M1), pod(LABELS1, M2), pod(LABELS1, M2)],
     [controller("ReplicaSet", {"matchLabels": {"foo": "bar"}})], {M1: 50, M2: 0}),
    ("replica set with expressions", pod(LABELS1, owner=owned("ReplicaSet")),
     [pod(LABELS2, M1), pod(LABELS1, M1), pod(LABELS1, M2), pod(LABELS1, M2)],
     [controller("ReplicaSet", {"matchExpressions": [{"key": "foo", "operator": "Exists"}]})], {M1: 50, M2: 0}),
    ("stateful set", pod(LABELS1, owner=owned("StatefulSet")),
     [pod(LABELS2, M1), pod(LABELS1, M1), pod(LABELS1, M2), pod(LABELS1, M2)],
     [controller("StatefulSet", {"matchLabels": {"foo": "bar"}})], {M1: 50, M2: 0}),
    ("owner that does not exist", pod(LABELS1, owner=owned("ReplicaSet", "gone")),
     [pod(LABELS1, M1)], [], {M1: 100, M2: 100}),
    ("owner of another kind is ignored", pod(LABELS1, owner=owned("Job")),
     [pod(LABELS1, M1)], [controller("Job", {"matchLabels": {"foo": "bar"}})], {M1: 100, M2: 100}),
    ("pod with topology spread constraints is left to PodTopologySpread",
     pod(LABELS1, topologySpreadConstraints=[{"maxSkew": 1, "topologyKey": "zone",
                                              "whenUnsatisfiable": "ScheduleAnyway",
                                              "labelSelector": {"matchLabels": LABELS1}}]),
     [pod(LABELS1, M1)], [svc(LABELS1)], {M1: 0, M2: 0}),
]


@pytest.mark.parametrize(("incoming", "existing", "objects", "want"), [c[1:] for c in SPREAD_CASES],
                         ids=[c[0] for c in SPREAD_CASES])
def test_selector_spread_score(incoming: Pod, existing: list[Pod], objects: list[dict[str, Any]],
                               want: dict[str, int]) -> None:
    assert scores(incoming, existing, TWO, objects) == want


N1Z1, N1Z2, N2Z2, N1Z3, N2Z3, N3Z3 = ("node1.zone1", "node1.zone2", "node2.zone2", "node1.zone3",
                                      "node2.zone3", "node3.zone3")
ZONED = [make_node(n, labels={ZONE: n.split(".")[1]}) for n in (N1Z1, N1Z2, N2Z2, N1Z3, N2Z3, N3Z3)]
ALL100 = dict.fromkeys((N1Z1, N1Z2, N2Z2, N1Z3, N2Z3, N3Z3), 100)
SERVICE = [svc(LABELS1)]

ZONE_CASES = [
    ("nothing scheduled", pod(), [], [], ALL100),
    ("no services", pod(LABELS1), [pod(node=N1Z1)], [], ALL100),
    ("different services", pod(LABELS1), [pod(LABELS2, N1Z1)], [svc({"key": "value"})], ALL100),
    ("two pods, 0 matching", pod(LABELS1), [pod(LABELS2, N1Z1), pod(LABELS2, N1Z2)], SERVICE, ALL100),
    ("two pods, 1 matching (in z2)", pod(LABELS1), [pod(LABELS2, N1Z1), pod(LABELS1, N1Z2)], SERVICE,
     {N1Z1: 100, N1Z2: 0, N2Z2: 33, N1Z3: 100, N2Z3: 100, N3Z3: 100}),
    ("five pods, 3 matching (z2=2, z3=1)", pod(LABELS1),
     [pod(LABELS2, N1Z1), pod(LABELS1, N1Z2), pod(LABELS1, N2Z2), pod(LABELS1, N1Z3), pod(LABELS2, N2Z3)],
     SERVICE, {N1Z1: 100, N1Z2: 0, N2Z2: 0, N1Z3: 33, N2Z3: 66, N3Z3: 66}),
    ("four pods, 3 matching (z1=1, z2=1, z3=1)", pod(LABELS1),
     [pod(LABELS1, N1Z1), pod(LABELS1, N1Z2), pod(LABELS1, N1Z3), pod(LABELS2, N2Z2)],
     SERVICE, {N1Z1: 0, N1Z2: 0, N2Z2: 33, N1Z3: 0, N2Z3: 33, N3Z3: 33}),
    ("four pods, 3 matching (z1=1, z2=1, z3=1), one being deleted", pod(LABELS1),
     [pod(LABELS1, N1Z1), pod(LABELS1, N1Z2), pod(LABELS1, N1Z3, deleting=True), pod(LABELS2, N2Z2)],
     SERVICE, {N1Z1: 0, N1Z2: 0, N2Z2: 33, N1Z3: 100, N2Z3: 100, N3Z3: 100}),
    ("three pods, all in z3 on one node", pod(LABELS1),
     [pod(LABELS1, N1Z3), pod(LABELS1, N1Z3), pod(LABELS1, N1Z3)], SERVICE,
     {N1Z1: 100, N1Z2: 100, N2Z2: 100, N1Z3: 0, N2Z3: 33, N3Z3: 33}),
]


@pytest.mark.parametrize(("incoming", "existing", "objects", "want"), [c[1:] for c in ZONE_CASES],
                         ids=[c[0] for c in ZONE_CASES])
def test_zone_selector_spread(incoming: Pod, existing: list[Pod], objects: list[dict[str, Any]],
                              want: dict[str, int]) -> None:
    assert scores(incoming, existing, ZONED, objects) == want


def test_nodes_without_zone_only_spread_by_node() -> None:
    nodes = [make_node("a", labels={ZONE: "z1"}), make_node("b")]
    got = scores(pod(LABELS1), [pod(LABELS1, "a"), pod(LABELS1, "b"), pod(LABELS1, "b")], nodes, SERVICE)
    # a: node 50, zone z1 count 1 is the max -> 0; 50/3 = 16. b: no zone, node score only = 0.
    assert got == {"a": 16, "b": 0}


@pytest.mark.parametrize(("labels", "want"), [
    ({}, ""),
    ({ZONE: "z"}, ":\x00:z"),
    ({"topology.kubernetes.io/zone": "z", "topology.kubernetes.io/region": "r"}, "r:\x00:z"),
    ({ZONE: "beta", "topology.kubernetes.io/zone": "ga"}, ":\x00:beta"),
    ({"failure-domain.beta.kubernetes.io/region": "r"}, "r:\x00:"),
], ids=["none", "beta zone", "ga zone and region", "beta wins", "region only"])
def test_get_zone_key(labels: dict[str, str], want: str) -> None:
    assert get_zone_key(make_node("n", labels=labels)) == want


def test_default_selector_merges_services() -> None:
    objects = store_of(svc({"baz": "blah"}, name="a"), svc({"foo": "bar"}, name="b"), svc({"x": "y"}, name="c"),
                       svc({"baz": "blah"}, ns="other", name="d"))
    sel = default_selector(pod(LABELS1), objects)
    assert sel.match_labels == {"baz": "blah", "foo": "bar"}


def test_not_in_default_profile_and_legacy_name() -> None:
    fw = handle(profile={}, nodes=TWO)
    assert "SelectorSpread" not in [p.name for p in fw.score_plugins]
    fw = handle(profile={"plugins": {"score": {"enabled": [{"name": "SelectorSpreadPriority", "weight": 2}]}}},
                       nodes=TWO)
    assert "SelectorSpread" in [p.name for p in fw.score_plugins]
    assert fw.score_weights["SelectorSpread"] == 2
    # Enabled at score only, Score computes what PreScore would have (see test_through_the_framework).


def test_through_the_framework() -> None:
    existing = [pod(LABELS1, M1)]
    fw = handle(profile={"plugins": {"score": {"enabled": [{"name": "SelectorSpread"}], "disabled": [{"name": "*"}]}}},
                       nodes=TWO, pods=existing)
    fw.ctx.objects.put("Service", svc({"baz": "blah"}))
    incoming = pod(LABELS1)
    state = CycleState()
    infos = list(fw.snapshot.node_infos)
    assert fw.run_pre_score(state, incoming, infos) is None
    got = {r.name: r.total for r in fw.run_score(state, incoming, infos).to_list()}
    assert got == {M1: 0, M2: 100}
