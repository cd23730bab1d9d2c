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
- watch events, raw dicts as received: `on_pod_add(raw)`, `on_pod_update(old_raw | None, new_raw)`,
  `on_pod_delete(raw | Pod | "ns/name")`, `on_node_add/on_node_update/on_node_delete`,
  `on_object(kind, obj)` / `on_object_delete(kind, key)` for PriorityClass, PDB, PV, PVC,
  StorageClass, CSINode, Namespace, Service, ReplicaSet... A bad pod (ModelError, unknown
  PriorityClass) is reported for that pod only (FailedScheduling, its PodRecord).
- `await run()` (until `stop()`), or `await schedule_one()` per cycle; `await run_until_idle()`
  for simulate (fake clock moved forward over backoffs; bounded attempts per pod).

What other parts use:
- `ctx.nominator` is the queue's Nominator (add_nominated_pod / delete_nominated_pod_if_exists /
  nominated_pods_for_node / nominated_node_for).
- `ctx.extras["record_victims"](preemptor, victims)`: a PostFilter plugin reports the pods it
  evicted; they end as Evicted in `outcomes`, and the preemptor lists them as its victims.
- `outcomes[pod key]` (PodRecord): per pod, its status, node, nominated node, victims and last
  message; simulate reads it.
- metrics (ctx.metrics, optional): schedule_attempt(result, profile, seconds),
  pod_scheduled(attempts, seconds), pending_pods(queue, n).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import random
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any

from .cache.cache import CacheError, SchedulerCache
from .cache.objects import ObjectStore, object_key
from .cache.snapshot import Snapshot
from .client import SCHEDULER_ERROR, UNSCHEDULABLE_REASON, BindConflict
from .clock import Clock, FakeClock
from .extender import bind_with_extenders, close_extenders
from .framework import (
    CycleState,
    Diagnosis,
    FitError,
    Framework,
    SchedulerContext,
    Status,
)
from .framework import events as ev
from .framework.registry import Registry
from .framework.status import Code
from .framework.types import QueuedPodInfo
from .model import ModelError, Node, Pod, placeholder_pod
from .profile import build_framework
from .queue.nominator import Nominator
from .queue.scheduling_queue import PriorityQueue
from .schedule_one import NoNodesAvailable, SchedulingError, schedule_pod

log = logging.getLogger(__name__)

# Record statuses (simulate's contract uses the same words).
PENDING = "Pending"
SCHEDULED = "Scheduled"
UNSCHEDULABLE = "Unschedulable"
EXISTING = "Existing"
EVICTED = "Evicted"
IGNORED = "Ignored"
DELETED = "Deleted"

EVENT_MESSAGE_LIMIT = 1024  # upstream's validation.NoteLengthLimit for event messages
DEFAULT_MAX_ATTEMPTS = 10   # run_until_idle: attempts before a pod is left unschedulable

# Kinds whose changes may make pods schedulable (volume plugins register them).
_STORAGE_KINDS = {
    "PersistentVolume": ev.PERSISTENT_VOLUME, "PersistentVolumeClaim": ev.PERSISTENT_VOLUME_CLAIM,
    "StorageClass": ev.STORAGE_CLASS, "CSINode": ev.CSI_NODE, "CSIDriver": ev.CSI_DRIVER,
    "CSIStorageCapacity": ev.CSI_STORAGE_CAPACITY, "VolumeAttachment": ev.VOLUME_ATTACHMENT,
}


class PodRecord:
    """What became of one pod. `status` is Pending, Scheduled, Unschedulable, Existing,
    Evicted, Ignored or Deleted; `error` marks a pod that could not be read (bad object,
    unknown PriorityClass)."""

    __slots__ = ("attempts", "error", "key", "message", "node", "nominated_node", "preempted_by",
                 "status", "uid", "victims")

    def __init__(self, key: str, uid: str = "", status: str = PENDING) -> None:
        self.key = key
        self.uid = uid
        self.status = status
        self.node = ""
        self.nominated_node = ""
        self.victims: list[str] = []
        self.message = ""
        self.attempts = 0
        self.preempted_by = ""
        self.error = False

    def __repr__(self) -> str:
        return f"PodRecord({self.key}: {self.status} node={self.node!r} msg={self.message!r})"


def _raw_key(raw: Mapping[str, Any]) -> str:
    meta = raw.get("metadata") or {} if isinstance(raw, Mapping) else {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


def _raw_uid(raw: Mapping[str, Any]) -> str:
    meta = raw.get("metadata") or {} if isinstance(raw, Mapping) else {}
    return str(meta.get("uid") or _raw_key(raw))


def pod_on_node(pod: Pod, node_name: str) -> Pod:
    """A copy of `pod` with spec.nodeName set (upstream's assumed pod)."""
    c = copy.copy(pod)
    spec = {**pod.spec, "nodeName": node_name}
    c.raw = {**pod.raw, "spec": spec}
    c.spec = spec
    c.node_name = node_name
    return c


def truncate_message(message: str) -> str:
    if len(message) <= EVENT_MESSAGE_LIMIT:
        return message
    suffix = " ..."
    return message[:EVENT_MESSAGE_LIMIT - len(suffix)] + suffix


class Scheduler:
    """Profiles, queue, cache and the scheduling loop. Single event loop, not thread-safe."""

    def __init__(self, *, client: Any = None, clock: Clock | None = None, rng: random.Random | None = None,
                 seed: int = 0, objects: ObjectStore | None = None, metrics: Any = None,
                 cache_ttl: float = 0.0, pod_max_in_unschedulable: float = 5 * 60.0,
                 keep_deleted_records: bool = True) -> None:
        self.clock: Clock = clock or FakeClock()
        self.ctx = SchedulerContext(objects=objects, client=client, clock=self.clock,
                                    rng=rng if rng is not None else random.Random(seed), metrics=metrics)
        self.nominator = Nominator(pod_exists=self._is_pending)
        self.queue = PriorityQueue(clock=self.clock, nominator=self.nominator,
                                   pod_max_in_unschedulable=pod_max_in_unschedulable)
        self.queue.namespace_labels = self.ctx.objects.namespace_labels
        self.ctx.nominator = self.nominator
        self.ctx.extras["record_victims"] = self.record_victims
        self.ctx.extras["scheduler"] = self
        self.cache = SchedulerCache(clock=self.clock, ttl=cache_ttl)
        self.snapshot = Snapshot()
        self.profiles: dict[str, Framework] = {}
        self.outcomes: dict[str, PodRecord] = {}
        # simulate reports evicted pods; a long-running operator drops the records of deleted pods.
        self.keep_deleted_records = keep_deleted_records
        self.node_errors: dict[str, str] = {}
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

    # ---- profiles -----------------------------------------------------------------
    @property
    def client(self) -> Any:
        return self.ctx.client

    def add_profile_spec(self, spec: Any, registry: Registry | None = None,
                         profile_name: str | None = None) -> Framework:
        """Build a framework for a SchedulingProfile spec on this scheduler's context and use it.
        Raises ConfigError (the running profile, if any, stays)."""
        if registry is None:
            from .plugins import in_tree_registry

            registry = in_tree_registry()
        fw = build_framework(spec, registry, self.ctx, profile_name=profile_name)
        self.set_profile(fw)
        return fw

    def set_profile(self, fw: Framework) -> None:
        """Use `fw` for pods with spec.schedulerName == fw.scheduler_name (added or replaced
        between cycles; a binding in flight finishes with the framework it started with)."""
        name = fw.scheduler_name
        if fw.ctx is not self.ctx:
            raise ValueError(f"framework for {name} was built on another SchedulerContext")
        old = self.profiles.get(name)
        self.profiles[name] = fw
        if old is not None and old is not fw:
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

    def record_victims(self, preemptor: Pod, victims: Iterable[Pod]) -> None:
        """A PostFilter plugin evicted `victims` for `preemptor` (ctx.extras["record_victims"])."""
        rec = self._record(preemptor)
        for v in victims:
            if v.key not in rec.victims:
                rec.victims.append(v.key)
            vrec = self._record(v)
            vrec.status, vrec.preempted_by = EVICTED, preemptor.key
            vrec.message = f"preempted by {preemptor.key}"

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

    async def _call(self, method: str, *args: Any) -> None:
        client = self.ctx.client
        fn = getattr(client, method, None) if client is not None else None
        if fn is None:
            return
        await self._guard(fn(*args))

    def _observe(self, name: str, *args: Any) -> None:
        metrics = self.ctx.metrics
        fn = getattr(metrics, name, None) if metrics is not None else None
        if fn is not None:
            try:
                fn(*args)
            except Exception as exc:
                log.debug("metrics %s failed: %s", name, exc)

    # ---- pods -----------------------------------------------------------------------
    def _parse_pod(self, raw: Mapping[str, Any]) -> Pod | None:
        """The Pod with its priority resolved; None (and the error recorded) when it cannot be."""
        uid = _raw_uid(raw)
        seq = self._seqs.setdefault(uid, len(self._seqs))
        try:
            pod = Pod(raw, seq=seq)
        except ModelError as exc:
            self._pod_error(raw, str(exc), None)
            return None
        try:
            prio, policy = self.ctx.objects.priorities.resolve(pod.spec)
        except ModelError as exc:
            if pod.node_name:
                # Running already: it holds its room whatever its class; keep spec.priority (or 0).
                log.warning("pod %s: %s; using priority %d", pod.key, exc, pod.priority)
                self._wait_priority.pop(pod.uid, None)
                return pod
            self._wait_priority[pod.uid] = raw
            self._pod_error(raw, str(exc), pod)
            return None
        pod.priority, pod.preemption_policy = prio, policy
        self._wait_priority.pop(pod.uid, None)
        self._reported_errors.pop(pod.uid, None)
        return pod

    def _pod_error(self, raw: Mapping[str, Any], message: str, pod: Pod | None) -> None:
        """A pod we cannot schedule as given: report it, for that pod only, and keep going.
        Upstream's SchedulerError: one FailedScheduling event and PodScheduled=False naming the
        problem, written once per problem (the status patch comes back as an update, which must
        not report it again); an update that fixes the pod brings it back to the queue."""
        key, uid = _raw_key(raw), _raw_uid(raw)
        log.warning("%s", message if key in message else f"pod {key}: {message}")
        old = self._pending.pop(uid, None)
        if old is not None:
            self.queue.delete(old)
        rec = self._record(pod, key=key, uid=uid)
        rec.status, rec.message, rec.error = UNSCHEDULABLE, message, True
        target = pod if pod is not None else placeholder_pod(raw)
        if (target is None or target.node_name or target.scheduler_name not in self.profiles
                or self._reported_errors.get(uid) == message):
            return
        self._reported_errors[uid] = message
        self._spawn(self._call("record_event", target, "Warning", "FailedScheduling", truncate_message(message)))
        self._spawn(self._call("set_unschedulable", target, message, SCHEDULER_ERROR))

    def on_pod_add(self, raw: Mapping[str, Any]) -> Pod | None:
        """A pod appeared (or is listed at start). Returns its model, None when it is unusable."""
        pod = self._parse_pod(raw)
        if pod is not None:
            self._ingest_pod(pod)
        return pod

    def on_pod_update(self, old_raw: Mapping[str, Any] | None, new_raw: Mapping[str, Any]) -> Pod | None:
        """A pod changed; `old_raw` may be None (the scheduler knows the version it had)."""
        pod = self._parse_pod(new_raw)
        if pod is not None:
            self._ingest_pod(pod)
        return pod

    def _ingest_pod(self, pod: Pod) -> None:
        uid = pod.uid
        self._uids[pod.key] = uid
        pending_old = self._pending.get(uid)
        cached = self.cache.get_pod(uid)
        if pod.node_name:
            if pod.is_terminal:
                # A finished pod frees its node: upstream's informers do not even list Succeeded and
                # Failed pods, so it leaves the cache like a deleted one.
                if pending_old is not None:
                    del self._pending[uid]
                    self.queue.delete(pending_old)
                if cached is not None:
                    self.cache.remove_pod(cached)
                    self.queue.move_all_to_active_or_backoff(ev.EVENT_ASSIGNED_POD_DELETE, cached, None)
                if pod.key not in self.outcomes:
                    rec = self._record(pod)
                    rec.status, rec.node = EXISTING, pod.node_name
                return
            fresh = pod.key not in self.outcomes
            rec = self._record(pod)
            if pending_old is not None:
                # Bound (by us or by someone else): it leaves the queue, the cache confirms it.
                del self._pending[uid]
                self._given_up.discard(uid)
                self.queue.delete(pending_old)
                rec.status, rec.node, rec.nominated_node, rec.message = SCHEDULED, pod.node_name, "", ""
                self.cache.add_pod(pod)
                self.queue.assigned_pod_added(pod)
            elif cached is None or self.cache.is_assumed(uid):
                if fresh or rec.status == DELETED:
                    rec.status = EXISTING
                rec.node = pod.node_name
                self.cache.add_pod(pod)
                self.queue.assigned_pod_added(pod)
            else:
                self.cache.update_pod(cached, pod)
                rec.node = pod.node_name
                for e in ev.pod_scheduling_properties_change(pod, cached):
                    self.queue.assigned_pod_updated(cached, pod, e)
            return
        # Unassigned.
        if cached is not None and not self.cache.is_assumed(uid):
            log.error("pod %s was bound to %s and is now unassigned", pod.key, cached.node_name)
            self.cache.remove_pod(cached)
        if pod.is_terminal:
            if pending_old is not None:
                del self._pending[uid]
                self.queue.delete(pending_old)
            rec = self._record(pod)
            if rec.status in (PENDING, UNSCHEDULABLE):
                rec.status, rec.message = IGNORED, f"pod phase is {pod.phase}"
            return
        self._pending[uid] = pod
        rec = self._record(pod)
        if pod.scheduler_name not in self.profiles:
            rec.status, rec.message = IGNORED, self._ignored_message(pod)
            return
        if rec.status == IGNORED or (rec.error and pending_old is None):
            rec.status, rec.message, rec.error = PENDING, "", False
        if self.cache.is_assumed(uid):
            return  # being bound; the latest version is kept for a requeue
        if uid in self._given_up:
            return
        if pending_old is None:
            self.queue.add(pod)
        else:
            self.queue.update(pending_old, pod)

    def on_pod_delete(self, obj: Mapping[str, Any] | Pod | str) -> None:
        """A pod was deleted: a raw object, a Pod, or its "namespace/name" key."""
        if isinstance(obj, Pod):
            uid, key = obj.uid, obj.key
        elif isinstance(obj, str):
            key = obj
            uid = self._uids.get(key, key)
        else:
            uid, key = _raw_uid(obj), _raw_key(obj)
        self._wait_priority.pop(uid, None)
        self._reported_errors.pop(uid, None)
        self._given_up.discard(uid)
        pending = self._pending.pop(uid, None)
        nominated = ""
        if pending is not None:
            nominated = self.nominator.nominated_node_for(pending) or pending.nominated_node_name
            self.queue.delete(pending)
        rejected = False
        wp = self.ctx.waiting_pods.get(uid)
        if wp is not None:
            wp.reject("", "removed")
            rejected = True
        cached = self.cache.get_pod(uid)
        if cached is not None:
            self.cache.remove_pod(cached)
            self.queue.move_all_to_active_or_backoff(ev.EVENT_ASSIGNED_POD_DELETE, cached, None)
        elif rejected and pending is not None:
            self.queue.move_all_to_active_or_backoff(ev.EVENT_ASSIGNED_POD_DELETE, pending, None)
        elif pending is not None and nominated:
            # The room it was nominated to is free again for pods of lower or equal priority.
            prio = pending.priority
            self.queue.move_all_to_active_or_backoff(ev.EVENT_UNSCHEDULED_POD_DELETE, pending, None,
                                                     pre_check=lambda p: p.priority <= prio)
        self._seqs.pop(uid, None)
        if self._uids.get(key) == uid:
            del self._uids[key]
        rec = self.outcomes.get(key)
        if rec is not None and rec.uid in ("", uid):
            if not self.keep_deleted_records:
                del self.outcomes[key]
            elif rec.status != EVICTED:
                rec.status = DELETED

    # ---- nodes ----------------------------------------------------------------------
    def _parse_node(self, raw: Mapping[str, Any]) -> Node | None:
        try:
            node = Node(raw)
        except ModelError as exc:
            name = str(((raw.get("metadata") or {}) if isinstance(raw, Mapping) else {}).get("name") or "?")
            self.node_errors[name] = str(exc)
            log.warning("skipping node %s: %s", name, exc)
            return None
        self.node_errors.pop(node.name, None)
        return node

    def on_node_add(self, raw: Mapping[str, Any]) -> Node | None:
        node = self._parse_node(raw)
        if node is None:
            return None
        old = self.cache.node(node.name)
        if old is not None:
            self._node_updated(old, node)
            return node
        self.cache.add_node(node)
        self.queue.move_all_to_active_or_backoff(ev.EVENT_NODE_ADD, None, node)
        return node

    def on_node_update(self, old_raw: Mapping[str, Any] | None, new_raw: Mapping[str, Any]) -> Node | None:
        node = self._parse_node(new_raw)
        if node is None:
            return None
        old = self.cache.node(node.name)
        if old is None:
            self.cache.add_node(node)
            self.queue.move_all_to_active_or_backoff(ev.EVENT_NODE_ADD, None, node)
            return node
        self._node_updated(old, node)
        return node

    def _node_updated(self, old: Node, new: Node) -> None:
        self.cache.update_node(new)
        for e in ev.node_scheduling_properties_change(new, old):
            self.queue.move_all_to_active_or_backoff(e, old, new)

    def on_node_delete(self, obj: Mapping[str, Any] | str) -> None:
        """A node was deleted: its raw object or its name. Pods still on it keep a NodeInfo
        without node in the cache until they go; it no longer appears in snapshots."""
        name = obj if isinstance(obj, str) else str((obj.get("metadata") or {}).get("name") or "")
        self.node_errors.pop(name, None)
        self.cache.remove_node(name)

    # ---- other objects ---------------------------------------------------------------
    def on_object(self, kind: str, obj: Mapping[str, Any]) -> None:
        """PriorityClass, PodDisruptionBudget, PV, PVC, StorageClass, CSINode, Namespace,
        Service, ReplicaSet...: stored for plugins; storage changes may move pods."""
        key = object_key(obj)
        existed = self.ctx.objects.get(kind, key) is not None
        self.ctx.objects.put(kind, obj)
        resource = _STORAGE_KINDS.get(kind)
        if resource is not None:
            action = ev.ActionType.UPDATE_OTHER if existed else ev.ActionType.ADD
            self.queue.move_all_to_active_or_backoff(ev.ClusterEvent(resource, action), None, obj)
        if kind == "PriorityClass":
            for raw in list(self._wait_priority.values()):
                self.on_pod_add(raw)

    def on_object_delete(self, kind: str, key: str) -> None:
        self.ctx.objects.delete(kind, key)
        resource = _STORAGE_KINDS.get(kind)
        if resource is not None:
            self.queue.move_all_to_active_or_backoff(ev.ClusterEvent(resource, ev.ActionType.DELETE))

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
        try:
            result = await schedule_pod(fw, state, pod)
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
        except Exception as exc:
            log.exception("scheduling %s failed", pod.key)
            await self._fail(fw, q, Status.error(str(exc) or type(exc).__name__), nominating="", started=started)
            return
        host = result.suggested_host
        assumed = pod_on_node(pod, host)
        try:
            self.cache.assume_pod(assumed)
        except CacheError as exc:
            await self._fail(fw, q, Status.error(str(exc)), nominating="", started=started)
            return
        self.nominator.delete_nominated_pod_if_exists(assumed)
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
        task.add_done_callback(self._binding_tasks.discard)

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
                log.exception("PostFilter for %s failed", q.pod.key)
                result, status = None, Status.error(str(exc))
            fit.diagnosis.post_filter_msg = status.message() if status is not None else ""
            if result is not None:
                nominating = result.nominated_node_name
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
        if fit is not None:
            q.unschedulable_plugins = set(fit.diagnosis.unschedulable_plugins)
            q.pending_plugins = set(fit.diagnosis.pending_plugins)
        else:
            q.unschedulable_plugins = set()
            q.pending_plugins = set()
        if started is not None:
            self._observe("schedule_attempt", "unschedulable" if rejected else "error", fw.profile_name,
                          time.perf_counter() - started)
        latest = self._pending.get(uid)
        if latest is None or latest.node_name:
            # Deleted, or bound by someone else, meanwhile: nothing to requeue or report.
            self.queue.done(uid)
            self._record(pod).attempts = max(self._record(pod).attempts, q.attempts)
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
        await self._call("record_event", pod, "Warning", "FailedScheduling", truncate_message(message))
        await self._call("set_unschedulable", pod, message, UNSCHEDULABLE_REASON if rejected else SCHEDULER_ERROR)
        if nominating is not None and nominating != pod.nominated_node_name:
            await self._call("set_nominated_node", pod, nominating)

    # ---- the binding cycle -------------------------------------------------------------
    async def _binding_cycle(self, fw: Framework, state: CycleState, q: QueuedPodInfo, assumed: Pod,
                             host: str, started: float) -> None:
        try:
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
            status = await fw.run_pre_bind(state, assumed, host)
            if status is None or status.is_success():
                status = await self._bind(fw, state, assumed, host)
            if status is not None and not status.is_success():
                await self._binding_failed(fw, state, q, assumed, host, status, None, started)
                return
            fw.run_post_bind(state, assumed, host)
        except asyncio.CancelledError:
            raise
        except BindConflict as exc:  # settled: bound elsewhere, being deleted, replaced or gone
            log.info("Not binding %s: %s", assumed.key, exc)
            fw.run_unreserve(state, assumed, host)
            if self._forget(assumed):
                self.queue.move_all_to_active_or_backoff(ev.EVENT_ASSIGNED_POD_DELETE, assumed, None)
            self.queue.done(assumed.uid)
            # The watch brings the rest (the rival's binding, the deletion); until then it is not queued.
            self._record(assumed).attempts = max(self._record(assumed).attempts, q.attempts)
            return
        except Exception as exc:
            log.exception("binding %s to %s failed", assumed.key, host)
            await self._binding_failed(fw, state, q, assumed, host, Status.error(str(exc) or type(exc).__name__),
                                       None, started)
            return
        rec = self._record(assumed)
        if assumed.uid in self._pending or self.cache.get_pod(assumed.uid) is not None:
            rec.status, rec.node, rec.nominated_node, rec.message = SCHEDULED, host, "", ""
        rec.attempts = max(rec.attempts, q.attempts)
        self._observe("schedule_attempt", "scheduled", fw.profile_name, time.perf_counter() - started)
        first = q.initial_attempt_timestamp
        self._observe("pod_scheduled", q.attempts, self.clock.now() - first if first is not None else 0.0)

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
            status = Status.error(str(exc) or type(exc).__name__)
        if status is not None and status.code == Code.SKIP:
            status = Status.error("no Bind plugin bound the pod")
        self.cache.finish_binding(assumed)
        if status is None or status.is_success():
            await self._call("record_event", assumed, "Normal", "Scheduled",
                             f"Successfully assigned {assumed.namespace}/{assumed.name} to {host}")
        return status

    async def _binding_failed(self, fw: Framework, state: CycleState, q: QueuedPodInfo, assumed: Pod, host: str,
                              status: Status, fit: FitError | None, started: float) -> None:
        """Upstream's handleBindingCycleError: Unreserve, forget, and the freed room may help
        others (an AssignedPod delete event; after requeueing when the pod itself was rejected)."""
        fw.run_unreserve(state, assumed, host)
        forgotten = self._forget(assumed)
        if forgotten and not status.is_rejected():
            self.queue.move_all_to_active_or_backoff(ev.EVENT_ASSIGNED_POD_DELETE, assumed, None)
        await self._fail(fw, q, status, fit=fit, nominating="", started=started)
        if forgotten and status.is_rejected():
            uid = assumed.uid
            self.queue.move_all_to_active_or_backoff(ev.EVENT_ASSIGNED_POD_DELETE, assumed, None,
                                                     pre_check=lambda p: p.uid != uid)

    # ---- loops ----------------------------------------------------------------------
    async def wait_for_bindings(self) -> None:
        """Wait until every binding cycle started so far has finished."""
        while self._binding_tasks:
            await asyncio.gather(*list(self._binding_tasks), return_exceptions=True)

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

    async def _flush_periodically(self, interval: float = 1.0, leftover_every: int = 30) -> None:
        ticks = 0
        while not self.queue.closed:
            await asyncio.sleep(interval)
            ticks += 1
            self.queue.flush_backoff_completed()
            if ticks % leftover_every == 0:
                self.queue.flush_unschedulable_leftover()
            for pod in self.cache.cleanup_assumed_pods():
                self.queue.move_all_to_active_or_backoff(ev.EVENT_ASSIGNED_POD_DELETE, pod, None)
            self.report_pending_pods()

    def report_pending_pods(self) -> dict[str, int]:
        counts = {name: len(pods) for name, pods in self.queue.pending_pods().items()}
        for name, n in counts.items():
            self._observe("pending_pods", name, n)
        return counts

    async def run_until_idle(self, *, max_attempts: int = DEFAULT_MAX_ATTEMPTS,
                             max_cycles: int | None = None) -> int:
        """For simulate: schedule until nothing more can change. Backoffs are expired by moving
        the (fake) clock forward, not by sleeping. A pod popped more than `max_attempts` times is
        left unschedulable with its last message. Returns the number of cycles run."""
        cycles = 0
        while True:
            await self._flush_deferred()
            q = self.queue.pop_nowait()
            if q is not None:
                if q.attempts > max_attempts:
                    self._give_up(q)
                    continue
                await self.schedule_popped(q)
                cycles += 1
                await asyncio.sleep(0)  # let the binding cycle just started run
                if max_cycles is not None and cycles >= max_cycles:
                    break
                continue
            if self._binding_tasks:
                await asyncio.wait(list(self._binding_tasks), return_when=asyncio.FIRST_COMPLETED)
                continue
            if self._background:
                await asyncio.gather(*list(self._background), return_exceptions=True)
                continue
            expiry = self.queue.next_backoff_expiry()
            if expiry is None:
                break
            wait = expiry - self.clock.now()
            if wait > 0:
                advance: Callable[[float], None] | None = getattr(self.clock, "advance", None)
                if advance is not None:
                    advance(wait)
                else:
                    await asyncio.sleep(wait)
            self.queue.flush_backoff_completed()
        self.report_pending_pods()
        return cycles

    def _give_up(self, q: QueuedPodInfo) -> None:
        uid = q.pod.uid
        self._given_up.add(uid)
        self.queue.done(uid)
        rec = self._record(q.pod)
        if rec.status not in (SCHEDULED, EVICTED, DELETED):
            rec.status = UNSCHEDULABLE


def _single_node_fit_error(pod: Pod, host: str, status: Status) -> FitError:
    diagnosis = Diagnosis()
    diagnosis.node_to_status.set(host, status)
    if status.plugin:
        if status.code == Code.PENDING:
            diagnosis.pending_plugins.add(status.plugin)
        else:
            diagnosis.unschedulable_plugins.add(status.plugin)
    return FitError(pod, 1, diagnosis, [host])
