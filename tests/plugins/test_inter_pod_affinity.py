"""InterPodAffinity: tables after upstream's filtering_test.go and scoring_test.go."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from kubeberth.cache.objects import ObjectStore
from kubeberth.framework import Code, CycleState, NodeScore, Status
from kubeberth.model import Node, Pod
from kubeberth.plugins.inter_pod_affinity import (
    ERR_AFFINITY,
    ERR_ANTI_AFFINITY,
    ERR_EXISTING_ANTI_AFFINITY,
    PRE_FILTER_KEY,
    InterPodAffinity,
    InterPodAffinityArgs,
)
from tests.builders import make_node, make_pod
from tests.doubles import handle, store_of
from tests.plugins._core_helpers import assert_vectorised_filter_is_filters

# ---- builders -------------------------------------------------------------------

NAMESPACES = [
    ("subteam1.team1", {"team": "team1"}),
    ("subteam2.team1", {"team": "team1"}),
    ("subteam1.team2", {"team": "team2"}),
    ("subteam2.team2", {"team": "team2"}),
]


def namespaces() -> ObjectStore:
    return store_of(*({"kind": "Namespace", "metadata": {"name": name, "labels": labels}}
                      for name, labels in NAMESPACES))


def term(key: str, op: str, values: list[str] | None = None, topo: str = "region", *,
         namespaces: list[str] | None = None, ns_selector: Any = None, **extra: Any) -> dict[str, Any]:
    expr: dict[str, Any] = {"key": key, "operator": op}
    if values is not None:
        expr["values"] = values
    t: dict[str, Any] = {"labelSelector": {"matchExpressions": [expr]}, "topologyKey": topo, **extra}
    if namespaces is not None:
        t["namespaces"] = namespaces
    if ns_selector is not None:
        t["namespaceSelector"] = ns_selector
    return t


def multi(*exprs: tuple[str, str, list[str] | None], topo: str = "region") -> dict[str, Any]:
    out = []
    for key, op, values in exprs:
        e: dict[str, Any] = {"key": key, "operator": op}
        if values is not None:
            e["values"] = values
        out.append(e)
    return {"labelSelector": {"matchExpressions": out}, "topologyKey": topo}


def affinity(req: list[dict[str, Any]] = (), anti: list[dict[str, Any]] = (),  # type: ignore[assignment]
             pref: list[tuple[int, dict[str, Any]]] = (),  # type: ignore[assignment]
             pref_anti: list[tuple[int, dict[str, Any]]] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    aff: dict[str, Any] = {}
    if req or pref:
        aff["podAffinity"] = {}
        if req:
            aff["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = list(req)
        if pref:
            aff["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": w, "podAffinityTerm": t} for w, t in pref]
    if anti or pref_anti:
        aff["podAntiAffinity"] = {}
        if anti:
            aff["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = list(anti)
        if pref_anti:
            aff["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": w, "podAffinityTerm": t} for w, t in pref_anti]
    return aff


_N = [0]


def pod(labels: dict[str, str] | None = None, node: str = "", ns: str = "default", name: str = "",
        aff: dict[str, Any] | None = None) -> Pod:
    _N[0] += 1
    kw: dict[str, Any] = {}
    if aff:
        kw["affinity"] = aff
    return make_pod(name or f"p{_N[0]}", ns, labels=labels, node=node, **kw)


def node(name: str, **labels: str) -> Node:
    n = make_node(name)
    n.labels = dict(labels)  # exactly the labels given, as upstream's tables
    return n


def plugin(nodes: list[Node], pods: list[Pod], **args: Any) -> InterPodAffinity:
    return InterPodAffinity(InterPodAffinityArgs(**args), handle(nodes, pods, objects=namespaces(), vectorise=False))


def run_filter(pl: InterPodAffinity, p: Pod, names: list[str]) -> tuple[Status | None, list[Status | None]]:
    state = CycleState()
    _, st = pl.pre_filter(state, p, pl.handle.snapshot.node_infos)
    if st is not None:
        return st, []
    return None, [pl.filter(state, p, pl.handle.snapshot.get(n)) for n in names]


def unres(reason: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reason)


def unsched(reason: str) -> Status:
    return Status(Code.UNSCHEDULABLE, reason)


SKIP = Status(Code.SKIP)

# ---- Filter: one node -------------------------------------------------------------

SEC = {"service": "securityscan"}
S1 = {"security": "S1"}
N1 = node("node1", region="r1", zone="z11")
EXISTING = pod(SEC, "node1", name="existing")

SINGLE_NODE = [
    ("no required rules, empty node", pod(), [], SKIP, None),
    ("affinity In matches existing pod",
     pod(S1, aff=affinity([term("service", "In", ["securityscan", "value2"])])), [EXISTING], None, None),
    ("affinity NotIn matches existing pod",
     pod(S1, aff=affinity([term("service", "NotIn", ["securityscan3", "value3"])])), [EXISTING], None, None),
    ("affinity fails: existing pod in another namespace",
     pod(S1, aff=affinity([term("service", "In", ["securityscan", "value2"], namespaces=["DiffNameSpace"])])),
     [pod(SEC, "node1", ns="ns")], None, unres(ERR_AFFINITY)),
    ("affinity fails: selector does not match existing pod",
     pod(SEC, aff=affinity([term("service", "In", ["antivirusscan", "value2"], topo="")])), [EXISTING],
     None, unres(ERR_AFFINITY)),
    ("affinity with several operators in several terms",
     pod(S1, aff=affinity([multi(("service", "Exists", None), ("wrongkey", "DoesNotExist", None)),
                           multi(("service", "In", ["securityscan"]), ("service", "NotIn", ["WrongValue"]))])),
     [EXISTING], None, None),
    ("expressions are ANDed: one fails",
     pod(S1, aff=affinity([multi(("service", "Exists", None), ("wrongkey", "DoesNotExist", None)),
                           multi(("service", "In", ["securityscan2"]), ("service", "NotIn", ["WrongValue"]))])),
     [EXISTING], None, unres(ERR_AFFINITY)),
    ("affinity and anti-affinity both satisfied",
     pod(S1, aff=affinity([term("service", "In", ["securityscan", "value2"])],
                          [term("service", "In", ["antivirusscan", "value2"], topo="node")])), [EXISTING], None, None),
    ("affinity, anti-affinity and symmetry satisfied",
     pod(S1, aff=affinity([term("service", "In", ["securityscan", "value2"])],
                          [term("service", "In", ["antivirusscan", "value2"], topo="node")])),
     [pod(SEC, "node1", aff=affinity(anti=[term("service", "In", ["antivirusscan", "value2"], topo="node")]))],
     None, None),
    ("affinity satisfied, anti-affinity not",
     pod(S1, aff=affinity([term("service", "In", ["securityscan", "value2"])],
                          [term("service", "In", ["securityscan", "value2"], topo="zone")])), [EXISTING],
     None, unsched(ERR_ANTI_AFFINITY)),
    ("existing pod's anti-affinity (symmetry) not satisfied",
     pod(SEC, aff=affinity([term("service", "In", ["securityscan", "value2"])],
                           [term("service", "In", ["antivirusscan", "value2"], topo="node")])),
     [pod(SEC, "node1", aff=affinity(anti=[term("service", "In", ["securityscan", "value2"], topo="zone")]))],
     None, unsched(ERR_EXISTING_ANTI_AFFINITY)),
    ("pod matches its own affinity NotIn? no, and no pod matches",
     pod(SEC, aff=affinity([term("service", "NotIn", ["securityscan", "value2"])])),
     [pod(SEC, "node2")], None, unres(ERR_AFFINITY)),
    ("existing anti-affinity respected though the pod has no rules",
     pod(SEC),
     [pod(SEC, "node1", aff=affinity(anti=[term("service", "In", ["securityscan", "value2"], topo="zone")]))],
     None, unsched(ERR_EXISTING_ANTI_AFFINITY)),
    ("existing anti-affinity not matching: skip",
     pod(SEC),
     [pod(SEC, "node1", aff=affinity(anti=[term("service", "NotIn", ["securityscan", "value2"], topo="zone")]))],
     SKIP, None),
    ("incoming anti-affinity violated (symmetry satisfied)",
     pod(SEC, aff=affinity(anti=[term("service", "Exists", topo="region"), term("security", "Exists")])),
     [pod(S1, "node1", aff=affinity(anti=[term("security", "Exists", topo="zone")]))],
     None, unsched(ERR_ANTI_AFFINITY)),
    ("symmetry a1: partial matches, incoming anti-affinity reported first",
     pod(SEC, aff=affinity(anti=[term("service", "Exists", topo="zone"), term("security", "Exists", topo="zone")])),
     [pod(S1, "node1", aff=affinity(anti=[term("security", "Exists", topo="zone")]))],
     None, unsched(ERR_ANTI_AFFINITY)),
    ("symmetry a2: existing pod's anti-affinity matches",
     pod(S1, aff=affinity(anti=[term("security", "Exists", topo="zone")])),
     [pod(SEC, "node1", aff=affinity(anti=[term("service", "Exists", topo="zone"),
                                           term("security", "Exists", topo="zone")]))],
     None, unsched(ERR_EXISTING_ANTI_AFFINITY)),
    ("symmetry b1",
     pod({"abc": "", "xyz": ""}, aff=affinity(anti=[term("abc", "Exists", topo="zone"),
                                                    term("def", "Exists", topo="zone")])),
     [pod({"def": "", "xyz": ""}, "node1", aff=affinity(anti=[term("abc", "Exists", topo="zone"),
                                                              term("def", "Exists", topo="zone")]))],
     None, unsched(ERR_ANTI_AFFINITY)),
    ("symmetry b2",
     pod({"def": "", "xyz": ""}, aff=affinity(anti=[term("abc", "Exists", topo="zone"),
                                                    term("def", "Exists", topo="zone")])),
     [pod({"abc": "", "xyz": ""}, "node1", aff=affinity(anti=[term("abc", "Exists", topo="zone"),
                                                              term("def", "Exists", topo="zone")]))],
     None, unsched(ERR_ANTI_AFFINITY)),
    ("affinity with namespaceSelector matching the existing pod's namespace",
     pod(S1, aff=affinity([term("service", "In", ["securityscan", "value2"],
                                ns_selector={"matchExpressions": [
                                    {"key": "team", "operator": "In", "values": ["team1"]}]})])),
     [pod(SEC, "node1", ns="subteam1.team1")], None, None),
    ("affinity with namespaceSelector not matching",
     pod(S1, aff=affinity([term("service", "In", ["securityscan", "value2"],
                                ns_selector={"matchExpressions": [
                                    {"key": "team", "operator": "In", "values": ["team1"]}]})])),
     [pod(SEC, "node1", ns="subteam1.team2")], None, unres(ERR_AFFINITY)),
    ("anti-affinity with matching namespaceSelector",
     pod(S1, ns="subteam1.team1", aff=affinity(anti=[term("service", "In", ["securityscan", "value2"], topo="zone",
                                                          ns_selector={"matchExpressions": [
                                                              {"key": "team", "operator": "In",
                                                               "values": ["team1"]}]})])),
     [pod(SEC, "node1", ns="subteam2.team1")], None, unsched(ERR_ANTI_AFFINITY)),
    ("anti-affinity with an empty namespaceSelector matches all namespaces",
     pod(S1, ns="subteam1.team1", aff=affinity(anti=[term("service", "In", ["securityscan", "value2"], topo="zone",
                                                          ns_selector={})])),
     [pod(SEC, "node1", ns="subteam2.team1")], None, unsched(ERR_ANTI_AFFINITY)),
    ("anti-affinity with non-matching namespaceSelector",
     pod(S1, ns="subteam1.team1", aff=affinity(anti=[term("service", "In", ["securityscan", "value2"], topo="zone",
                                                          ns_selector={"matchExpressions": [
                                                              {"key": "team", "operator": "In",
                                                               "values": ["team1"]}]})])),
     [pod(SEC, "node1", ns="subteam1.team2")], None, None),
    ("a term without labelSelector matches no pod",
     pod(S1, aff=affinity(anti=[{"topologyKey": "zone"}])), [EXISTING], None, None),
    ("an empty labelSelector matches every pod",
     pod(S1, aff=affinity(anti=[{"labelSelector": {}, "topologyKey": "zone"}])), [EXISTING], None,
     unsched(ERR_ANTI_AFFINITY)),
]


@pytest.mark.parametrize(("incoming", "pods", "want_pre", "want"), [c[1:] for c in SINGLE_NODE],
                         ids=[c[0] for c in SINGLE_NODE])
def test_required_affinity_single_node(incoming: Pod, pods: list[Pod], want_pre: Status | None,
                                       want: Status | None) -> None:
    pl = plugin([N1], pods)
    pre, got = run_filter(pl, incoming, ["node1"])
    assert pre == want_pre
    if pre is None:
        assert got == [want]


@pytest.mark.parametrize(("which", "where"), [("podAffinity", "requiredAffinityTerms"),
                                              ("podAntiAffinity", "requiredAntiAffinityTerms")])
def test_invalid_selector_fails_pre_filter(which: str, where: str) -> None:
    bad = {which: {"requiredDuringSchedulingIgnoredDuringExecution": [
        term("service", "In", ["{{.bad-value.}}"])]}}
    pl = plugin([N1], [])
    pre, _ = run_filter(pl, pod(SEC, aff=bad), ["node1"])
    assert pre is not None and pre.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert pre.message().startswith(f"parsing pod: {where}: values[0][service]: Invalid value: \"{{{{.bad-value.}}}}\"")


# ---- Filter: several nodes -----------------------------------------------------------

CHINA = {"region": "China"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
INDIA = {"region": "India"}
H = {"region": "r1", "zone": "z1", "hostname": "nodeA"}
HB = {"region": "r1", "zone": "z2", "hostname": "nodeB"}
HB_SAMEZONE = {"region": "r1", "zone": "z1", "hostname": "nodeB"}

MULTI_NODE = [
    ("nodes sharing the topology value of a matching pod pass",
     pod(aff=affinity([term("foo", "In", ["bar"])])), [pod({"foo": "bar"}, "n1")],
     [("n1", CHINA), ("n2", CHINA_AZ1), ("n3", INDIA)], None, [None, None, unres(ERR_AFFINITY)]),
    ("first pod of a collection that matches its own affinity is not blocked",
     pod({"foo": "bar", "service": "securityscan"},
         aff=affinity([term("foo", "In", ["bar"], topo="zone"), term("service", "In", ["securityscan"], topo="zone")])),
     [pod({"foo": "bar"}, "nA")],
     [("nA", {"zone": "az1", "hostname": "h1"}), ("nB", {"zone": "az2", "hostname": "h2"})],
     None, [None, None]),
    ("first pod of a collection needs the topology keys on the node",
     pod({"foo": "bar", "service": "securityscan"},
         aff=affinity([term("foo", "In", ["bar"], topo="zone"), term("service", "In", ["securityscan"], topo="zone")])),
     [pod({"foo": "bar"}, "nA")],
     [("nA", {"zoneLabel": "az1", "hostname": "h1"}), ("nB", {"zoneLabel": "az2", "hostname": "h2"})],
     None, [unres(ERR_AFFINITY), unres(ERR_AFFINITY)]),
    ("anti-affinity blocks every node of the matching pod's region",
     pod(aff=affinity(anti=[term("foo", "In", ["abc"])])), [pod({"foo": "abc"}, "nA")],
     [("nA", {"region": "r1", "hostname": "nodeA"}), ("nB", {"region": "r1", "hostname": "nodeB"})],
     None, [unsched(ERR_ANTI_AFFINITY), unsched(ERR_ANTI_AFFINITY)]),
    ("anti-affinity: any term matching is enough",
     pod(aff=affinity(anti=[term("foo", "In", ["abc"]), term("service", "In", ["securityscan"], topo="zone")])),
     [pod({"foo": "abc", "service": "securityscan"}, "nA")],
     [("nA", {"region": "r1", "zone": "z1", "hostname": "nodeA"}),
      ("nB", {"region": "r1", "zone": "z2", "hostname": "nodeB"})],
     None, [unsched(ERR_ANTI_AFFINITY), unsched(ERR_ANTI_AFFINITY)]),
    ("anti-affinity: another region is fine",
     pod(aff=affinity(anti=[term("foo", "In", ["abc"])])), [pod({"foo": "abc"}, "nA")],
     [("nA", CHINA), ("nB", CHINA_AZ1), ("nC", INDIA)],
     None, [unsched(ERR_ANTI_AFFINITY), unsched(ERR_ANTI_AFFINITY), None]),
    ("anti-affinity: namespaces are respected both ways",
     pod({"foo": "123"}, ns="NS1", aff=affinity(anti=[term("foo", "In", ["bar"])])),
     [pod({"foo": "bar"}, "nA", ns="NS1"), pod(None, "nC", ns="NS2", aff=affinity(anti=[term("foo", "In", ["123"])]))],
     [("nA", CHINA), ("nB", CHINA_AZ1), ("nC", INDIA)],
     None, [unsched(ERR_ANTI_AFFINITY), unsched(ERR_ANTI_AFFINITY), None]),
    ("existing pod's term with a topology key no node has",
     pod({"foo": ""}), [pod(None, "nA", aff=affinity(anti=[term("foo", "Exists", topo="invalid-node-label")]))],
     [("nA", H), ("nB", HB_SAMEZONE)], SKIP, []),
    ("incoming pod's term: the topology key must also match",
     pod(aff=affinity(anti=[term("foo", "Exists", topo="invalid-node-label")])), [pod({"foo": ""}, "nA")],
     [("nA", H), ("nB", HB_SAMEZONE)], None, [None, None]),
    ("existing pods' anti-affinity on all nodes",
     pod({"foo": "", "bar": ""}),
     [pod(None, "nA", aff=affinity(anti=[term("foo", "Exists", topo="zone")])),
      pod(None, "nA", aff=affinity(anti=[term("bar", "Exists", topo="region")]))],
     [("nA", H), ("nB", HB)], None, [unsched(ERR_EXISTING_ANTI_AFFINITY), unsched(ERR_EXISTING_ANTI_AFFINITY)]),
    ("incoming anti-affinity violated on each node by a different term",
     pod(aff=affinity(anti=[term("foo", "Exists", topo="zone"), term("bar", "Exists", topo="region")])),
     [pod({"foo": ""}, "nA"), pod({"bar": ""}, "nB")],
     [("nA", H), ("nB", HB)], None, [unsched(ERR_ANTI_AFFINITY), unsched(ERR_ANTI_AFFINITY)]),
    ("existing pod: selector and topology key must both match (one bad key)",
     pod({"foo": "", "bar": ""}),
     [pod(None, "nA", aff=affinity(anti=[term("foo", "Exists", topo="invalid-node-label"),
                                         term("bar", "Exists", topo="zone")]))],
     [("nA", H), ("nB", HB)], None, [unsched(ERR_EXISTING_ANTI_AFFINITY), None]),
    ("incoming pod: selector and topology key must both match (one bad key)",
     pod(aff=affinity(anti=[term("foo", "Exists", topo="invalid-node-label"), term("bar", "Exists", topo="zone")])),
     [pod({"foo": "", "bar": ""}, "nA")],
     [("nA", H), ("nB", HB)], None, [unsched(ERR_ANTI_AFFINITY), None]),
    ("existing pod: all keys valid",
     pod({"foo": "", "bar": ""}),
     [pod(None, "nA", aff=affinity(anti=[term("foo", "Exists", topo="region"), term("bar", "Exists", topo="zone")]))],
     [("nA", H), ("nB", HB)], None, [unsched(ERR_EXISTING_ANTI_AFFINITY), unsched(ERR_EXISTING_ANTI_AFFINITY)]),
    ("incoming pod: all keys valid",
     pod(aff=affinity(anti=[term("foo", "Exists", topo="region"), term("bar", "Exists", topo="zone")])),
     [pod({"foo": "", "bar": ""}, "nA")],
     [("nA", H), ("nB", HB)], None, [unsched(ERR_ANTI_AFFINITY), unsched(ERR_ANTI_AFFINITY)]),
    ("existing pods on two nodes: only the third is left",
     pod({"foo": "", "bar": ""}),
     [pod(None, "nA", aff=affinity(anti=[term("foo", "Exists", topo="zone"), term("labelA", "Exists", topo="zone")])),
      pod(None, "nB", aff=affinity(anti=[term("bar", "Exists", topo="zone"), term("labelB", "Exists", topo="zone")]))],
     [("nA", H), ("nB", HB), ("nC", {"region": "r1", "zone": "z3", "hostname": "nodeC"})],
     None, [unsched(ERR_EXISTING_ANTI_AFFINITY), unsched(ERR_EXISTING_ANTI_AFFINITY), None]),
    ("affinity: all terms match one pod, then all topology keys",
     pod(aff=affinity([term("foo", "Exists", topo="region"), term("bar", "Exists", topo="zone")])),
     [pod({"foo": "", "bar": ""}, "nA")], [("nA", H), ("nB", HB_SAMEZONE)], None, [None, None]),
    ("affinity: the terms must be matched by the same pod",
     pod(aff=affinity([term("foo", "Exists", topo="region"), term("bar", "Exists", topo="zone")])),
     [pod({"foo": ""}, "nA"), pod({"bar": ""}, "nB")], [("nA", H), ("nB", HB)],
     None, [unres(ERR_AFFINITY), unres(ERR_AFFINITY)]),
    ("affinity to pods of another namespace listed in namespaces",
     pod(aff=affinity([term("foo", "Exists", namespaces=["other"])])),
     [pod({"foo": ""}, "nA", ns="other")], [("nA", CHINA), ("nB", INDIA)], None, [None, unres(ERR_AFFINITY)]),
]


@pytest.mark.parametrize(("incoming", "pods", "nodes", "want_pre", "want"), [c[1:] for c in MULTI_NODE],
                         ids=[c[0] for c in MULTI_NODE])
def test_required_affinity_multiple_nodes(incoming: Pod, pods: list[Pod], nodes: list[tuple[str, dict[str, str]]],
                                          want_pre: Status | None, want: list[Status | None]) -> None:
    pl = plugin([node(n, **labels) for n, labels in nodes], pods)
    pre, got = run_filter(pl, incoming, [n for n, _ in nodes])
    assert pre == want_pre
    if pre is None:
        assert got == want


def test_filter_without_pre_filter_is_an_error() -> None:
    pl = plugin([N1], [])
    st = pl.filter(CycleState(), pod(), pl.handle.snapshot.get("node1"))
    assert st is not None and st.code == Code.ERROR
    assert PRE_FILTER_KEY in st.message()


# ---- PreFilter state: AddPod / RemovePod / Clone -----------------------------------------

L1 = {"region": "r1", "zone": "z11"}
L2 = {"region": "r1", "zone": "z12"}
L3 = {"region": "r2", "zone": "z21"}
FOOBAR = {"foo": "bar"}
ANTI_FOOBAR = [term("foo", "In", ["bar"])]
ANTI_COMPLEX = [term("foo", "In", ["bar", "buzz"]), term("service", "NotIn", ["bar", "security", "test"], topo="zone")]


def flat(counts: dict[str, dict[str, int]]) -> dict[tuple[str, str], int]:
    return {(k, v): n for k, by in counts.items() for v, n in by.items()}


ADD_REMOVE = [
    ("anti-affinity counts after adding and removing a pod",
     pod(FOOBAR, name="pending", aff=affinity(anti=ANTI_FOOBAR)),
     [pod(FOOBAR, "nA", name="e1"), pod(None, "nC", name="e2", aff=affinity(anti=ANTI_FOOBAR))],
     pod(FOOBAR, "nB", name="added", aff=affinity(anti=ANTI_FOOBAR)),
     {("region", "r1"): 2}, {}),
    ("complex anti-affinity counts after adding and removing a pod",
     pod(FOOBAR, name="pending", aff=affinity(anti=ANTI_COMPLEX)),
     [pod(FOOBAR, "nA", name="e1"), pod(None, "nC", name="e2", aff=affinity(anti=ANTI_FOOBAR))],
     pod(FOOBAR, "nA", name="added", aff=affinity(anti=ANTI_COMPLEX)),
     {("region", "r1"): 2, ("zone", "z11"): 2, ("zone", "z21"): 1}, {}),
    ("affinity and anti-affinity counts after adding and removing a pod",
     pod(FOOBAR, name="pending", aff=affinity(req=ANTI_COMPLEX)),
     [pod(FOOBAR, "nA", name="e1"), pod(None, "nC", name="e2", aff=affinity(req=ANTI_COMPLEX, anti=ANTI_FOOBAR))],
     pod(FOOBAR, "nA", name="added", aff=affinity(anti=ANTI_COMPLEX)),
     {}, {("region", "r1"): 2, ("zone", "z11"): 2}),
]


@pytest.mark.parametrize(("pending", "existing", "added", "want_anti", "want_aff"), [c[1:] for c in ADD_REMOVE],
                         ids=[c[0] for c in ADD_REMOVE])
def test_pre_filter_state_add_remove_pod(pending: Pod, existing: list[Pod], added: Pod,
                                         want_anti: dict[tuple[str, str], int],
                                         want_aff: dict[tuple[str, str], int]) -> None:
    nodes = [node("nA", **L1), node("nB", **L2), node("nC", **L3)]

    def state_for(pods: list[Pod]) -> tuple[InterPodAffinity, CycleState]:
        pl = plugin(nodes, pods)
        cs = CycleState()
        _, st = pl.pre_filter(cs, pending, pl.handle.snapshot.node_infos)
        assert st is None
        return pl, cs

    _, all_cs = state_for([*existing, added])
    all_state = all_cs.read(PRE_FILTER_KEY)
    pl, cs = state_for(existing)
    original = cs.read(PRE_FILTER_KEY).clone()
    ni = pl.handle.snapshot.get(added.node_name)
    assert pl.add_pod(cs, pending, added, ni) is None
    s = cs.read(PRE_FILTER_KEY)
    assert flat(s.anti_affinity_counts) == want_anti
    assert flat(s.affinity_counts) == want_aff
    for attr in ("anti_affinity_counts", "affinity_counts", "existing_anti_affinity_counts"):
        assert getattr(s, attr) == getattr(all_state, attr)
    assert pl.remove_pod(cs, pending, added, ni) is None
    for attr in ("anti_affinity_counts", "affinity_counts", "existing_anti_affinity_counts"):
        assert getattr(s, attr) == getattr(original, attr)


def test_pre_filter_state_clone_is_deep() -> None:
    pl = plugin([node("nA", **L1)], [pod(FOOBAR, "nA", aff=affinity(anti=ANTI_FOOBAR))])
    cs = CycleState()
    p = pod(FOOBAR, aff=affinity(req=ANTI_FOOBAR, anti=ANTI_FOOBAR))
    pl.pre_filter(cs, p, pl.handle.snapshot.node_infos)
    s = cs.read(PRE_FILTER_KEY)
    c = cs.clone().read(PRE_FILTER_KEY)
    assert c is not s
    for attr in ("anti_affinity_counts", "affinity_counts", "existing_anti_affinity_counts"):
        assert getattr(c, attr) == getattr(s, attr) and getattr(s, attr)
    c.affinity_counts["region"]["r1"] += 5
    c.existing_anti_affinity_counts.clear()
    assert s.affinity_counts["region"]["r1"] == 1
    assert s.existing_anti_affinity_counts


def test_remove_pod_unblocks_node_for_preemption() -> None:
    """Preemption's dry run: removing the existing pod whose anti-affinity blocks us frees the node."""
    victim = pod(None, "nA", aff=affinity(anti=[term("app", "In", ["web"], topo="hostname")]))
    pl = plugin([node("nA", hostname="nA"), node("nB", hostname="nB")], [victim, pod({"app": "web"}, "nB")])
    incoming = pod({"app": "web"}, aff=affinity(anti=[term("app", "In", ["web"], topo="hostname")]))
    cs = CycleState()
    pl.pre_filter(cs, incoming, pl.handle.snapshot.node_infos)
    na, nb = pl.handle.snapshot.get("nA"), pl.handle.snapshot.get("nB")
    assert pl.filter(cs, incoming, na) == unsched(ERR_EXISTING_ANTI_AFFINITY)
    assert pl.filter(cs, incoming, nb) == unsched(ERR_ANTI_AFFINITY)
    dry = cs.clone()
    pl.remove_pod(dry, incoming, victim, na)
    assert pl.filter(dry, incoming, na) is None
    assert pl.filter(cs, incoming, na) == unsched(ERR_EXISTING_ANTI_AFFINITY)
    # And a nominated pod added to nA blocks it again through the incoming pod's own anti-affinity.
    pl.add_pod(dry, incoming, pod({"app": "web"}, "nA"), na)
    assert pl.filter(dry, incoming, na) == unsched(ERR_ANTI_AFFINITY)


# ---- incoming pod's counts --------------------------------------------------------------

def _normal(*labels: str) -> Pod:
    return pod(dict.fromkeys(labels, ""), "nodeA")


INCOMING = [
    ("nil", [], pod(name="aaa-normal"), {}, {}),
    ("no affinity: no-op", [_normal("aaa")], pod(name="aaa-normal"), {}, {}),
    ("no pod matches", [_normal("bbb")],
     pod(aff=affinity([term("aaa", "Exists", topo="hostname")], [term("aaa", "Exists", topo="hostname")])), {}, {}),
    ("single term", [_normal("aaa")],
     pod(aff=affinity([term("aaa", "Exists", topo="hostname")], [term("aaa", "Exists", topo="hostname")])),
     {("hostname", "nodeA"): 1}, {("hostname", "nodeA"): 1}),
    ("multiple terms: one count per term", [_normal("aaa", "bbb")],
     pod(aff=affinity([term("aaa", "Exists", topo="hostname"), term("bbb", "Exists", topo="hostname")],
                      [term("aaa", "Exists", topo="hostname")])),
     {("hostname", "nodeA"): 2}, {("hostname", "nodeA"): 1}),
    ("affinity needs all terms, anti-affinity any", [_normal("aaa")],
     pod(aff=affinity([term("aaa", "Exists", topo="hostname"), term("bbb", "Exists", topo="hostname")],
                      [term("aaa", "Exists", topo="hostname"), term("bbb", "Exists", topo="hostname")])),
     {}, {("hostname", "nodeA"): 1}),
    ("partial anti-affinity match 1", [_normal("aaa", "bbb")],
     pod(aff=affinity([term("aaa", "Exists", topo="hostname"), term("ccc", "Exists", topo="hostname")],
                      [term("aaa", "Exists", topo="hostname"), term("ccc", "Exists", topo="hostname")])),
     {}, {("hostname", "nodeA"): 1}),
    ("partial anti-affinity match 2", [_normal("bbb")],
     pod(aff=affinity([term("aaa", "Exists", topo="hostname"), term("bbb", "Exists", topo="hostname")],
                      [term("aaa", "Exists", topo="hostname"), term("bbb", "Exists", topo="hostname")])),
     {}, {("hostname", "nodeA"): 1}),
]


@pytest.mark.parametrize(("existing", "incoming", "want_aff", "want_anti"), [c[1:] for c in INCOMING],
                         ids=[c[0] for c in INCOMING])
def test_incoming_affinity_anti_affinity_counts(existing: list[Pod], incoming: Pod,
                                                want_aff: dict[tuple[str, str], int],
                                                want_anti: dict[tuple[str, str], int]) -> None:
    pl = plugin([node("nodeA", hostname="nodeA")], existing)
    cs = CycleState()
    _, st = pl.pre_filter(cs, incoming, pl.handle.snapshot.node_infos)
    if st is not None:
        assert st == SKIP and not want_aff and not want_anti
        return
    s = cs.read(PRE_FILTER_KEY)
    assert flat(s.affinity_counts) == want_aff
    assert flat(s.anti_affinity_counts) == want_anti


# ---- matchLabelKeys / mismatchLabelKeys ---------------------------------------------------

def test_match_label_keys_restrict_affinity_to_same_value() -> None:
    t = term("app", "In", ["web"], topo="hostname", matchLabelKeys=["rev"])
    incoming = pod({"app": "web", "rev": "2"}, aff=affinity(anti=[t]))
    nodes = [node("nA", hostname="nA"), node("nB", hostname="nB")]
    pl = plugin(nodes, [pod({"app": "web", "rev": "1"}, "nA"), pod({"app": "web", "rev": "2"}, "nB")])
    _, got = run_filter(pl, incoming, ["nA", "nB"])
    assert got == [None, unsched(ERR_ANTI_AFFINITY)]


def test_mismatch_label_keys_exclude_same_value() -> None:
    t = term("app", "Exists", topo="hostname", mismatchLabelKeys=["tenant"])
    incoming = pod({"app": "x", "tenant": "t1"}, aff=affinity(anti=[t]))
    nodes = [node("nA", hostname="nA"), node("nB", hostname="nB")]
    pl = plugin(nodes, [pod({"app": "y", "tenant": "t1"}, "nA"), pod({"app": "z", "tenant": "t2"}, "nB")])
    _, got = run_filter(pl, incoming, ["nA", "nB"])
    assert got == [None, unsched(ERR_ANTI_AFFINITY)]


def test_match_label_keys_absent_on_pod_are_ignored() -> None:
    t = term("app", "In", ["web"], topo="hostname", matchLabelKeys=["rev"])
    incoming = pod({"app": "web"}, aff=affinity(anti=[t]))
    pl = plugin([node("nA", hostname="nA")], [pod({"app": "web", "rev": "1"}, "nA")])
    _, got = run_filter(pl, incoming, ["nA"])
    assert got == [unsched(ERR_ANTI_AFFINITY)]


# ---- Score ----------------------------------------------------------------------------------

def pterm(key: str, op: str, values: list[str] | None, topo: str, **kw: Any) -> dict[str, Any]:
    return term(key, op, values, topo, **kw)


S2 = {"security": "S2"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}
STAY_S1_REGION = affinity(pref=[(5, pterm("security", "In", ["S1"], "region"))])
STAY_S2_REGION = affinity(pref=[(6, pterm("security", "In", ["S2"], "region"))])
AFFINITY3 = affinity(pref=[(8, multi(("security", "NotIn", ["S1"]), ("security", "In", ["S2"]))),
                           (2, multi(("security", "Exists", None), ("wrongkey", "DoesNotExist", None)))])
HARD_AFFINITY = affinity(req=[term("security", "In", ["S1", "value2"]),
                              multi(("security", "Exists", None), ("wrongkey", "DoesNotExist", None))])
AWAY_S1_AZ = affinity(pref_anti=[(5, pterm("security", "In", ["S1"], "az"))])
AWAY_S2_AZ = affinity(pref_anti=[(5, pterm("security", "In", ["S2"], "az"))])
STAY_S1_REGION_AWAY_S2_AZ = affinity(pref=[(8, pterm("security", "In", ["S1"], "region"))],
                                     pref_anti=[(5, pterm("security", "In", ["S2"], "az"))])
_TEAM1 = {"matchExpressions": [{"key": "team", "operator": "In", "values": ["team1"]}]}
AFFINITY_NS_SELECTOR = affinity(pref=[(5, pterm("security", "In", ["S1"], "region", namespaces=["subteam2.team2"],
                                                ns_selector=_TEAM1))])
ANTI_NS_SELECTOR = affinity(pref_anti=[(5, pterm("security", "In", ["S1"], "region", namespaces=["subteam2.team2"],
                                                 ns_selector=_TEAM1))])
INVALID_AFFINITY = affinity(pref=[(8, pterm("security", "In", ["{{.bad-value.}}"], "region"))])
INVALID_ANTI = affinity(pref_anti=[(5, pterm("security", "In", ["{{.bad-value.}}"], "az"))])

PREFERRED = [
    ("all nodes same priority as affinity is nil", pod(S1), [],
     [("node1", CHINA), ("node2", INDIA), ("node3", AZ1)], {}, SKIP, None),
    ("affinity: matching topology and pods score high", pod(S1, aff=STAY_S1_REGION),
     [pod(S1, "node1"), pod(S2, "node2"), pod(S1, "node3")],
     [("node1", CHINA), ("node2", INDIA), ("node3", AZ1)], {}, None, [100, 0, 0]),
    ("all nodes of the matching topology value score the same", pod(None, aff=STAY_S1_REGION),
     [pod(S1, "node1")], [("node1", CHINA), ("node2", CHINA_AZ1), ("node3", INDIA)], {}, None, [100, 100, 0]),
    ("the region with more matches scores higher", pod(S1, aff=STAY_S2_REGION),
     [pod(S2, "node1"), pod(S2, "node1"), pod(S2, "node2"), pod(S2, "node3"), pod(S2, "node4"), pod(S2, "node5")],
     [("node1", CHINA), ("node2", INDIA), ("node3", CHINA), ("node4", CHINA), ("node5", INDIA)], {}, None,
     [100, 0, 100, 100, 0]),
    ("different operators, some failing", pod(S1, aff=AFFINITY3),
     [pod(S1, "node1"), pod(S2, "node2"), pod(S1, "node3")],
     [("node1", CHINA), ("node2", INDIA), ("node3", AZ1)], {}, None, [20, 100, 0]),
    ("symmetry: existing pods' preferred affinity", pod(S2),
     [pod(S1, "node1", aff=STAY_S1_REGION), pod(S2, "node2", aff=STAY_S2_REGION)],
     [("node1", CHINA), ("node2", INDIA), ("node3", AZ1)], {}, None, [0, 100, 0]),
    ("symmetry with namespaceSelector", pod(S1, ns="subteam1.team1"),
     [pod(S1, "node1", aff=AFFINITY_NS_SELECTOR), pod(S2, "node2", aff=STAY_S2_REGION)],
     [("node1", CHINA), ("node2", INDIA), ("node3", AZ1)], {}, None, [100, 0, 0]),
    ("anti-affinity symmetry with namespaceSelector", pod(S1, ns="subteam1.team1"),
     [pod(S1, "node1", aff=ANTI_NS_SELECTOR), pod(S2, "node2", aff=STAY_S2_REGION)],
     [("node1", CHINA), ("node2", INDIA), ("node3", AZ1)], {}, None, [0, 100, 100]),
    ("symmetry: existing pods' required affinity", pod(S1),
     [pod(S1, "node1", aff=HARD_AFFINITY), pod(S2, "node2", aff=HARD_AFFINITY)],
     [("node1", CHINA), ("node2", INDIA), ("node3", AZ1)], {}, None, [100, 100, 0]),
    ("anti-affinity: not matching existing pods scores high", pod(S1, aff=AWAY_S1_AZ),
     [pod(S1, "node1"), pod(S2, "node2")], [("node1", AZ1), ("node2", CHINA)], {}, None, [0, 100]),
    ("anti-affinity: not matching topology key scores high", pod(S1, aff=AWAY_S1_AZ),
     [pod(S1, "node1"), pod(S1, "node2")], [("node1", AZ1), ("node2", CHINA)], {}, None, [0, 100]),
    ("anti-affinity: more matches score lower", pod(S1, aff=AWAY_S1_AZ),
     [pod(S1, "node1"), pod(S1, "node1"), pod(S2, "node2")], [("node1", AZ1), ("node2", INDIA)], {}, None, [0, 100]),
    ("anti-affinity symmetry", pod(S2),
     [pod(S1, "node1", aff=AWAY_S2_AZ), pod(S2, "node2", aff=AWAY_S1_AZ)], [("node1", AZ1), ("node2", AZ2)], {},
     None, [0, 100]),
    ("affinity and anti-affinity", pod(S1, aff=STAY_S1_REGION_AWAY_S2_AZ),
     [pod(S1, "node1"), pod(S1, "node2")], [("node1", CHINA), ("node2", AZ1)], {}, None, [100, 0]),
    ("affinity and anti-affinity with brother pods", pod(S1, aff=STAY_S1_REGION_AWAY_S2_AZ),
     [pod(S1, "node1"), pod(S1, "node1"), pod(S1, "node2"), pod(S1, "node3"), pod(S1, "node3"), pod(S1, "node4"),
      pod(S1, "node5")],
     [("node1", CHINA_AZ1), ("node2", INDIA), ("node3", CHINA), ("node4", CHINA), ("node5", INDIA)], {}, None,
     [100, 0, 100, 100, 0]),
    ("affinity, anti-affinity and symmetry", pod(S1, aff=STAY_S1_REGION_AWAY_S2_AZ),
     [pod(S1, "node1"), pod(S2, "node2"), pod(None, "node3", aff=STAY_S1_REGION_AWAY_S2_AZ),
      pod(None, "node4", aff=AWAY_S1_AZ)],
     [("node1", CHINA), ("node2", AZ1), ("node3", INDIA), ("node4", AZ2)], {}, None, [100, 0, 100, 0]),
    ("some nodes of a topology without pods with affinity", pod(S1),
     [pod(S1, "node1"), pod(None, "node2", aff=STAY_S1_REGION_AWAY_S2_AZ)],
     [("node1", CHINA), ("node2", CHINA)], {}, None, [0, 0]),
    ("invalid affinity fails PreScore", pod(None, aff=INVALID_AFFINITY), [],
     [("node1", CHINA), ("node2", CHINA)], {}, Status.error('Invalid value: "{{.bad-value.}}"'), None),
    ("invalid anti-affinity fails PreScore", pod(None, aff=INVALID_ANTI), [],
     [("node1", CHINA), ("node2", CHINA)], {}, Status.error('Invalid value: "{{.bad-value.}}"'), None),
    ("affinity with pods matching the namespaceSelector", pod(S1, ns="subteam1.team1", aff=AFFINITY_NS_SELECTOR),
     [pod(S1, "node1", ns="subteam1.team1"), pod(S1, "node1", ns="subteam1.team1"),
      pod(S1, "node1", ns="subteam1.team2"), pod(S1, "node2", ns="subteam2.team1")],
     [("node1", CHINA), ("node2", INDIA)], {}, None, [100, 0]),
    ("affinity with pods matching namespaceSelector and namespaces",
     pod(S1, ns="subteam1.team1", aff=AFFINITY_NS_SELECTOR),
     [pod(S1, "node1", ns="subteam1.team1"), pod(S1, "node1", ns="subteam1.team1"),
      pod(S1, "node1", ns="subteam2.team2"), pod(S1, "node2", ns="subteam2.team1")],
     [("node1", CHINA), ("node2", INDIA)], {}, None, [100, 0]),
    ("anti-affinity with pods matching the namespaceSelector", pod(S1, ns="subteam1.team1", aff=ANTI_NS_SELECTOR),
     [pod(S1, "node1", ns="subteam1.team1"), pod(S1, "node1", ns="subteam1.team1"),
      pod(S1, "node1", ns="subteam1.team2"), pod(S1, "node2", ns="subteam2.team1")],
     [("node1", CHINA), ("node2", INDIA)], {}, None, [0, 100]),
    ("anti-affinity with pods matching namespaceSelector and namespaces",
     pod(S1, ns="subteam1.team1", aff=ANTI_NS_SELECTOR),
     [pod(S1, "node1", ns="subteam1.team1"), pod(S1, "node1", ns="subteam1.team1"),
      pod(S1, "node1", ns="subteam2.team2"), pod(S1, "node2", ns="subteam2.team1")],
     [("node1", CHINA), ("node2", INDIA)], {}, None, [0, 100]),
    ("ignore preferred terms of existing pods", pod(S2),
     [pod(S1, "node1", aff=STAY_S1_REGION_AWAY_S2_AZ), pod(S2, "node2", aff=STAY_S2_REGION)],
     [("node1", CHINA), ("node2", INDIA)], {"ignorePreferredTermsOfExistingPods": True}, SKIP, None),
    ("do not ignore preferred terms of existing pods", pod(S2),
     [pod(S1, "node1", aff=STAY_S1_REGION_AWAY_S2_AZ), pod(S2, "node2", aff=STAY_S2_REGION)],
     [("node1", CHINA), ("node2", INDIA)], {"ignorePreferredTermsOfExistingPods": False}, None, [0, 100]),
    ("no nodes to score", pod(S2), [], [], {}, SKIP, None),
    ("negative raw scores normalise from the minimum", pod(S1, aff=AWAY_S1_AZ),
     [pod(S1, "node1"), pod(S1, "node2"), pod(S1, "node2")],
     [("node1", AZ1), ("node2", AZ2), ("node3", {"az": "az3"})], {}, None, [50, 0, 100]),
]


def run_score(pl: InterPodAffinity, p: Pod, names: list[str]) -> tuple[Status | None, list[int] | None]:
    state = CycleState()
    infos = [pl.handle.snapshot.get(n) for n in names]
    st = pl.pre_score(state, p, infos)
    if st is not None:
        return st, None
    scores = [NodeScore(n, pl.score(state, p, ni)) for n, ni in zip(names, infos)]
    assert pl.normalize_score(state, p, scores) is None
    return None, [s.score for s in scores]


@pytest.mark.parametrize(("incoming", "pods", "nodes", "args", "want_status", "want"),
                         [c[1:] for c in PREFERRED], ids=[c[0] for c in PREFERRED])
def test_preferred_affinity(incoming: Pod, pods: list[Pod], nodes: list[tuple[str, dict[str, str]]],
                            args: dict[str, Any], want_status: Status | None, want: list[int] | None) -> None:
    pl = plugin([node(n, **labels) for n, labels in nodes], pods, **args)
    st, got = run_score(pl, incoming, [n for n, _ in nodes])
    if want_status is None:
        assert st is None
        assert got == want
    else:
        assert st is not None and st.code == want_status.code
        assert want_status.message() in st.message()


HARD_POD_AFFINITY = affinity(req=[term("service", "In", ["S1"], namespaces=["default", "subteam2.team2"],
                                       ns_selector=_TEAM1)])
SVC_S1 = {"service": "S1"}
HARD_WEIGHT = [
    ("default weight", pod(SVC_S1), 1, None, [100, 100, 0]),
    ("zero weight", pod(SVC_S1), 0, SKIP, None),
    ("no matching namespace", pod(SVC_S1, ns="subteam1.team2"), 1, SKIP, None),
    ("matching namespaceSelector", pod(SVC_S1, ns="subteam1.team1"), 1, None, [100, 100, 0]),
    ("matching namespaces", pod(SVC_S1, ns="subteam2.team2"), 1, None, [100, 100, 0]),
]


@pytest.mark.parametrize(("incoming", "weight", "want_status", "want"), [c[1:] for c in HARD_WEIGHT],
                         ids=[c[0] for c in HARD_WEIGHT])
def test_preferred_affinity_with_hard_pod_affinity_symmetric_weight(
        incoming: Pod, weight: int, want_status: Status | None, want: list[int] | None) -> None:
    nodes = [node("node1", **CHINA), node("node2", **INDIA), node("node3", **AZ1)]
    pods = [pod(None, "node1", aff=HARD_POD_AFFINITY), pod(None, "node2", aff=HARD_POD_AFFINITY)]
    pl = plugin(nodes, pods, hardPodAffinityWeight=weight)
    st, got = run_score(pl, incoming, ["node1", "node2", "node3"])
    assert st == want_status
    assert got == want


def test_hard_pod_affinity_weight_scales_against_preferred_terms() -> None:
    # Existing required affinity (x weight 10) on node1's region outweighs a preferred anti term of weight 5.
    nodes = [node("node1", **CHINA), node("node2", **INDIA)]
    pods = [pod(None, "node1", aff=affinity(req=[term("service", "In", ["S1"])])),
            pod(None, "node2", aff=affinity(pref_anti=[(5, term("service", "In", ["S1"]))]))]
    pl = plugin(nodes, pods, hardPodAffinityWeight=10)
    state = CycleState()
    p = pod(SVC_S1)
    infos = pl.handle.snapshot.node_infos
    assert pl.pre_score(state, p, infos) is None
    assert [pl.score(state, p, ni) for ni in infos] == [10, -5]


# ---- args ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("raw", "ok"), [
    ({}, True), ({"hardPodAffinityWeight": 0}, True), ({"hardPodAffinityWeight": 100}, True),
    ({"hardPodAffinityWeight": -1}, False), ({"hardPodAffinityWeight": 101}, False),
    ({"ignorePreferredTermsOfExistingPods": True}, True), ({"unknown": 1}, False),
])
def test_args_validation(raw: dict[str, Any], ok: bool) -> None:
    if ok:
        args = InterPodAffinityArgs.model_validate(raw)
        assert args.hardPodAffinityWeight == raw.get("hardPodAffinityWeight", 1)
    else:
        with pytest.raises(ValidationError) as exc:
            InterPodAffinityArgs.model_validate(raw)
        if "hardPodAffinityWeight" in raw:
            assert "not in valid range [0-100]" in str(exc.value)


def test_registered_with_default_args() -> None:
    from kubeberth.plugins import in_tree_registry

    spec = in_tree_registry().get("InterPodAffinity")
    assert spec is not None and spec.args_model is InterPodAffinityArgs
    assert set(spec.points()) == {"preFilter", "filter", "preScore", "score"}
    assert InterPodAffinityArgs().hardPodAffinityWeight == 1


def test_profile_args_reach_the_plugin_and_errors_name_the_field() -> None:
    from kubeberth.config import ConfigError

    fw = handle(profile={"pluginConfig": [{"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 7}}]})
    assert fw.plugins["InterPodAffinity"].args.hardPodAffinityWeight == 7  # type: ignore[attr-defined]
    with pytest.raises(ConfigError) as exc:
        handle(profile={"pluginConfig": [{"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 101}}]})
    assert exc.value.path == "spec.pluginConfig[0].args.hardPodAffinityWeight"
    assert "not in valid range [0-100]" in str(exc.value)


def test_parsed_terms_are_shared_by_replicas_only() -> None:
    from kubeberth.plugins.inter_pod_affinity import pod_terms

    spec = affinity(anti=[term("app", "In", ["web"], topo="hostname")])
    a, b = pod({"app": "web"}, aff=spec), pod({"app": "web", "x": "1"}, aff=spec)
    other_ns = pod({"app": "web"}, ns="other", aff=spec)
    assert pod_terms(a) is pod_terms(b)
    assert pod_terms(a) is not pod_terms(other_ns)
    assert pod_terms(other_ns).required_anti[0].namespaces == frozenset({"other"})
    keyed = affinity(anti=[term("app", "In", ["web"], topo="hostname", matchLabelKeys=["rev"])])
    r1, r2 = pod({"app": "web", "rev": "1"}, aff=keyed), pod({"app": "web", "rev": "2"}, aff=keyed)
    assert pod_terms(r1) is not pod_terms(r2)
    sel = pod_terms(r1).required_anti[0].selector
    assert sel is not None and sel.matches({"app": "web", "rev": "1"}) and not sel.matches({"app": "web", "rev": "2"})


# ---- the vectorised path: the statuses of the rejected rows ------------------------------------

VECTOR_CASES = [(c[0], c[1], c[2], [("node1", N1.labels)]) for c in SINGLE_NODE] + [c[:4] for c in MULTI_NODE]


@pytest.mark.parametrize(("incoming", "pods", "nodes"), [c[1:] for c in VECTOR_CASES],
                         ids=[c[0] for c in VECTOR_CASES])
def test_filter_statuses_of_rejected_rows_are_filters(incoming: Pod, pods: list[Pod],
                                                      nodes: list[tuple[str, dict[str, str]]]) -> None:
    """The mask and the statuses of the rows it rejects (filter_statuses, the reason `filter`
    checks first), as `filter` gives them node by node."""
    pl = plugin([node(n, **labels) for n, labels in nodes], pods)
    snap = pl.handle.snapshot
    per_node, vectorised = CycleState(), CycleState()
    if pl.pre_filter(per_node, incoming, snap.node_infos)[1] is not None:
        return
    pl.handle.vectorise, pl.handle.vector_min_nodes = True, 0
    pl.pre_filter(vectorised, incoming, snap.node_infos)
    assert_vectorised_filter_is_filters(pl, incoming, snap, per_node, vectorised)


def test_filter_statuses_leaves_rows_that_pass_to_filter() -> None:
    pl = plugin([node("nA", zone="z1"), node("nB", zone="z2")], [pod(SEC, "nA")])
    incoming = pod(SEC, aff=affinity(anti=[term("service", "In", ["securityscan"], topo="zone")]))
    snap = pl.handle.snapshot
    pl.handle.vectorise, pl.handle.vector_min_nodes = True, 0
    cs = CycleState()
    pl.pre_filter(cs, incoming, snap.node_infos)
    arrays = snap.arrays()
    assert pl.filter_statuses(cs, incoming, arrays, np.array([1])) is None  # nB passes
    got = pl.filter_statuses(cs, incoming, arrays, np.array([0]))
    assert got is not None and [st.reasons for st in got] == [[ERR_ANTI_AFFINITY]]
