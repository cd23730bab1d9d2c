"""The scheduling cycle's algorithm: find feasible nodes, score them, pick one.

Mirrors upstream's schedulePod / findNodesThatFitPod / prioritizeNodes /
selectHost. The loop around it (queue, assume, binding) is in scheduler.py.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from operator import itemgetter
from typing import Any

import numpy as np

from ..extender import ExtenderError, run_filter_extenders, run_prioritize_extenders
from ..framework import (
    CycleState,
    Diagnosis,
    FitError,
    Framework,
    NodePluginScores,
    Status,
)
from ..framework.status import Code, PluginError
from ..framework.vector import AllNodes, NodeView, ScoreTable, arrays_for, select_index
from ..model import NodeInfo, Pod
from .fit_statuses import shared_rejections
from .nominated_pass import nominated_filter
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
                 scores: list[NodePluginScores] | ScoreTable | None = None) -> None:
        self.suggested_host = suggested_host
        self.evaluated_nodes = evaluated_nodes
        self.feasible_nodes = feasible_nodes
        self._scores = scores

    @property
    def scores(self) -> list[NodePluginScores]:
        """Per feasible node, its weighted plugin scores (built on first use on the vectorised path)."""
        s = self._scores
        if s is None:
            return []
        if isinstance(s, ScoreTable):
            s = self._scores = s.to_list()
        return s

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
    arrays = arrays_for(fw, nodes)
    if arrays is not None:
        view, processed = _pass_filters_vectorised(fw, state, pod, diagnosis, nodes, arrays, to_find, start)
        if view is not None:
            if rotate:
                ctx.next_start_node_index = (start + processed) % num_all
            return view
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


def _nominated_rows(fw: Framework, pod: Pod, arrays: Any) -> list[int] | None:
    """Rows of the nodes where run_filter_with_nominated_pods would add nominated pods for `pod`
    (a pod of equal or higher priority, not `pod` itself); None when the nominator cannot list
    its nodes."""
    nominator = fw.ctx.nominator
    if nominator is None:
        return []
    names_of = getattr(nominator, "nominated_node_names", None)
    if names_of is None:
        return None
    rows = []
    pos = arrays.pos
    for name in names_of():
        i = pos.get(name)
        if i is None:
            continue
        for other in nominator.nominated_pods_for_node(name):
            if other.priority >= pod.priority and other.uid != pod.uid:
                rows.append(i)
                break
    return rows


def _pass_filters_vectorised(fw: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis,
                             nodes: Sequence[NodeInfo], arrays: Any, to_find: int, start: int
                             ) -> tuple[NodeView | None, int]:
    """find_nodes_that_pass_filters over the node arrays: the same feasible nodes (the first
    `to_find` from `start` on, in order), the same statuses for the nodes that failed before
    the last of them, and how many nodes that took (upstream's processedNodes).

    Plugins with `filter_all` decide for every node at once. For a node one of them rejects, the
    plugins are walked in order, skipping those whose mask passed it, until one rejects it with
    its own per-node `filter` (the status upstream reports). Nodes with nominated pods take the
    per-node path; the other nodes need only the plugins without `filter_all`."""
    n = len(nodes)
    skip = state.skip_filter_plugins
    view_all = AllNodes(nodes, arrays)
    passed = np.ones(n, dtype=bool)
    chain: list[tuple[Any, Any]] = []  # (plugin, its mask or None), in filter order
    per_node: list[Any] = []
    for p in fw.filter_plugins:
        if skip and p.name in skip:
            continue
        filter_all = getattr(p, "filter_all", None)
        mask = filter_all(state, pod, view_all) if filter_all is not None else None
        chain.append((p, mask))
        if mask is None:
            per_node.append(p)
        else:
            passed &= mask
    nominated = _nominated_rows(fw, pod, arrays)
    if nominated is None:
        return None, 0
    special = arrays.missing
    if nominated:
        special = special.copy()
        special[nominated] = True

    def rejected(ni: NodeInfo, i: int) -> Status:
        """The status of a node some filter_all rejected: the first plugin that fails it."""
        for p, mask in chain:
            if mask is not None and mask[i]:
                continue
            st: Status | None = p.filter(state, pod, ni)
            if st is not None and st.code != Code.SUCCESS:
                if st.code == Code.ERROR:
                    return Status.error(f"running {p.name!r} filter plugin: {st.message()}", p.name)
                return st.with_plugin(p.name)
            if mask is not None:
                break
        raise SchedulingError(Status.error(
            f"filter plugins disagree on node {ni.name!r}: vectorised filters rejected it"))

    rejected = shared_rejections(pod, arrays, chain, rejected)  # type: ignore[assignment]

    if not per_node and not special.any():
        order = np.arange(start, start + n)
        order[n - start:] -= n
        ok = passed[order]
        cum = np.cumsum(ok)
        processed = int(np.searchsorted(cum, to_find)) + 1 if int(cum[-1]) >= to_find else n
        head = order[:processed]
        ok_head = ok[:processed]
        feasible_idx = head[ok_head]
        for i in head[~ok_head].tolist():
            ni = nodes[i]
            failed = rejected(ni, i)
            if failed.code == Code.ERROR:
                raise SchedulingError(failed)
            _record(diagnosis, ni.name, failed)
        picked = feasible_idx.tolist()
        items = [nodes[picked[0]]] if len(picked) == 1 else itemgetter(*picked)(nodes) if picked else ()
        return NodeView(items, arrays, feasible_idx), processed
    passed_l = passed.tolist()
    special_l = special.tolist()
    run_all = nominated_filter(fw, state, pod, arrays, chain, rejected) or fw.run_filter_with_nominated_pods
    run_some = fw.run_filter_plugins
    feasible: list[NodeInfo] = []
    feasible_pos: list[int] = []
    processed = 0
    status: Status | None
    for i in itertools.chain(range(start, n), range(start)):
        ni = nodes[i]
        processed += 1
        if special_l[i]:
            status = run_all(state, pod, ni)
        elif not passed_l[i]:
            status = rejected(ni, i)
        elif per_node:
            status = run_some(per_node, state, pod, ni)
        else:
            status = None
        if status is None or status.code == Code.SUCCESS:
            feasible.append(ni)
            feasible_pos.append(i)
            if len(feasible) >= to_find:
                break
        elif status.code == Code.ERROR:
            raise SchedulingError(status)
        else:
            _record(diagnosis, ni.name, status)
    return NodeView(feasible, arrays, np.asarray(feasible_pos, dtype=np.intp)), processed


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
        nodes = nodes_allowed(fw, all_nodes, allowed)
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
                           nodes: list[NodeInfo]) -> list[NodePluginScores] | ScoreTable:
    if not fw.has_score_plugins() and not fw.extenders:
        return [NodePluginScores(ni.name, total=1) for ni in nodes]
    status = fw.run_pre_score(state, pod, nodes)
    if status is not None and not status.is_success():
        raise SchedulingError(status)
    if isinstance(nodes, NodeView) and fw.vectorise and not fw.extenders:
        try:
            return fw.run_score_vectorised(state, pod, nodes)
        except PluginError as exc:
            raise SchedulingError(Status.error(str(exc), exc.plugin)) from exc
    try:
        scores = fw.run_score(state, pod, nodes)
    except PluginError as exc:
        raise SchedulingError(Status.error(str(exc), exc.plugin)) from exc
    if fw.extenders:
        extra = await run_prioritize_extenders(fw.extenders, pod, nodes)
        for s in scores:
            s.total += extra.get(s.name, 0)
    return scores


def select_host(scores: list[NodePluginScores] | ScoreTable, rng: random.Random) -> str:
    """The highest total; ties broken uniformly at random (reservoir sampling)."""
    if not len(scores):
        raise SchedulingError(Status.error("empty priorityList"))
    if isinstance(scores, ScoreTable):
        return scores.name(select_index(scores.totals, rng))
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
