"""The scheduling cycle's algorithm: find feasible nodes, score them, pick one.

Mirrors upstream's schedulePod / findNodesThatFitPod / prioritizeNodes /
selectHost. The loop around it (queue, assume, binding) is in scheduler.py.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from .framework import (
    CycleState,
    Diagnosis,
    FitError,
    Framework,
    NodePluginScores,
    Status,
)
from .framework.status import Code, PluginError
from .model import NodeInfo, Pod

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE = 0  # adaptive


class SchedulingError(Exception):
    """The cycle failed for a reason other than no node fitting (a plugin Error)."""

    def __init__(self, status: Status) -> None:
        self.status = status
        super().__init__(status.message())


class NoNodesAvailable(SchedulingError):
    def __init__(self) -> None:
        super().__init__(Status.error("no nodes available to schedule pods"))


class ScheduleResult:
    __slots__ = ("evaluated_nodes", "feasible_nodes", "scores", "suggested_host")

    def __init__(self, suggested_host: str, evaluated_nodes: int, feasible_nodes: int,
                 scores: list[NodePluginScores] | None = None) -> None:
        self.suggested_host = suggested_host
        self.evaluated_nodes = evaluated_nodes
        self.feasible_nodes = feasible_nodes
        self.scores = scores or []

    def __repr__(self) -> str:
        return (f"ScheduleResult({self.suggested_host}, evaluated={self.evaluated_nodes}, "
                f"feasible={self.feasible_nodes})")


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """How many feasible nodes to look for before scoring (upstream's adaptive formula)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    pct = percentage or DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE
    if pct == 0:
        pct = 50 - num_all_nodes // 125
        if pct < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND:
            pct = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
    if pct >= 100:
        return num_all_nodes
    num = num_all_nodes * pct // 100
    return max(num, MIN_FEASIBLE_NODES_TO_FIND)


def _record(diagnosis: Diagnosis, name: str, status: Status) -> None:
    diagnosis.node_to_status.set(name, status)
    if status.code == Code.PENDING:
        diagnosis.pending_plugins.add(status.plugin)
    elif status.plugin:
        diagnosis.unschedulable_plugins.add(status.plugin)


def find_nodes_that_pass_filters(fw: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis,
                                 nodes: Sequence[NodeInfo], *, rotate: bool = True) -> list[NodeInfo]:
    num_all = len(nodes)
    if num_all == 0:
        return []
    to_find = num_feasible_nodes_to_find(fw.percentage_of_nodes_to_score, num_all)
    ctx = fw.ctx
    start = ctx.next_start_node_index % num_all if rotate else 0
    feasible: list[NodeInfo] = []
    if not fw.has_filter_plugins():
        feasible = [nodes[(start + i) % num_all] for i in range(to_find)]
        if rotate:
            ctx.next_start_node_index = (start + len(feasible)) % num_all
        return feasible
    processed = 0
    run = fw.run_filter_with_nominated_pods
    for i in range(num_all):
        ni = nodes[(start + i) % num_all]
        processed += 1
        status = run(state, pod, ni)
        if status is None or status.code == Code.SUCCESS:
            feasible.append(ni)
            if len(feasible) >= to_find:
                break
        elif status.code == Code.ERROR:
            raise SchedulingError(status)
        else:
            _record(diagnosis, ni.name, status)
    if rotate:
        ctx.next_start_node_index = (start + processed) % num_all
    return feasible


async def find_nodes_that_fit(fw: Framework, state: CycleState, pod: Pod
                              ) -> tuple[list[NodeInfo], Diagnosis]:
    diagnosis = Diagnosis()
    all_nodes = fw.snapshot.node_infos
    pre_res, status, plugins = fw.run_pre_filter(state, pod, all_nodes)
    if status is not None and not status.is_success():
        if not status.is_rejected():
            raise SchedulingError(status)
        diagnosis.node_to_status.absent = status
        diagnosis.pre_filter_msg = status.message()
        if status.code == Code.PENDING:
            diagnosis.pending_plugins.add(status.plugin)
        elif status.plugin:
            diagnosis.unschedulable_plugins.add(status.plugin)
        return [], diagnosis

    if pod.nominated_node_name:
        ni = fw.snapshot.get(pod.nominated_node_name)
        if ni is not None and (pre_res is None or pre_res.all_nodes()
                               or pod.nominated_node_name in (pre_res.node_names or ())):
            nominated_diag = Diagnosis()
            feasible = find_nodes_that_pass_filters(fw, state, pod, nominated_diag, [ni], rotate=False)
            feasible = await _pass_extenders(fw, pod, feasible, nominated_diag)
            if feasible:
                return feasible, diagnosis

    nodes: Sequence[NodeInfo] = all_nodes
    if pre_res is not None and not pre_res.all_nodes():
        allowed = pre_res.node_names or set()
        nodes = [ni for ni in all_nodes if ni.name in allowed]
        diagnosis.node_to_status.absent = Status.unresolvable(
            f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(plugins))}]")
    feasible = find_nodes_that_pass_filters(fw, state, pod, diagnosis, nodes)
    feasible = await _pass_extenders(fw, pod, feasible, diagnosis)
    return feasible, diagnosis


async def _pass_extenders(fw: Framework, pod: Pod, feasible: list[NodeInfo],
                          diagnosis: Diagnosis) -> list[NodeInfo]:
    if not fw.extenders or not feasible:
        return feasible
    from .extender import ExtenderError, run_filter_extenders

    try:
        return await run_filter_extenders(fw.extenders, pod, feasible, diagnosis.node_to_status)
    except ExtenderError as err:  # a non-ignorable extender failed: the cycle fails with its message
        raise SchedulingError(Status.error(str(err))) from err


async def prioritize_nodes(fw: Framework, state: CycleState, pod: Pod,
                           nodes: list[NodeInfo]) -> list[NodePluginScores]:
    if not fw.has_score_plugins() and not fw.extenders:
        return [NodePluginScores(ni.name, total=1) for ni in nodes]
    status = fw.run_pre_score(state, pod, nodes)
    if status is not None and not status.is_success():
        raise SchedulingError(status)
    try:
        scores = fw.run_score(state, pod, nodes)
    except PluginError as exc:
        raise SchedulingError(Status.error(str(exc), exc.plugin)) from exc
    if fw.extenders:
        from .extender import run_prioritize_extenders

        extra = await run_prioritize_extenders(fw.extenders, pod, nodes)
        for s in scores:
            s.total += extra.get(s.name, 0)
    return scores


def select_host(scores: list[NodePluginScores], rng: random.Random) -> str:
    """The highest total; ties broken uniformly at random (reservoir sampling)."""
    if not scores:
        raise SchedulingError(Status.error("empty priorityList"))
    best = scores[0]
    ties = 1
    for s in scores[1:]:
        if s.total > best.total:
            best, ties = s, 1
        elif s.total == best.total:
            ties += 1
            if rng.randrange(ties) == 0:
                best = s
    return best.name


async def schedule_pod(fw: Framework, state: CycleState, pod: Pod) -> ScheduleResult:
    """One scheduling attempt on fw's current snapshot. Raises FitError when nothing fits."""
    snapshot = fw.snapshot
    if len(snapshot) == 0:
        raise NoNodesAvailable()
    feasible, diagnosis = await find_nodes_that_fit(fw, state, pod)
    if not feasible:
        raise FitError(pod, len(snapshot), diagnosis, [ni.name for ni in snapshot.node_infos])
    evaluated = len(feasible) + len(diagnosis.node_to_status)
    if len(feasible) == 1:
        return ScheduleResult(feasible[0].name, evaluated, 1)
    scores = await prioritize_nodes(fw, state, pod, feasible)
    return ScheduleResult(select_host(scores, fw.rng), evaluated, len(feasible), scores)
