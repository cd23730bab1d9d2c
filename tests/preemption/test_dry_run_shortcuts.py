"""The preemption shortcuts (prescreen of hopeless nodes, the arithmetic dry run) decide as the
clone-and-filter dry runs do.

Random clusters full of low-priority pods (some guarded by PodDisruptionBudgets, some of
system priority) and waves of higher-priority preemptors go through the real Scheduler twice
with the same seed: with `Framework.vectorise` off (no shortcut: every dry run clones and
filters) and on. Every pod must end the same (status, node, message, nomination, victims),
with the same events and the same random stream afterwards.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeberth.clock import FakeClock
from kubeberth.config import parse_spec
from kubeberth.framework.cycle_state import CycleState
from kubeberth.model import NodeInfo, Pod
from kubeberth.plugins import in_tree_registry
from kubeberth.preemption.arithmetic_dry_run import ArithmeticDryRun
from kubeberth.preemption.prescreen import HOPELESS, NO_VICTIMS, TRY, Prescreen
from kubeberth.profile import build_framework
from kubeberth.scheduler import Scheduler
from tests.builders import make_node, make_pod, node_dict, pod_dict
from tests.doubles import run_scenario
from tests.preemption.fakes import pdb

SCALE = int(os.environ.get("KUBEBERTH_VECTOR_EXAMPLES", "1"))
APPS = ["a", "b", "c"]
TAINT = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
# TaintToleration after NodeResourcesFit: a tainted node short of cpu is Unschedulable (a potential
# node for preemption) and the dry run's node-only filters then reject it.
TAINTS_LAST = {"plugins": {"filter": {"disabled": [{"name": "TaintToleration"}],
                                      "enabled": [{"name": "TaintToleration"}]}}}


@st.composite
def clusters(draw: Any) -> dict[str, Any]:
    n = draw(st.integers(1, 12))
    nodes = [node_dict(f"n{i:02d}", cpu=draw(st.sampled_from(["2", "4"])),
                       memory=draw(st.sampled_from(["4Gi", "8Gi"])),
                       pods=draw(st.sampled_from(["3", "5", "110"])),
                       unschedulable=draw(st.integers(0, 9)) == 0,
                       taints=[TAINT] if draw(st.integers(0, 3)) == 0 else None)
             for i in range(n)]
    running = []
    for i in range(draw(st.integers(0, 4 * n))):
        running.append(pod_dict(
            f"run-{i}", cpu=draw(st.sampled_from(["100m", "500m", "900m", "1500m"])),
            memory=draw(st.sampled_from(["100Mi", "1Gi", "3Gi"])),
            priority=draw(st.sampled_from([0, 0, 1, 5, 2_000_000_000])),
            labels={"app": draw(st.sampled_from(APPS))},
            node=f"n{draw(st.integers(0, n - 1)):02d}"))
    pending = []
    for i in range(draw(st.integers(1, 3 * n))):
        requests: dict[str, Any] = {"cpu": draw(st.sampled_from(["0", "500m", "1", "3"]))}
        if draw(st.booleans()):
            requests["memory"] = draw(st.sampled_from(["500Mi", "2Gi", "6Gi"]))
        tolerate = draw(st.integers(0, 2)) == 0
        pending.append(pod_dict(f"p-{i}", requests=requests, priority=draw(st.sampled_from([1, 5, 10, 10, 100])),
                                **({"tolerations": [{"key": "dedicated", "operator": "Exists"}]} if tolerate else {})))
    pdbs = [pdb(f"guard-{app}", {"app": app}, draw(st.integers(0, 2)))
            for app in APPS if draw(st.booleans())]
    profile = draw(st.sampled_from([{}, {"pluginConfig": [{"name": "DefaultPreemption", "args": {
        "minCandidateNodesAbsolute": 2, "minCandidateNodesPercentage": 0}}]}, TAINTS_LAST]))
    return {"nodes": nodes, "running": running, "pending": pending, "pdbs": pdbs,
            "profile": profile, "seed": draw(st.integers(0, 2**16))}


@settings(max_examples=60 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_shortcuts_decide_as_the_full_dry_runs(sc: dict[str, Any]) -> None:
    reference = run_scenario(sc, vectorise=False)
    fast = run_scenario(sc, vectorise=True)
    assert fast["outcomes"] == reference["outcomes"]
    assert fast["events"] == reference["events"]
    assert fast["rng"] == reference["rng"]


def test_shortcuts_apply_to_the_default_profile() -> None:
    """The default profile's filters for a pod without volumes, ports or affinity: both
    shortcuts are on (so the comparison above exercises them), and off without vectorise."""
    sched = Scheduler(clock=FakeClock(), seed=1)
    fw = build_framework(parse_spec({}), in_tree_registry(), sched.ctx)
    sched.set_profile(fw)
    node = NodeInfo(make_node("n0", cpu="1"), [make_pod("low", cpu="500m", node="n0")])
    pod = Pod(pod_dict("p", cpu="2", priority=10))
    state = CycleState()
    fw.run_pre_filter(state, pod, [node])
    assert ArithmeticDryRun.for_cycle(fw, state, pod, lambda *_: True) is not None
    screen = Prescreen(fw, state, pod, lambda *_: True)
    assert screen.verdict(node) == HOPELESS  # 1 cpu even without its pod: not enough for 2
    assert Prescreen(fw, state, pod, lambda *_: False).verdict(node) == NO_VICTIMS
    fw.vectorise = False
    assert ArithmeticDryRun.for_cycle(fw, state, pod, lambda *_: True) is None
    assert Prescreen(fw, state, pod, lambda *_: True).verdict(node) == TRY
