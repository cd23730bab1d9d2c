"""The scheduler: the loop the operator and `simulate` both drive (upstream's scheduleOne).

    watch events ──▶ on_pod_* / on_node_* / on_object* ──▶ cache + queue
    schedule_one(): pop ─▶ snapshot ─▶ scheduling cycle ─▶ assume ─▶ reserve ─▶ permit
                    └──▶ binding cycle (its own task): wait on permit ─▶ prebind ─▶ bind ─▶ postbind

Failures run Unreserve, forget the assumed pod and requeue it with the right event; a
FitError runs the PostFilter plugins (preemption) first and records upstream's message for the
pod (FailedScheduling event, PodScheduled=False condition through the ClusterClient).

Driving it (the operator's kopf handlers, simulate), all from the event loop's thread:
- profiles: `add_profile_spec(spec)` or `set_profile(build_framework(spec, registry, sched.ctx))`,
  `remove_profile(schedulerName)`; frameworks are swapped between cycles.
- watch events, raw dicts as received: `on_pod_add(raw)`, `on_pod_update(raw)`,
  `on_pod_delete(raw | Pod | "ns/name")`, `on_node_add/on_node_update/on_node_delete`,
  `on_object(kind, obj)` / `on_object_delete(kind, key)` for PriorityClass, PDB, PV, PVC,
  StorageClass, CSINode, Namespace, Service, ReplicaSet... A bad pod (ModelError, unknown
  PriorityClass) is reported for that pod only (FailedScheduling, its PodRecord).
- `await run()` (until `stop()`), or `await schedule_one()` per cycle; `await run_until_idle()`
  for simulate (fake clock moved forward over backoffs; bounded attempts per pod).

What other parts use:
- `ctx.nominator` is the queue's Nominator (add_nominated_pod / delete_nominated_pod_if_exists /
  nominated_pods_for_node / nominated_node_for).
- `ctx.record_victims(preemptor, victims)`: a PostFilter plugin reports the pods it
  evicted; they end as Evicted in `outcomes`, and the preemptor lists them as its victims.
- `outcomes[pod key]` (PodRecord): per pod, its status, node, nominated node, victims and last
  message; simulate reads it.
- metrics (ctx.metrics, optional): schedule_attempt(result, profile, seconds),
  pod_scheduled(attempts, seconds), pending_pods(queue, n).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from ..client import ClusterClient
from ..extender import close_extenders
from ..framework import (
    Framework,
)
from ..framework import events as ev
from ..framework.registry import Registry
from ..framework.types import QueuedPodGroupInfo, QueuedPodInfo
from ..plugins import plugin_registry
from ..profile import build_framework
from ..queue.scheduling_queue import BACKOFF_FLUSH_INTERVAL, UNSCHEDULABLE_FLUSH_INTERVAL
from .event_handlers import EventHandlers
from .records import DEFAULT_MAX_ATTEMPTS, DELETED, EVICTED, IGNORED, PENDING, SCHEDULED, UNSCHEDULABLE
from .schedule_one_podgroup import PodGroupCycles

log = logging.getLogger("kubeberth.scheduler")


class Scheduler(EventHandlers, PodGroupCycles):
    """Profiles, queue, cache and the scheduling loop. Single event loop, not thread-safe."""

    # ---- profiles -----------------------------------------------------------------
    @property
    def client(self) -> ClusterClient | None:
        return self.ctx.client

    def add_profile_spec(self, spec: Any, registry: Registry | None = None,
                         profile_name: str | None = None) -> Framework:
        """Build a framework for a SchedulingProfile spec on this scheduler's context and use it.
        Raises ConfigError (the running profile, if any, stays)."""
        if registry is None:
            registry = plugin_registry()
        fw = build_framework(spec, registry, self.ctx, profile_name=profile_name)
        self.set_profile(fw)
        return fw

    def set_profile(self, fw: Framework) -> None:
        """Use `fw` for pods with spec.schedulerName == fw.scheduler_name (added or replaced
        between cycles; a binding in flight finishes with the framework it started with).
        Replacing a framework is a SchedulingProfile Update event for its pods: those the
        previous version left unschedulable or gated are tried again (queue.set_profile)."""
        name = fw.scheduler_name
        if fw.ctx is not self.ctx:
            raise ValueError(f"framework for {name} was built on another SchedulerContext")
        for plugin in fw.plugins.values():
            for k in plugin.reads:  # kinds of plugins of one's own: their changes are events by GroupKind
                self.event_resources.setdefault(k.group_kind, k.group_kind)
        old = self.profiles.get(name)
        self.profiles[name] = fw
        if old is not fw:
            if old is not None:
                self._retire(old)
            self.queue.set_profile(fw)
        for pod in list(self._pending.values()):
            if pod.scheduler_name == name and self.queue.get(pod.uid) is None \
                    and not self.queue.in_flight(pod.uid) and not self.cache.is_assumed(pod.uid):
                self._given_up.discard(pod.uid)
                self.queue.add(pod)
                rec = self._record(pod)
                if rec.status == IGNORED:
                    rec.status, rec.message = PENDING, ""

    def remove_profile(self, scheduler_name: str) -> None:
        """Stop scheduling for `scheduler_name`; its pending pods become Ignored."""
        old = self.profiles.pop(scheduler_name, None)
        if old is not None:
            self._retire(old)
        for q in self.queue.remove_profile(scheduler_name):
            rec = self._record(q.pod)
            rec.status, rec.message = IGNORED, self._ignored_message(q.pod)

    def _retire(self, fw: Framework) -> None:
        """Release what a replaced framework holds: its extenders' connection pools."""
        if fw.extenders:
            self._spawn(close_extenders(fw.extenders))


    # ---- loops ----------------------------------------------------------------------
    async def wait_for_bindings(self) -> None:
        """Wait until every binding cycle started so far has finished."""
        while self._binding_tasks:
            await asyncio.gather(*list(self._binding_tasks), return_exceptions=True)

    async def wait_for_preemptions(self) -> None:
        """Wait until every preemption acting in the background has finished."""
        while self.ctx.preemption_tasks:
            await asyncio.gather(*list(self.ctx.preemption_tasks), return_exceptions=True)

    async def run(self) -> None:
        """The operator's loop: schedule pods as they come, until `stop()`."""
        self._periodic = asyncio.get_running_loop().create_task(self._flush_periodically())
        try:
            while await self.schedule_one():
                # Yield once per cycle: pop() returns at once while activeQ has pods, and the
                # binding cycles, watch events and the periodic flush must run meanwhile.
                await asyncio.sleep(0)
        finally:
            self._periodic.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._periodic

    def stop(self) -> None:
        self.queue.close()

    async def _flush_periodically(self, interval: float = BACKOFF_FLUSH_INTERVAL,
                                  leftover_every: int = int(UNSCHEDULABLE_FLUSH_INTERVAL / BACKOFF_FLUSH_INTERVAL)
                                  ) -> None:
        ticks = 0
        while not self.queue.closed:
            await asyncio.sleep(interval)
            ticks += 1
            self.queue.flush_backoff_completed()
            self.ctx.plugin_errors.summarise()  # the counts of plugins' exceptions due for their line
            if ticks % leftover_every == 0:
                self.queue.flush_unschedulable_leftover()
            for pod in self.cache.cleanup_assumed_pods():
                self.queue.move_all_to_active_or_backoff(ev.EVENT_ASSIGNED_POD_DELETE, pod, None)
            self.report_pending_pods()

    def report_pending_pods(self) -> dict[str, int]:
        """scheduler_pending_pods, and with it the gauges upstream refreshes periodically:
        scheduler_unschedulable_pods and scheduler_cache_size."""
        counts = {name: len(pods) for name, pods in self.queue.pending_pods().items()}
        for name, n in counts.items():
            self.metrics.pending_pods(name, n)
        if self.pod_groups_enabled:  # entries, not pods: a pod group's entry counts once, as "podgroup"
            self.metrics.queued_entities(self.queue.entity_counts())
        self.metrics.unschedulable_pods(self.queue.unschedulable_by_plugin())
        self.metrics.inflight_events(self.queue.inflight_events())
        self.flush_plugin_metrics()
        self.metrics.cache_size(self.cache.node_count(), self.cache.pod_count(), self.cache.assumed_count())
        return counts

    async def run_until_idle(self, *, max_attempts: int = DEFAULT_MAX_ATTEMPTS,
                             max_cycles: int | None = None, advance_clock: bool = True) -> int:
        """For simulate: schedule until nothing more can change. Backoffs are expired by moving
        the (fake) clock forward, not by sleeping. A pod popped more than `max_attempts` times is
        left unschedulable with its last message. Returns the number of cycles run.

        `advance_clock` False (a replay, whose loop owns the clock): stop instead when only a
        timer can change something (a backoff, a virtual-clock Permit deadline: `next_timer`)."""
        cycles = 0
        while True:
            await self._flush_deferred()
            # backoffQ only once nothing else can change: a pod popped early from it would only
            # fail again before the binding and deletions under way have landed.
            q = self.queue.pop_nowait(from_backoff=False)
            if q is None and not self._bindings_running() and not self._background:
                q = self.queue.pop_nowait()
            if q is not None:
                if q.attempts > max_attempts:
                    self._give_up(q)
                    continue
                await self.schedule_popped(q)
                cycles += 1
                await asyncio.sleep(0)  # let the binding cycle just started run
                # A preemption's API calls take no time here: its victims are gone before the
                # next pod is tried, as simulate's contract says.
                await self.wait_for_preemptions()
                if max_cycles is not None and cycles >= max_cycles:
                    break
                continue
            if self._bindings_running():
                await asyncio.wait(list(self._binding_tasks), return_when=asyncio.FIRST_COMPLETED)
                continue
            if self._background:
                await asyncio.gather(*list(self._background), return_exceptions=True)
                continue
            expiry = self.next_timer()
            if expiry is None:
                break
            wait = expiry - self.clock.now()
            if wait > 0:
                if not advance_clock:
                    break
                advance: Callable[[float], None] | None = getattr(self.clock, "advance", None)
                if advance is not None:
                    advance(wait)
                else:
                    await asyncio.sleep(wait)
            self.queue.flush_backoff_completed()
            if self.ctx.waiting_pods.expire_due(self.clock.now()):
                await asyncio.sleep(0)  # the rejected binding cycles take it from here
        self.report_pending_pods()
        self.ctx.plugin_errors.summarise(everything=True)  # what the plugins raised and was not logged yet
        return cycles

    def _bindings_running(self) -> bool:
        """Whether a binding cycle can still move on its own: one is under way that does not wait
        at Permit for a virtual-clock deadline (those wait for whoever moves the clock)."""
        if not self._binding_tasks:
            return False
        if self.ctx.waiting_pods.virtual_clock is None:
            return True
        return len(self._binding_tasks) > self.ctx.waiting_pods.parked()

    def next_timer(self) -> float | None:
        """When the next of the scheduler's own timers is due: a backoff's expiry, a Permit
        deadline on the virtual clock (None: none). upstream's periodic flush of pods left
        unschedulable is `queue.next_unschedulable_timeout()`, apart: simulate runs it itself."""
        times = [t for t in (self.queue.next_backoff_expiry(), self.ctx.waiting_pods.next_deadline())
                 if t is not None]
        return min(times) if times else None

    def _give_up(self, q: QueuedPodInfo) -> None:
        if isinstance(q, QueuedPodGroupInfo):
            for m in q.members:
                self._give_up(m)
            self.queue.add_attempted_pod_group(q, "error")
            return
        uid = q.pod.uid
        self._given_up.add(uid)
        self.queue.done(uid)
        rec = self._record(q.pod)
        if rec.status not in (SCHEDULED, EVICTED, DELETED):
            rec.status = UNSCHEDULABLE
