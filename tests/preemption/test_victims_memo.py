"""The arithmetic dry run's memo of victims answers as the dry run computed afresh.

Random sequences of dry runs on one node (pods with and without a start time), each step
changing one thing the victims may depend on: the node's pods (a new NodeInfo), the nominated
requests of its row, the time the victims are sorted at, the preemptor (priority, request).
Every memoised answer must be the one `_select` computes without the memo.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeberth.cache.node_arrays import NodeArrays
from kubeberth.clock import FakeClock
from kubeberth.config import parse_spec
from kubeberth.framework.cycle_state import CycleState
from kubeberth.model import NodeInfo, Pod
from kubeberth.plugins import in_tree_registry
from kubeberth.preemption.arithmetic_dry_run import ArithmeticDryRun
from kubeberth.preemption.pick import more_important_key
from kubeberth.preemption.prescreen import Prescreen
from kubeberth.preemption.select_victims import default_is_eligible_pod
from kubeberth.profile import build_framework
from kubeberth.scheduler import Scheduler
from tests.builders import make_node
from tests.preemption.fakes import T0, pod

SCALE = int(os.environ.get("KUBEBERTH_VECTOR_EXAMPLES", "1"))

running = st.lists(st.tuples(st.sampled_from(["500m", "900m", "1500m"]), st.sampled_from([0, 1, 5]),
                             st.sampled_from([None, 100.0, 200.0, 300.0])), min_size=1, max_size=5)
steps = st.lists(st.tuples(st.sampled_from(["node", "nominated", "now", "preemptor", "same"]),
                           running, st.integers(0, 3000), st.sampled_from([50.0, 150.0, 250.0, 350.0]),
                           st.sampled_from([(10, "2"), (10, "3"), (6, "2"), (3, "2")])), min_size=1, max_size=12)


def _allowed(node_info: NodeInfo, victim: Pod, preemptor: Pod) -> bool:
    return victim.priority < preemptor.priority and default_is_eligible_pod(node_info, victim, preemptor)


@settings(max_examples=60 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(running, steps)
def test_memoised_victims_are_the_dry_runs(first: list[Any], ops: list[Any]) -> None:
    sched = Scheduler(clock=FakeClock(), seed=1)
    fw = build_framework(parse_spec({}), in_tree_registry(), sched.ctx)
    sched.set_profile(fw)

    def node(pods: list[Any]) -> NodeInfo:
        return NodeInfo(make_node("n0", cpu="4"), [pod(f"r{i}", cpu=cpu, prio=prio, node="n0", start=start)
                                                   for i, (cpu, prio, start) in enumerate(pods)])

    ni = node(first)
    nominated = 0
    now = T0 + 50.0
    preemptor = (10, "2")
    for k, (op, pods, cpu, at, who) in enumerate(ops):
        if op == "node":
            ni = node(pods)
        elif op == "nominated":
            nominated = cpu
        elif op == "now":
            now = T0 + at
        elif op == "preemptor":
            preemptor = who
        p = pod(f"p{k}", cpu=preemptor[1], prio=preemptor[0])
        state = CycleState()
        fw.run_pre_filter(state, p, [ni])
        fast = ArithmeticDryRun.for_cycle(fw, state, p, _allowed, by_priority=True)
        assert fast is not None
        arrays = NodeArrays([ni])
        kept = Prescreen(fw, state, p, _allowed, memoisable=True)._kept_all(arrays)
        usage = np.array([[nominated, 0, 0, 1 if nominated else 0]], dtype=np.int64)
        fast.use_rows(arrays, usage, kept, now)
        key = more_important_key(now)
        assert fast.select_victims(ni, [], key, 0) == fast._select(ni, [], key, 0), op
