"""Where extenders join the scheduling and binding cycles, as upstream's schedule_one.go and
preemption.go call them.

- `run_filter_extenders`: after the in-tree filters (findNodesThatPassExtenders);
- `run_prioritize_extenders`: beside the score plugins (prioritizeNodes);
- `call_preempt_extenders`: on the preemption candidates (Evaluator.callExtenders);
- `bind_with_extenders` / `find_binder`: before the bind plugins (extendersBinding).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..config.models import ExtenderConfig
from ..framework.status import Status
from ..framework.types import MAX_NODE_SCORE, NodeToStatus
from ..model import NodeInfo, Pod
from .client import ExtenderError, HTTPExtender, NodeInfoLister
from .wire import MAX_EXTENDER_PRIORITY, VictimsLike

log = logging.getLogger("kubeberth.extender")

# An extender's score (0..MaxExtenderPriority) is scaled to the plugins' range (0..MaxNodeScore).
EXTENDER_SCORE_SCALE = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY


async def run_filter_extenders(extenders: Sequence[HTTPExtender], pod: Pod, feasible: Sequence[NodeInfo],
                               statuses: NodeToStatus) -> list[NodeInfo]:
    """The nodes that pass every interested filter extender, each run on the previous survivors.

    Failed nodes are recorded in `statuses` (Unschedulable, or UnschedulableAndUnresolvable,
    which takes precedence and keeps preemption off the node) with the extender's reason.
    Raises ExtenderError when a non-ignorable extender fails; an ignorable one is skipped.
    """
    nodes = list(feasible)
    for ext in extenders:
        if not nodes:
            break
        if not ext.is_filter or not ext.is_interested(pod):
            continue
        try:
            passed, failed, unresolvable = await ext.filter(pod, nodes)
        except ExtenderError as err:
            if ext.is_ignorable:
                log.info("Skipping extender %s as it returned error and has ignorable flag set: %s",
                         ext.name, err)
                continue
            raise
        for name, reason in unresolvable.items():
            statuses.set(name, Status.unresolvable(reason))
        for name, reason in failed.items():
            if name not in unresolvable:
                statuses.set(name, Status.unschedulable(reason))
        nodes = passed
    return nodes


async def run_prioritize_extenders(extenders: Sequence[HTTPExtender], pod: Pod, nodes: Sequence[NodeInfo],
                                   breakdown: dict[str, dict[str, int]] | None = None) -> dict[str, int]:
    """{node: sum over interested prioritizers of score * weight * (MaxNodeScore / MaxExtenderPriority)}.

    The extenders are called concurrently. A failing extender gives no score (as upstream);
    hosts that are not among `nodes` are ignored. `breakdown`, when given, receives
    {node: {extender name: scaled score}}.
    """
    active = [e for e in extenders if e.is_prioritizer and e.is_interested(pod)]
    if not active or not nodes:
        return {}
    results = await asyncio.gather(*(e.prioritize(pod, nodes) for e in active), return_exceptions=True)
    wanted = {ni.name for ni in nodes}
    totals: dict[str, int] = {}
    for ext, res in zip(active, results):
        if isinstance(res, ExtenderError):
            log.debug("Failed to run extender's priority function %s, no score given by it: %s", ext.name, res)
            continue
        if isinstance(res, BaseException):
            raise res
        host_scores, weight = res
        factor = weight * EXTENDER_SCORE_SCALE
        for host, score in host_scores:
            if host not in wanted:
                continue
            final = score * factor
            totals[host] = totals.get(host, 0) + final
            if breakdown is not None:
                per = breakdown.setdefault(host, {})
                per[ext.name] = per.get(ext.name, 0) + final
    return totals


def find_binder(extenders: Sequence[HTTPExtender], pod: Pod) -> HTTPExtender | None:
    """The first extender that binds and is interested in the pod."""
    for ext in extenders:
        if ext.is_binder and ext.is_interested(pod):
            return ext
    return None


async def bind_with_extenders(extenders: Sequence[HTTPExtender], pod: Pod, node_name: str) -> bool:
    """Bind through the extenders first, as upstream: True when one bound the pod, False when the
    bind plugins should. Raises ExtenderError when a non-ignorable binder fails."""
    for ext in extenders:
        if not ext.is_binder or not ext.is_interested(pod):
            continue
        try:
            await ext.bind(pod, node_name)
        except ExtenderError as err:
            if ext.is_ignorable:
                log.info("Skipping extender %s in bind as it returned error and has ignorable flag set: %s",
                         ext.name, err)
                continue
            raise
        return True
    return False


async def call_preempt_extenders(extenders: Sequence[HTTPExtender], pod: Pod,
                                 candidates: Mapping[str, VictimsLike],
                                 node_infos: NodeInfoLister | None = None) -> dict[str, Any]:
    """The candidates {node: victims} kept by every interested preempting extender in turn.

    Each extender sees the previous one's answer; the victims it returns are pods of the
    snapshot `node_infos` (default: each extender's own snapshot source), as preemption Victims.
    Raises ExtenderError when a non-ignorable extender fails or returns a node without
    victims; an ignorable one is skipped, or loses that node. Nodes that came in without
    victims may stay without.
    """
    victims_map: dict[str, Any] = dict(candidates)
    if not extenders or not victims_map:
        return victims_map
    for ext in extenders:
        if not ext.supports_preemption or not ext.is_interested(pod):
            continue
        empty_in = {n for n, v in victims_map.items() if v is None or not v.pods}
        try:
            result = await ext.process_preemption(pod, victims_map, node_infos)
        except ExtenderError as err:
            if ext.is_ignorable:
                log.info("Skipped extender %s as it returned error and has ignorable flag set: %s",
                         ext.name, err)
                continue
            raise
        for node_name, victims in list(result.items()):
            if victims.pods or node_name in empty_in:
                continue
            if ext.is_ignorable:
                del result[node_name]
                log.info("Ignored node %s for which the extender %s didn't report victims", node_name, ext.name)
                continue
            raise ExtenderError(ext.name, ext.preempt_verb,
                                f"expected at least one victim pod on node {node_name!r}")
        victims_map = dict(result)
        if not victims_map:
            break
    return victims_map


def ignored_resources(extenders: Iterable[HTTPExtender | ExtenderConfig]) -> set[str]:
    """Extended resources that NodeResourcesFit must not check: managed by an extender with
    ignoredByScheduler set."""
    out: set[str] = set()
    for ext in extenders:
        if isinstance(ext, ExtenderConfig):
            out.update(r.name for r in ext.managedResources if r.ignoredByScheduler)
        else:
            out.update(ext.ignored_resources)
    return out
