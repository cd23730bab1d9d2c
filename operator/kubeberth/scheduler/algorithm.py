"""The scheduling cycle's algorithm: find feasible nodes, score them, pick one.

Mirrors upstream's schedulePod / findNodesThatFitPod / prioritizeNodes /
selectHost. The cycle around it (assume, reserve, permit, binding) is in schedule_one.py.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable, Sequence
from operator import itemgetter

import numpy as np

from ..cache.node_arrays import NodeArrays
from ..extender import ExtenderError, run_filter_extenders, run_prioritize_extenders
from ..framework import (
    CycleState,
    Diagnosis,
    FilterPlugin,
    FitError,
    Framework,
    NodePluginScores,
    Status,
)
from ..framework.context import nominated_pods_added_for
from ..framework.status import Code, PluginError, filter_failure
from ..framework.vector import AllNodes, NodeView, arrays_for, snapshot_arrays
from ..framework.vector.scores import select_index
from ..framework.vector.views import ScoreTable
from ..model import NodeInfo, Pod
from .explain import explanation_of
from .fit_statuses import record_rejections, shared_rejections
from .nominated_pass import nominated_filter
from .nominated_rows import vector_nominated_rows
from .prefilter_nodes import nodes_allowed

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
    __slots__ = ("_scores", "evaluated_nodes", "feasible_nodes", "suggested_host")

    def __init__(self, suggested_host: str, evaluated_nodes: int, feasible_nodes: int,
                 scores: ScoreTable | None = None) -> None:
        self.suggested_host = suggested_host
        self.evaluated_nodes = evaluated_nodes
        self.feasible_nodes = feasible_nodes
        self._scores = scores

    @property
    def scores(self) -> list[NodePluginScores]:
        """Per feasible node, its weighted plugin scores (built on first use)."""
        return self._scores.to_list() if self._scores is not None else []

    def __repr__(self) -> str:
        return (f"ScheduleResult({self.suggested_host}, evaluated={self.evaluated_nodes}, "
                f"feasible={self.feasible_nodes})")


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


def _record(diagnosis: Diagnosis, name: str, status: Status) -> None:
    diagnosis.node_to_status.set(name, status)
    diagnosis.add_plugin_status(status)


def find_nodes_that_pass_filters(fw: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis,
                                 nodes: Sequence[NodeInfo], *, rotate: bool = True) -> list[NodeInfo]:
    """The first `to_find` nodes that pass the filters, from the rotating start on, in order (a
    NodeView when the cycle runs over the node arrays); the statuses of the nodes that failed
    before the last of them go into `diagnosis`."""
    num_all = len(nodes)
    if num_all == 0:
        return []
    to_find = num_feasible_nodes_to_find(fw.percentage_of_nodes_to_score, num_all)
    ctx = fw.ctx
    start = ctx.next_start_node_index % num_all if rotate else 0
    if not fw.has_filter_plugins():
        feasible = [nodes[(start + i) % num_all] for i in range(to_find)]
        if rotate:
            ctx.next_start_node_index = (start + len(feasible)) % num_all
        return feasible
    feasible, processed = _run_filters(fw, state, pod, diagnosis, nodes, to_find, start)
    if rotate:
        ctx.next_start_node_index = (start + processed) % num_all
    return feasible


def _nominated_nodes(fw: Framework, pod: Pod, among: Sequence[NodeInfo] | None = None) -> set[str]:
    """The nodes where run_filter_with_nominated_pods would add nominated pods for `pod` (a pod
    of equal or higher priority, not `pod` itself); only those `among` a few nodes if given."""
    nominator = fw.nominator
    names = nominator.nominated_node_names() if nominator is not None else None
    if not names:
        return set()
    if among is not None:
        return {ni.name for ni in among if nominated_pods_added_for(nominator, pod, ni.name)}
    return {name for name in names if nominated_pods_added_for(nominator, pod, name)}


def _run_filters(fw: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis,
                 nodes: Sequence[NodeInfo], to_find: int, start: int) -> tuple[list[NodeInfo], int]:
    """find_nodes_that_pass_filters' walk: the feasible nodes and how many nodes it took
    (upstream's processedNodes).

    Over the node arrays, plugins whose `filter_all` answers decide for every node at once; for
    a node one of them rejects, the plugins are walked in order, skipping those whose mask
    passed it, until one rejects it with its own per-node `filter` (the status upstream
    reports). Nodes with nominated pods, and nodes the arrays do not describe, take the full
    per-node path; the others need only the plugins without a mask."""
    n = len(nodes)
    skip = state.skip_filter_plugins
    arrays = arrays_for(fw, nodes)
    view_all = AllNodes(nodes, arrays) if arrays is not None else None
    passed = np.ones(n, dtype=bool) if arrays is not None else None
    chain: list[tuple[FilterPlugin, np.ndarray | None]] = []  # in filter order
    names: list[str] = []  # of chain's plugins
    per_node: list[FilterPlugin] = []
    pm = fw.plugin_metrics
    timed = state.record_plugin_metrics
    for p in fw.filter_plugins:
        if skip and p.name in skip:
            continue
        t0 = time.perf_counter() if timed else 0.0
        mask = p.filter_all(state, pod, view_all) if view_all is not None else None
        if mask is not None and timed:  # one observation for all the nodes
            pm.took(p.name, "Filter", None, time.perf_counter() - t0)
        chain.append((p, mask))
        names.append(p.name)
        if mask is None:
            per_node.append(p)
        else:
            passed &= mask
    vec_rows = vector_nominated_rows(fw, state, pod, arrays, chain) if not per_node else None
    nominated = (set() if vec_rows is not None
                 else _nominated_nodes(fw, pod, nodes if arrays is None and n <= 8 else None))

    def rejected(ni: NodeInfo, i: int) -> Status:
        """The status of a node some filter_all rejected: the first plugin that fails it."""
        for p, mask in chain:
            if mask is not None and mask[i]:
                continue
            st = p.filter(state, pod, ni)
            if st is not None and st.code != Code.SUCCESS:
                return filter_failure(p.name, st)
            if mask is not None:
                break
        raise SchedulingError(Status.error(
            f"filter plugins disagree on node {ni.name!r}: vectorised filters rejected it"))

    if arrays is not None:
        rejected = shared_rejections(state, pod, arrays, chain, rejected)  # type: ignore[assignment]
    if vec_rows is not None and passed is not None:
        passed, rejected = vec_rows.apply(passed, rejected)  # type: ignore[assignment]

    if arrays is not None and passed is not None:
        special = arrays.missing
        if nominated:
            special = special.copy()
            special[[arrays.pos[name] for name in nominated if name in arrays.pos]] = True
        if not per_node and not special.any():
            view, processed, rejected_by = _pass_masks(nodes, arrays, passed, to_find, start, diagnosis, rejected)
            extra = vec_rows.extra_calls(view.idx) if vec_rows is not None else 0
            pm.count_filter_calls(names, rejected_by, len(view) + extra)
            return view, processed
        passed_l: list[bool] | None = passed.tolist()
        special_l: list[bool] = special.tolist()
    else:
        passed_l = None
        special_l = [ni.name in nominated for ni in nodes] if nominated else [False] * n
    run_all = nominated_filter(fw, state, pod, arrays, chain, rejected) or fw.run_filter_with_nominated_pods
    run_some = fw.run_filter_plugins
    feasible: list[NodeInfo] = []
    feasible_pos: list[int] = []
    processed = 0
    # Filter calls of the nodes walked here (run_all counts its own): see PluginMetrics.
    stops: dict[str, int] = {}
    plain_passed = 0
    status: Status | None
    for i in itertools.chain(range(start, n), range(start)):
        ni = nodes[i]
        processed += 1
        counted = special_l[i]
        if counted:
            status = run_all(state, pod, ni)
        elif passed_l is not None and not passed_l[i]:
            status = rejected(ni, i)
        elif per_node:
            status = run_some(per_node, state, pod, ni)
        else:
            status = None
        if status is None or status.code == Code.SUCCESS:
            feasible.append(ni)
            feasible_pos.append(i)
            if not counted:
                plain_passed += 1
            if len(feasible) >= to_find:
                break
        elif status.code == Code.ERROR:
            raise SchedulingError(status)
        else:
            _record(diagnosis, ni.name, status)
            if not counted:
                stops[status.plugin] = stops.get(status.plugin, 0) + 1
    pm.count_filter_calls(names, stops, plain_passed)
    if arrays is None:
        return feasible, processed
    return NodeView(feasible, arrays, np.asarray(feasible_pos, dtype=np.intp)), processed


def _pass_masks(nodes: Sequence[NodeInfo], arrays: NodeArrays, passed: np.ndarray, to_find: int, start: int,
                diagnosis: Diagnosis, rejected: Callable[[NodeInfo, int], Status]
                ) -> tuple[NodeView, int, dict[str, int]]:
    """_run_filters when the masks decide every node: the walk as array operations. Also returns
    how many nodes each plugin rejected."""
    n = len(nodes)
    order = np.arange(start, start + n)
    order[n - start:] -= n
    ok = passed[order]
    cum = np.cumsum(ok)
    processed = int(np.searchsorted(cum, to_find)) + 1 if int(cum[-1]) >= to_find else n
    head = order[:processed]
    ok_head = ok[:processed]
    feasible_idx = head[ok_head]
    stops, error = record_rejections(nodes, arrays.names, head[~ok_head], rejected, diagnosis)
    if error is not None:
        raise SchedulingError(error)
    picked = feasible_idx.tolist()
    items = [nodes[picked[0]]] if len(picked) == 1 else itemgetter(*picked)(nodes) if picked else ()
    return NodeView(items, arrays, feasible_idx), processed, stops


async def find_nodes_that_fit(fw: Framework, state: CycleState, pod: Pod
                              ) -> tuple[list[NodeInfo], Diagnosis]:
    diagnosis = Diagnosis()
    all_nodes = fw.snapshot.node_infos
    pre_res, status, plugins = fw.run_pre_filter(state, pod, all_nodes)
    if (explain := explanation_of(state)) is not None:
        explain.pre_filtered(fw, state, pre_res, status, plugins)
    if status is not None and not status.is_success():
        if not status.is_rejected():
            raise SchedulingError(status)
        diagnosis.node_to_status.absent = status
        diagnosis.pre_filter_msg = status.message()
        diagnosis.add_plugin_status(status)
        return [], diagnosis

    placement = fw.snapshot.placement  # a pod group's placement being tried: only its nodes
    if pod.nominated_node_name:
        ni = fw.snapshot.get(pod.nominated_node_name)
        if placement is not None and pod.nominated_node_name not in placement:
            ni = None  # in the cluster, not in the placement: not an error (upstream's evaluateNominatedNode)
        if ni is not None and (pre_res is None or pre_res.all_nodes()
                               or pod.nominated_node_name in (pre_res.node_names or ())):
            nominated_diag = Diagnosis()
            feasible = find_nodes_that_pass_filters(fw, state, pod, nominated_diag, [ni], rotate=False)
            feasible = await _pass_extenders(fw, pod, feasible, nominated_diag)
            if feasible:
                return feasible, diagnosis

    nodes: Sequence[NodeInfo] = all_nodes if placement is None else fw.snapshot.nodes_in_placement()
    if pre_res is not None and not pre_res.all_nodes():
        allowed = pre_res.node_names or set()
        nodes = nodes_allowed(fw, nodes, allowed)
        diagnosis.node_to_status.absent = Status.unresolvable(
            f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(plugins))}]")
    feasible = find_nodes_that_pass_filters(fw, state, pod, diagnosis, nodes)
    feasible = await _pass_extenders(fw, pod, feasible, diagnosis)
    return feasible, diagnosis


async def _pass_extenders(fw: Framework, pod: Pod, feasible: list[NodeInfo],
                          diagnosis: Diagnosis) -> list[NodeInfo]:
    if not fw.extenders or not feasible:
        return feasible
    try:
        return await run_filter_extenders(fw.extenders, pod, feasible, diagnosis.node_to_status)
    except ExtenderError as err:  # a non-ignorable extender failed: the cycle fails with its message
        raise SchedulingError(Status.error(str(err))) from err


async def prioritize_nodes(fw: Framework, state: CycleState, pod: Pod,
                           nodes: list[NodeInfo]) -> ScoreTable:
    if not fw.has_score_plugins() and not fw.extenders:
        return ScoreTable(nodes, np.ones(len(nodes), dtype=np.int64), {})
    status = fw.run_pre_score(state, pod, nodes)
    if status is not None and not status.is_success():
        raise SchedulingError(status)
    try:
        table = fw.run_score(state, pod, nodes)
    except PluginError as exc:
        raise SchedulingError(Status.error(str(exc), exc.plugin)) from exc
    if fw.extenders:
        extra = await run_prioritize_extenders(fw.extenders, pod, nodes)
        table.totals += np.fromiter((extra.get(ni.name, 0) for ni in nodes), dtype=np.int64, count=len(nodes))
    return table


def select_host(scores: list[NodePluginScores] | ScoreTable, rng: random.Random) -> str:
    """The highest total; ties broken uniformly at random, as upstream's reservoir sampling over
    the nodes with the highest score: one draw, `rng.randrange(count)`, names the winner among
    them in node order (no draw when one node leads). The cycle passes a ScoreTable; the list
    form is the reference."""
    if not len(scores):
        raise SchedulingError(Status.error("empty priorityList"))
    if isinstance(scores, ScoreTable):
        return scores.name(select_index(scores.totals, rng))
    best = max(s.total for s in scores)
    top = [s for s in scores if s.total == best]
    return top[0].name if len(top) == 1 else top[rng.randrange(len(top))].name


async def schedule_pod(fw: Framework, state: CycleState, pod: Pod) -> ScheduleResult:
    """One scheduling attempt on fw's current snapshot. Raises FitError when nothing fits."""
    snapshot = fw.snapshot
    if snapshot.num_nodes_in_placement() == 0:
        raise NoNodesAvailable()
    feasible, diagnosis = await find_nodes_that_fit(fw, state, pod)
    explain = explanation_of(state)
    if explain is not None:
        explain.filtered(fw, state, pod, feasible, diagnosis)
    if not feasible:
        if snapshot.placement is not None:  # a pod group's placement: its nodes are all there are
            raise FitError(pod, snapshot.num_nodes_in_placement(), diagnosis,
                           [ni.name for ni in snapshot.nodes_in_placement()])
        arrays = snapshot_arrays(fw)  # its names are the node list's
        raise FitError(pod, len(snapshot), diagnosis,
                       list(arrays.names) if arrays is not None else [ni.name for ni in snapshot.node_infos])
    evaluated = len(feasible) + len(diagnosis.node_to_status)
    if len(feasible) == 1:
        return ScheduleResult(feasible[0].name, evaluated, 1)
    scores = await prioritize_nodes(fw, state, pod, feasible)
    host = select_host(scores, fw.rng)
    if explain is not None:
        explain.scored_nodes(fw, state, pod, scores, host)
    return ScheduleResult(host, evaluated, len(feasible), scores)
