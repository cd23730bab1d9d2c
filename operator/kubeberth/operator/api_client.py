"""The ClusterClient against a real API server, with kubernetes-asyncio.

Writes, as kube-scheduler makes them:

- bind: POST pods/{name}/binding (with the pod's UID), at most `bind_concurrency` at a
  time (the others wait their turn in their own binding cycle; the scheduling loop never
  waits for a bind). 409 (already bound, or a
  different pod of the same name) and 404 (gone) raise `BindConflict`: the scheduler
  forgets the assumed pod and requeues it. 5xx, 429 and timeouts are retried with
  backoff; when a retry meets a 409 after an uncertain attempt, the pod is read back
  so that a binding that did land counts as done and nothing is bound twice.
- nominatedNodeName and the PodScheduled=False/Unschedulable condition (with its
  observedGeneration, as every pod condition written here): a strategic
  merge patch of pods/status, skipped when nothing would change, sent in the background
  and coalesced per pod (`status_writer.py`): the scheduling loop never waits for it. A pod's
  binding is sent after its status patches, never during one (upstream's binding cycle writes the
  nomination before it binds); none is sent for a pod this process bound.
- preemption victims: the DisruptionTarget condition (its message naming the preemptor's
  profile), then DELETE with a UID
  precondition (another pod that reused the name is never deleted).
- volume binding (VolumeBinding's PreBind): PUT of the PersistentVolume with its claimRef
  set, PUT of the PersistentVolumeClaim with its selected-node annotation, as upstream's
  binder (with the resourceVersion read: a concurrent change is a conflict, and the pod is
  scheduled again). 5xx/429 are retried; a refusal raises `UpdateRefused` with its message.
- a plugin's annotations of a pod (`annotate_pod`): a JSON merge patch of the pod (404: gone).
- events: events.k8s.io/v1 Events as kube-scheduler's broadcaster writes them (reasons, actions,
  notes, reporting controller and instance, series of isomorphic repeats: `event_recorder.py`),
  sent in the background and rate-limited.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from ..client import UNSCHEDULABLE_REASON, BindConflict, UpdateRefused
from ..clock import Clock, RealClock
from ..model import Pod, PodGroup
from .api_retry import Api, ApiUnavailable, RetryPolicy, is_transient
from .event_recorder import NORMAL, WARNING, EventRecorder, TokenBucket, rfc3339
from .rest import RestClient, describe_error
from .status_writer import PodStatusWriter

# The names other modules and tests knew from here before the API calls and the event recorder
# moved to their own modules.
__all__ = ["DEFAULT_BIND_CONCURRENCY", "NORMAL", "WARNING", "Api", "ApiUnavailable", "EventRecorder",
           "KubernetesClusterClient", "NotLeader", "RetryPolicy", "TokenBucket", "pod_path"]

logger = logging.getLogger(__name__)

# The API server's answers to a binding of a pod that is no longer ours to bind: bound by another
# scheduler, being deleted, or replaced by another pod of the same name (UID precondition).
SETTLED_CONFLICTS = ("is already assigned to node", "is being deleted", "Precondition failed")
# Bindings sent at once; more wait for a slot. kube-scheduler binds in a goroutine per pod, without
# a bound, and its attempt latency ends with the binding: a pod waiting here for a slot counts in
# ours. 256 covers what a loaded API server keeps in flight at a few hundred bindings a second
# (rate x latency; with 64 the slots were all taken at 5000 nodes and the p99 attempt latency was
# up to 2x kube-scheduler's), while a slow server still sees a bounded load, not every pending pod
# at once. Each binding in flight holds a connection (HTTP/1.1), 80 KiB with rest.py's lean TLS
# buffers: 256 of them cost less than 64 did before (benchmarks/PROFILE.md, "p99 attempt latency").
DEFAULT_BIND_CONCURRENCY = 256


class NotLeader(Exception):
    """This replica does not hold the leader Lease (any more): it writes nothing."""


def pod_path(namespace: str, name: str, subresource: str = "") -> str:
    path = f"/api/v1/namespaces/{namespace}/pods/{name}"
    return f"{path}/{subresource}" if subresource else path


def _pod_scheduled_condition(raw: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for cond in ((raw.get("status") or {}).get("conditions") or []):
        if cond.get("type") == "PodScheduled":
            return dict(cond)
    return None


def with_observed_generation(condition: dict[str, Any], pod: Pod) -> dict[str, Any]:
    """A pod condition as v1.37 writes it: observedGeneration is the pod's metadata.generation as
    the scheduler saw it (PodObservedGenerationTracking, GA and locked on), left out when the pod
    has none (omitempty)."""
    if pod.generation:
        condition["observedGeneration"] = pod.generation
    return condition


class KubernetesClusterClient:
    """`kubeberth.client.ClusterClient` against the API server."""

    def __init__(self, api_client: ApiClient | RestClient, *, retry: RetryPolicy | None = None,
                 request_timeout: float = 10.0, clock: Clock | None = None,
                 events: EventRecorder | None = None, rng: random.Random | None = None,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
                 disruption_condition: bool = True, may_write: Callable[[], bool] = lambda: True,
                 bind_concurrency: int = DEFAULT_BIND_CONCURRENCY, event_workers: int | None = None) -> None:
        if bind_concurrency < 1:
            raise ValueError(f"bind_concurrency must be at least 1, not {bind_concurrency}")
        self.clock = clock or RealClock()
        self.bind_concurrency = bind_concurrency
        self._bind_slots = asyncio.Semaphore(bind_concurrency)
        self.binds_in_flight = 0
        self.may_write = may_write
        self.api = Api(api_client, request_timeout=request_timeout, retry=retry, rng=rng, sleep=sleep)
        # As many event senders as binding slots: each binding's Scheduled event follows it at the pace
        # the bindings go (with fewer, the events fell seconds behind at a few hundred bindings a second).
        self.event_workers = event_workers if event_workers is not None else bind_concurrency
        self.events = events if events is not None else EventRecorder(
            self.api, clock=self.clock, workers=self.event_workers,
            may_write=lambda: self.may_write())  # late-bound: the app sets it
        self.disruption_condition = disruption_condition
        self.status = PodStatusWriter(self._send_status)
        # (uid, node) of bindings this process made: a bind is never sent twice.
        self._bound: OrderedDict[str, str] = OrderedDict()

    def forget_pod(self, uid: str) -> None:
        """The pod is deleted: no binding of it can be asked for again (a running scheduler
        would otherwise keep the last 65536 pods it bound, deleted or not)."""
        self._bound.pop(uid, None)

    async def start(self) -> None:
        self.events.start()
        self.status.start()

    async def flush(self) -> None:
        """Wait until the status patches and events handed over so far were sent."""
        await self.status.flush()
        await self.events.flush()

    async def close(self) -> None:
        await self.status.close()
        await self.events.close()

    # --- ClusterClient ---

    def _fence(self, what: str) -> None:
        if not self.may_write():
            raise NotLeader(f"{what}: this replica does not hold the leader Lease")

    async def bind(self, pod: Pod, node_name: str) -> None:
        if self._bound.get(pod.uid) == node_name:
            return  # this process already bound it there (a duplicate call)
        self._fence(f"binding {pod.key}")
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        # After the pod's status patches (its nominatedNodeName first): never concurrently with them.
        async with self.status.binding(pod.uid):
            await self._post_binding(pod, node_name, body)
        self._bound[pod.uid] = node_name
        if len(self._bound) > 65536:
            self._bound.popitem(last=False)

    async def _post_binding(self, pod: Pod, node_name: str, body: dict[str, Any]) -> None:
        path = pod_path(pod.namespace, pod.name, "binding")
        delays = self.api.retry.delays(self.api.rng)
        uncertain = False  # an earlier attempt may have landed although we saw an error
        while True:
            try:
                async with self._bind_slots:
                    self.binds_in_flight += 1
                    try:
                        await self.api.request("POST", path, body=body)
                    finally:
                        self.binds_in_flight -= 1
                break
            except ApiException as exc:
                if exc.status == 409:
                    if uncertain and await self._bound_to(pod, node_name):
                        break
                    message = _message(exc)
                    raise BindConflict(f"binding {pod.key} to {node_name}: {message}",
                                       settled=any(m in message for m in SETTLED_CONFLICTS)) from exc
                if exc.status == 404:
                    raise BindConflict(f"binding {pod.key}: the pod is gone", settled=True) from exc
                if not is_transient(exc):
                    raise
                failure: BaseException = exc
            except Exception as exc:
                if not is_transient(exc):
                    raise
                failure = exc
            uncertain = True
            delay = next(delays, None)
            if delay is None:
                if await self._bound_to(pod, node_name):
                    break
                raise ApiUnavailable(f"binding {pod.key} to {node_name}: {describe_error(failure)}") from failure
            logger.warning("Binding %s to %s failed (%s); retrying in %.2fs",
                           pod.key, node_name, describe_error(failure), delay)
            await self.api.sleep(delay)

    async def _bound_to(self, pod: Pod, node_name: str) -> bool:
        """Did an uncertain binding land? Reads the pod back (best effort)."""
        try:
            raw = await self.api.call("GET", pod_path(pod.namespace, pod.name), what="read pod back")
        except Exception as exc:
            logger.warning("Could not read %s back after an uncertain binding: %s", pod.key, describe_error(exc))
            return False
        meta = raw.get("metadata") or {}
        return bool(meta.get("uid") == pod.uid and (raw.get("spec") or {}).get("nodeName") == node_name)

    async def set_nominated_node(self, pod: Pod, node_name: str) -> None:
        if pod.nominated_node_name == node_name or pod.uid in self._bound:
            return  # nothing would change, or bound by this process: its status is no longer ours to write
        self._fence(f"set nominatedNodeName of {pod.key}")
        self.status.submit(pod, {"status": {"nominatedNodeName": node_name or None}})

    async def set_unschedulable(self, pod: Pod, message: str, reason: str = UNSCHEDULABLE_REASON) -> None:
        if pod.uid in self._bound:
            return
        current = _pod_scheduled_condition(pod.raw)
        if (current is not None and current.get("status") == "False"
                and current.get("reason") == reason and current.get("message") == message):
            return  # upstream's podConditionHaveUpdate: nothing new to say
        now = rfc3339(self.clock.now())
        transition = now
        if current is not None and current.get("status") == "False" and current.get("lastTransitionTime"):
            transition = current["lastTransitionTime"]
        patch = {"status": {"conditions": [with_observed_generation({
            "type": "PodScheduled", "status": "False", "reason": reason, "message": message,
            "lastProbeTime": None, "lastTransitionTime": transition}, pod)]}}
        self._fence(f"set PodScheduled=False of {pod.key}")
        self.status.submit(pod, patch)

    async def delete_pod(self, pod: Pod, disruption_message: str) -> None:
        self._fence(f"deleting {pod.key}")
        if self.disruption_condition:
            patch = {"status": {"conditions": [with_observed_generation({
                "type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                "message": disruption_message, "lastTransitionTime": rfc3339(self.clock.now())}, pod)]}}
            with contextlib.suppress(Exception):
                await self._patch_status(pod, patch, "set DisruptionTarget")
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": pod.uid}}
        try:
            await self.api.call("DELETE", pod_path(pod.namespace, pod.name), what=f"delete {pod.key}", body=body)
        except ApiException as exc:
            if exc.status == 404:
                return  # already gone
            if exc.status == 409:  # UID precondition failed: the name belongs to another pod now
                logger.info("Not deleting %s: it was replaced by another pod (%s)", pod.key, _message(exc))
                return
            raise

    async def write_resource_claim(self, claim: Mapping[str, Any], *, update_metadata: bool = False) -> Any:
        """DynamicResources: PUT the claim (only to add its finalizer), then PUT its status
        (allocation, reservedFor), each with the resourceVersion read: a conflict fails the write."""
        meta = claim.get("metadata") or {}
        what = f"resourceclaim {meta.get('namespace')}/{meta.get('name')}"
        self._fence(what)
        path = f"/apis/resource.k8s.io/v1/namespaces/{meta.get('namespace')}/resourceclaims/{meta.get('name')}"
        body = dict(claim)
        if update_metadata:
            written = await self.api.call("PUT", path, what=f"update {what}", body=body)
            body = {**body, "metadata": written.get("metadata") or meta}
        return await self.api.call("PUT", f"{path}/status", what=f"update status of {what}", body=body)

    async def create_resource_claim(self, claim: Mapping[str, Any]) -> Any:
        """DynamicResources: the claim for a pod's extended resources (POST, generateName)."""
        ns = (claim.get("metadata") or {}).get("namespace")
        self._fence(f"creating a resourceclaim in {ns}")
        return await self.api.call("POST", f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims",
                                   what=f"create resourceclaim in {ns}", body=dict(claim))

    async def set_extended_resource_claim_status(self, pod: Pod, status: Mapping[str, Any]) -> None:
        await self._patch_status(pod, {"status": {"extendedResourceClaimStatus": dict(status)}},
                                 "set extendedResourceClaimStatus")

    async def annotate_pod(self, pod: Pod, annotations: Mapping[str, str]) -> None:
        """A JSON merge patch of the pod's metadata.annotations (404: the pod is gone, nothing to do)."""
        what = f"annotate {pod.key}"
        self._fence(what)
        body = {"metadata": {"annotations": {str(k): str(v) for k, v in annotations.items()}}}
        try:
            await self.api.call("PATCH", pod_path(pod.namespace, pod.name), what=what, body=body,
                                content_type="application/merge-patch+json")
        except ApiException as exc:
            if exc.status == 404:
                logger.debug("%s: the pod is gone", what)
                return
            raise

    async def set_pod_group_condition(self, pod_group: PodGroup, condition: Mapping[str, Any]) -> None:
        what = f"set {condition.get('type')} of podgroup {pod_group.key}"
        self._fence(what)
        path = (f"/apis/scheduling.k8s.io/v1beta1/namespaces/{pod_group.namespace}/podgroups/"
                f"{pod_group.name}/status")
        try:
            await self.api.call("PATCH", path, what=what, body={"status": {"conditions": [dict(condition)]}},
                                content_type="application/strategic-merge-patch+json")
        except ApiException as exc:
            if exc.status == 404:
                logger.debug("%s: the podgroup is gone", what)
                return
            raise

    async def record_event(self, pod: Pod, event_type: str, reason: str, message: str, *,
                           reporter: str | None = None) -> None:
        self._fence(f"event {reason} for {pod.key}")
        self.events.record(pod, event_type, reason, message, component=reporter)

    async def update_persistent_volume(self, pv: Mapping[str, Any]) -> dict[str, Any]:
        name = str((pv.get("metadata") or {}).get("name") or "")
        return await self._update(f"/api/v1/persistentvolumes/{name}", pv, f'persistentvolume "{name}"')

    async def update_persistent_volume_claim(self, pvc: Mapping[str, Any]) -> dict[str, Any]:
        meta = pvc.get("metadata") or {}
        ns, name = meta.get("namespace") or "default", meta.get("name") or ""
        return await self._update(f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{name}", pvc,
                                  f'persistentvolumeclaim "{ns}/{name}"')

    async def _update(self, path: str, obj: Mapping[str, Any], what: str) -> dict[str, Any]:
        self._fence(f"update {what}")
        try:
            written = await self.api.call("PUT", path, what=f"update {what}", body=dict(obj))
        except ApiException as exc:
            raise UpdateRefused(_message(exc)) from exc
        return dict(written)

    async def _send_status(self, pod: Pod, patch: Mapping[str, Any]) -> None:
        await self._patch_status(pod, patch, "patch status")

    async def _patch_status(self, pod: Pod, patch: Mapping[str, Any], what: str) -> None:
        self._fence(f"{what} of {pod.key}")
        try:
            await self.api.call("PATCH", pod_path(pod.namespace, pod.name, "status"), what=f"{what} of {pod.key}",
                                body=patch, content_type="application/strategic-merge-patch+json")
        except ApiException as exc:
            if exc.status == 404:
                logger.debug("%s of %s: the pod is gone", what, pod.key)
                return
            raise


def _message(exc: ApiException) -> str:
    try:
        return str(json.loads(exc.body or "{}").get("message") or exc.reason)
    except (ValueError, AttributeError):
        return str(exc.reason)
