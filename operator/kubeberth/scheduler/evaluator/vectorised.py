"""The vectorised NodeEvaluator: the nodes' filters and scores over the snapshot's node arrays
(see __init__.py; the per-node evaluator is the reference it must equal).

The filter walk: plugins whose `filter_all` answers decide for every node at once; for a node
one of them rejects, the plugins are walked in order, skipping those whose mask passed it,
until one rejects it with its own per-node `filter` (the status upstream reports), or, in bulk,
with the status fit_statuses.py shares between rows. Nodes with nominated pods take the
nominated pods' pass over the arrays (nominated_rows.py), row by row (nominated_pass.py), or
the framework's two-pass filter; nodes the arrays do not describe take the full per-node path;
the others need only the plugins without a mask. When the masks decide every node, the walk is
array operations (`_pass_masks`).

A daemonset pod's required node affinity on metadata.name narrows the search to one node:
`nodes_allowed` looks the allowed names' rows up in the arrays instead of reading every node.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from operator import itemgetter

import numpy as np

from ...cache.node_arrays import NodeArrays
from ...framework import CycleState, Diagnosis, FilterPlugin, Framework, Status
from ...framework.status import Code, filter_failure
from ...framework.vector import AllNodes, NodeView, arrays_for
from ...framework.vector.views import ScoreTable
from ...model import NodeInfo, Pod
from ..errors import SchedulingError
from .fit_statuses import record_rejections, shared_rejections
from .nominated_pass import nominated_filter
from .nominated_rows import vector_nominated_rows
from .per_node import PerNodeEvaluator, nodes_with_nominated_pods, record_status

# Look rows up when the allowed names are fewer than this share of the nodes.
_LOOKUP_RATIO = 8


class VectorisedEvaluator:
    """Whole columns at a time where the plugins answer; the per-node walk elsewhere."""

    name = "vectorised"

    def __init__(self) -> None:
        self._per_node = PerNodeEvaluator()

    def nodes_allowed(self, fw: Framework, nodes: Sequence[NodeInfo], allowed: AbstractSet[str]
                      ) -> list[NodeInfo]:
        if allowed and "" not in allowed and len(allowed) * _LOOKUP_RATIO < len(nodes):
            arrays = arrays_for(fw, nodes)
            if arrays is not None:
                pos = arrays.pos
                rows = sorted(r for name in allowed if (r := pos.get(name)) is not None)
                return [nodes[r] for r in rows]
        return self._per_node.nodes_allowed(fw, nodes, allowed)

    def score(self, fw: Framework, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> ScoreTable:
        """The score runner: plugins' `score_all` / `normalize_all` over a NodeView (what
        `pass_filters` returns over the arrays), their per-node methods otherwise."""
        return fw.run_score(state, pod, nodes)

    def pass_filters(self, fw: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis,
                     nodes: Sequence[NodeInfo], to_find: int, start: int) -> tuple[list[NodeInfo], int]:
        """The feasible nodes (a NodeView over the arrays) and how many nodes the walk took."""
        arrays = arrays_for(fw, nodes)
        if arrays is None:
            return self._per_node.pass_filters(fw, state, pod, diagnosis, nodes, to_find, start)
        n = len(nodes)
        skip = state.skip_filter_plugins
        view_all = AllNodes(nodes, arrays)
        passed = np.ones(n, dtype=bool)
        chain: list[tuple[FilterPlugin, np.ndarray | None]] = []  # in filter order
        names: list[str] = []  # of chain's plugins
        per_node: list[FilterPlugin] = []
        pm = fw.plugin_metrics
        timed = state.record_plugin_metrics
        for p in fw.filter_plugins:
            if skip and p.name in skip:
                continue
            t0 = time.perf_counter() if timed else 0.0
            mask = p.filter_all(state, pod, view_all)
            if mask is not None and timed:  # one observation for all the nodes
                pm.took(p.name, "Filter", None, time.perf_counter() - t0)
            chain.append((p, mask))
            names.append(p.name)
            if mask is None:
                per_node.append(p)
            else:
                passed &= mask
        vec_rows = vector_nominated_rows(fw, state, pod, arrays, chain) if not per_node else None
        nominated = set() if vec_rows is not None else nodes_with_nominated_pods(fw, pod)

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

        rejected = shared_rejections(state, pod, arrays, chain, rejected)  # type: ignore[assignment]
        if vec_rows is not None:
            passed, rejected = vec_rows.apply(passed, rejected)  # type: ignore[assignment]

        special = arrays.missing
        if nominated:
            special = special.copy()
            special[[arrays.pos[name] for name in nominated if name in arrays.pos]] = True
        if not per_node and not special.any():
            view, processed, rejected_by = _pass_masks(nodes, arrays, passed, to_find, start, diagnosis, rejected)
            extra = vec_rows.extra_calls(view.idx) if vec_rows is not None else 0
            pm.count_filter_calls(names, rejected_by, len(view) + extra)
            return view, processed
        passed_l: list[bool] = passed.tolist()
        special_l: list[bool] = special.tolist()
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
            elif not passed_l[i]:
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
                record_status(diagnosis, ni.name, status)
                if not counted:
                    stops[status.plugin] = stops.get(status.plugin, 0) + 1
        pm.count_filter_calls(names, stops, plain_passed)
        return NodeView(feasible, arrays, np.asarray(feasible_pos, dtype=np.intp)), processed


def _pass_masks(nodes: Sequence[NodeInfo], arrays: NodeArrays, passed: np.ndarray, to_find: int, start: int,
                diagnosis: Diagnosis, rejected: Callable[[NodeInfo, int], Status]
                ) -> tuple[NodeView, int, dict[str, int]]:
    """The walk when the masks decide every node, as array operations. Also returns how many
    nodes each plugin rejected."""
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
