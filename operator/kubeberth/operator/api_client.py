"""The ClusterClient against a real API server, with kubernetes-asyncio.

Writes, as kube-scheduler makes them:

- bind: POST pods/{name}/binding (with the pod's UID), at most `bind_concurrency` at a
  time (the others wait their turn in their own binding cycle; the scheduling loop never
  waits for a bind). 409 (already bound, or a
  different pod of the same name) and 404 (gone) raise `BindConflict`: the scheduler
  forgets the assumed pod and requeues it. 5xx, 429 and timeouts are retried with
  backoff; when a retry meets a 409 after an uncertain attempt, the pod is read back
  so that a binding that did land counts as done and nothing is bound twice.
- nominatedNodeName and the PodScheduled=False/Unschedulable condition: a strategic
  merge patch of pods/status, skipped when nothing would change, sent in the background
  and coalesced per pod (`status_writer.py`): the scheduling loop never waits for it.
- preemption victims: the DisruptionTarget condition, then DELETE with a UID
  precondition (another pod that reused the name is never deleted).
- events: core/v1 Events with upstream reasons and messages, reported by the pod's
  scheduler name ("default-scheduler"), sent in the background, deduplicated (a
  repeat patches count/lastTimestamp) and rate-limited per object and overall so
  that a storm of failures cannot flood the API server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import socket
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import aiohttp
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from ..client import UNSCHEDULABLE_REASON, BindConflict
from ..clock import Clock, RealClock
from ..model import Pod
from .background import drain_then_cancel
from .rest import RestClient, describe_error
from .status_writer import PodStatusWriter

logger = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"

# The `action` upstream's events.k8s.io recorder gives each reason.
ACTIONS = {
    "Scheduled": "Binding",
    "FailedScheduling": "Scheduling",
    "Preempted": "Preempting",
    "FailedBinding": "Binding",
}

RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
# The API server's answers to a binding of a pod that is no longer ours to bind: bound by another
# scheduler, being deleted, or replaced by another pod of the same name (UID precondition).
SETTLED_CONFLICTS = ("is already assigned to node", "is being deleted", "Precondition failed")
# Bindings sent at once; more wait for a slot. Enough to keep a 2-core API server busy, few
# enough that a slow server sees a bounded load instead of every pending pod at once.
DEFAULT_BIND_CONCURRENCY = 64


class ApiUnavailable(Exception):
    """The API server kept failing (5xx/timeouts) beyond the retry budget."""


class NotLeader(Exception):
    """This replica does not hold the leader Lease (any more): it writes nothing."""


def rfc3339(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_micro(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter for transient API failures."""

    attempts: int = 6
    initial: float = 0.1
    maximum: float = 5.0
    factor: float = 2.0
    jitter: float = 0.2

    def delays(self, rng: random.Random | None = None) -> Iterator[float]:
        """The pauses between `attempts` tries (attempts - 1 of them)."""
        rng = rng or random.Random()
        delay = self.initial
        for _ in range(max(self.attempts - 1, 0)):
            yield min(delay, self.maximum) * (1 + self.jitter * (rng.random() * 2 - 1))
            delay *= self.factor


def _status(exc: BaseException) -> int | None:
    return exc.status if isinstance(exc, ApiException) else None


def is_transient(exc: BaseException) -> bool:
    if isinstance(exc, ApiException):
        return exc.status in RETRYABLE_STATUSES or exc.status == 0
    return isinstance(exc, aiohttp.ClientError | TimeoutError | ConnectionError)


class Api:
    """Raw JSON calls through a kubernetes-asyncio ApiClient (no model (de)serialisation)."""

    def __init__(self, api_client: ApiClient | RestClient, *, request_timeout: float = 10.0,
                 retry: RetryPolicy | None = None, rng: random.Random | None = None,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep) -> None:
        self.api_client = api_client
        self.request_timeout = request_timeout
        self.retry = retry or RetryPolicy()
        self.rng = rng or random.Random()
        self.sleep = sleep

    async def request(self, method: str, path: str, *, body: Any = None, content_type: str | None = None,
                      query: Mapping[str, str] | None = None) -> Any:
        """One call; raises ApiException for non-2xx answers."""
        if isinstance(self.api_client, RestClient):
            return await self.api_client.request(method, path, body=body, content_type=content_type, query=query,
                                                 timeout=self.request_timeout)
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        elif body is not None:
            headers["Content-Type"] = "application/json"
        return await self.api_client.call_api(
            path, method, path_params={}, query_params=list((query or {}).items()),
            header_params=headers, body=body,
            response_types_map={200: "object", 201: "object", 202: "object"},
            auth_settings=["BearerToken"], _return_http_data_only=True,
            _preload_content=True, _request_timeout=self.request_timeout)

    async def call(self, method: str, path: str, *, what: str, body: Any = None,
                   content_type: str | None = None, query: Mapping[str, str] | None = None) -> Any:
        """A call retried on 5xx/429/timeouts with backoff; other errors raise at once."""
        delays = self.retry.delays(self.rng)
        while True:
            try:
                return await self.request(method, path, body=body, content_type=content_type, query=query)
            except Exception as exc:
                if not is_transient(exc):
                    raise
                delay = next(delays, None)
                if delay is None:
                    raise ApiUnavailable(f"{what}: giving up after {self.retry.attempts} attempts: "
                                         f"{describe_error(exc)}") from exc
                logger.warning("%s failed (%s); retrying in %.2fs", what, describe_error(exc), delay)
                await self.sleep(delay)



def pod_path(namespace: str, name: str, subresource: str = "") -> str:
    path = f"/api/v1/namespaces/{namespace}/pods/{name}"
    return f"{path}/{subresource}" if subresource else path


class TokenBucket:
    __slots__ = ("burst", "last", "rate", "tokens")

    def __init__(self, burst: float, rate: float, now: float) -> None:
        self.burst = burst
        self.rate = rate  # tokens per second
        self.tokens = burst
        self.last = now

    def take(self, now: float) -> bool:
        self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False


@dataclass
class _Seen:
    name: str
    namespace: str
    count: int
    first: float


class EventRecorder:
    """core/v1 Events, sent from a background task, deduplicated and rate-limited.

    Like client-go's EventCorrelator: an event identical to a recent one (same object,
    type, reason, message and source) patches the existing Event's count and
    lastTimestamp instead of creating another; a per-object token bucket (burst 25,
    one more every 5 minutes) and an overall one cap what reaches the API; the queue
    is bounded and drops the newest when full. Dropped events are counted, not raised:
    events are informative and must never block scheduling.
    """

    def __init__(self, api: Api, *, clock: Clock | None = None, host: str | None = None,
                 instance: str | None = None, per_object_burst: int = 25,
                 per_object_refill_seconds: float = 300.0, overall_burst: int = 5000,
                 overall_qps: float = 1000.0, queue_size: int = 8192, cache_size: int = 16384,
                 workers: int = 16, may_write: Callable[[], bool] = lambda: True) -> None:
        self.api = api
        self.may_write = may_write
        self.clock = clock or RealClock()
        self.host = host if host is not None else socket.gethostname()
        self.instance = instance or self.host
        self.per_object_burst = per_object_burst
        self.per_object_rate = 1.0 / per_object_refill_seconds if per_object_refill_seconds > 0 else 0.0
        self._overall = TokenBucket(overall_burst, overall_qps, self.clock.now())
        self._buckets: OrderedDict[tuple[str, ...], TokenBucket] = OrderedDict()
        self._seen: OrderedDict[tuple[str, ...], _Seen] = OrderedDict()
        self._cache_size = cache_size
        # One queue per worker, an object's events always on the same one: they stay in order and a
        # repeat finds the Event its predecessor created.
        self._queues: list[asyncio.Queue[dict[str, Any]]] = [
            asyncio.Queue(maxsize=max(queue_size // workers, 1)) for _ in range(workers)]
        self._tasks: list[asyncio.Task[None]] = []
        self._seq = 0
        self.sent = 0
        self.patched = 0
        self.dropped = 0

    # --- producer side (never blocks, never raises) ---

    def record(self, obj: Pod | Mapping[str, Any], event_type: str, reason: str, message: str, *,
               component: str | None = None, related: Pod | None = None) -> bool:
        """Queue an event about a pod; False when it was dropped by a limit."""
        ref = _object_ref(obj)
        if component is None:
            component = obj.scheduler_name if isinstance(obj, Pod) else "default-scheduler"
        now = self.clock.now()
        bucket_key = (component, ref["namespace"], ref["name"], ref["uid"], reason)
        bucket = self._buckets.get(bucket_key)
        if bucket is None:
            bucket = self._buckets[bucket_key] = TokenBucket(self.per_object_burst, self.per_object_rate, now)
            if len(self._buckets) > self._cache_size:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(bucket_key)
        if not bucket.take(now) or not self._overall.take(now):
            self.dropped += 1
            logger.debug("Event %s for %s/%s dropped by the rate limit", reason, ref["namespace"], ref["name"])
            return False
        item = {"ref": ref, "type": event_type, "reason": reason, "message": message[:1024],
                "component": component, "time": now,
                "related": _object_ref(related) if related is not None else None}
        try:
            self._queues[hash(ref["uid"] or ref["name"]) % len(self._queues)].put_nowait(item)
        except asyncio.QueueFull:
            self.dropped += 1
            return False
        return True

    # --- consumer side ---

    def start(self) -> None:
        if not self._tasks:
            self._tasks = [asyncio.create_task(self._run(queue), name=f"kubeberth event recorder {i}")
                           for i, queue in enumerate(self._queues)]

    async def close(self, timeout: float = 2.0) -> None:
        """Send what is queued (within `timeout`), then stop."""
        if not self._tasks:
            return
        await drain_then_cancel(self._tasks, self.flush, timeout)
        self._tasks = []

    async def flush(self) -> None:
        for queue in self._queues:
            await queue.join()

    async def _run(self, queue: asyncio.Queue[dict[str, Any]]) -> None:
        while True:
            item = await queue.get()
            try:
                await self._send(item)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                logger.warning("Could not record event %s for %s/%s: %s", item["reason"],
                               item["ref"]["namespace"], item["ref"]["name"], describe_error(exc))
            finally:
                queue.task_done()

    async def _send(self, item: dict[str, Any]) -> None:
        ref = item["ref"]
        if not self.may_write():  # queued by a leader that has lost its Lease since (or was frozen)
            self.dropped += 1
            logger.debug("Event %s for %s/%s not sent: not the leader", item["reason"], ref["namespace"], ref["name"])
            return
        namespace = ref["namespace"] or "default"  # events of cluster-scoped objects live in default
        key = (item["component"], ref["namespace"], ref["name"], ref["uid"], item["type"], item["reason"],
               item["message"])
        seen = self._seen.get(key)
        ts = rfc3339(item["time"])
        if seen is not None:
            self._seen.move_to_end(key)
            patch = {"count": seen.count + 1, "lastTimestamp": ts}
            try:
                await self.api.call(
                    "PATCH", f"/api/v1/namespaces/{seen.namespace}/events/{seen.name}", what="patch event",
                    body=patch, content_type="application/merge-patch+json")
                seen.count += 1
                self.patched += 1
                return
            except ApiException as exc:
                if exc.status != 404:  # the event expired (TTL): create a fresh one below
                    raise
                del self._seen[key]
        self._seq += 1
        name = f"{ref['name']}.{int(item['time'] * 1e9) + self._seq:x}"
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": ref,
            "reason": item["reason"],
            "message": item["message"],
            "type": item["type"],
            "source": {"component": item["component"]},
            "reportingComponent": item["component"],
            "reportingInstance": f"{item['component']}-{self.instance}"[:128],
            "action": ACTIONS.get(item["reason"], item["reason"]),
            "firstTimestamp": ts,
            "lastTimestamp": ts,
            "count": 1,
        }
        if item["related"] is not None:
            body["related"] = item["related"]
        await self.api.call("POST", f"/api/v1/namespaces/{namespace}/events", what="create event", body=body)
        self.sent += 1
        self._seen[key] = _Seen(name=name, namespace=namespace, count=1, first=item["time"])
        if len(self._seen) > self._cache_size:
            self._seen.popitem(last=False)


def _object_ref(obj: Pod | Mapping[str, Any]) -> dict[str, str]:
    if isinstance(obj, Pod):
        return {"apiVersion": "v1", "kind": "Pod", "namespace": obj.namespace, "name": obj.name,
                "uid": obj.uid}
    meta = obj.get("metadata") or {}
    return {"apiVersion": str(obj.get("apiVersion") or "v1"), "kind": str(obj.get("kind") or "Pod"),
            "namespace": str(meta.get("namespace") or ""), "name": str(meta.get("name") or ""),
            "uid": str(meta.get("uid") or "")}


def _pod_scheduled_condition(raw: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for cond in ((raw.get("status") or {}).get("conditions") or []):
        if cond.get("type") == "PodScheduled":
            return dict(cond)
    return None


class KubernetesClusterClient:
    """`kubeberth.client.ClusterClient` against the API server."""

    def __init__(self, api_client: ApiClient | RestClient, *, retry: RetryPolicy | None = None,
                 request_timeout: float = 10.0, clock: Clock | None = None,
                 events: EventRecorder | None = None, rng: random.Random | None = None,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
                 disruption_condition: bool = True, may_write: Callable[[], bool] = lambda: True,
                 bind_concurrency: int = DEFAULT_BIND_CONCURRENCY) -> None:
        if bind_concurrency < 1:
            raise ValueError(f"bind_concurrency must be at least 1, not {bind_concurrency}")
        self.clock = clock or RealClock()
        self.bind_concurrency = bind_concurrency
        self._bind_slots = asyncio.Semaphore(bind_concurrency)
        self.binds_in_flight = 0
        self.may_write = may_write
        self.api = Api(api_client, request_timeout=request_timeout, retry=retry, rng=rng, sleep=sleep)
        self.events = events if events is not None else EventRecorder(
            self.api, clock=self.clock, may_write=lambda: self.may_write())  # late-bound: the app sets it
        self.disruption_condition = disruption_condition
        self.status = PodStatusWriter(self._send_status)
        # (uid, node) of bindings this process made: a bind is never sent twice.
        self._bound: OrderedDict[str, str] = OrderedDict()

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
        self._bound[pod.uid] = node_name
        if len(self._bound) > 65536:
            self._bound.popitem(last=False)

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
        if pod.nominated_node_name == node_name:
            return
        self._fence(f"set nominatedNodeName of {pod.key}")
        self.status.submit(pod, {"status": {"nominatedNodeName": node_name or None}})

    async def set_unschedulable(self, pod: Pod, message: str, reason: str = UNSCHEDULABLE_REASON) -> None:
        current = _pod_scheduled_condition(pod.raw)
        if (current is not None and current.get("status") == "False"
                and current.get("reason") == reason and current.get("message") == message):
            return  # upstream's podConditionHaveUpdate: nothing new to say
        now = rfc3339(self.clock.now())
        transition = now
        if current is not None and current.get("status") == "False" and current.get("lastTransitionTime"):
            transition = current["lastTransitionTime"]
        patch = {"status": {"conditions": [{
            "type": "PodScheduled", "status": "False", "reason": reason, "message": message,
            "lastProbeTime": None, "lastTransitionTime": transition}]}}
        self._fence(f"set PodScheduled=False of {pod.key}")
        self.status.submit(pod, patch)

    async def delete_pod(self, pod: Pod) -> None:
        self._fence(f"deleting {pod.key}")
        if self.disruption_condition:
            patch = {"status": {"conditions": [{
                "type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                "message": f"{pod.scheduler_name}: preempting to accommodate a higher priority pod",
                "lastTransitionTime": rfc3339(self.clock.now())}]}}
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

    async def record_event(self, pod: Pod, event_type: str, reason: str, message: str) -> None:
        self._fence(f"event {reason} for {pod.key}")
        self.events.record(pod, event_type, reason, message)

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
