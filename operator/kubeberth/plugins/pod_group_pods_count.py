"""PodGroupPodsCount (upstream's framework/plugins/podgrouppodscount, in the default profile with
TopologyAwareWorkloadScheduling, weight 1): the PlacementScore plugin that favours the placement
holding more of the group's pods: the group's scheduled pods (bound or assumed) plus those the
placement's attempt placed, normalised to 0..100 against the best placement's count."""

from __future__ import annotations

from typing import Any

from ..framework import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    POD_GROUP_STATES,
    CycleState,
    Handle,
    PlacementScore,
    PlacementScorePlugin,
    PluginError,
    PodGroup,
    PodGroupAssignments,
    PodGroupStates,
    Status,
)

NAME = "PodGroupPodsCount"


class PodGroupPodsCount(PlacementScorePlugin):
    name = NAME
    has_normalize_placement_score = True

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self.handle = handle

    def score_placement(self, state: CycleState, pod_group: PodGroup, assignments: PodGroupAssignments) -> int:
        states = self.handle.shared_indexes.get(POD_GROUP_STATES) if self.handle is not None else None
        group = states.get(pod_group.key) if isinstance(states, PodGroupStates) else None
        if group is None:
            raise PluginError(f"pod group state not found for pod group {pod_group.key}", NAME)
        return group.scheduled_pods_count() + len(assignments.proposed)

    def normalize_placement_scores(self, state: CycleState, pod_group: PodGroup,
                                   scores: list[PlacementScore]) -> Status | None:
        best = max((s.score for s in scores), default=0)
        if best <= 0:
            return Status.error("no pods from pod group are assigned to any of the candidate placements")
        for s in scores:
            s.score = MIN_NODE_SCORE + s.score * (MAX_NODE_SCORE - MIN_NODE_SCORE) // best
        return None


PLUGINS = [PodGroupPodsCount]
