"""The state every part of the scheduler shares (upstream's Scheduler struct)."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .. import features
from ..cache.cache import SchedulerCache
from ..cache.objects import ObjectStore
from ..cache.pod_groups import POD_GROUP_STATES, PodGroupStates
from ..cache.snapshot import Snapshot
from ..client import ClusterClient
from ..clock import Clock, FakeClock
from ..framework import (
    Framework,
    SchedulerContext,
)
from ..framework.context import NO_METRICS, MetricsRecorder
from ..model import Pod
from ..queue.scheduling_queue import PriorityQueue
from .nominations import LoggedNominator
from .records import EVICTED, UNSCHEDULABLE, PodRecord
from .watched import EVENT_RESOURCES

if TYPE_CHECKING:
    from .explain import Explanation
    from .group_explain import GroupAttempt

log = logging.getLogger("kubeberth.scheduler")


class SchedulerBase:
    """The scheduler's state, its records of pods, and its calls to the cluster client and
    metrics; the event handlers, the cycles and the loops build on it."""


    def __init__(self, *, client: ClusterClient | None = None, clock: Clock | None = None,
                 rng: random.Random | None = None, seed: int = 0, objects: ObjectStore | None = None,
                 metrics: MetricsRecorder | None = None,
                 cache_ttl: float = 0.0, pod_max_in_unschedulable: float = 5 * 60.0,
                 keep_deleted_records: bool = True) -> None:
        self.clock: Clock = clock or FakeClock()
        self.ctx = SchedulerContext(objects=objects, client=client, clock=self.clock,
                                    rng=rng if rng is not None else random.Random(seed), metrics=metrics)
        self.nominator = LoggedNominator(pod_exists=self._is_pending)
        self.queue = PriorityQueue(clock=self.clock, nominator=self.nominator,
                                   pod_max_in_unschedulable=pod_max_in_unschedulable)
        self.queue.on_incoming = lambda queue, event: self.metrics.queue_incoming_pod(queue, event)
        self.queue.on_hint = lambda *labels_and_seconds: self.metrics.queueing_hint_duration(*labels_and_seconds)
        self.ctx.nominator = self.nominator
        self.ctx.record_victims = self.record_victims
        self.ctx.activate = self.queue.activate
        self.ctx.lookup_pod = self._lookup_pod
        self.ctx.list_pods = self._list_pods
        self.cache = SchedulerCache(clock=self.clock, ttl=cache_ttl)
        # PodGroups and their pods (GenericWorkload): what GangScheduling and the pod-group cycle read.
        self.pod_groups_enabled = features.current().generic_workload
        self.pod_groups = PodGroupStates(self.cache.is_assumed, self.cache.get_pod, tracked=True)
        self.cache.on_assumed_change = self.pod_groups.assumed_changed
        self.ctx.shared_indexes[POD_GROUP_STATES] = self.pod_groups
        self.snapshot = Snapshot()
        self.profiles: dict[str, Framework] = {}
        self.outcomes: dict[str, PodRecord] = {}
        # simulate reports evicted pods; a long-running operator drops the records of deleted pods.
        self.keep_deleted_records = keep_deleted_records
        self.node_errors: dict[str, str] = {}
        # PodGroup key -> why it is not in force (malformed; in simulate, refused by admission)
        self.pod_group_errors: dict[str, str] = {}
        # kind -> the ClusterEvent resource its changes are (the table's, and the kinds the
        # profiles' plugins declare they read: set_profile adds them).
        self.event_resources: dict[str, str] = dict(EVENT_RESOURCES)
        self._plugin_metrics_flushed = 0.0  # time.monotonic() of the last per-plugin metrics report
        self._pending: dict[str, Pod] = {}          # uid -> latest unassigned pod (any profile)
        self._wait_priority: dict[str, Mapping[str, Any]] = {}  # uid -> raw pod naming an unknown class
        self._reported_errors: dict[str, str] = {}  # uid -> the malformed-pod error last reported
        self._uids: dict[str, str] = {}             # pod key -> uid
        self._seqs: dict[str, int] = {}             # uid -> arrival order
        self._given_up: set[str] = set()
        self._binding_tasks: set[asyncio.Task[None]] = set()
        self._background: set[asyncio.Task[Any]] = set()
        self._deferred: list[Coroutine[Any, Any, Any]] = []
        self._periodic: asyncio.Task[None] | None = None
        # Whether this replica may write (it holds the leader Lease): checked before every cycle.
        self.may_write: Callable[[], bool] = lambda: True
        # Explanations (scheduler/explain.py): which pods get one, and who is told after each attempt.
        self.explain_pods: Callable[[Pod], bool] | None = None
        self.on_explained: Callable[[Pod, Explanation], Coroutine[Any, Any, None]] | None = None
        self._explaining: Explanation | None = None
        # pod group key -> its latest attempt (scheduler/group_explain.py), for simulate and --explain
        self.group_attempts: dict[str, GroupAttempt] = {}


    @staticmethod
    def _ignored_message(pod: Pod) -> str:
        return f"no profile for schedulerName {pod.scheduler_name}"

    # ---- records --------------------------------------------------------------------
    def _record(self, pod: Pod | None = None, *, key: str = "", uid: str = "") -> PodRecord:
        key = pod.key if pod is not None else key
        rec = self.outcomes.get(key)
        if rec is None:
            rec = self.outcomes[key] = PodRecord(key, pod.uid if pod is not None else uid)
        elif pod is not None:
            rec.uid = pod.uid
        return rec

    def refuse_pod(self, key: str, message: str) -> None:
        """An input pod the scheduler is not given (a simulation's input that no API server would
        hold): its outcome is unschedulable with `message`, and nothing else is touched."""
        rec = self._record(key=key, uid=f"refused:{key}")
        rec.status, rec.message, rec.error = UNSCHEDULABLE, message, True

    def _record_seen(self, pod: Pod) -> PodRecord:
        """The record of a pod a cycle has just handled. In a long-running scheduler
        (keep_deleted_records False), a pod deleted meanwhile gets none back: its deletion
        removed it, and nothing would remove it again."""
        if (not self.keep_deleted_records and pod.key not in self.outcomes
                and self._uids.get(pod.key) != pod.uid):
            return PodRecord(pod.key, pod.uid)
        return self._record(pod)

    def record_victims(self, preemptor: Pod, victims: Iterable[Pod]) -> None:
        """A PostFilter plugin evicted `victims` for `preemptor` (ctx.record_victims)."""
        rec = self._record(preemptor)
        for v in victims:
            if v.key not in rec.victims:
                rec.victims.append(v.key)
            vrec = self._record(v)
            vrec.status, vrec.preempted_by = EVICTED, preemptor.key
            vrec.message = f"preempted by {preemptor.key}"

    def _lookup_pod(self, uid: str) -> Pod | None:
        return self.cache.get_pod(uid) or self._pending.get(uid)

    def _list_pods(self, namespace: str | None = None) -> list[Pod]:
        """The cache's pods (bound and assumed), then the pending ones not assumed yet."""
        out = [p for p in self.cache.pods() if namespace is None or p.namespace == namespace]
        seen = {p.uid for p in out}
        out.extend(p for uid, p in self._pending.items()
                   if uid not in seen and (namespace is None or p.namespace == namespace))
        return out

    def all_pods(self) -> list[Pod]:
        """Every pod the scheduler knows: the cache's (bound and assumed), then the pending ones."""
        return self._list_pods()

    def _is_pending(self, pod: Pod) -> bool:
        p = self._pending.get(pod.uid)
        return p is not None and not p.node_name

    def pending_pod(self, uid: str) -> Pod | None:
        return self._pending.get(uid)

    # ---- client calls ---------------------------------------------------------------
    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Run a client call in the background (from sync ingestion); deferred without a loop."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._deferred.append(coro)
            return
        task = loop.create_task(self._guard(coro))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _flush_deferred(self) -> None:
        while self._deferred:
            coro = self._deferred.pop(0)
            await self._guard(coro)

    @staticmethod
    async def _guard(coro: Coroutine[Any, Any, Any]) -> None:
        try:
            await coro
        except Exception as exc:  # a failed status patch or event must not stop the scheduler
            log.warning("cluster client call failed: %s", exc)

    @property
    def metrics(self) -> MetricsRecorder:
        return self.ctx.metrics if self.ctx.metrics is not None else NO_METRICS

    # The cluster writes of a scheduling outcome; none without a client (a bare scheduler in tests).
    async def _record_event(self, pod: Pod, event_type: str, reason: str, message: str) -> None:
        if self.ctx.client is not None:
            await self._guard(self.ctx.client.record_event(pod, event_type, reason, message))

    async def _set_unschedulable(self, pod: Pod, message: str, reason: str) -> None:
        if self.ctx.client is not None:
            await self._guard(self.ctx.client.set_unschedulable(pod, message, reason))

    async def _set_nominated_node(self, pod: Pod, node_name: str) -> None:
        if self.ctx.client is not None:
            await self._guard(self.ctx.client.set_nominated_node(pod, node_name))
