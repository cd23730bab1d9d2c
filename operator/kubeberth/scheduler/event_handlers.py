"""Pod, node and other objects' events: the cache, the queue and the records follow them."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from ..cache.objects import object_key
from ..client import SCHEDULER_ERROR
from ..framework import events as ev
from ..model import ModelError, Node, Pod, PodGroup, placeholder_pod
from .base import SchedulerBase
from .explain import EVENT_EXPLAIN_REQUESTED
from .records import (
    DELETED,
    EVICTED,
    EXISTING,
    IGNORED,
    PENDING,
    SCHEDULED,
    UNSCHEDULABLE,
    raw_key,
    raw_uid,
    truncate_message,
)
from .watched import POD_GROUP

log = logging.getLogger("kubeberth.scheduler")


def _pod_event(action: str, assigned: bool) -> str:
    """The event label scheduler_event_handling_duration_seconds gives a pod's change."""
    return f"{'AssignedPod' if assigned else 'UnscheduledPod'}{action}"


def _raw_assigned(raw: Mapping[str, Any]) -> bool:
    spec = raw.get("spec")
    return bool(spec.get("nodeName")) if isinstance(spec, Mapping) else False


def _group_key(obj: Mapping[str, Any]) -> str:
    """A PodGroup's namespace/name as the model keys it (no namespace: default)."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


class EventHandlers(SchedulerBase):
    """Watch events into the cache and the queue (upstream's eventhandlers.go)."""

    def _handled(self, event: str, started: float) -> None:
        self.metrics.event_handling_duration(event, time.perf_counter() - started)

    # ---- pods -----------------------------------------------------------------------
    def _parse_pod(self, raw: Mapping[str, Any]) -> Pod | None:
        """The Pod with its priority resolved; None (and the error recorded) when it cannot be."""
        uid = raw_uid(raw)
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
        key, uid = raw_key(raw), raw_uid(raw)
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
        self._spawn(self._record_event(target, "Warning", "FailedScheduling", truncate_message(message)))
        self._spawn(self._set_unschedulable(target, message, SCHEDULER_ERROR))

    def on_pod_add(self, raw: Mapping[str, Any]) -> Pod | None:
        """A pod appeared (or is listed at start). Returns its model, None when it is unusable."""
        started = time.perf_counter()
        pod = self._parse_pod(raw)
        if pod is not None:
            self._ingest_pod(pod)
        self._handled(_pod_event("Add", _raw_assigned(raw)), started)
        return pod

    def on_pod_update(self, raw: Mapping[str, Any]) -> Pod | None:
        """A pod changed (the scheduler knows the version it had: no old object is needed)."""
        started = time.perf_counter()
        pod = self._parse_pod(raw)
        if pod is not None:
            self._ingest_pod(pod)
        self._handled(_pod_event("Update", _raw_assigned(raw)), started)
        return pod

    def _ingest_pod(self, pod: Pod) -> None:
        uid = pod.uid
        self._uids[pod.key] = uid
        if self.pod_groups_enabled and pod.pod_group_name:
            self._ingest_group_member(pod)
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
            if self.pod_groups_enabled:
                # upstream's addPodToSchedulingQueue with GenericWorkload: a new pending pod may
                # complete another's quorum (GangScheduling's hint decides)
                self.queue.move_all_to_active_or_backoff(ev.EVENT_UNSCHEDULED_POD_ADD, None, pod)
        else:
            self.queue.update(pending_old, pod)
            if pending_old.nominated_node_name and pending_old.nominated_node_name != pod.nominated_node_name:
                self._nomination_released(pending_old)
            explain = self.explain_pods
            if explain is not None and explain(pod) and not explain(pending_old):
                # Asked for now: an unschedulable pod would otherwise wait for a cluster event or
                # the five-minute flush; upstream's Update has no such case (an annotation only).
                self.queue.move_to_active_or_backoff(pod, EVENT_EXPLAIN_REQUESTED)

    def _nomination_released(self, pod: Pod) -> None:
        """Pods of lower or equal priority counted `pod` as placed on its nominated node (upstream's
        getLEPriorityPreCheck with EventAssignedPodDelete)."""
        prio = pod.priority
        self.queue.move_all_to_active_or_backoff(ev.EVENT_ASSIGNED_POD_DELETE, pod, None,
                                                 pre_check=lambda p: p.priority <= prio)

    def on_pod_delete(self, obj: Mapping[str, Any] | Pod | str) -> None:
        """A pod was deleted: a raw object, a Pod, or its "namespace/name" key."""
        started = time.perf_counter()
        assigned = self._delete_pod(obj)
        self._handled(_pod_event("Delete", assigned), started)

    def _delete_pod(self, obj: Mapping[str, Any] | Pod | str) -> bool:
        """Returns whether the pod was bound (or assumed) to a node."""
        if isinstance(obj, Pod):
            uid, key = obj.uid, obj.key
        elif isinstance(obj, str):
            key = obj
            uid = self._uids.get(key, key)
        else:
            uid, key = raw_uid(obj), raw_key(obj)
        self._wait_priority.pop(uid, None)
        self._reported_errors.pop(uid, None)
        self._given_up.discard(uid)
        pending = self._pending.pop(uid, None)
        gone = pending or self.cache.get_pod(uid)
        if gone is not None and gone.pod_group_name:
            self.pod_groups.remove_pod(gone)
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
            # The room it was nominated to is free again for pods of lower or equal priority,
            # which treated it as placed there: upstream reports it as an assigned pod's deletion.
            self._nomination_released(pending)
        self._seqs.pop(uid, None)
        if self._uids.get(key) == uid:
            del self._uids[key]
        rec = self.outcomes.get(key)
        if rec is not None and rec.uid in ("", uid):
            if not self.keep_deleted_records:
                del self.outcomes[key]
            elif rec.status != EVICTED:
                rec.status = DELETED
        return cached is not None

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
        started = time.perf_counter()
        node = self._on_node_add(raw)
        self._handled("NodeAdd", started)
        return node

    def _on_node_add(self, raw: Mapping[str, Any]) -> Node | None:
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

    def on_node_update(self, raw: Mapping[str, Any]) -> Node | None:
        started = time.perf_counter()
        node = self._on_node_update(raw)
        self._handled("NodeUpdate", started)
        return node

    def _on_node_update(self, raw: Mapping[str, Any]) -> Node | None:
        node = self._parse_node(raw)
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
        started = time.perf_counter()
        self._on_node_delete(obj)
        self._handled("NodeDelete", started)

    def _on_node_delete(self, obj: Mapping[str, Any] | str) -> None:
        """A node was deleted: its raw object or its name. Pods still on it keep a NodeInfo
        without node in the cache until they go; it no longer appears in snapshots."""
        name = obj if isinstance(obj, str) else str((obj.get("metadata") or {}).get("name") or "")
        self.node_errors.pop(name, None)
        old = self.cache.node(name)
        if old is not None:
            # Only plugins that registered Node/Delete hear of it (PodTopologySpread: a domain may go).
            self.queue.move_all_to_active_or_backoff(ev.EVENT_NODE_DELETE, old, None)
        self.cache.remove_node(name)

    # ---- pod groups (GenericWorkload) --------------------------------------------------------
    def _ingest_group_member(self, pod: Pod) -> None:
        """The pod group's state follows its pods: pending ones of a served profile and bound
        ones (upstream adds the pods it is responsible for, and every assigned pod)."""
        if pod.is_terminal:
            self.pod_groups.remove_pod(pod)
        elif pod.node_name or pod.scheduler_name in self.profiles:
            self.pod_groups.add_or_update_pod(pod)

    def _on_pod_group(self, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
        try:
            pg = PodGroup(obj)
        except ModelError as exc:
            log.warning("ignoring podgroup %s: %s", object_key(obj), exc)
            self.pod_group_errors[_group_key(obj)] = str(exc)
            return
        self.pod_group_errors.pop(pg.key, None)
        self.pod_groups.set_pod_group(pg)
        if old is None:
            self.queue.add_pod_group(pg.key, pg.priority)
        else:
            self.queue.update_pod_group(pg.key, pg.priority)
        action = ev.ActionType.UPDATE_OTHER if old is not None else ev.ActionType.ADD
        self.queue.move_all_to_active_or_backoff(ev.ClusterEvent(ev.POD_GROUP, action), old, obj)

    def _on_pod_group_delete(self, key: str) -> None:
        self.pod_group_errors.pop(key, None)
        self.pod_groups.remove_pod_group(key)
        self.queue.delete_pod_group(key)

    # ---- other objects ---------------------------------------------------------------
    def on_object(self, kind: str, obj: Mapping[str, Any]) -> None:
        """PriorityClass, PodDisruptionBudget, PV, PVC, StorageClass, CSINode, Namespace,
        Service, ReplicaSet...: stored for plugins; storage changes may move pods."""
        started = time.perf_counter()
        key = object_key(obj)
        old = self.ctx.objects.get(kind, key)
        self.ctx.objects.put(kind, obj)
        if kind == POD_GROUP:
            if self.pod_groups_enabled:
                self._on_pod_group(obj, old)
                self._handled(f"{ev.POD_GROUP}{'Update' if old is not None else 'Add'}", started)
            return
        resource = self.event_resources.get(kind)
        if resource is not None:
            action = ev.ActionType.UPDATE_OTHER if old is not None else ev.ActionType.ADD
            self.queue.move_all_to_active_or_backoff(ev.ClusterEvent(resource, action), old, obj)
            self._handled(f"{resource}{'Update' if old is not None else 'Add'}", started)
        if kind == "PriorityClass":
            for raw in list(self._wait_priority.values()):
                self.on_pod_add(raw)

    def on_object_delete(self, kind: str, key: str) -> None:
        started = time.perf_counter()
        old = self.ctx.objects.get(kind, key)
        self.ctx.objects.delete(kind, key)
        if kind == POD_GROUP:
            if self.pod_groups_enabled:
                self._on_pod_group_delete(key)
                self._handled(f"{ev.POD_GROUP}Delete", started)
            return
        resource = self.event_resources.get(kind)
        if resource is not None:
            self.queue.move_all_to_active_or_backoff(ev.ClusterEvent(resource, ev.ActionType.DELETE), old, None)
            self._handled(f"{resource}Delete", started)
