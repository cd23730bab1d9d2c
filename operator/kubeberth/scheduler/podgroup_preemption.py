"""A pod group that fits nowhere: upstream's RunPodGroupPostFilterPlugins (DynamicResources'
PodGroupPostFilter, DefaultPreemption's preemption for the whole group, preemption/pod_group.py),
the group's algorithm run again on the snapshot without the victims (`_sync_snapshot` keeps them
off it meanwhile)."""

from __future__ import annotations

import time

from ..framework import Framework, Status
from ..framework.status import Code
from ..framework.types import QueuedPodInfo
from ..model import PodGroup
from ..plugins._mutation_session import preemption_rerun
from ..plugins.default_preemption import DefaultPreemption
from ..plugins.dynamic_resources import DynamicResources
from ..preemption.pod_group import Assignment, SnapshotEdits
from .podgroup_outcome import PodGroupOutcome
from .podgroup_results import PodResult
from .records import pod_on_node


class PodGroupPostFilter(PodGroupOutcome):
    """Mixed under PodGroupCycles, which provides the group's algorithm."""

    _preemption_edits: SnapshotEdits | None = None  # the victims off the snapshot, during a group's preemption

    async def _pod_group_algorithm(self, fw: Framework, pg: PodGroup, queued: list[QueuedPodInfo]
                                   ) -> tuple[list[PodResult], Status | None]:
        raise NotImplementedError

    def _sync_snapshot(self) -> None:
        """The cache's changes into the snapshot; during a group's preemption the victims stay off it."""
        self.cache.update_snapshot(self.snapshot)
        if self._preemption_edits is not None:
            self._preemption_edits.apply()

    async def _pod_group_post_filter(self, fw: Framework, pg: PodGroup, queued: list[QueuedPodInfo],
                                     tried: list[PodResult]) -> tuple[dict[str, str] | None, Status]:
        """upstream's RunPodGroupPostFilterPlugins over the profile's PostFilter plugins that have a
        PodGroupPostFilter (DynamicResources, DefaultPreemption, in the profile's order): the first
        success or UnschedulableAndUnresolvable ends it, Unschedulable reasons add up.
        DynamicResources deallocates the tried pods' unavailable claims as its PostFilter would
        (`tried`: the pods the algorithm reached, with their CycleStates) and reports them dealt
        with, or, with TopologyAwareWorkloadScheduling, does nothing for a group with
        spec.schedulingConstraints; DefaultPreemption preempts for the group (preemption/pod_group.py), the group's
        algorithm run again on the snapshot without the victims (`_rerun_for_preemption`).
        Returns the pods' nominations (uid -> node) when preemption succeeded."""
        started = time.perf_counter()
        reasons: list[str] = []
        rejector = ""
        result: tuple[dict[str, str] | None, Status] | None = None
        for plugin in fw.post_filter_plugins:
            if isinstance(plugin, DynamicResources):
                status = await plugin.pod_group_post_filter(pg, [(r.q.pod, r.state) for r in tried])
                nominations = None
            elif isinstance(plugin, DefaultPreemption):
                nominations, status = await self._run_group_preemption(fw, plugin, pg, queued)
            else:
                continue
            if status.is_success():
                result = nominations, status
                break
            if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                result = None, status.with_plugin(plugin.name)
                break
            if status.code == Code.UNSCHEDULABLE:
                reasons.extend(status.reasons)
                rejector = rejector or plugin.name
                continue
            result = None, Status.error(f'error in "{plugin.name}" PodGroupPostFilter plugins: {status.message()}',
                                        plugin=plugin.name)
            break
        if result is None:
            result = None, Status(Code.UNSCHEDULABLE, *reasons, plugin=rejector)
        self.metrics.extension_point_duration("PodGroupPostFilter", result[1].code.upstream_name, fw.profile_name,
                                              time.perf_counter() - started)
        return result

    async def _run_group_preemption(self, fw: Framework, plugin: DefaultPreemption, pg: PodGroup,
                                    queued: list[QueuedPodInfo]) -> tuple[dict[str, str] | None, Status]:
        edits = SnapshotEdits(self.snapshot)
        self._preemption_edits = edits
        members = [q.pod for q in queued]

        async def schedule_group() -> tuple[list[Assignment], Status | None]:
            results, status = await self._pod_group_algorithm(fw, pg, queued)
            return [Assignment(pod_on_node(r.q.pod, r.host), r.host, r.state) for r in results
                    if r.status is None], status

        try:
            with preemption_rerun():
                return await plugin.pod_group_post_filter(fw, pg, members, edits, schedule_group)
        finally:
            self._preemption_edits = None
            edits.restore()
            self._sync_snapshot()
