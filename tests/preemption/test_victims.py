"""Victims on one node: remove every lower-priority pod, then reprieve, PDB-violating pods
first, each group from the most important down."""

from __future__ import annotations

import pytest

from kubeberth.framework import Code
from kubeberth.preemption import PDB, filter_pods_with_pdb_violation, list_pdbs
from tests.preemption.fakes import Env, node, pdb, pod


def _select(pods, preemptor, pdbs=(), node_cpu="4", pods_cap="110"):
    env = Env([node("n1", node_cpu, pods=pods_cap)], pods, pdbs=pdbs)
    state = env.state_for(preemptor)
    ni = env.ctx.snapshot.get("n1")
    victims, violations, status = env.evaluator.select_victims_on_node(
        state.clone(), preemptor, ni.clone(), list_pdbs(env.ctx.objects))
    assert [p.name for p in ni.pods] == [p.name for p in pods]  # the real NodeInfo is untouched
    return [v.name for v in victims], violations, status


G = {"app": "guarded"}
F = {"app": "free"}


@pytest.mark.parametrize(
    ("pods", "preemptor", "pdbs", "want_victims", "want_violations"),
    [
        pytest.param([pod("a", cpu="1", prio=10, node="n1"), pod("b", cpu="1", prio=20, node="n1"),
                      pod("c", cpu="2", prio=30, node="n1")],
                     pod("p", cpu="2", prio=100), [], ["b", "a"], 0, id="highest-priority-reprieved-first"),
        pytest.param([pod("a", cpu="2", prio=30, node="n1"), pod("b", cpu="1", prio=20, node="n1"),
                      pod("c", cpu="1", prio=10, node="n1")],
                     pod("p", cpu="1", prio=100), [], ["c"], 0, id="keep-as-many-as-fit"),
        pytest.param([pod("a", cpu="2", prio=5, node="n1"), pod("b", cpu="2", prio=5, node="n1")],
                     pod("p", cpu="4", prio=100), [], ["a", "b"], 0, id="all-must-go"),
        pytest.param([pod("old", cpu="2", prio=5, node="n1", start=0),
                      pod("new", cpu="2", prio=5, node="n1", start=100)],
                     pod("p", cpu="2", prio=100), [], ["new"], 0, id="equal-priority-earlier-start-kept"),
        pytest.param([pod("new", cpu="2", prio=5, node="n1", start=100),
                      pod("old", cpu="2", prio=5, node="n1", start=0)],
                     pod("p", cpu="2", prio=100), [], ["new"], 0, id="equal-priority-order-independent"),
        pytest.param([pod("started", cpu="2", prio=5, node="n1", start=0),
                      pod("unstarted", cpu="2", prio=5, node="n1")],
                     pod("p", cpu="2", prio=100), [], ["unstarted"], 0, id="not-started-counts-as-now"),
        pytest.param([pod("higher", cpu="2", prio=200, node="n1"), pod("low", cpu="1", prio=1, node="n1"),
                      pod("low2", cpu="1", prio=2, node="n1")],
                     pod("p", cpu="2", prio=100), [], ["low2", "low"], 0, id="higher-priority-pods-stay"),
        # ---- with PDBs
        pytest.param([pod("guarded", cpu="2", prio=10, node="n1", labels=G),
                      pod("free", cpu="2", prio=20, node="n1", labels=F)],
                     pod("p", cpu="2", prio=100), [], ["guarded"], 0, id="no-pdb-priority-decides"),
        pytest.param([pod("guarded", cpu="2", prio=10, node="n1", labels=G),
                      pod("free", cpu="2", prio=20, node="n1", labels=F)],
                     pod("p", cpu="2", prio=100), [pdb("g", G, 0)], ["free"], 0,
                     id="pdb-violating-reprieved-first"),
        pytest.param([pod("guarded", cpu="2", prio=10, node="n1", labels=G),
                      pod("free", cpu="2", prio=20, node="n1", labels=F)],
                     pod("p", cpu="4", prio=100), [pdb("g", G, 0)], ["free", "guarded"], 1,
                     id="violation-counted-victims-sorted-by-importance"),
        pytest.param([pod("guarded", cpu="2", prio=10, node="n1", labels=G),
                      pod("free", cpu="2", prio=20, node="n1", labels=F)],
                     pod("p", cpu="2", prio=100), [pdb("g", G, 1)], ["guarded"], 0,
                     id="pdb-with-budget-is-not-violated"),
        pytest.param([pod("g1", cpu="2", prio=10, node="n1", labels=G),
                      pod("g2", cpu="2", prio=20, node="n1", labels=G)],
                     pod("p", cpu="4", prio=100), [pdb("g", G, 1)], ["g2", "g1"], 1,
                     id="budget-of-one-two-victims-one-violation"),
        pytest.param([pod("g1", cpu="2", prio=10, node="n1", labels=G),
                      pod("g2", cpu="2", prio=20, node="n1", labels=G)],
                     pod("p", cpu="4", prio=100), [pdb("g", G, 0, disrupted=["g1"])], ["g2", "g1"], 1,
                     id="disrupted-pod-spends-no-budget"),
        pytest.param([pod("guarded", cpu="2", prio=10, node="n1", labels=G),
                      pod("free", cpu="2", prio=20, node="n1", labels=F)],
                     pod("p", cpu="2", prio=100), [pdb("g", G, 0, namespace="other")], ["guarded"], 0,
                     id="pdb-of-other-namespace-ignored"),
        pytest.param([pod("guarded", cpu="2", prio=10, node="n1", labels=G),
                      pod("free", cpu="2", prio=20, node="n1", labels=F)],
                     pod("p", cpu="2", prio=100), [pdb("g", {}, 0)], ["guarded"], 0,
                     id="empty-selector-matches-nothing"),
        pytest.param([pod("guarded", cpu="2", prio=10, node="n1", labels=G),
                      pod("free", cpu="2", prio=20, node="n1", labels=F)],
                     pod("p", cpu="2", prio=100), [pdb("g", None, 0)], ["guarded"], 0,
                     id="nil-selector-matches-nothing"),
        pytest.param([pod("a", cpu="1", prio=10, node="n1", labels=G), pod("b", cpu="1", prio=30, node="n1", labels=G),
                      pod("c", cpu="1", prio=20, node="n1", labels=F), pod("d", cpu="1", prio=40, node="n1", labels=F)],
                     pod("p", cpu="2", prio=100), [pdb("g", G, 0)], ["d", "c"], 0,
                     id="violating-group-first-each-highest-first"),
        pytest.param([pod("a", cpu="1", prio=10, node="n1", labels=G), pod("b", cpu="1", prio=30, node="n1", labels=G),
                      pod("c", cpu="1", prio=20, node="n1", labels=F), pod("d", cpu="1", prio=40, node="n1", labels=F)],
                     pod("p", cpu="3", prio=100), [pdb("g", G, 0)], ["d", "c", "a"], 1,
                     id="mixed-victims-sorted-by-importance"),
    ],
)
def test_select_victims_on_node(pods, preemptor, pdbs, want_victims, want_violations):
    victims, violations, status = _select(pods, preemptor, pdbs)
    assert status is None
    assert victims == want_victims
    assert violations == want_violations


@pytest.mark.parametrize(
    ("pods", "preemptor", "want_code", "want_reason"),
    [
        pytest.param([pod("h", cpu="4", prio=100, node="n1")], pod("p", cpu="1", prio=100),
                     Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "No preemption victims found for incoming pod",
                     id="no-lower-priority-pods"),
        pytest.param([pod("h", cpu="3", prio=200, node="n1"), pod("l", cpu="1", prio=1, node="n1")],
                     pod("p", cpu="2", prio=100), Code.UNSCHEDULABLE, "Insufficient cpu",
                     id="does-not-fit-even-without-victims"),
        pytest.param([pod("l", cpu="1", prio=1, node="n1")], pod("p", cpu="8", prio=100),
                     Code.UNSCHEDULABLE, "Insufficient cpu", id="bigger-than-the-node"),
    ],
)
def test_node_out(pods, preemptor, want_code, want_reason):
    victims, _, status = _select(pods, preemptor)
    assert victims == []
    assert status.code == want_code
    assert status.reasons == [want_reason]


@pytest.mark.parametrize(
    ("pods", "pdbs", "want_violating", "want_non_violating"),
    [
        pytest.param([pod("a", labels=G), pod("b", labels=F)], [pdb("g", G, 0)], ["a"], ["b"], id="one-match"),
        pytest.param([pod("a", labels=G), pod("b", labels=G), pod("c", labels=G)], [pdb("g", G, 2)],
                     ["c"], ["a", "b"], id="budget-spent-in-order"),
        pytest.param([pod("a")], [pdb("g", {}, 0)], [], ["a"], id="no-labels-no-match"),
        pytest.param([pod("a", labels=G)], [pdb("g", G, 0), pdb("g2", F, 0)], ["a"], [], id="two-pdbs"),
        pytest.param([pod("a", labels={"app": "guarded", "tier": "x"})],
                     [pdb("g", G, 1), pdb("t", {"tier": "x"}, 0)], ["a"], [], id="any-violated-pdb-counts"),
        # v1.37.2 stops at the first budget a pod breaks: the later ones it matches are not spent (so
        # b, matching only the second, still has its one disruption)
        pytest.param([pod("a", labels={"app": "guarded", "tier": "x"}), pod("b", labels={"tier": "x"})],
                     [pdb("g", G, 0), pdb("t", {"tier": "x"}, 1)], ["a"], ["b"], id="stops-at-the-first-broken"),
        pytest.param([pod("a", labels={"app": "guarded", "tier": "x"}), pod("b", labels={"tier": "x"})],
                     [pdb("t", {"tier": "x"}, 1), pdb("g", G, 0)], ["a", "b"], [], id="earlier-budgets-are-spent"),
        pytest.param([pod("a", labels=G, namespace="ns")], [pdb("g", G, 0)], [], ["a"], id="namespace"),
        pytest.param([pod("a", labels=G)], [pdb("g", G, 0, disrupted=["a"])], [], ["a"], id="already-disrupted"),
    ],
)
def test_filter_pods_with_pdb_violation(pods, pdbs, want_violating, want_non_violating):
    parsed = [PDB.from_dict(d) for d in pdbs]
    violating, non_violating = filter_pods_with_pdb_violation(pods, parsed)
    assert [p.name for p in violating] == want_violating
    assert [p.name for p in non_violating] == want_non_violating


def test_pdb_with_match_expressions_and_bad_selector():
    good = PDB.from_dict({"metadata": {"name": "x", "namespace": "default"},
                          "spec": {"selector": {"matchExpressions": [
                              {"key": "app", "operator": "In", "values": ["guarded"]}]}},
                          "status": {"disruptionsAllowed": 0}})
    bad = PDB.from_dict({"metadata": {"name": "y", "namespace": "default"},
                         "spec": {"selector": {"matchExpressions": [{"key": "app", "operator": "Bogus"}]}},
                         "status": {}})
    assert good.matches(pod("a", labels=G))
    assert not good.matches(pod("b", labels=F))
    assert not bad.matches(pod("a", labels=G))
