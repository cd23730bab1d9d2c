"""TopologyPlacementGenerator (upstream's framework/plugins/topologyaware, in the default profile
with TopologyAwareWorkloadScheduling): the PlacementGenerate plugin that offers a pod group one
placement per value of its topology key (`spec.schedulingConstraints.topology[0].key`), the nodes
with that label value; nodes without the label are in none. Once pods of the group are scheduled
(bound or assumed) only their domain is offered. A group without a topology constraint gets the
parent placement (every node) unchanged.

Placements come in the order their domains first appear in the node list (upstream's come in Go's
map order, which is random: it only matters for which placement's status a group that fits none
reports, see README "Topology-aware placement"). `offered_first(domain, rerun_domain)` puts one
domain's placement first in the group's cycle (and one in group preemption's re-runs of the
group's algorithm), as upstream's map may, each map walk its own: the fuzzer's judge replays a group
that fits no placement so, to accept whichever first placements upstream reported.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ..framework import (
    POD_GROUP_STATES,
    CycleState,
    Handle,
    NodeInfo,
    Placement,
    PlacementGeneratePlugin,
    Pod,
    PodGroup,
    PodGroupStates,
    Status,
)
from ._mutation_session import in_preemption_rerun

NAME = "TopologyPlacementGenerator"

# the domains whose placement is offered first in a group's cycle and in group preemption's
# re-runs (None: node-list order), and whether a re-run is under way
_FIRST: ContextVar[tuple[str | None, str | None]] = ContextVar("kubeberth_placement_offered_first",
                                                               default=(None, None))


@contextmanager
def offered_first(domain: str | None, rerun_domain: str | None = None) -> Iterator[None]:
    """Within the block (and the tasks and threads started in it), offer `domain`'s placement
    first when a group's placements include it, and `rerun_domain`'s in group preemption's re-runs;
    the others keep their order."""
    token = _FIRST.set((domain, rerun_domain))
    try:
        yield
    finally:
        _FIRST.reset(token)


class TopologyPlacementGenerator(PlacementGeneratePlugin):
    name = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self.handle = handle

    def generate_placements(self, state: CycleState, pod_group: PodGroup, parent: Placement
                            ) -> tuple[list[Placement], Status | None]:
        key = pod_group.topology_key
        if not key:
            return [parent], None
        scheduled, problem = self._scheduled_pods(pod_group)
        if problem:
            return [], Status.error(problem)
        required: str | None = None
        if scheduled:
            domain, problem = self._domain_of(key, scheduled)
            if problem:
                return [], Status.error(f"cannot determine domain for already scheduled pods: {problem}")
            required = domain
        by_domain: dict[str, list[NodeInfo]] = {}
        for ni in parent.nodes:
            node = ni.node
            if node is None:
                continue
            value = node.labels.get(key)
            if value is None or (required is not None and value != required):
                continue
            by_domain.setdefault(value, []).append(ni)
        placements = [Placement(domain, nodes) for domain, nodes in by_domain.items()]
        first = _FIRST.get()[1 if in_preemption_rerun() else 0]
        if first is not None:
            placements.sort(key=lambda p: p.name != first)  # stable: the rest keep their order
        return placements, None

    def _scheduled_pods(self, pod_group: PodGroup) -> tuple[list[Pod], str]:
        states = self.handle.shared_indexes.get(POD_GROUP_STATES) if self.handle is not None else None
        group = states.get(pod_group.key) if isinstance(states, PodGroupStates) else None
        if group is None:
            return [], f"pod group state not found for pod group {pod_group.key}"
        return group.scheduled_pods(), ""

    def _domain_of(self, key: str, pods: list[Pod]) -> tuple[str, str]:
        """The one domain of the scheduled pods' nodes, or why there is none (upstream's words)."""
        assert self.handle is not None
        snapshot = self.handle.snapshot
        domain = ""
        for pod in pods:
            ni = snapshot.get(pod.node_name)
            if ni is None or ni.node is None:
                return "", f'getting node for pod {pod.key}: nodeinfo not found for node name "{pod.node_name}"'
            value = ni.node.labels.get(key)
            if value is None:
                return "", f"no topology domain found for pod {pod.key}"
            if domain and domain != value:
                return "", f"more than 1 domain found for pod group: {domain}, {value}"
            domain = value
        return domain, ""


PLUGINS = [TopologyPlacementGenerator]
