"""The score ties' rules: upstream's reservoir draw (the default) and the seeded fixed node order
(`--tie-break fixed-order`), on every path that breaks a tie."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from kubeberth.cli import main
from kubeberth.framework import NodePluginScores
from kubeberth.framework.tie_break import (
    FIXED_ORDER,
    RESERVOIR,
    RESERVOIR_RULE,
    FixedNodeOrder,
    Reservoir,
    tie_break_rule,
)
from kubeberth.framework.vector.scores import select_index
from kubeberth.scheduler.algorithm import select_host
from kubeberth.whatif.engine import new_scheduler
from kubeberth.whatif.simulate import simulate
from tests.builders import node_dict, pod_dict

NAMES = [f"node-{i:02d}" for i in range(12)]

# every score plugin off: every feasible node ties on every pod
NO_SCORES = {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile",
             "metadata": {"name": "default-scheduler"},
             "spec": {"percentageOfNodesToScore": 100, "plugins": {"score": {"disabled": [{"name": "*"}]}}}}


def tied_cluster(pods: int = 6) -> list[dict[str, Any]]:
    return [*(node_dict(n, cpu="64") for n in NAMES), *(pod_dict(f"p{i}", cpu="1") for i in range(pods)), NO_SCORES]


def hosts(seed: int, tie_break: str, pods: int = 6) -> list[str | None]:
    return [o.node for o in simulate(tied_cluster(pods), seed=seed, warn=io.StringIO(), tie_break=tie_break)]


def test_fixed_order_is_a_seeded_permutation_of_names() -> None:
    order = FixedNodeOrder(7)
    assert sorted(order.order(NAMES)) == sorted(NAMES)
    assert order.order(NAMES) == FixedNodeOrder(7).order(list(reversed(NAMES)))  # input order does not matter
    orders = {tuple(FixedNodeOrder(seed).order(NAMES)) for seed in range(20)}
    assert len(orders) == 20  # another seed, another order
    assert {o[0] for o in orders} != {orders.pop()[0]}  # and not always the same first node


def test_fixed_order_keeps_relative_order_when_nodes_are_added() -> None:
    order = FixedNodeOrder(3)
    before = order.order(NAMES[:6])
    after = order.order(NAMES)
    assert [n for n in after if n in before] == before  # a node added later does not reorder the others
    assert FixedNodeOrder(3).order(NAMES) == after  # and its place depends on the seed and names only


@pytest.mark.parametrize("seed", [0, 1, 5, 42])
def test_fixed_order_picks_the_first_tied_name_in_the_order(seed: int) -> None:
    order = FixedNodeOrder(seed)
    first = order.order(NAMES)[0]
    scores = [NodePluginScores(n, total=10) for n in NAMES]
    rng = random.Random(0)
    state = rng.getstate()
    assert select_host(scores, rng, order) == first
    assert rng.getstate() == state  # no draw
    # only the nodes with the highest total compete
    ranked = order.order(NAMES)
    lower = [NodePluginScores(n, total=5 if n == first else 10) for n in NAMES]
    assert select_host(lower, rng, order) == ranked[1]
    # a single leader wins whatever the order
    lead = [NodePluginScores(n, total=11 if n == ranked[-1] else 10) for n in NAMES]
    assert select_host(lead, rng, order) == ranked[-1]


@pytest.mark.parametrize("totals", [[3, 3, 3, 3], [1, 5, 5, 2, 5], [7, 1, 7], [4]])
@pytest.mark.parametrize("rule", ["reservoir", "fixed-order"])
def test_score_table_path_picks_as_the_list_path(totals: list[int], rule: str) -> None:
    names = [NAMES[i] for i in range(len(totals))]
    for seed in range(10):
        a, b = random.Random(seed), random.Random(seed)
        got = select_index(np.asarray(totals, dtype=np.int64), a, tie_break_rule(rule, seed), names.__getitem__)
        expected = select_host([NodePluginScores(n, total=t) for n, t in zip(names, totals, strict=True)], b,
                               tie_break_rule(rule, seed))
        assert names[got] == expected
        assert a.getstate() == b.getstate()


def test_reservoir_is_upstream_draw() -> None:
    scores = [NodePluginScores(n, total=1) for n in NAMES[:4]]
    for seed in range(20):
        ref = random.Random(seed)
        expected = NAMES[ref.randrange(4)]
        assert select_host(scores, random.Random(seed), RESERVOIR_RULE) == expected
        assert select_host(scores, random.Random(seed)) == expected  # the default


def test_rule_names() -> None:
    assert isinstance(tie_break_rule(RESERVOIR, 3), Reservoir)
    fixed = tie_break_rule(FIXED_ORDER, 3)
    assert isinstance(fixed, FixedNodeOrder) and fixed.seed == 3
    with pytest.raises(ValueError, match="unknown tie-break rule 'first'"):
        tie_break_rule("first", 0)


def test_new_scheduler_defaults_to_reservoir() -> None:
    sched, _ = new_scheduler(4)
    assert sched.ctx.tie_break is RESERVOIR_RULE
    sched, _ = new_scheduler(4, FIXED_ORDER)
    assert isinstance(sched.ctx.tie_break, FixedNodeOrder) and sched.ctx.tie_break.seed == 4


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_simulate_fixed_order_puts_every_tied_pod_on_the_first_node(seed: int) -> None:
    got = hosts(seed, FIXED_ORDER)
    assert got == [FixedNodeOrder(seed).order(NAMES)[0]] * len(got)
    assert hosts(seed, FIXED_ORDER) == got  # deterministic


def test_simulate_reservoir_spreads_ties_and_varies_with_the_seed() -> None:
    runs = [hosts(seed, RESERVOIR) for seed in range(6)]
    assert all(len(set(r)) > 1 for r in runs)  # a fresh draw per pod
    assert len({tuple(r) for r in runs}) > 1  # another seed, other draws
    assert hosts(2, RESERVOIR) == runs[2]  # deterministic
    firsts = {hosts(seed, FIXED_ORDER)[0] for seed in range(6)}
    assert len(firsts) > 1  # the fixed order's first node depends on the seed


@pytest.mark.parametrize("seed", [4, 9, 11])
def test_pod_group_placements_tie_by_the_scheduler_rule(seed: int) -> None:
    from types import SimpleNamespace

    from kubeberth.scheduler.schedule_one_placement import PlacementAlgorithm

    placements = ["rack-a", "rack-b", "rack-c", "rack-d"]
    scores = [SimpleNamespace(placement=SimpleNamespace(name=p), total=4, scores={}) for p in placements]

    def best(rule: Any, rng: random.Random) -> int:
        fw = SimpleNamespace(ctx=SimpleNamespace(tie_break=rule), rng=rng,
                             run_placement_score=lambda state, pg, assignments: (scores, None))
        cycle = PlacementAlgorithm()
        cycle.snapshot = SimpleNamespace(get=lambda name: None)  # type: ignore[assignment]
        feasible = [(SimpleNamespace(nodes=[], name=p), []) for p in placements]
        got, status = cycle._best_placement(fw, SimpleNamespace(key="default/g"), feasible)  # type: ignore[arg-type]
        assert status is None
        return got

    order = FixedNodeOrder(seed)
    assert best(order, random.Random(0)) == placements.index(order.order(placements)[0])
    assert best(RESERVOIR_RULE, random.Random(seed)) == random.Random(seed).randrange(4)


def test_cli_tie_break_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(tied_cluster(4)))
    assert main(["simulate", str(path), "-o", "json", "--seed", "5", "--tie-break", "fixed-order"]) == 0
    nodes = {p["node"] for p in json.loads(capsys.readouterr().out)["pods"]}
    assert nodes == {FixedNodeOrder(5).order(NAMES)[0]}
    with pytest.raises(SystemExit) as exc:
        main(["simulate", str(path), "--tie-break", "first"])
    assert exc.value.code == 2
    assert "invalid choice: 'first'" in capsys.readouterr().err


@pytest.mark.parametrize("seed", [0, 3])
def test_vectorised_path_picks_as_the_per_node_path(seed: int) -> None:
    from types import SimpleNamespace

    order = FixedNodeOrder(seed)
    names = [f"n{i:03d}" for i in range(100)]
    arrays = SimpleNamespace(names=list(names))
    idx = np.arange(3, 100, 7)  # a feasible subset of the snapshot's rows
    view = SimpleNamespace(arrays=arrays, idx=idx)
    top = np.arange(0, len(idx), 2)
    expected = order.pick(top.tolist(), lambda k: names[int(idx[k])], random.Random(0))
    assert order.pick_rows(top, view) == expected
    whole = SimpleNamespace(arrays=arrays, idx=None)  # the whole snapshot in order
    assert order.pick_rows(np.arange(100), whole) == names.index(order.order(names)[0])
    arrays.names = list(reversed(names))  # the node list changed: the keys follow it
    assert arrays.names[order.pick_rows(np.arange(100), whole) or 0] == order.order(names)[0]
    assert RESERVOIR_RULE.pick_rows(top, view) is None  # upstream's rule draws: no fast path


@pytest.mark.parametrize("seed", [0, 9])
def test_simulate_fixed_order_on_the_vectorised_path(seed: int) -> None:
    names = [f"big-{i:03d}" for i in range(80)]  # above vector_min_nodes: the arrays' path
    objects = [*(node_dict(n, cpu="64") for n in names), *(pod_dict(f"p{i}", cpu="1") for i in range(5)), NO_SCORES]
    got = [o.node for o in simulate(objects, seed=seed, warn=io.StringIO(), tie_break=FIXED_ORDER)]
    assert got == [FixedNodeOrder(seed).order(names)[0]] * 5
