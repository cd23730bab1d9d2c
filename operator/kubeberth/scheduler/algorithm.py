"""The scheduling cycle's algorithm: find the feasible nodes, score them, pick one.

Upstream's schedule_one.go, top to bottom: schedule_pod -> find_nodes_that_fit_pod (PreFilter,
the nominated node first: evaluate_nominated_node) -> find_nodes_that_pass_filters ->
find_nodes_that_pass_extenders -> prioritize_nodes -> select_host. Where upstream loops over the
nodes, a NodeEvaluator (evaluator/: per node, or vectorised over the node arrays, chosen once
per cycle by `node_evaluator`) answers which nodes pass with which statuses, and their scores.

What the cycle decided (PreFilter's outcome, the feasible nodes, the diagnosis, the score table,
the pick) is a CycleDecision: in ScheduleResult.decision, and kept in the CycleState (so that a
cycle that raised still has it: `decision_of(state)`); an explanation (explain.py) is built from
it afterwards. The cycle around it (assume, reserve, permit, binding) is in schedule_one.py.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..extender import ExtenderError, run_filter_extenders, run_prioritize_extenders
from ..framework import (
    CycleState,
    Diagnosis,
    FitError,
    Framework,
    NodePluginScores,
    PreFilterResult,
    Status,
)
from ..framework.status import PluginError
from ..framework.tie_break import RESERVOIR_RULE, TieBreak
from ..framework.vector import snapshot_arrays
from ..framework.vector.scores import select_index
from ..framework.vector.views import ScoreTable
from ..model import NodeInfo, Pod
from .errors import NoNodesAvailable, SchedulingError
from .evaluator import NodeEvaluator, node_evaluator

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE = 0  # adaptive

DECISION_KEY = "kubeberth.io/cycle-decision"

__all__ = [
    "CycleDecision", "NoNodesAvailable", "ScheduleResult", "SchedulingError", "decision_of",
    "evaluate_nominated_node", "find_nodes_that_fit_pod", "find_nodes_that_pass_extenders",
    "find_nodes_that_pass_filters", "num_feasible_nodes_to_find", "prioritize_nodes", "schedule_pod",
    "select_host",
]


@dataclass(slots=True)
class CycleDecision:
    """What one schedule_pod decided, as far as it got."""

    pre_filter_ran: bool = False
    pre_filter_result: PreFilterResult | None = None
    pre_filter_status: Status | None = None     # its failure (None: it passed)
    pre_filter_plugins: set[str] = field(default_factory=set)  # those that restricted or rejected
    feasible: Sequence[NodeInfo] | None = None  # None: filtering did not finish
    diagnosis: Diagnosis | None = None
    scores: ScoreTable | None = None            # None: one feasible node, or scoring did not finish
    host: str = ""


def decision_of(state: CycleState) -> CycleDecision | None:
    """The decision of the schedule_pod that ran on `state` (None before it started)."""
    decision = state.get(DECISION_KEY)
    return decision if isinstance(decision, CycleDecision) else None


class ScheduleResult:
    __slots__ = ("_scores", "decision", "evaluated_nodes", "feasible_nodes", "suggested_host")

    def __init__(self, suggested_host: str, evaluated_nodes: int, feasible_nodes: int,
                 scores: ScoreTable | None = None, decision: CycleDecision | None = None) -> None:
        self.suggested_host = suggested_host
        self.evaluated_nodes = evaluated_nodes
        self.feasible_nodes = feasible_nodes
        self._scores = scores
        self.decision = decision

    @property
    def scores(self) -> list[NodePluginScores]:
        """Per feasible node, its weighted plugin scores (built on first use)."""
        return self._scores.to_list() if self._scores is not None else []

    def __repr__(self) -> str:
        return (f"ScheduleResult({self.suggested_host}, evaluated={self.evaluated_nodes}, "
                f"feasible={self.feasible_nodes})")


async def schedule_pod(fw: Framework, state: CycleState, pod: Pod) -> ScheduleResult:
    """One scheduling attempt on fw's current snapshot. Raises FitError when nothing fits."""
    snapshot = fw.snapshot
    if snapshot.num_nodes_in_placement() == 0:
        raise NoNodesAvailable()
    decision = CycleDecision()
    state.write(DECISION_KEY, decision)
    evaluator = node_evaluator(fw)
    feasible, diagnosis = await find_nodes_that_fit_pod(fw, evaluator, state, pod, decision)
    decision.feasible, decision.diagnosis = feasible, diagnosis
    if not feasible:
        if snapshot.placement is not None:  # a pod group's placement: its nodes are all there are
            raise FitError(pod, snapshot.num_nodes_in_placement(), diagnosis,
                           [ni.name for ni in snapshot.nodes_in_placement()])
        arrays = snapshot_arrays(fw)  # its names are the node list's
        raise FitError(pod, len(snapshot), diagnosis,
                       list(arrays.names) if arrays is not None else [ni.name for ni in snapshot.node_infos])
    evaluated = len(feasible) + len(diagnosis.node_to_status)
    if len(feasible) == 1:  # when only one node fits, just use it
        decision.host = feasible[0].name
        return ScheduleResult(decision.host, evaluated, 1, decision=decision)
    scores = await prioritize_nodes(fw, evaluator, state, pod, feasible)
    decision.scores = scores
    decision.host = select_host(scores, fw.rng, fw.ctx.tie_break)
    return ScheduleResult(decision.host, evaluated, len(feasible), scores, decision)


async def find_nodes_that_fit_pod(fw: Framework, evaluator: NodeEvaluator, state: CycleState, pod: Pod,
                                  decision: CycleDecision) -> tuple[list[NodeInfo], Diagnosis]:
    """PreFilter, then the pod's nominated node alone, then every node (or those PreFilter
    allows): the nodes that pass the filters and the extenders, and why the others do not."""
    diagnosis = Diagnosis()
    all_nodes = fw.snapshot.node_infos
    pre_res, status, plugins = fw.run_pre_filter(state, pod, all_nodes)
    decision.pre_filter_ran = True
    decision.pre_filter_result, decision.pre_filter_plugins = pre_res, plugins
    if status is not None and not status.is_success():
        decision.pre_filter_status = status
        if not status.is_rejected():
            raise SchedulingError(status)
        diagnosis.node_to_status.absent = status
        diagnosis.pre_filter_msg = status.message()
        diagnosis.add_plugin_status(status)
        return [], diagnosis

    placement = fw.snapshot.placement  # a pod group's placement being tried: only its nodes
    if pod.nominated_node_name and (pre_res is None or pre_res.all_nodes()
                                    or pod.nominated_node_name in (pre_res.node_names or ())):
        feasible = await evaluate_nominated_node(fw, evaluator, state, pod)
        if feasible:
            return feasible, diagnosis

    nodes: Sequence[NodeInfo] = all_nodes if placement is None else fw.snapshot.nodes_in_placement()
    if pre_res is not None and not pre_res.all_nodes():
        nodes = evaluator.nodes_allowed(fw, nodes, pre_res.node_names or set())
        diagnosis.node_to_status.absent = Status.unresolvable(
            f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(plugins))}]")
    feasible = find_nodes_that_pass_filters(fw, evaluator, state, pod, diagnosis, nodes)
    feasible = await find_nodes_that_pass_extenders(fw, pod, feasible, diagnosis)
    return feasible, diagnosis


async def evaluate_nominated_node(fw: Framework, evaluator: NodeEvaluator, state: CycleState, pod: Pod
                                  ) -> list[NodeInfo]:
    """The pod's nominated node (from an earlier preemption) through the filters and the
    extenders on its own: when it fits, no other node is tried. A nominated node in the cluster
    but outside the placement being tried is not an error: nothing fits here then."""
    snapshot = fw.snapshot
    name = pod.nominated_node_name
    node_info = snapshot.get(name)
    if node_info is None or (snapshot.placement is not None and name not in snapshot.placement):
        return []
    diagnosis = Diagnosis()  # its statuses are not the cycle's
    feasible = find_nodes_that_pass_filters(fw, evaluator, state, pod, diagnosis, [node_info], rotate=False)
    return await find_nodes_that_pass_extenders(fw, pod, feasible, diagnosis)


def find_nodes_that_pass_filters(fw: Framework, evaluator: NodeEvaluator, state: CycleState, pod: Pod,
                                 diagnosis: Diagnosis, nodes: Sequence[NodeInfo], *, rotate: bool = True
                                 ) -> list[NodeInfo]:
    """The first `num_feasible_nodes_to_find` nodes that pass the filters, from the rotating
    start index on, in that order; the statuses of the nodes that failed before the last of them
    go into `diagnosis`. The start index moves on by the nodes the walk took."""
    num_all = len(nodes)
    if num_all == 0:
        return []
    to_find = num_feasible_nodes_to_find(fw.percentage_of_nodes_to_score, num_all)
    ctx = fw.ctx
    start = ctx.next_start_node_index % num_all if rotate else 0
    if not fw.has_filter_plugins():
        feasible = [nodes[(start + i) % num_all] for i in range(to_find)]
        processed = len(feasible)
    else:
        feasible, processed = evaluator.pass_filters(fw, state, pod, diagnosis, nodes, to_find, start)
    if rotate:
        ctx.next_start_node_index = (start + processed) % num_all
    return feasible


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """How many feasible nodes to look for before scoring (upstream's adaptive formula)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    pct = percentage if percentage is not None else DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE
    if pct == 0:
        pct = 50 - num_all_nodes // 125
        if pct < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND:
            pct = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
    if pct >= 100:
        return num_all_nodes
    num = num_all_nodes * pct // 100
    return max(num, MIN_FEASIBLE_NODES_TO_FIND)


async def find_nodes_that_pass_extenders(fw: Framework, pod: Pod, feasible: list[NodeInfo],
                                         diagnosis: Diagnosis) -> list[NodeInfo]:
    """The filter extenders, one after the other, over the nodes still feasible."""
    if not fw.extenders or not feasible:
        return feasible
    try:
        return await run_filter_extenders(fw.extenders, pod, feasible, diagnosis.node_to_status)
    except ExtenderError as err:  # a non-ignorable extender failed: the cycle fails with its message
        raise SchedulingError(Status.error(str(err))) from err


async def prioritize_nodes(fw: Framework, evaluator: NodeEvaluator, state: CycleState, pod: Pod,
                           nodes: list[NodeInfo]) -> ScoreTable:
    """PreScore, Score (normalised, weighted) and the prioritizing extenders: each node's total."""
    if not fw.has_score_plugins() and not fw.extenders:
        return ScoreTable(nodes, np.ones(len(nodes), dtype=np.int64), {})
    status = fw.run_pre_score(state, pod, nodes)
    if status is not None and not status.is_success():
        raise SchedulingError(status)
    try:
        table = evaluator.score(fw, state, pod, nodes)
    except PluginError as exc:
        raise SchedulingError(Status.error(str(exc), exc.plugin)) from exc
    if fw.extenders:
        extra = await run_prioritize_extenders(fw.extenders, pod, nodes)
        table.totals += np.fromiter((extra.get(ni.name, 0) for ni in nodes), dtype=np.int64, count=len(nodes))
    return table


def select_host(scores: list[NodePluginScores] | ScoreTable, rng: random.Random,
                tie_break: TieBreak | None = None) -> str:
    """The highest total; ties broken by `tie_break` (framework/tie_break.py), by default as
    upstream's reservoir sampling over the nodes with the highest score: one draw,
    `rng.randrange(count)`, names the winner among them in node order (no draw when one node
    leads). The cycle passes a ScoreTable and its scheduler's rule; the list form is the
    reference."""
    if not len(scores):
        raise SchedulingError(Status.error("empty priorityList"))
    if isinstance(scores, ScoreTable):
        return scores.name(select_index(scores.totals, rng, tie_break, scores.name, scores.nodes))
    best = max(s.total for s in scores)
    top = [i for i, s in enumerate(scores) if s.total == best]
    if len(top) == 1:
        return scores[top[0]].name
    rule = tie_break if tie_break is not None else RESERVOIR_RULE
    return scores[rule.pick(top, lambda i: scores[i].name, rng)].name
