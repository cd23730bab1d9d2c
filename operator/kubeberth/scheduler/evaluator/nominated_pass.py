"""Upstream's two-pass filter (Framework.run_filter_with_nominated_pods) for the vectorised
filter path, without cloning a NodeInfo and a CycleState per node.

A node with nominated pods of equal or higher priority is filtered first as if they were on it,
then (if that passes) as it is. When every filter active in the cycle has a mask (`filter_all`)
and is either node-only (its verdict ignores the node's pods, so both passes agree with the
mask) or NodeResourcesFit / NodePorts, and no active PreFilter plugin has AddPod extensions
(nothing in the cycle state changes with the added pods), the first pass needs only
NodeResourcesFit's and NodePorts' verdicts with the nominated pods' requests and ports added.
Those come from the plugins' own per-node `filter` on a copy of the node holding the nominated
pods, memoised by the node's generation, the nominated pods and the request, so the statuses
are the plugins' own, word for word. The second pass is the masks' verdict, as for any node.

Framework.run_filter_with_nominated_pods stays the reference (the per-node path).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...framework.context import nominated_pods_added_for
from ...framework.cycle_state import CycleState
from ...framework.runtime import Framework
from ...framework.status import Code, Status, filter_failure
from ...model import NodeInfo, Pod
from ...preemption.arithmetic_dry_run import NODE_ONLY_FILTERS, NODE_RESOURCES_FIT
from .fit_statuses import bits_of, status_of

NODE_PORTS = "NodePorts"
_COUNTING = frozenset({NODE_RESOURCES_FIT, NODE_PORTS})
_MEMO_LIMIT = 50_000
_IDENTITY_KEY = "nominated_pass.identity"

FilterFn = Callable[[CycleState, Pod, NodeInfo], Status | None]
Rejected = Callable[[NodeInfo, int], Status]

# (plugin name, node generation, request, nominated pods) -> (code, reasons) or None for a pass
_memo: dict[tuple[Any, ...], tuple[Code, tuple[str, ...]] | None] = {}


def nominated_filter(fw: Framework, state: CycleState, pod: Pod, arrays: Any,
                     chain: Sequence[tuple[Any, Any]], rejected: Rejected) -> FilterFn | None:
    """A drop-in for fw.run_filter_with_nominated_pods over the rows of `arrays`, or None when
    this cycle's filters need the per-node two-pass filter. `chain` is the vectorised path's
    (plugin, mask) list in filter order; `rejected(node_info, row)` its status for a row the
    masks reject."""
    nominator = fw.ctx.nominator
    if nominator is None or arrays is None or not chain:
        return None
    for p, mask in chain:
        if mask is None or (p.name not in NODE_ONLY_FILTERS and p.name not in _COUNTING):
            return None
    skip = state.skip_filter_plugins
    for p in fw.pre_filter_plugins:
        if p.name not in skip and p.pre_filter_extensions() is not None:
            return None
    request = pod.requests
    if any(q for q in request.scalar.values()):
        return None
    req_key = (request.milli_cpu, request.memory, request.ephemeral_storage, tuple(pod.host_ports))
    pos = arrays.pos
    missing = arrays.missing
    full: FilterFn = fw.run_filter_with_nominated_pods
    names = [plugin.name for plugin, _ in chain]
    count = fw.plugin_metrics.count_filter_calls

    def counted(status: Status | None) -> Status | None:
        """Count the pass's calls as the per-node filter would have made them."""
        if status is None or status.code == Code.SUCCESS:
            count(names, {}, 1)
        elif status.code != Code.ERROR:
            count(names, {status.plugin: 1}, 0)
        return status

    def run(st: CycleState, p: Pod, node_info: NodeInfo) -> Status | None:
        row = pos.get(node_info.name)
        if row is None or missing[row] or st is not state or p is not pod:
            return full(st, p, node_info)
        nominated = nominated_pods_added_for(nominator, pod, node_info.name)
        if not nominated:
            return counted(_second_pass(chain, row, node_info, rejected))
        overlay: list[NodeInfo] = []  # built on first need
        for plugin, mask in chain:
            if plugin.name == NODE_RESOURCES_FIT:
                status = _fit_with_nominated(pod, node_info, nominated)
            elif plugin.name == NODE_PORTS:
                status = _with_nominated(plugin, state, pod, node_info, nominated, overlay, req_key)
            elif mask[row]:
                continue
            else:
                status = plugin.filter(state, pod, node_info)
            if status is not None and status.code != Code.SUCCESS:
                failure = filter_failure(plugin.name, status)
                return failure if failure.code == Code.ERROR else counted(failure)
        counted(None)
        return counted(_second_pass(chain, row, node_info, rejected))

    return run


def _second_pass(chain: Sequence[tuple[Any, Any]], row: int, node_info: NodeInfo,
                 rejected: Rejected) -> Status | None:
    for _, mask in chain:
        if not mask[row]:
            return rejected(node_info, row)
    return None


def _fit_with_nominated(pod: Pod, node_info: NodeInfo, nominated: list[Pod]) -> Status | None:
    """NodeResourcesFit's status on the node with the nominated pods added (fit_statuses)."""
    used = node_info.requested
    cpu, mem, eph = used.milli_cpu, used.memory, used.ephemeral_storage
    for nom in nominated:
        r = nom.requests
        cpu += r.milli_cpu
        mem += r.memory
        eph += r.ephemeral_storage
    return status_of(bits_of(pod.requests, node_info.allocatable, cpu, mem, eph,
                             len(node_info.pods) + len(nominated)))


def _identity(pod: Pod) -> tuple[Any, ...]:
    """What of a nominated pod the counting filters read (a parsed Pod does not change)."""
    ident = pod.cache.get(_IDENTITY_KEY)
    if ident is None:
        r = pod.requests
        ident = pod.cache[_IDENTITY_KEY] = (pod.uid, r.milli_cpu, r.memory, r.ephemeral_storage,
                                            tuple(pod.host_ports))
    assert isinstance(ident, tuple)
    return ident


def _with_nominated(plugin: Any, state: CycleState, pod: Pod, node_info: NodeInfo,
                    nominated: list[Pod], overlay: list[NodeInfo], req_key: tuple[Any, ...]) -> Status | None:
    """The plugin's own status on the node with the nominated pods added (memoised)."""
    key = (plugin.name, node_info.generation, req_key, tuple(_identity(n) for n in nominated))
    hit = _memo.get(key, False)
    if hit is None:
        return None
    if hit is not False:
        assert isinstance(hit, tuple)
        return Status(hit[0], *hit[1])
    if not overlay:
        added = node_info.clone()
        for nom in nominated:
            added.add_pod(nom)
        overlay.append(added)
    status: Status | None = plugin.filter(state, pod, overlay[0])
    if len(_memo) >= _MEMO_LIMIT:
        _memo.clear()
    if status is None or status.code == Code.SUCCESS:
        _memo[key] = None
        return status
    if status.code != Code.ERROR and not status.plugin:
        _memo[key] = (status.code, tuple(status.reasons))
    return status
