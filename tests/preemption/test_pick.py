"""Picking the node among the candidates: each tie-break step of upstream's order."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeberth.preemption import Candidate, Victims, pick_one_node_for_preemption
from kubeberth.preemption.pick import earliest_start_time_of_highest_priority
from tests.preemption.fakes import T0, Env, node, pdb, pod

MIN_INT32 = -(2**31)
NOW = T0 + 10_000


def V(*pods, pdb_violations=0):
    return Victims(list(pods), pdb_violations)


def P(name, prio, start=None):
    return pod(name, prio=prio, start=start)


@pytest.mark.parametrize(
    ("nodes_to_victims", "want"),
    [
        pytest.param({}, "", id="no-candidates"),
        pytest.param({"a": V(P("x", 1))}, "a", id="single"),
        # 1. fewest PDB violations, whatever the priorities
        pytest.param({"a": V(P("x", 1), pdb_violations=1), "b": V(P("y", 100), P("z", 100))}, "b",
                     id="1-fewest-pdb-violations"),
        pytest.param({"a": V(P("x", 1), pdb_violations=2), "b": V(P("y", 1), pdb_violations=1)}, "b",
                     id="1-fewer-violations-among-violating"),
        # 2. lowest highest-victim priority
        pytest.param({"a": V(P("x", 10), P("x2", 1)), "b": V(P("y", 5), P("y2", 5), P("y3", 5))}, "b",
                     id="2-lowest-highest-priority"),
        # 3. smallest sum of priorities (shifted by MaxInt32+1)
        pytest.param({"a": V(P("x", 10), P("x2", 5)), "b": V(P("y", 10), P("y2", 1))}, "b",
                     id="3-smallest-sum"),
        pytest.param({"a": V(P("x", -10), P("x2", -10)), "b": V(P("y", -10))}, "b",
                     id="3-negative-priorities-more-pods-is-worse"),
        # 4. fewest victims (sums tie thanks to a MinInt32 victim)
        pytest.param({"a": V(P("x", 10), P("x2", MIN_INT32)), "b": V(P("y", 10))}, "b",
                     id="4-fewest-victims"),
        # 5. latest start time of the highest-priority victims
        pytest.param({"a": V(P("x", 10, start=0), P("x2", 1, start=500)),
                      "b": V(P("y", 10, start=100), P("y2", 1, start=0))},
                     "b", id="5-latest-start-of-highest-priority"),
        pytest.param({"a": V(P("x", 10, start=100), P("x1", 10, start=0)),
                      "b": V(P("y", 10, start=50), P("y1", 10, start=60))},
                     "b", id="5-earliest-among-the-highest-compared"),
        pytest.param({"a": V(P("x", 10, start=0)), "b": V(P("y", 10))}, "b",
                     id="5-unstarted-counts-as-now"),
        # 6. then the first
        pytest.param({"a": V(P("x", 10, start=0)), "b": V(P("y", 10, start=0))}, "a", id="6-first"),
        pytest.param({"b": V(P("y", 10, start=0)), "a": V(P("x", 10, start=0))}, "b", id="6-first-in-order"),
        # earlier steps win over later ones
        pytest.param({"a": V(P("x", 5), P("x2", 5), P("x3", 5)), "b": V(P("y", 6))}, "a",
                     id="priority-before-count"),
        pytest.param({"a": V(P("x", 10, start=900)), "b": V(P("y", 9, start=0))}, "b",
                     id="priority-before-start-time"),
        # victim units: the first victim is the most important unit's (a group at its PodGroup's
        # priority), whose own priority is what rule 2 reads, not the highest pod's
        pytest.param({"a": V(P("g", 3), P("x", 8)), "b": V(P("y", 5), P("z", 1))}, "a",
                     id="first-victim-priority-not-highest"),
    ],
)
def test_pick_one_node_for_preemption(nodes_to_victims, want):
    assert pick_one_node_for_preemption(nodes_to_victims, NOW) == want


def _reference_pick(nodes_to_victims, now):
    """Upstream's pickOneNodeForPreemption as written: each rule filters the nodes tied so far."""
    if not nodes_to_victims:
        return ""

    def latest_start(n):
        t = earliest_start_time_of_highest_priority(nodes_to_victims[n], now)
        return t if t is not None else float("-inf")

    score_funcs = [
        lambda n: -nodes_to_victims[n].num_pdb_violations,
        # the first victim's priority (the victims come most important first)
        lambda n: -(nodes_to_victims[n].pods[0].priority if nodes_to_victims[n].pods else MIN_INT32),
        lambda n: -sum(p.priority - MIN_INT32 for p in nodes_to_victims[n].pods),
        lambda n: -len(nodes_to_victims[n].pods),
        latest_start,
    ]
    nodes = list(nodes_to_victims)
    for f in score_funcs:
        scores = [f(n) for n in nodes]
        best = max(scores)
        nodes = [n for n, s in zip(nodes, scores) if s == best]
        if len(nodes) == 1:
            break
    return nodes[0]


victim_maps = st.dictionaries(
    st.sampled_from("abcdefgh"),
    st.builds(lambda pods, v: V(*[P(f"x{i}", prio, start) for i, (prio, start) in enumerate(pods)], pdb_violations=v),
              st.lists(st.tuples(st.sampled_from([MIN_INT32, -5, 0, 1, 5, 2**31 - 1]),
                                 st.sampled_from([None, 0, 500, 900])), max_size=4),
              st.integers(0, 2)),
    max_size=6)


@st.composite
def tied_maps(draw):
    """Nodes whose victims have the same priorities: only the start times tell them apart."""
    prios = draw(st.lists(st.sampled_from([0, 5, 5, 9]), min_size=1, max_size=4))
    return {name: V(*[P(f"x{i}", prio, draw(st.sampled_from([None, 0, 500, 900]))) for i, prio in enumerate(prios)])
            for name in draw(st.lists(st.sampled_from("abcdef"), min_size=2, max_size=5, unique=True))}


@settings(max_examples=200, deadline=None)
@given(st.one_of(victim_maps, tied_maps()))
def test_pick_is_upstreams_rule_by_rule_filtering(nodes_to_victims):
    assert pick_one_node_for_preemption(nodes_to_victims, NOW) == _reference_pick(nodes_to_victims, NOW)


def test_select_candidate():
    env = Env([node("n1")])
    a = Candidate("a", V(P("x", 10)))
    b = Candidate("b", V(P("y", 5)))
    assert env.evaluator.select_candidate([]) is None
    assert env.evaluator.select_candidate([a]) is a
    best = env.evaluator.select_candidate([a, b])
    assert best.name == "b" and best.victims is b.victims


@pytest.mark.parametrize(
    ("pods", "pdbs", "want_node", "want_victims"),
    [
        pytest.param([pod("g", cpu="4", prio=1, node="n1", labels={"app": "g"}),
                      pod("f", cpu="4", prio=50, node="n2", labels={"app": "f"})],
                     [pdb("g", {"app": "g"}, 0)], "n2", ["default/f"], id="pdb-over-priority"),
        pytest.param([pod("a", cpu="4", prio=20, node="n1"), pod("b", cpu="4", prio=10, node="n2")],
                     [], "n2", ["default/b"], id="lower-priority-victim"),
        pytest.param([pod("a1", cpu="2", prio=10, node="n1"), pod("a2", cpu="2", prio=10, node="n1"),
                      pod("b", cpu="4", prio=10, node="n2")],
                     [], "n2", ["default/b"], id="fewer-victims"),
        pytest.param([pod("a", cpu="4", prio=10, node="n1", start=0), pod("b", cpu="4", prio=10, node="n2", start=60)],
                     [], "n2", ["default/b"], id="younger-victim"),
    ],
)
async def test_preemption_picks_the_node(pods, pdbs, want_node, want_victims):
    env = Env([node("n1"), node("n2")], pods, pdbs=pdbs)
    result, status = await env.post_filter(pod("p", cpu="4", prio=100))
    assert status.is_success()
    assert result.nominated_node_name == want_node
    assert [c[0] for c in env.client.of("delete")] == want_victims
