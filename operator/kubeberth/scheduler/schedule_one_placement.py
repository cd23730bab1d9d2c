"""A pod group's placements (upstream's podGroupSchedulingPlacementAlgorithm and findBestPlacement,
TopologyAwareWorkloadScheduling on): the profile's PlacementGenerate plugin cuts the nodes into
candidate placements; the group's pods are placed in each in turn (the default algorithm, the pods
seeing only the placement's nodes, everything undone after each); among the placements where the
group is feasible, the PlacementScore plugins pick the best (highest weighted total, ties broken
uniformly at random); its pods' results are the attempt's. When no placement is feasible the
group is unschedulable with upstream's "0/N placements are available" and the first placement's
pod results.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..framework import CycleState, Framework, Status
from ..framework.status import Code
from ..framework.types import Placement, PodGroupAssignments, ProposedAssignment, QueuedPodInfo
from ..model import PodGroup
from .podgroup_results import ERR_POD_GROUP_UNSCHEDULABLE, PodResult, as_error

if TYPE_CHECKING:
    from ..cache.snapshot import Snapshot
    from ..framework.context import MetricsRecorder

log = logging.getLogger("kubeberth.scheduler")


class PlacementAlgorithm:
    """Mixed into PodGroupCycles, which provides the snapshot and the default algorithm."""

    snapshot: Snapshot
    metrics: MetricsRecorder  # the scheduler's (a property there)

    async def _pod_group_default_algorithm(self, fw: Framework, pg: PodGroup, queued: list[QueuedPodInfo],
                                           in_placement: bool = False) -> tuple[list[PodResult], Status | None]:
        raise NotImplementedError

    async def _pod_group_placement_algorithm(self, fw: Framework, pg: PodGroup, queued: list[QueuedPodInfo]
                                             ) -> tuple[list[PodResult], Status | None]:
        snapshot = self.snapshot
        state = CycleState()
        placements, status = fw.run_placement_generate(state, pg, list(snapshot.nodes_in_placement()))
        if status is not None:
            return [], status
        self.metrics.generated_placements(fw.profile_name, len(placements))
        first: tuple[list[PodResult], Status | None] | None = None
        feasible: list[tuple[int, list[PodResult]]] = []
        parent = snapshot.placement
        try:
            for i, placement in enumerate(placements):
                log.debug("pod group %s: trying placement %r", pg.key, placement.name)
                try:
                    snapshot.assume_placement(placement.node_names())
                except KeyError as exc:
                    return [], Status.error(f"failed to assume pod group placement: {exc.args[0]}")
                started = time.perf_counter()
                results, st = await self._pod_group_default_algorithm(fw, pg, queued, in_placement=True)
                if st is not None and st.code == Code.ERROR:
                    return results, st
                if first is None:
                    first = (results, st)
                ok = st is None or st.is_success()
                if ok:
                    feasible.append((i, results))
                self.metrics.placement_evaluation("feasible" if ok else "infeasible", fw.profile_name,
                                                  time.perf_counter() - started)
        finally:
            snapshot.placement = parent
        if not feasible:
            assert first is not None
            results, st = first
            return results, Status(Code.UNSCHEDULABLE, ERR_POD_GROUP_UNSCHEDULABLE,
                                   f"0/{len(placements)} placements are available, first placement status: "
                                   f"{as_error(st)}")
        best = 0
        if len(feasible) > 1:
            best, status = self._best_placement(fw, pg, [(placements[i], results) for i, results in feasible])
            if status is not None:
                return [], status
        results = feasible[best][1]
        if not any(r.status is None for r in results):
            # the root's rule: success needs at least one pod placed
            return results, Status(Code.UNSCHEDULABLE, ERR_POD_GROUP_UNSCHEDULABLE)
        return results, None

    def _best_placement(self, fw: Framework, pg: PodGroup, feasible: Sequence[tuple[Placement, list[PodResult]]]
                        ) -> tuple[int, Status | None]:
        """upstream's findBestPlacement: the PlacementScore plugins' totals; the highest wins,
        ties broken by the scheduler's rule (upstream's: uniformly at random; fixed-order: the
        first placement name in the seeded order, framework/tie_break.py)."""
        snapshot = self.snapshot
        assignments: list[PodGroupAssignments] = []
        for placement, results in feasible:
            # the nodes as they are now, the attempts undone (the snapshot's entries are replaced)
            placement.nodes = [ni for ni in (snapshot.get(n.name) for n in placement.nodes) if ni is not None]
            proposed = [ProposedAssignment(r.q.pod, r.host) for r in results if r.status is None and r.host]
            assignments.append(PodGroupAssignments(placement, proposed))
        scores, status = fw.run_placement_score(CycleState(), pg, assignments)
        if status is not None:
            return 0, status
        for s in scores:
            log.debug("pod group %s: placement %r scored %d %s", pg.key, s.placement.name, s.total, s.scores)
        top = max(s.total for s in scores)
        tied = [i for i, s in enumerate(scores) if s.total == top]
        if len(tied) == 1:
            return tied[0], None
        return fw.ctx.tie_break.pick(tied, lambda i: scores[i].placement.name, fw.rng), None
