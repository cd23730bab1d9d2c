"""Which nodes are dry-run, how many, from where, and that the dry run touches nothing real."""

from __future__ import annotations

import pytest

from kubeberth.framework import CycleState, NodeToStatus, Status
from kubeberth.preemption import calculate_num_candidates
from tests.doubles import FixedRng
from tests.preemption.fakes import Env, node, pod

UNSCHED = Status.unschedulable("Insufficient cpu")
UNRESOLVABLE = Status.unresolvable("node(s) didn't match Pod's node affinity/selector")


def _statuses(listed: dict[str, Status], absent: Status | None = None) -> NodeToStatus:
    m = NodeToStatus()
    for n, s in listed.items():
        m.set(n, s)
    m.absent = absent
    return m


@pytest.mark.parametrize(
    ("listed", "absent", "want"),
    [
        pytest.param({"n1": UNSCHED, "n2": UNSCHED, "n3": UNSCHED}, None, ["n1", "n2", "n3"], id="all-unschedulable"),
        pytest.param({"n1": UNSCHED, "n2": UNRESOLVABLE, "n3": UNSCHED}, None, ["n1", "n3"], id="skip-unresolvable"),
        pytest.param({"n1": UNRESOLVABLE, "n2": UNRESOLVABLE, "n3": UNRESOLVABLE}, None, [], id="none-helpful"),
        pytest.param({"n2": UNSCHED}, None, ["n2"], id="unlisted-without-absent-are-out"),
        pytest.param({"n2": UNRESOLVABLE}, UNSCHED, ["n1", "n3"], id="absent-unschedulable-applies-to-unlisted"),
        pytest.param({"n2": UNSCHED}, UNRESOLVABLE, ["n2"], id="absent-unresolvable"),
        pytest.param({"n1": Status.error("boom"), "n2": UNSCHED}, None, ["n2"], id="error-is-not-a-candidate"),
    ],
)
def test_only_unschedulable_nodes_are_candidates(listed, absent, want):
    pods = [pod(f"low-{n}", cpu="4", prio=1, node=n) for n in ("n1", "n2", "n3")]
    env = Env([node("n1"), node("n2"), node("n3")], pods)
    preemptor = pod("p", cpu="2", prio=10)
    state = env.state_for(preemptor)
    candidates, _, errors = env.evaluator.find_candidates(
        state, env.ctx.snapshot.node_infos, preemptor, _statuses(listed, absent))
    assert sorted(c.name for c in candidates) == want
    assert errors == []
    assert sorted(set(env.fit.calls)) == want  # only those nodes were dry-run


async def test_unresolvable_nodes_are_never_evaluated_end_to_end():
    """The scheduler's real statuses: n2 is off by selector, n3 by lack of room."""
    pods = [pod("a", cpu="4", prio=1, node="n2"), pod("b", cpu="4", prio=1, node="n3")]
    env = Env([node("n1", "1"), node("n2", labels={"fake/off": "true"}), node("n3")], pods)
    result, status = await env.post_filter(pod("p", cpu="2", prio=10))
    assert status.is_success()
    assert result.nominated_node_name == "n3"
    assert env.client.of("delete") == [("default/b",)]


@pytest.mark.parametrize(
    ("num_nodes", "percentage", "absolute", "want"),
    [
        # upstream's TestCalculateNumCandidates (plus edges)
        pytest.param(10, 5, 0, 0, id="too-few-nodes-for-percentage"),
        pytest.param(10, 10, 0, 1, id="percentage-only"),
        pytest.param(10, 40, 1, 4, id="percentage-over-absolute"),
        pytest.param(10, 10, 5, 5, id="absolute-over-percentage"),
        pytest.param(10, 10, 100, 10, id="capped-at-all-nodes"),
        pytest.param(10, 100, 0, 10, id="all-by-percentage"),
        pytest.param(1000, 10, 100, 100, id="defaults-1000-nodes"),
        pytest.param(5000, 10, 100, 500, id="defaults-5000-nodes"),
        pytest.param(3, 10, 100, 3, id="defaults-small-cluster"),
        pytest.param(0, 10, 100, 0, id="no-nodes"),
    ],
)
def test_calculate_num_candidates(num_nodes, percentage, absolute, want):
    assert calculate_num_candidates(num_nodes, percentage, absolute) == want


@pytest.mark.parametrize(
    ("args", "num_nodes", "rng_value", "want"),
    [
        pytest.param({}, 10, 3, (3, 10), id="defaults"),
        pytest.param({"minCandidateNodesPercentage": 20, "minCandidateNodesAbsolute": 1}, 10, 12, (2, 2),
                     id="offset-within-range"),
        pytest.param({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 3}, 50, 49, (49, 3),
                     id="absolute-only"),
    ],
)
def test_offset_and_num_candidates_use_handle_rng(args, num_nodes, rng_value, want):
    env = Env([node("n1")], args=args, rng=FixedRng(rng_value))
    assert env.evaluator.get_offset_and_num_candidates(num_nodes) == want


def _four_nodes_env(**kw):
    """n1..n4, each full of one low-priority 4-cpu pod; n3's pod is PDB-guarded."""
    from tests.preemption.fakes import pdb

    pods = [pod(f"v{i}", cpu="4", prio=1, node=f"n{i}", labels={"app": "guarded" if i == 3 else "free"})
            for i in range(1, 5)]
    return Env([node(f"n{i}") for i in range(1, 5)], pods, pdbs=[pdb("guard", {"app": "guarded"}, 0)], **kw)


@pytest.mark.parametrize(
    ("offset", "num", "want_checked", "want_candidates"),
    [
        pytest.param(0, 1, ["n1"], ["n1"], id="first-from-offset-0"),
        pytest.param(1, 1, ["n2"], ["n2"], id="first-from-offset-1"),
        pytest.param(3, 2, ["n4", "n1"], ["n4", "n1"], id="wraps-around"),
        pytest.param(2, 1, ["n3", "n4"], ["n4", "n3"], id="violating-does-not-stop-the-search"),
        pytest.param(2, 2, ["n3", "n4"], ["n4", "n3"], id="non-violating-first-in-result"),
        pytest.param(0, 4, ["n1", "n2", "n3", "n4"], ["n1", "n2", "n4", "n3"], id="all"),
    ],
)
def test_dry_run_from_offset_until_enough(offset, num, want_checked, want_candidates):
    from kubeberth.preemption import list_pdbs

    env = _four_nodes_env()
    p = pod("p", cpu="2", prio=10)
    state = env.state_for(p)
    nodes = env.ctx.snapshot.node_infos
    candidates, statuses, errors = env.evaluator.dry_run_preemption(
        state, p, nodes, list_pdbs(env.ctx.objects), offset, num)
    checked = list(dict.fromkeys(env.fit.calls))
    assert checked == want_checked
    assert [c.name for c in candidates] == want_candidates
    assert len(statuses) == 0 and errors == []


def test_violating_candidates_are_capped_at_num_candidates():
    from kubeberth.preemption import list_pdbs
    from tests.preemption.fakes import pdb

    pods = [pod(f"v{i}", cpu="4", prio=1, node=f"n{i}", labels={"app": "g"}) for i in range(1, 5)]
    env = Env([node(f"n{i}") for i in range(1, 5)], pods, pdbs=[pdb("guard", {"app": "g"}, 0)])
    p = pod("p", cpu="2", prio=10)
    candidates, _, _ = env.evaluator.dry_run_preemption(
        env.state_for(p), p, env.ctx.snapshot.node_infos, list_pdbs(env.ctx.objects), 0, 2)
    assert [c.name for c in candidates] == ["n1", "n2"]
    assert len(set(env.fit.calls)) == 4  # no non-violating one was found, so every node was tried


async def test_offset_comes_from_handle_rng():
    """With minCandidateNodesAbsolute 1 only one node is dry-run: the one at the rng's offset."""
    for value, want in [(0, "n1"), (1, "n2"), (2, "n3")]:
        pods = [pod(f"v{i}", cpu="4", prio=1, node=f"n{i}") for i in range(1, 4)]
        env = Env([node(f"n{i}") for i in range(1, 4)], pods, rng=FixedRng(value),
                  args={"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 1})
        result, status = await env.post_filter(pod("p", cpu="2", prio=10))
        assert status.is_success()
        assert result.nominated_node_name == want


async def test_dry_run_never_mutates_snapshot_or_state():
    pods = [pod("a", cpu="2", prio=1, node="n1"), pod("b", cpu="2", prio=2, node="n1"),
            pod("c", cpu="3", prio=1, node="n2")]
    env = Env([node("n1"), node("n2", pods="2")], pods)
    p = pod("p", cpu="3", prio=10)
    state = env.state_for(p)
    statuses = env.statuses(state, p)
    before = {ni.name: ([q.uid for q in ni.pods], ni.requested.milli_cpu, ni.generation)
              for ni in env.ctx.snapshot.node_infos}
    counts_before = dict(state.read("FakePodCount").counts)
    candidates, _, _ = env.evaluator.find_candidates(state, env.ctx.snapshot.node_infos, p, statuses)
    assert candidates
    after = {ni.name: ([q.uid for q in ni.pods], ni.requested.milli_cpu, ni.generation)
             for ni in env.ctx.snapshot.node_infos}
    assert after == before
    assert state.read("FakePodCount").counts == counts_before
    assert env.count.removes > 0 and env.count.adds > 0  # went through RemovePod/AddPod


def test_dry_run_goes_through_prefilter_extensions():
    """FakePodCount's filter reads only CycleState: without RemovePod the node would stay full."""
    pods = [pod("a", cpu="100m", prio=1, node="n1"), pod("b", cpu="100m", prio=5, node="n1")]
    env = Env([node("n1", pods="2")], pods)
    p = pod("p", cpu="100m", prio=10)
    state = env.state_for(p)
    victims, violations, status = env.evaluator.select_victims_on_node(
        state.clone(), p, env.ctx.snapshot.get("n1").clone(), [])
    assert status is None
    assert [v.name for v in victims] == ["a"]  # b is reprieved: one slot is enough
    assert violations == 0


def test_dry_run_with_pod_still_not_fitting_reports_filter_status():
    pods = [pod("high", cpu="3", prio=100, node="n1"), pod("low", cpu="1", prio=1, node="n1")]
    env = Env([node("n1")], pods)
    p = pod("p", cpu="2", prio=10)
    state = env.state_for(p)
    victims, _, status = env.evaluator.select_victims_on_node(
        state.clone(), p, env.ctx.snapshot.get("n1").clone(), [])
    assert victims == []
    assert status == Status.unschedulable("Insufficient cpu")


def test_state_clone_is_independent():
    state = CycleState()
    from tests.preemption.fakes import _Counts

    state.write("FakePodCount", _Counts({"n1": 1}))
    c = state.clone()
    c.read("FakePodCount").counts["n1"] = 5
    assert state.read("FakePodCount").counts == {"n1": 1}
