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

When the group is unschedulable, the PodGroupPostFilter plugins run: DefaultPreemption's preempts
for the whole group (preemption/pod_group.py) and the group waits, nominated, for its victims to go.

Placements (TopologyAwareWorkloadScheduling) are tried in schedule_one_placement.py.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from .. import features
from ..cache.cache import CacheError
from ..framework import CycleState, FitError, Framework, Status
from ..framework.status import Code
from ..framework.types import QueuedPodGroupInfo, QueuedPodInfo
from ..model import Pod, PodGroup
from ..model.pod_group import (
    POD_GROUP_INITIALLY_SCHEDULED,
    REASON_SCHEDULED,
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
)
from ..plugins._mutation_session import preemption_rerun
from ..plugins.default_preemption import DefaultPreemption
from ..plugins.dynamic_resources import DynamicResources
from ..plugins.gang_scheduling import NAME as GANG_SCHEDULING
from ..plugins.gang_scheduling import GangScheduling
from ..preemption.pod_group import Assignment, SnapshotEdits
from . import decision_log, explain, group_explain
from .algorithm import NoNodesAvailable, SchedulingError, schedule_pod
from .records import SCHEDULED as RECORD_SCHEDULED
from .records import UNSCHEDULABLE as RECORD_UNSCHEDULABLE
from .records import pod_on_node
from .schedule_one import SchedulingCycles, _single_node_fit_error
from .schedule_one_placement import ERR_POD_GROUP_UNSCHEDULABLE, PlacementAlgorithm

log = logging.getLogger("kubeberth.scheduler")

# upstream's errPodGroupUnschedulable: the first reason of a group's rejection (ERR_POD_GROUP_UNSCHEDULABLE,
# defined with the placements)

SCHEDULED, UNSCHEDULABLE, ERROR = "scheduled", "unschedulable", "error"
WAITING_ON_PREEMPTION = "waiting_on_preemption"


class _PodResult:
    """One pod's part of the attempt (upstream's algorithmResult)."""

    __slots__ = ("fit", "host", "q", "state", "status")

    def __init__(self, q: QueuedPodInfo, state: CycleState, status: Status | None, host: str = "",
                 fit: FitError | None = None) -> None:
        self.q = q
        self.state = state
        self.status = status  # None: placed
        self.host = host
        self.fit = fit


def _result_of(status: Status | None) -> str:
    if status is None or status.is_success():
        return SCHEDULED
    return UNSCHEDULABLE if status.is_rejected() else ERROR


def _group_rejection(*reasons: str) -> Status:
    """Unschedulable with upstream's errPodGroupUnschedulable before the reasons."""
    return Status(Code.UNSCHEDULABLE, ERR_POD_GROUP_UNSCHEDULABLE, *reasons)


def set_condition(conditions: list[dict[str, Any]], condition: Mapping[str, Any], now: str
                  ) -> dict[str, Any] | None:
    """apimachinery's SetStatusCondition for one condition: what to write, None when nothing
    changes. lastTransitionTime moves only when the status does."""
    existing = next((c for c in conditions if c.get("type") == condition["type"]), None)
    new = dict(condition)
    if existing is None:
        new["lastTransitionTime"] = now
        return new
    if all(existing.get(k) == new.get(k) for k in ("status", "reason", "message", "observedGeneration")):
        return None
    new["lastTransitionTime"] = now if existing.get("status") != new["status"] else existing.get("lastTransitionTime",
                                                                                               now)
    return new


class PodGroupCycles(PlacementAlgorithm, SchedulingCycles):
    """A popped pod group through upstream's scheduleOnePodGroup."""

    _preemption_edits: SnapshotEdits | None = None  # the victims off the snapshot, during a group's preemption

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
            results.append(_PodResult(q, CycleState(), Status(status.code, *status.reasons)
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
        attempt.result, attempt.message = _result_of(status), status.message() if status is not None else ""
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

    def _explain_group_pods(self, results: list[_PodResult], status: Status | None,
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
                                   ) -> tuple[list[_PodResult], Status | None]:
        """upstream's podGroupSchedulingAlgorithm: the placements with TopologyAwareWorkloadScheduling,
        else the default algorithm over every node."""
        if features.current().topology_aware_workload_scheduling:
            return await self._pod_group_placement_algorithm(fw, pg, queued)
        return await self._pod_group_default_algorithm(fw, pg, queued)

    async def _pod_group_default_algorithm(self, fw: Framework, pg: PodGroup, queued: list[QueuedPodInfo],
                                           in_placement: bool = False) -> tuple[list[_PodResult], Status | None]:
        """upstream's podGroupSchedulingDefaultAlgorithm (and runRootSchedulingAlgorithm's
        revert): every pod placed in turn on the snapshot, all undone at the end."""
        state = self.pod_groups.get(pg.key)
        scheduled = state.scheduled_pods_count() if state is not None else 0
        remaining = len(queued)
        results: list[_PodResult] = []
        reverts: list[Callable[[], None]] = []
        status = self._placement_feasible(fw, pg, scheduled, remaining)
        any_scheduled = False
        try:
            if status is not None and status.code == Code.ERROR:
                return results, Status.error(f"failed to evaluate placement feasibility: {status.message()}")
            if status is not None and status.code == Code.UNSCHEDULABLE:
                return results, _group_rejection(*status.reasons)
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
                status = _group_rejection(*status.reasons)
            if status is None and not any_scheduled and not in_placement:
                # the root's rule (runRootSchedulingAlgorithm); a placement with no pod placed is
                # still feasible to the placement algorithm, which applies the rule to its best
                status = _group_rejection()
            return results, status
        finally:
            for revert in reversed(reverts):
                revert()
            self._sync_snapshot()

    async def _pod_group_pod_algorithm(self, fw: Framework, q: QueuedPodInfo
                                       ) -> tuple[_PodResult, Callable[[], None] | None]:
        """upstream's podGroupPodSchedulingAlgorithm: filter and score one pod (no PostFilter:
        preemption would be the group's), then assume and reserve it where it goes."""
        pod = q.pod
        state = CycleState()
        state.record_plugin_metrics = self.ctx.metrics is not None and fw.plugin_metrics.sample()
        if self.explain_pods is not None and self.explain_pods(pod):
            explain.begin(state, fw, pod, q.attempts)
        algorithm_started = time.perf_counter()
        try:
            result = await schedule_pod(fw, state, pod)
        except FitError as exc:
            return _PodResult(q, state, Status(Code.UNSCHEDULABLE, exc.message()), fit=exc), None
        except NoNodesAvailable as exc:
            return _PodResult(q, state, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                               str(exc) or "no nodes available to schedule pods")), None
        except SchedulingError as exc:
            return _PodResult(q, state, exc.status), None
        except Exception as exc:
            # As a single pod's attempt: the raising plugin's Error in upstream's wording, its
            # traceback logged once per kind (framework/isolation.py).
            return _PodResult(q, state, self.ctx.plugin_errors.failure_status(fw.plugins, exc)), None
        finally:
            self.metrics.scheduling_algorithm_duration(time.perf_counter() - algorithm_started)
        host = result.suggested_host
        assumed = pod_on_node(pod, host)
        try:
            self.cache.assume_pod(assumed)
        except CacheError as exc:
            return _PodResult(q, state, Status.error(str(exc))), None
        self.nominator.delete_nominated_pod_if_exists(assumed)
        self._sync_snapshot()
        reserved = fw.run_reserve(state, assumed, host)
        if reserved is not None and not reserved.is_success():
            fw.run_unreserve(state, assumed, host)
            self._undo_assume(assumed)
            if reserved.is_rejected():
                one = _single_node_fit_error(pod, host, reserved)
                return _PodResult(q, state, Status(reserved.code, one.message()), fit=one), None
            return _PodResult(q, state, reserved), None

        def revert() -> None:
            fw.run_unreserve(state, assumed, host)
            self._undo_assume(assumed)

        return _PodResult(q, state, None, host=host), revert

    def _undo_assume(self, assumed: Pod) -> None:
        self._forget(assumed)
        self._sync_snapshot()
        if assumed.nominated_node_name:
            # assuming removed the nomination; undoing it gives it back (upstream's unreserveAndForget)
            self.nominator.add_nominated_pod(assumed, assumed.nominated_node_name)

    def _sync_snapshot(self) -> None:
        """The cache's changes into the snapshot; during a group's preemption the victims stay off it."""
        self.cache.update_snapshot(self.snapshot)
        if self._preemption_edits is not None:
            self._preemption_edits.apply()

    async def _pod_group_post_filter(self, fw: Framework, pg: PodGroup, queued: list[QueuedPodInfo],
                                     tried: list[_PodResult]) -> tuple[dict[str, str] | None, Status]:
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

    # ---- the outcome ---------------------------------------------------------------------
    async def _submit_pod_group_result(self, fw: Framework, g: QueuedPodGroupInfo, pg: PodGroup,
                                       queued: list[QueuedPodInfo], results: list[_PodResult],
                                       status: Status | None, started: float,
                                       nominations: dict[str, str] | None = None) -> None:
        """upstream's submitPodGroupAlgorithmResult: the pods to their binding cycles or back to
        the queue, the PodGroup's condition, the metrics, the group requeued. `nominations`: the
        group waits on its preemption; its pods go back nominated to the nodes it found."""
        waiting = nominations is not None and status is not None and status.is_rejected()
        group_error = status is not None and not status.is_success() and not status.is_rejected()
        for res in results:
            q = res.q
            if group_error:
                assert status is not None
                own = res.status if res.status is not None and res.status.code == Code.ERROR else status
                await self._fail(fw, q, own, nominating="", started=started)
                continue
            nominated = nominations.get(q.pod.uid) if waiting and nominations is not None else None
            if res.status is None:
                if status is None:
                    await self._bind_group_pod(fw, res, started)
                elif waiting:
                    assert status is not None
                    await self._fail(fw, q, Status(status.code, *status.reasons), nominating=nominated,
                                     started=started)
                elif status.is_rejected():
                    await self._fail(fw, q, _group_rejection(status.message()), nominating="", started=started)
                else:
                    await self._fail(fw, q, Status.error("received unexpected pod group scheduling algorithm status "
                                                         f"code: {status.code.upstream_name}"),
                                     nominating="", started=started)
            else:
                await self._fail(fw, q, res.status, fit=res.fit, nominating=nominated, started=started)
        result = _result_of(status)
        if result == SCHEDULED:
            await self._set_pod_group_condition(pg, "True", REASON_SCHEDULED, "")
        elif result == UNSCHEDULABLE:
            await self._set_pod_group_condition(pg, "False", REASON_UNSCHEDULABLE,
                                                status.message() if status is not None else "")
        else:
            await self._set_pod_group_condition(pg, "False", REASON_SCHEDULER_ERROR,
                                                status.message() if status is not None else "")
        decision_log.pod_group(pg.key, result, status.message() if status is not None else "")
        self.metrics.pod_group_schedule_attempt(WAITING_ON_PREEMPTION if waiting else result, fw.profile_name,
                                                time.perf_counter() - started)
        self.queue.add_attempted_pod_group(g, result)

    async def _bind_group_pod(self, fw: Framework, res: _PodResult, started: float) -> None:
        """upstream's prepareForBindingCycle: assume, Reserve and Permit for real, then the binding cycle."""
        q, state, host = res.q, res.state, res.host
        assumed = pod_on_node(q.pod, host)
        try:
            self.cache.assume_pod(assumed)
        except CacheError as exc:
            await self._fail(fw, q, Status.error(str(exc)), nominating="", started=started)
            return
        self.nominator.delete_nominated_pod_if_exists(assumed)
        status = fw.run_reserve(state, assumed, host)
        if status is None or status.is_success():
            status = fw.run_permit(state, assumed, host)
            if status is not None and status.is_wait():
                status = None
        if status is not None and not status.is_success():
            fw.run_unreserve(state, assumed, host)
            self._forget(assumed)
            await self._fail_after_assume(fw, q, status, host, started)
            return
        task = asyncio.get_running_loop().create_task(self._binding_cycle(fw, state, q, assumed, host, started))
        self._binding_tasks.add(task)
        task.add_done_callback(self._binding_done)
        self.metrics.goroutines("binding", len(self._binding_tasks))

    async def _set_pod_group_condition(self, pg: PodGroup, status: str, reason: str, message: str) -> None:
        """upstream's updatePodGroupCondition: a True condition is never taken back; nothing is
        written when nothing changes."""
        current = self.pod_groups.pod_group(pg.key) or pg
        existing = current.condition(POD_GROUP_INITIALLY_SCHEDULED)
        if existing is not None and existing.get("status") == "True" and status != "True":
            return
        condition = {"type": POD_GROUP_INITIALLY_SCHEDULED, "status": status, "observedGeneration": current.generation,
                     "reason": reason, "message": message}
        written = set_condition(current.conditions, condition, _rfc3339(self.clock.now()))
        if written is None or self.ctx.client is None:
            return
        await self._guard(self.ctx.client.set_pod_group_condition(current, written))


def _rfc3339(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))

