"""Preemption's call to the extenders (upstream's Evaluator.callExtenders): each extender that
supports preemption and is interested in the pod may drop candidate nodes or change their victims."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from ..framework.extender import Extender, ExtenderError, NodeInfoLister
from ..framework.victims import Victims
from ..model import Pod

log = logging.getLogger("kubeberth.extender")


async def call_preempt_extenders(extenders: Sequence[Extender], pod: Pod,
                                 candidates: Mapping[str, Victims],
                                 node_infos: NodeInfoLister | None = None) -> dict[str, Victims]:
    """The candidates {node: victims} kept by every interested preempting extender in turn.

    Each extender sees the previous one's answer; the victims it returns are pods of the
    snapshot `node_infos` (default: each extender's own snapshot source), as preemption Victims.
    Raises ExtenderError when a non-ignorable extender fails or returns a node without
    victims; an ignorable one is skipped, or loses that node. Nodes that came in without
    victims may stay without.
    """
    victims_map: dict[str, Victims] = dict(candidates)
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
