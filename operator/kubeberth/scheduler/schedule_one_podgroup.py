"""The scheduling cycle of a pod group (upstream's schedule_one_podgroup.go, GenericWorkload on;
with TopologyAwareWorkloadScheduling the algorithm below runs once per placement, see
schedule_one_placement.py): a PodGroup's queued pods, popped together, are placed one
after the other, each seeing the ones before it; the group is feasible while GangScheduling's
`minCount` can still be reached. Every placement of the attempt is undone at its end; when the
group is feasible each placed pod is then assumed, reserved and permitted for real and goes to
its binding cycle (GangScheduling's Permit holds them until the quorum is scheduled). Otherwise
every pod fails with its own FitError or the group's reason. The PodGroup gets the
PodGroupInitiallyScheduled condition with upstream's reasons and messages, and the group is
requeued whole.

When the group is unschedulable, the PodGroupPostFilter plugins run (podgroup_preemption.py):
DefaultPreemption's preempts for the whole group (preemption/pod_group.py) and the group waits,
nominated, for its victims to go.

The parts: this module (the cycle, the group's checks, the default algorithm pod by pod),
schedule_one_placement.py (the placements), podgroup_preemption.py (PodGroupPostFilter),
podgroup_outcome.py (the pods to binding or back to the queue, the PodGroup's condition),
podgroup_results.py (each pod's result, the group's statuses).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from .. import features
from ..cache.cache import CacheError
from ..framework import CycleState, FitError, Framework, Status
from ..framework.status import Code
from ..framework.types import QueuedPodGroupInfo, QueuedPodInfo
from ..model import Pod, PodGroup
from ..model.pod_group import REASON_SCHEDULER_ERROR
from ..plugins.gang_scheduling import NAME as GANG_SCHEDULING
from ..plugins.gang_scheduling import GangScheduling
from . import explain, group_explain
from .errors import NoNodesAvailable, SchedulingError
from .podgroup_preemption import PodGroupPostFilter
from .podgroup_results import ERROR, SCHEDULED, PodResult, group_rejection, result_of
from .records import SCHEDULED as RECORD_SCHEDULED
from .records import UNSCHEDULABLE as RECORD_UNSCHEDULABLE
from .records import pod_on_node
from .schedule_one import _single_node_fit_error
from .schedule_one_placement import PlacementAlgorithm

log = logging.getLogger("kubeberth.scheduler")


class PodGroupCycles(PlacementAlgorithm, PodGroupPostFilter):
    """A popped pod group through upstream's scheduleOnePodGroup."""

    async def schedule_popped(self, q: QueuedPodInfo) -> None:
        if isinstance(q, QueuedPodGroupInfo):
            self._explaining = None
            await self._schedule_pod_group(q)
            return
        await super().schedule_popped(q)

    async def _schedule_pod_group(self, g: QueuedPodGroupInfo) -> None:
        started = time.perf_counter()
        self.cache.update_snapshot(self.snapshot)
        self.ctx.snapshot = self.snapshot
        pg = self.pod_groups.pod_group(g.group_key)
        if pg is None:
            name = g.group_key.split("/", 1)[-1]
            await self._pod_group_failed_before(g, None, f'podgroup.scheduling.k8s.io "{name}" not found', started)
            return
        problem = self._validate_pod_group(g, pg)
        if problem:
            await self._pod_group_failed_before(g, pg, problem, started)
            return
        fw = self.profiles[g.members[0].pod.scheduler_name]
        queued: list[QueuedPodInfo] = []
        for m in g.members:
            latest = self._pending.get(m.pod.uid)
            if latest is None or latest.deletion_timestamp is not None or self.cache.is_assumed(m.pod.uid):
                self.queue.done(m.pod.uid)  # upstream's skipPodSchedule
                continue
            m.pod = latest
            queued.append(m)
        if not queued:
            self.queue.add_attempted_pod_group(g, SCHEDULED)
            return
        for m in queued:
            rec = self._record_seen(m.pod)
            rec.attempts = max(rec.attempts, m.attempts)
        group_state = self.pod_groups.get(pg.key)
        attempt = group_explain.begin(pg, max(m.attempts for m in queued),
                                      group_state.scheduled_pods_count() if group_state is not None else 0,
                                      [m.pod.key for m in queued])
        results, status = await self._pod_group_algorithm(fw, pg, queued)
        tried = len(results)
        while len(results) < len(queued):  # completePodGroupAlgorithmResult: the pods not tried
            q = queued[len(results)]
            results.append(PodResult(q, CycleState(), Status(status.code, *status.reasons)
                                      if status is not None else None))
        self.metrics.pod_group_algorithm_duration(time.perf_counter() - started)
        nominations: dict[str, str] | None = None
        if status is not None and status.code == Code.UNSCHEDULABLE:
            nominations, post = await self._pod_group_post_filter(fw, pg, queued, results[:tried])
            if post.code == Code.ERROR:
                status = post
            else:
                status.reasons.append(post.message())  # upstream's AppendReason(status.String())
        for i, res in enumerate(results[:tried]):
            attempt.pods[i] = group_explain.PodTry(res.q.pod.key, res.host if res.status is None else "",
                                                   res.status.message() if res.status is not None else "")
        attempt.result, attempt.message = result_of(status), status.message() if status is not None else ""
        self._keep_attempt(attempt)
        await self._submit_pod_group_result(fw, g, pg, queued, results, status, started, nominations)
        self._explain_group_pods(results[:tried], status, attempt)

    def _keep_attempt(self, attempt: group_explain.GroupAttempt) -> None:
        """The group's latest attempt, for simulate; a long-running operator (which drops the
        records of deleted pods) forgets those of groups that are gone."""
        self.group_attempts[attempt.group] = attempt
        if not self.keep_deleted_records:
            for key in [k for k in self.group_attempts if self.pod_groups.get(k) is None]:
                del self.group_attempts[key]

    def _explain_group_pods(self, results: list[PodResult], status: Status | None,
                            attempt: group_explain.GroupAttempt) -> None:
        """The explained pods of the attempt: each one's own filter and score, and the group's part."""
        for res in results:
            x = explain.explanation_of(res.state)
            if x is None:
                continue
            x.pod_group = attempt.to_dict()
            rec = self._record_seen(res.q.pod)
            if status is None and res.status is None:
                x.finish(RECORD_SCHEDULED, res.host, "")
            else:
                x.finish(RECORD_UNSCHEDULABLE, "", rec.message)
            rec.add_explanation(x)
            if self.on_explained is not None:
                self._spawn(self.on_explained(res.q.pod, x))

    # ---- before scheduling --------------------------------------------------------------
    def _validate_pod_group(self, g: QueuedPodGroupInfo, pg: PodGroup) -> str:
        """upstream's validatePodGroup: one schedulerName, the group's priority, one preemption
        policy (with PodGroupPreemptionPolicy the PodGroup's own), for the queued pods and the
        scheduled ones."""
        scheduler_name = g.members[0].pod.scheduler_name
        group_policy = features.current().enabled(features.POD_GROUP_PREEMPTION_POLICY)
        policy = pg.preemption_policy if group_policy else ""

        def check(pod: Pod) -> str:
            nonlocal policy
            if pod.scheduler_name != scheduler_name:
                return ("all pods in a single pod group should have the same .spec.schedulerName set, got: "
                        f'"{pod.scheduler_name}" and "{scheduler_name}"')
            if pod.priority != pg.priority:
                return ("all pods in a single pod group should have the same priority as the pod group's "
                        f"priority, got {pod.priority} and {pg.priority}")
            if group_policy:
                if pod.preemption_policy != policy:
                    return ("all pods in a single pod group should have the same preemption policy as the pod "
                            f"group's preemption policy, got {pod.preemption_policy} and {policy}")
            elif not policy:
                policy = pod.preemption_policy
            elif pod.preemption_policy != policy:
                return ("all pods in a single pod group should have the same preemption policy, got "
                        f"{pod.preemption_policy} and {policy}")
            return ""

        for m in g.members:
            if problem := check(m.pod):
                return problem
        state = self.pod_groups.get(pg.key)
        if state is not None:
            for pod in state.pods.values():
                if (pod.node_name or self.cache.is_assumed(pod.uid)) and (problem := check(pod)):
                    return problem
        if scheduler_name not in self.profiles:
            return f'profile not found for scheduler name "{scheduler_name}"'
        return ""

    async def _pod_group_failed_before(self, g: QueuedPodGroupInfo, pg: PodGroup | None, message: str,
                                       started: float) -> None:
        """upstream's handlePodGroupFailureBeforeScheduling: every pod fails with the error, the
        PodGroup says SchedulerError, the group is requeued."""
        for m in g.members:
            fw = self.profiles.get(m.pod.scheduler_name)
            latest = self._pending.get(m.pod.uid)
            if fw is None or latest is None:
                self.queue.done(m.pod.uid)
                continue
            m.pod = latest
            await self._fail(fw, m, Status.error(message), nominating="", started=started)
        if pg is not None:
            await self._set_pod_group_condition(pg, "False", REASON_SCHEDULER_ERROR, message)
            attempt = group_explain.begin(pg, max(m.attempts for m in g.members), 0, [m.pod.key for m in g.members])
            attempt.result, attempt.message = ERROR, message
            self._keep_attempt(attempt)
        self.queue.add_attempted_pod_group(g, ERROR)

    # ---- the algorithm --------------------------------------------------------------------
    def _placement_feasible(self, fw: Framework, pg: PodGroup, scheduled: int, remaining: int) -> Status | None:
        """upstream's RunPlacementFeasiblePlugins, whose only plugin is the profile's GangScheduling
        (none when the profile disables it: every placement is then feasible)."""
        started = time.perf_counter()
        plugin = fw.plugins.get(GANG_SCHEDULING)
        status = None
        if isinstance(plugin, GangScheduling):
            status = plugin.placement_feasible(pg, scheduled, remaining)
            if status is not None:
                status.with_plugin(plugin.name)
        self.metrics.extension_point_duration("PlacementFeasible", (status.code if status is not None else
                                                                    Code.SUCCESS).upstream_name,
                                              fw.profile_name, time.perf_counter() - started)
        return status

    async def _pod_group_algorithm(self, fw: Framework, pg: PodGroup, queued: list[QueuedPodInfo]
                                   ) -> tuple[list[PodResult], Status | None]:
        """upstream's podGroupSchedulingAlgorithm: the placements with TopologyAwareWorkloadScheduling,
        else the default algorithm over every node."""
        if features.current().topology_aware_workload_scheduling:
            return await self._pod_group_placement_algorithm(fw, pg, queued)
        return await self._pod_group_default_algorithm(fw, pg, queued)

    async def _pod_group_default_algorithm(self, fw: Framework, pg: PodGroup, queued: list[QueuedPodInfo],
                                           in_placement: bool = False) -> tuple[list[PodResult], Status | None]:
        """upstream's podGroupSchedulingDefaultAlgorithm (and runRootSchedulingAlgorithm's
        revert): every pod placed in turn on the snapshot, all undone at the end."""
        state = self.pod_groups.get(pg.key)
        scheduled = state.scheduled_pods_count() if state is not None else 0
        remaining = len(queued)
        results: list[PodResult] = []
        reverts: list[Callable[[], None]] = []
        status = self._placement_feasible(fw, pg, scheduled, remaining)
        any_scheduled = False
        try:
            if status is not None and status.code == Code.ERROR:
                return results, Status.error(f"failed to evaluate placement feasibility: {status.message()}")
            if status is not None and status.code == Code.UNSCHEDULABLE:
                return results, group_rejection(*status.reasons)
            for q in queued:
                res, revert = await self._pod_group_pod_algorithm(fw, q)
                results.append(res)
                if revert is not None:
                    reverts.append(revert)
                if res.status is not None and not res.status.is_success() and not res.status.is_rejected():
                    status = Status.error(f"failed to schedule other pod from a pod group: {res.status.message()}")
                    break
                remaining -= 1
                if res.status is None:
                    scheduled += 1
                feasible = self._placement_feasible(fw, pg, scheduled, remaining)
                if feasible is not None and feasible.code == Code.ERROR:
                    status = Status.error(f"failed to evaluate placement feasibility: {feasible.message()}")
                    break
                status = feasible
                if status is not None and status.code == Code.UNSCHEDULABLE:
                    break
                any_scheduled = any_scheduled or res.status is None
            if status is not None and status.is_wait():
                status = group_rejection(*status.reasons)
            if status is None and not any_scheduled and not in_placement:
                # the root's rule (runRootSchedulingAlgorithm); a placement with no pod placed is
                # still feasible to the placement algorithm, which applies the rule to its best
                status = group_rejection()
            return results, status
        finally:
            for revert in reversed(reverts):
                revert()
            self._sync_snapshot()

    async def _pod_group_pod_algorithm(self, fw: Framework, q: QueuedPodInfo
                                       ) -> tuple[PodResult, Callable[[], None] | None]:
        """upstream's podGroupPodSchedulingAlgorithm: filter and score one pod (no PostFilter:
        preemption would be the group's), then assume and reserve it where it goes."""
        pod = q.pod
        state = CycleState()
        state.record_plugin_metrics = self.ctx.metrics is not None and fw.plugin_metrics.sample()
        if self.explain_pods is not None and self.explain_pods(pod):
            explain.begin(state, fw, pod, q.attempts)
        algorithm_started = time.perf_counter()
        try:
            result = await self._schedule_pod(fw, state, pod)
        except FitError as exc:
            return PodResult(q, state, Status(Code.UNSCHEDULABLE, exc.message()), fit=exc), None
        except NoNodesAvailable as exc:
            return PodResult(q, state, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                               str(exc) or "no nodes available to schedule pods")), None
        except SchedulingError as exc:
            return PodResult(q, state, exc.status), None
        except Exception as exc:
            # As a single pod's attempt: the raising plugin's Error in upstream's wording, its
            # traceback logged once per kind (framework/isolation.py).
            return PodResult(q, state, self.ctx.plugin_errors.failure_status(fw.plugins, exc)), None
        finally:
            self.metrics.scheduling_algorithm_duration(time.perf_counter() - algorithm_started)
        host = result.suggested_host
        assumed = pod_on_node(pod, host)
        try:
            self.cache.assume_pod(assumed)
        except CacheError as exc:
            return PodResult(q, state, Status.error(str(exc))), None
        self.nominator.delete_nominated_pod_if_exists(assumed)
        self._sync_snapshot()
        reserved = fw.run_reserve(state, assumed, host)
        if reserved is not None and not reserved.is_success():
            fw.run_unreserve(state, assumed, host)
            self._undo_assume(assumed)
            if reserved.is_rejected():
                one = _single_node_fit_error(pod, host, reserved)
                return PodResult(q, state, Status(reserved.code, one.message()), fit=one), None
            return PodResult(q, state, reserved), None

        def revert() -> None:
            fw.run_unreserve(state, assumed, host)
            self._undo_assume(assumed)

        return PodResult(q, state, None, host=host), revert

    def _undo_assume(self, assumed: Pod) -> None:
        self._forget(assumed)
        self._sync_snapshot()
        if assumed.nominated_node_name:
            # assuming removed the nomination; undoing it gives it back (upstream's unreserveAndForget)
            self.nominator.add_nominated_pod(assumed, assumed.nominated_node_name)
