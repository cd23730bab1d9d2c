"""TaintToleration: Filter on NoSchedule/NoExecute taints; Score counts intolerable
PreferNoSchedule taints, normalised in reverse."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kubeberth.framework import Code, Status
from kubeberth.model import NodeInfo
from kubeberth.plugins.taint_toleration import TaintToleration
from tests.builders import make_node, make_pod


def taint(key: str, value: str, effect: str) -> dict[str, Any]:
    return {"key": key, "value": value, "effect": effect}


def tol(key: str = "", value: str = "", effect: str = "", operator: str = "Equal") -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator, "effect": effect}
    if value:
        out["value"] = value
    return out


def untolerated(key: str, value: str) -> Status:
    """The taint a case names is the one the pod fails on; since v1.34 the reason itself names no taint."""
    return Status.unresolvable("node(s) had untolerated taint(s)")


FILTER_CASES: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]], Status | None]] = [
    ("a pod having no tolerations can't be scheduled onto a node with nonempty taints",
     [], [taint("dedicated", "user1", "NoSchedule")], untolerated("dedicated", "user1")),
    ("a pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
     [tol("dedicated", "user1", "NoSchedule")], [taint("dedicated", "user1", "NoSchedule")], None),
    ("a pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
     [tol("dedicated", "user2", "NoSchedule")], [taint("dedicated", "user1", "NoSchedule")],
     untolerated("dedicated", "user1")),
    ("a pod can be scheduled onto the node, with a toleration uses operator Exists that tolerates the taints",
     [tol("foo", effect="NoSchedule", operator="Exists")], [taint("foo", "bar", "NoSchedule")], None),
    ("a pod has multiple tolerations, node has multiple taints, all the taints are tolerated",
     [tol("dedicated", "user2", "NoSchedule"), tol("foo", effect="NoSchedule", operator="Exists")],
     [taint("dedicated", "user2", "NoSchedule"), taint("foo", "bar", "NoSchedule")], None),
    ("a pod has a toleration that keys and values match the taint on the node, but (non-empty) effect "
     "doesn't match, can't be scheduled onto the node",
     [tol("foo", "bar", "PreferNoSchedule")], [taint("foo", "bar", "NoSchedule")], untolerated("foo", "bar")),
    ("the pod has a toleration that keys and values match the taint on the node, the effect of toleration "
     "is empty, and the effect of taint is NoSchedule. Pod can be scheduled onto the node",
     [tol("foo", "bar")], [taint("foo", "bar", "NoSchedule")], None),
    ("the pod has a toleration that key and value don't match the taint on the node, but the effect of taint "
     "on node is PreferNoSchedule. Pod can be scheduled onto the node",
     [tol("dedicated", "user2", "NoSchedule")], [taint("dedicated", "user1", "PreferNoSchedule")], None),
    ("the pod has no toleration, but the effect of taint on node is PreferNoSchedule. Pod can be scheduled",
     [], [taint("dedicated", "user1", "PreferNoSchedule")], None),
    ("an untolerated NoExecute taint filters the node",
     [tol("a", "1", "NoSchedule")], [taint("a", "1", "NoSchedule"), taint("b", "2", "NoExecute")],
     untolerated("b", "2")),
    ("several untolerated taints give one reason", [], [taint("a", "1", "NoSchedule"), taint("b", "2", "NoExecute")],
     untolerated("a", "1")),
    ("a taint with an empty value", [], [taint("gpu", "", "NoSchedule")], untolerated("gpu", "")),
    ("a tolerate-everything toleration", [tol(operator="Exists")],
     [taint("a", "1", "NoSchedule"), taint("b", "2", "NoExecute")], None),
    ("no taints", [], [], None),
]


@pytest.mark.parametrize(("tolerations", "taints", "want"), [c[1:] for c in FILTER_CASES],
                         ids=[c[0] for c in FILTER_CASES])
def test_filter(tolerations: list[dict[str, Any]], taints: list[dict[str, Any]], want: Status | None) -> None:
    pod = make_pod("p", tolerations=tolerations)
    got = TaintToleration(None, None).filter(None, pod, NodeInfo(make_node("n1", taints=taints)))  # type: ignore[arg-type]
    assert got == want
    if want is not None:
        assert got is not None and got.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_filter_without_node_is_an_error() -> None:
    got = TaintToleration(None, None).filter(None, make_pod("p"), NodeInfo())  # type: ignore[arg-type]
    assert got is not None and got.code == Code.ERROR


PREFER = "PreferNoSchedule"
SCORE_CASES: list[tuple[str, list[dict[str, Any]], list[list[dict[str, Any]]], list[int]]] = [
    ("node with taints tolerated by the pod gets a higher score than nodes with intolerable taints",
     [tol("foo", "bar", PREFER)],
     [[taint("foo", "bar", PREFER)], [taint("foo", "blah", PREFER)]],
     [100, 0]),
    ("the nodes whose taints are all tolerated get the same score, however many tolerable taints",
     [tol("cpu-type", "arm64", PREFER), tol("disk-type", "ssd", PREFER)],
     [[], [taint("cpu-type", "arm64", PREFER)],
      [taint("cpu-type", "arm64", PREFER), taint("disk-type", "ssd", PREFER)]],
     [100, 100, 100]),
    ("the more intolerable taints a node has, the lower score it gets",
     [tol("foo", "bar", PREFER)],
     [[], [taint("cpu-type", "arm64", PREFER)],
      [taint("cpu-type", "arm64", PREFER), taint("disk-type", "ssd", PREFER)]],
     [100, 50, 0]),
    ("only taints and tolerations that have effect PreferNoSchedule are checked",
     [tol("cpu-type", "arm64", "NoSchedule"), tol("disk-type", "ssd")],
     [[], [taint("cpu-type", "arm64", "NoSchedule")],
      [taint("cpu-type", "arm64", PREFER), taint("disk-type", "ssd", PREFER)]],
     [100, 100, 0]),
    ("default behaviour: no taints and tolerations, lands on the node with no taints",
     [], [[], [taint("cpu-type", "arm64", PREFER)]], [100, 0]),
    ("no intolerable taints anywhere: every node gets the max score",
     [], [[], [taint("a", "b", "NoSchedule")]], [100, 100]),
    ("an Exists toleration with an empty effect tolerates PreferNoSchedule taints",
     [tol("foo", operator="Exists")], [[taint("foo", "x", PREFER)], [taint("bar", "x", PREFER)]], [100, 0]),
    ("three levels, integer division", [],
     [[taint("a", "1", PREFER)], [taint("a", "1", PREFER), taint("b", "1", PREFER), taint("c", "1", PREFER)], []],
     [67, 0, 100]),
]


@pytest.mark.parametrize(("tolerations", "node_taints", "want"), [c[1:] for c in SCORE_CASES],
                         ids=[c[0] for c in SCORE_CASES])
def test_score(tolerations: list[dict[str, Any]], node_taints: list[list[dict[str, Any]]], want: list[int]) -> None:
    from ._core_helpers import run_score

    pod = make_pod("p", tolerations=tolerations)
    infos = [NodeInfo(make_node(f"n{i}", taints=t)) for i, t in enumerate(node_taints)]
    assert run_score(TaintToleration(None, None), pod, infos) == want


def test_score_without_pre_score_is_an_error() -> None:
    from kubeberth.framework import CycleState, PluginError

    with pytest.raises(PluginError):
        TaintToleration(None, None).score(CycleState(), make_pod("p"), NodeInfo(make_node("n")))


def test_pre_score_without_nodes() -> None:
    from kubeberth.framework import CycleState

    state = CycleState()
    assert TaintToleration(None, None).pre_score(state, make_pod("p"), []) is None
    assert "PreScoreTaintToleration" not in state


def test_filter_statuses_are_filters_for_the_rejected_rows() -> None:
    from kubeberth.cache.snapshot import Snapshot
    from kubeberth.framework.vector import AllNodes

    nodes = [make_node("clean"), make_node("gpu", taints=[taint("gpu", "yes", "NoSchedule")]),
             make_node("tolerated", taints=[taint("dedicated", "a", "NoSchedule")]),
             make_node("drained", taints=[taint("maintenance", "", "NoExecute")])]
    pod = make_pod("p", tolerations=[tol("dedicated", "a", "NoSchedule")])
    snap = Snapshot.from_objects(nodes, [])
    pl = TaintToleration()
    arrays = snap.arrays()
    mask = pl.filter_all(None, pod, AllNodes(snap.node_infos, arrays))  # type: ignore[arg-type]
    rows = np.flatnonzero(~mask)
    assert rows.tolist() == [1, 3]
    got = pl.filter_statuses(None, pod, arrays, rows)  # type: ignore[arg-type]
    want = [pl.filter(None, pod, snap.node_infos[i]) for i in rows.tolist()]  # type: ignore[arg-type]
    assert got == want
