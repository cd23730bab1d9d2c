"""The scheduling and binding cycles of one pod (upstream's schedule_one.go; the algorithm that
picks the node is algorithm.py)."""

from __future__ import annotations

import asyncio
import logging
import time

from ..cache.cache import CacheError
from ..client import SCHEDULER_ERROR, UNSCHEDULABLE_REASON, BindConflict
from ..extender import bind_with_extenders
from ..framework import (
    CycleState,
    Diagnosis,
    FitError,
    Framework,
    Status,
)
from ..framework import events as ev
from ..framework.status import Code
from ..framework.types import QueuedPodInfo
from ..model import Pod
from . import decision_log, explain
from .algorithm import ScheduleResult, decision_of, schedule_pod
from .base import SchedulerBase
from .errors import NoNodesAvailable, SchedulingError
from .records import SCHEDULED, UNSCHEDULABLE, pod_on_node, truncate_message

log = logging.getLogger("kubeberth.scheduler")

PLUGIN_METRICS_INTERVAL = 1.0  # seconds between reports of the per-plugin counts and durations


class SchedulingCycles(SchedulerBase):
    """One popped pod through the scheduling cycle, then the binding cycle in its own task, and
    what a failure does (upstream's schedule_one.go: scheduleOne, schedulingCycle, bindingCycle,
    handleSchedulingFailure)."""

    # ---- the scheduling cycle ----------------------------------------------------------
    async def schedule_one(self) -> bool:
        """Pop (waiting for a pod) and run one scheduling cycle; False once the queue is closed."""
        await self._flush_deferred()
        while not self.may_write() and not self.queue.closed:
            await asyncio.sleep(0.1)  # a leader that missed its renew deadline waits for the next renewal
        q = await self.queue.pop()
        if q is None:
            return False
        await self.schedule_popped(q)
        return True

    async def schedule_popped(self, q: QueuedPodInfo) -> None:
        self._explaining = None
        try:
            await self._scheduling_cycle(q)
        finally:
            # Reported once a second, as upstream's asynchronous metrics recorder does.
            now = time.monotonic()
            if self.ctx.metrics is not None and now - self._plugin_metrics_flushed >= PLUGIN_METRICS_INTERVAL:
                self.flush_plugin_metrics()
                self._plugin_metrics_flushed = now
            if self._explaining is not None:
                self._explained(q, self._explaining)

    def flush_plugin_metrics(self) -> None:
        for fw in self.profiles.values():
            fw.flush_plugin_metrics()

    async def _scheduling_cycle(self, q: QueuedPodInfo) -> None:
        pod = q.pod
        uid = pod.uid
        fw = self.profiles.get(pod.scheduler_name)
        latest = self._pending.get(uid)
        if fw is None or latest is None or latest.deletion_timestamp is not None or self.cache.is_assumed(uid):
            # Upstream's skipPodSchedule: deleted, being deleted, or already assumed.
            self.queue.done(uid)
            return
        pod = q.pod = latest
        rec = self._record(pod)
        rec.attempts = q.attempts
        started = time.perf_counter()
        self.cache.update_snapshot(self.snapshot)
        self.ctx.snapshot = self.snapshot
        state = CycleState()
        state.record_plugin_metrics = self.ctx.metrics is not None and fw.plugin_metrics.sample()
        if self.explain_pods is not None and self.explain_pods(pod):
            self._explaining = explain.begin(state, fw, pod, q.attempts)
        try:
            algorithm_started = time.perf_counter()
            result = await self._schedule_pod(fw, state, pod)
            self.metrics.scheduling_algorithm_duration(time.perf_counter() - algorithm_started)
        except FitError as fit:
            await self._on_fit_error(fw, state, q, fit, started)
            return
        except NoNodesAvailable as exc:
            no_nodes = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(exc) or "no nodes available to schedule pods")
            await self._fail(fw, q, no_nodes, nominating="", started=started)
            return
        except SchedulingError as exc:
            await self._fail(fw, q, exc.status, nominating="", started=started)
            return
        except Exception as exc:  # a plugin raised: its Error, upstream's wording (framework/isolation.py)
            failed = self.ctx.plugin_errors.failure_status(fw.plugins, exc)
            await self._fail(fw, q, failed, nominating="", started=started)
            return
        host = result.suggested_host
        decision_log.attempt_placed(pod, q.attempts, fw.profile_name, len(self.snapshot), result)
        assumed = await self._assume(fw, q, host, started)
        if assumed is None:
            return
        status = fw.run_reserve(state, assumed, host)
        if status is not None and not status.is_success():
            fw.run_unreserve(state, assumed, host)
            self._forget(assumed)
            await self._fail_after_assume(fw, q, status, host, started)
            return
        status = fw.run_permit(state, assumed, host)
        if status is not None and not status.is_success() and not status.is_wait():
            fw.run_unreserve(state, assumed, host)
            self._forget(assumed)
            await self._fail_after_assume(fw, q, status, host, started)
            return
        task = asyncio.get_running_loop().create_task(
            self._binding_cycle(fw, state, q, assumed, host, started))
        self._binding_tasks.add(task)
        task.add_done_callback(self._binding_done)
        self.metrics.goroutines("binding", len(self._binding_tasks))

    async def _schedule_pod(self, fw: Framework, state: CycleState, pod: Pod) -> ScheduleResult:
        """algorithm.schedule_pod; an explained pod's explanation then observes what it decided
        (before PostFilter, whether it returned or raised)."""
        try:
            return await schedule_pod(fw, state, pod)
        finally:
            if (x := explain.explanation_of(state)) is not None:
                x.observe(fw, state, pod, decision_of(state))

    def _binding_done(self, task: asyncio.Task[None]) -> None:
        self._binding_tasks.discard(task)
        self.metrics.goroutines("binding", len(self._binding_tasks))

    def _explained(self, q: QueuedPodInfo, x: explain.Explanation) -> None:
        """The attempt is decided: note its result, keep the explanation on the pod's record and
        hand it to `on_explained` (the operator publishes it)."""
        self._explaining = None
        pod = q.pod
        rec = self._record_seen(pod)
        if self.cache.is_assumed(pod.uid):
            x.finish(SCHEDULED, x.selected, "")
        else:
            x.finish(UNSCHEDULABLE, "", rec.message)
            x.nominated_node = x.nominated_node or self.nominator.nominated_node_for(pod) or ""
        rec.add_explanation(x)
        if self.on_explained is not None:
            self._spawn(self.on_explained(pod, x))

    async def _assume(self, fw: Framework, q: QueuedPodInfo, host: str, started: float) -> Pod | None:
        """upstream's assume: the pod on `host` into the cache and out of the nominator; None (the
        attempt failed and reported) when the cache refuses it."""
        assumed = pod_on_node(q.pod, host)
        try:
            self.cache.assume_pod(assumed)
        except CacheError as exc:
            await self._fail(fw, q, Status.error(str(exc)), nominating="", started=started)
            return None
        self.nominator.delete_nominated_pod_if_exists(assumed)
        return assumed

    def _forget(self, assumed: Pod) -> bool:
        try:
            self.cache.forget_pod(assumed)
        except CacheError as exc:
            log.error("scheduler cache forget_pod failed: %s", exc)
            return False
        return True

    async def _fail_after_assume(self, fw: Framework, q: QueuedPodInfo, status: Status, host: str,
                                 started: float) -> None:
        """Reserve or Permit said no: a rejection is a FitError on that one node."""
        if status.is_rejected():
            fit = _single_node_fit_error(q.pod, host, status)
            await self._fail(fw, q, Status(status.code, fit.message()), fit=fit, nominating="", started=started)
        else:
            await self._fail(fw, q, status, nominating="", started=started)

    async def _on_fit_error(self, fw: Framework, state: CycleState, q: QueuedPodInfo, fit: FitError,
                            started: float) -> None:
        """No node fits: PostFilter (preemption) may nominate a node for a later attempt."""
        nominating: str | None = None
        if fw.has_post_filter_plugins():
            try:
                result, status = await fw.run_post_filter(state, q.pod, fit.diagnosis.node_to_status)
            except Exception as exc:
                result, status = None, self.ctx.plugin_errors.failure_status(fw.plugins, exc)
            fit.diagnosis.post_filter_msg = status.message() if status is not None else ""
            if result is not None:
                nominating = result.nominated_node_name
            decision_log.preemption(q.pod, nominating, self._record_seen(q.pod).victims, fit.diagnosis.post_filter_msg)
            if (x := explain.explanation_of(state)) is not None:
                x.post_filtered(fit.diagnosis.post_filter_msg, nominating)
        await self._fail(fw, q, Status(Code.UNSCHEDULABLE, fit.message()), fit=fit, nominating=nominating,
                         started=started)

    async def _fail(self, fw: Framework, q: QueuedPodInfo, status: Status, *, fit: FitError | None = None,
                    nominating: str | None = None, started: float | None = None) -> None:
        """Upstream's handleSchedulingFailure: requeue (unless gone or bound meanwhile), nominate,
        record FailedScheduling and the PodScheduled=False condition.
        `nominating`: None keeps the pod's own status.nominatedNodeName, "" clears it."""
        pod = q.pod
        uid = pod.uid
        rejected = status.is_rejected()
        decision_log.attempt_failed(pod, q.attempts, fw.profile_name, status.message())
        if fit is not None:
            q.unschedulable_plugins = set(fit.diagnosis.unschedulable_plugins)
            q.pending_plugins = set(fit.diagnosis.pending_plugins)
        else:
            q.unschedulable_plugins = set()
            q.pending_plugins = set()
        if started is not None:
            self.metrics.schedule_attempt("unschedulable" if rejected else "error", fw.profile_name,
                          time.perf_counter() - started)
        latest = self._pending.get(uid)
        if latest is None or latest.node_name:
            # Deleted, or bound by someone else, meanwhile: nothing to requeue or report.
            self.queue.done(uid)
            rec = self._record_seen(pod)
            rec.attempts = max(rec.attempts, q.attempts)
            return
        q.pod = pod = latest
        self.queue.add_unschedulable_if_not_present(q)
        if nominating is None:
            # Keep the nomination the scheduler holds (its status patch may lag), else the status'.
            self.nominator.add_nominated_pod(pod, self.nominator.nominated_node_for(pod) or None)
        else:
            self.nominator.add_nominated_pod(pod, nominating)
        message = status.message()
        rec = self._record(pod)
        rec.attempts = max(rec.attempts, q.attempts)
        rec.status, rec.message = UNSCHEDULABLE, message
        rec.nominated_node = self.nominator.nominated_node_for(pod)
        await self._record_event(pod, "Warning", "FailedScheduling", truncate_message(message))
        await self._set_unschedulable(pod, message, UNSCHEDULABLE_REASON if rejected else SCHEDULER_ERROR)
        if nominating is not None and nominating != pod.nominated_node_name:
            await self._set_nominated_node(pod, nominating)

    # ---- the binding cycle -------------------------------------------------------------
    async def _binding_cycle(self, fw: Framework, state: CycleState, q: QueuedPodInfo, assumed: Pod,
                             host: str, started: float) -> None:
        try:
            pre_flight = fw.run_pre_bind_pre_flights(state, assumed, host)
            if pre_flight is not None and not pre_flight.is_skip():
                # An error (a rejection is not supported here either)
                await self._binding_failed(fw, state, q, assumed, host, Status.error(pre_flight.message()), None,
                                           started)
                return
            if pre_flight is None or fw.will_wait_on_permit(assumed):
                # v1.37's NominatedNodeNameForExpectation: tell others (e.g. an autoscaler) where the
                # pod is about to go, when Permit or PreBind will hold its binding for a while.
                await self._set_nominated_node(assumed, host)
            status = await fw.wait_on_permit(assumed)
            if status is not None and not status.is_success():
                if status.is_rejected():
                    fit = _single_node_fit_error(q.pod, host, status)
                    await self._binding_failed(fw, state, q, assumed, host, Status(status.code, fit.message()),
                                               fit, started)
                else:
                    await self._binding_failed(fw, state, q, assumed, host, status, None, started)
                return
            # From here on a failure is not "unschedulable": the pod goes to backoffQ.
            self.queue.done(assumed.uid)
            status = await self._pre_bind(fw, state, assumed, host, cancellable=pre_flight is None)
            if status is None or status.is_success():
                status = await self._bind(fw, state, assumed, host)
            if status is not None and not status.is_success():
                await self._binding_failed(fw, state, q, assumed, host, status, None, started)
                return
            fw.run_post_bind(state, assumed, host)
            decision_log.bound(assumed, host)
        except asyncio.CancelledError:
            raise
        except BindConflict as exc:  # settled: bound elsewhere, being deleted, replaced or gone
            log.info("Not binding %s: %s", assumed.key, exc)
            decision_log.binding_failed(assumed, host, str(exc))
            fw.run_unreserve(state, assumed, host)
            if self._forget(assumed):
                self.queue.move_all_to_active_or_backoff(ev.EVENT_ASSIGNED_POD_DELETE, assumed, None)
            self.queue.done(assumed.uid)
            # The watch brings the rest (the rival's binding, the deletion); until then it is not queued.
            rec = self._record_seen(assumed)
            rec.attempts = max(rec.attempts, q.attempts)
            return
        except Exception as exc:
            failed = self.ctx.plugin_errors.failure_status(fw.plugins, exc)
            await self._binding_failed(fw, state, q, assumed, host, failed, None, started)
            return
        rec = self._record_seen(assumed)
        if assumed.uid in self._pending or self.cache.get_pod(assumed.uid) is not None:
            rec.status, rec.node, rec.nominated_node, rec.message = SCHEDULED, host, "", ""
        rec.attempts = max(rec.attempts, q.attempts)
        self.metrics.schedule_attempt("scheduled", fw.profile_name, time.perf_counter() - started)
        first = q.initial_attempt_timestamp
        self.metrics.pod_scheduled(q.attempts, self.clock.now() - first if first is not None else 0.0)
        if q.flushed:
            self.metrics.pod_scheduled_after_flush()

    async def _pre_bind(self, fw: Framework, state: CycleState, assumed: Pod, host: str, *,
                        cancellable: bool) -> Status | None:
        """The PreBind plugins; while they run, preemption may cancel the binding instead of
        deleting the pod (upstream's podsInPreBind). Once they are done, it no longer can."""
        if not cancellable:
            return await fw.run_pre_bind(state, assumed, host)
        registry = self.ctx.pods_in_pre_bind
        entry = registry.add(assumed.uid)
        try:
            task = asyncio.ensure_future(fw.run_pre_bind(state, assumed, host))
            entry.running(task)
            try:
                await asyncio.wait({task})
            except asyncio.CancelledError:
                task.cancel()
                raise
            status = None if task.cancelled() else task.result()
            if not entry.mark_prebound():
                return Status.error(entry.cause)
            return status
        finally:
            registry.remove(assumed.uid)

    async def _bind(self, fw: Framework, state: CycleState, assumed: Pod, host: str) -> Status | None:
        """Extenders' bind first, else the Bind plugins; then FinishBinding and the Scheduled event."""
        status: Status | None
        try:
            if fw.extenders:
                bound = await bind_with_extenders(fw.extenders, assumed, host)
            else:
                bound = False
            status = None if bound else await fw.run_bind(state, assumed, host)
        except BindConflict as exc:
            if exc.settled:
                self.cache.finish_binding(assumed)
                raise
            status = Status.error(str(exc))
        except Exception as exc:
            status = self.ctx.plugin_errors.failure_status(fw.plugins, exc)
        if status is not None and status.code == Code.SKIP:
            status = Status.error("no Bind plugin bound the pod")
        self.cache.finish_binding(assumed)
        if status is None or status.is_success():
            await self._record_event(assumed, "Normal", "Scheduled",
                             f"Successfully assigned {assumed.namespace}/{assumed.name} to {host}")
        return status

    async def _binding_failed(self, fw: Framework, state: CycleState, q: QueuedPodInfo, assumed: Pod, host: str,
                              status: Status, fit: FitError | None, started: float) -> None:
        """Upstream's handleBindingCycleError: Unreserve, forget, and the freed room may help
        others (an AssignedPod delete event; after requeueing when the pod itself was rejected)."""
        decision_log.binding_failed(assumed, host, status.message())
        fw.run_unreserve(state, assumed, host)
        forgotten = self._forget(assumed)
        if forgotten and not status.is_rejected():
            self.queue.move_all_to_active_or_backoff(ev.EVENT_ASSIGNED_POD_DELETE, assumed, None)
        await self._fail(fw, q, status, fit=fit, nominating="", started=started)
        if forgotten and status.is_rejected():
            uid = assumed.uid
            self.queue.move_all_to_active_or_backoff(ev.EVENT_ASSIGNED_POD_DELETE, assumed, None,
                                                     pre_check=lambda p: p.uid != uid)



def _single_node_fit_error(pod: Pod, host: str, status: Status) -> FitError:
    diagnosis = Diagnosis()
    diagnosis.node_to_status.set(host, status)
    diagnosis.add_plugin_status(status)
    return FitError(pod, 1, diagnosis, [host])
