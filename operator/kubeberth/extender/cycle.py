"""Where extenders join the scheduling and binding cycles, as upstream's schedule_one.go calls
them (preemption's call is kubeberth.preemption.extenders).

- `run_filter_extenders`: after the in-tree filters (findNodesThatPassExtenders);
- `run_prioritize_extenders`: beside the score plugins (prioritizeNodes);
- `bind_with_extenders` / `find_binder`: before the bind plugins (extendersBinding).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence

from ..config.models import ExtenderConfig
from ..framework.extender import Extender, ExtenderError
from ..framework.status import Status
from ..framework.types import MAX_NODE_SCORE, NodeToStatus
from ..model import NodeInfo, Pod
from .client import HTTPExtender
from .wire import MAX_EXTENDER_PRIORITY

log = logging.getLogger("kubeberth.extender")

# An extender's score (0..MaxExtenderPriority) is scaled to the plugins' range (0..MaxNodeScore).
EXTENDER_SCORE_SCALE = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY


async def run_filter_extenders(extenders: Sequence[Extender], pod: Pod, feasible: Sequence[NodeInfo],
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


async def run_prioritize_extenders(extenders: Sequence[Extender], pod: Pod, nodes: Sequence[NodeInfo],
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


def find_binder(extenders: Sequence[Extender], pod: Pod) -> Extender | None:
    """The first extender that binds and is interested in the pod."""
    for ext in extenders:
        if ext.is_binder and ext.is_interested(pod):
            return ext
    return None


async def bind_with_extenders(extenders: Sequence[Extender], pod: Pod, node_name: str) -> bool:
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
