"""The two NodeEvaluators (scheduler/evaluator/) decide alike, pod by pod.

Every pending pod of the conformance cases (tests/conformance/cases, and the shared sample in
/work/shared/conformance/cases when there) and of a few clusters of the differential fuzzer's
generator goes through simulate with the vectorised path forced on for every node list the
arrays describe (`vector_min_nodes` 0). Before each real cycle, the pod's filter and score run
once with each evaluator, on fresh CycleStates from the same start index: the feasible nodes
(in order), every rejected node's status (code, reasons, plugin), the diagnosis' plugins and
messages, the next start index and the weighted scores per plugin must be the same. The real
cycle then goes on as simulate's, so later pods see the cluster as it was scheduled.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubeberth import features
from kubeberth.framework import CycleState, Framework
from kubeberth.framework.handle import ContextHandle
from kubeberth.framework.vector import NodeView
from kubeberth.model import Pod
from kubeberth.scheduler import schedule_one
from kubeberth.scheduler.algorithm import CycleDecision, find_nodes_that_fit_pod, prioritize_nodes
from kubeberth.scheduler.errors import SchedulingError
from kubeberth.scheduler.evaluator import PER_NODE, VECTORISED, NodeEvaluator
from kubeberth.whatif.engine import run_simulation
from kubeberth.whatif.policy_tests import Case, load_cases, parse_case, prepare_case
from tests.cluster.fuzz_gen import generate
from tests.cluster.fuzz_groups import Options

HERE = Path(__file__).resolve().parent
CASES = load_cases([HERE.parent / "conformance" / "cases"])
SHARED = Path("/work/shared/conformance/cases")
FLAVOURS = {"default": Options(), "workloads": Options(flavour="workloads"),
            "topology": Options(flavour="workloads", topology=True),
            "group-preemption": Options(flavour="workloads", group_preemption=True)}
FUZZ = [(seed, index, "default") for seed in (1, 2, 3, 4) for index in range(4)] + \
       [(seed, index, flavour) for flavour in ("workloads", "topology", "group-preemption")
        for seed in (1, 2) for index in range(2)]


def fuzz_case(seed: int, index: int, flavour: str) -> Case:
    doc = generate(seed, index, FLAVOURS[flavour])
    doc["expect"] = [{"pod": "-/-", "unschedulable": False}]  # simulate's outcome is not judged here
    return parse_case(doc, str(doc["name"]))


async def evaluate(fw: Framework, pod: Pod, evaluator: NodeEvaluator) -> dict[str, Any]:
    """The pod's filter and score with `evaluator`, the scheduler's state as it was before."""
    ctx = fw.ctx
    start, rng = ctx.next_start_node_index, fw.rng.getstate()
    state = CycleState()
    out: dict[str, Any] = {}
    try:
        feasible, diagnosis = await find_nodes_that_fit_pod(fw, evaluator, state, pod, CycleDecision())
        out["feasible"] = [ni.name for ni in feasible]
        out["vectorised"] = isinstance(feasible, NodeView)
        out["statuses"] = {name: (st.code, tuple(st.reasons), st.plugin)
                           for name, st in diagnosis.node_to_status.statuses.items()}
        absent = diagnosis.node_to_status.absent
        out["absent"] = None if absent is None else (absent.code, tuple(absent.reasons), absent.plugin)
        out["plugins"] = (sorted(diagnosis.unschedulable_plugins), sorted(diagnosis.pending_plugins))
        out["pre_filter_msg"] = diagnosis.pre_filter_msg
        out["next_start"] = ctx.next_start_node_index
        if len(feasible) > 1:
            table = await prioritize_nodes(fw, evaluator, state, pod, feasible)
            out["totals"] = table.totals.tolist()
            out["scores"] = {name: col.tolist() for name, col in sorted(table.per_plugin.items())}
    except SchedulingError as exc:
        out["error"] = (exc.status.code, tuple(exc.status.reasons), exc.status.plugin)
    finally:
        ctx.next_start_node_index = start
        fw.rng.setstate(rng)
    return out


class Comparison:
    """Wraps schedule_one's schedule_pod: both evaluators first, then the real cycle."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.cycles = 0
        self.vectorised = 0
        self.differences: list[str] = []
        self._real = schedule_one.schedule_pod

    async def __call__(self, fw: Framework, state: CycleState, pod: Pod) -> Any:
        if fw.snapshot.num_nodes_in_placement():
            slow = await evaluate(fw, pod, PER_NODE)
            fast = await evaluate(fw, pod, VECTORISED)
            self.cycles += 1
            self.vectorised += bool(fast.pop("vectorised", False))
            slow.pop("vectorised", None)
            if slow != fast:
                keys = sorted(k for k in slow.keys() | fast.keys() if slow.get(k) != fast.get(k))
                self.differences.append(f"{self.name} {pod.key} differs in {keys}: "
                                        + "; ".join(f"{k}: per-node {slow.get(k)!r} vectorised {fast.get(k)!r}"
                                                    for k in keys))
        return await self._real(fw, state, pod)


def compare(case: Case, monkeypatch: pytest.MonkeyPatch) -> Comparison:
    comparison = Comparison(case.name)
    monkeypatch.setattr(ContextHandle, "vector_min_nodes", 0)
    monkeypatch.setattr(schedule_one, "schedule_pod", comparison)
    warn = io.StringIO()
    sim = prepare_case(case, warn)
    with features.override(case.gates):
        run_simulation(sim.objects, seed=case.seed, warn=warn,
                       percentage_of_nodes_to_score=sim.percentage_of_nodes_to_score or 0, origins=case.origins)
    assert comparison.differences == []
    return comparison


@pytest.fixture(scope="module")
def totals() -> Iterator[dict[str, int]]:
    """Cycles compared over the module, and those the vectorised evaluator took over the arrays."""
    seen = {"cycles": 0, "vectorised": 0}
    yield seen


def _count(totals: dict[str, int], comparison: Comparison) -> None:
    totals["cycles"] += comparison.cycles
    totals["vectorised"] += comparison.vectorised


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_conformance_case(case: Case, monkeypatch: pytest.MonkeyPatch, totals: dict[str, int]) -> None:
    _count(totals, compare(case, monkeypatch))


def test_shared_conformance_sample(monkeypatch: pytest.MonkeyPatch, totals: dict[str, int]) -> None:
    if not SHARED.is_dir():
        pytest.skip(f"no shared conformance sample at {SHARED}")
    for case in load_cases([SHARED]):
        with monkeypatch.context() as patch:
            _count(totals, compare(case, patch))


@pytest.mark.parametrize(("seed", "index", "flavour"), FUZZ, ids=[f"{f}-{s}-{i}" for s, i, f in FUZZ])
def test_fuzz_cluster(seed: int, index: int, flavour: str, monkeypatch: pytest.MonkeyPatch,
                      totals: dict[str, int]) -> None:
    _count(totals, compare(fuzz_case(seed, index, flavour), monkeypatch))


def test_the_fast_path_was_taken(totals: dict[str, int]) -> None:
    """The comparisons above mean something: many cycles, most of them over the node arrays."""
    if not totals["cycles"]:
        pytest.skip("run with the comparisons above")
    assert totals["vectorised"] > totals["cycles"] // 2


def _break_statuses(monkeypatch: pytest.MonkeyPatch) -> None:
    """A vectorised walk that names another plugin in one rejected node's status."""
    real = type(VECTORISED).pass_filters

    def broken(self: Any, fw: Framework, state: CycleState, pod: Pod, diagnosis: Any, nodes: Any,
               to_find: int, start: int) -> Any:
        feasible, processed = real(self, fw, state, pod, diagnosis, nodes, to_find, start)
        for name, st in list(diagnosis.node_to_status.statuses.items())[:1]:
            diagnosis.node_to_status.statuses[name] = type(st)(st.code, *st.reasons, plugin=st.plugin + "X")
        return feasible, processed

    monkeypatch.setattr(type(VECTORISED), "pass_filters", broken)


def _break_scores(monkeypatch: pytest.MonkeyPatch) -> None:
    """A vectorised score that adds one to the last node's total."""
    real = type(VECTORISED).score

    def broken(self: Any, fw: Framework, state: CycleState, pod: Pod, nodes: Any) -> Any:
        table = real(self, fw, state, pod, nodes)
        table.totals[-1] += 1
        return table

    monkeypatch.setattr(type(VECTORISED), "score", broken)


@pytest.mark.parametrize("breakage", [_break_statuses, _break_scores], ids=["statuses", "scores"])
def test_a_broken_fast_path_is_caught(breakage: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison can fail."""
    breakage(monkeypatch)
    case = next(c for c in CASES if c.name == "node-affinity-preferred")
    with pytest.raises(AssertionError, match="differs in"):
        compare(case, monkeypatch)
