"""core/v1 Events about pods, sent in the background, deduplicated and rate-limited."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubernetes_asyncio.client.exceptions import ApiException

from ..clock import Clock, RealClock
from ..model import Pod
from .api_retry import Api
from .background import drain_then_cancel
from .rest import describe_error

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


def rfc3339(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_micro(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


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

    `workers` events are sent at once, one per object at a time and each object's in the
    order recorded; objects take turns in the order their next event became ready. The
    operator gives it as many workers as binding slots, so that the Scheduled events keep
    pace with the bindings they follow instead of queueing behind them.
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
        # Every object's events wait in a chain of their own, sent one at a time in order (a repeat finds
        # the Event its predecessor created); the workers take the objects whose next event may go in
        # the order they became ready, so an event is not held up behind another object's.
        self.workers = workers
        self.queue_size = queue_size
        self._chains: dict[str, deque[dict[str, Any]]] = {}
        self._ready: asyncio.Queue[str] = asyncio.Queue()
        self.queued = 0
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
        if self.queued >= self.queue_size:
            self.dropped += 1
            logger.debug("Event %s for %s/%s dropped: %d events wait already", reason, ref["namespace"], ref["name"],
                         self.queued)
            return False
        key = ref["uid"] or f"{ref['kind']}/{ref['namespace']}/{ref['name']}"
        chain = self._chains.get(key)
        if chain is None:  # nothing of this object waits or is being sent: it is ready
            chain = self._chains[key] = deque()
            self._ready.put_nowait(key)
        chain.append(item)
        self.queued += 1
        return True

    # --- consumer side ---

    def start(self) -> None:
        if not self._tasks:
            self._tasks = [asyncio.create_task(self._run(), name=f"kubeberth event recorder {i}")
                           for i in range(self.workers)]

    async def close(self, timeout: float = 2.0) -> None:
        """Send what is queued (within `timeout`), then stop."""
        if not self._tasks:
            return
        await drain_then_cancel(self._tasks, self.flush, timeout)
        self._tasks = []

    async def flush(self) -> None:
        await self._ready.join()

    async def _run(self) -> None:
        while True:
            key = await self._ready.get()
            chain = self._chains[key]
            item = chain.popleft()
            self.queued -= 1
            try:
                await self._send(item)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                logger.warning("Could not record event %s for %s/%s: %s", item["reason"],
                               item["ref"]["namespace"], item["ref"]["name"], describe_error(exc))
            finally:
                if chain:  # the object's next event: behind the objects that became ready meanwhile
                    self._ready.put_nowait(key)
                else:
                    del self._chains[key]
                self._ready.task_done()

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
        ref = {"apiVersion": "v1", "kind": "Pod", "namespace": obj.namespace, "name": obj.name, "uid": obj.uid}
        # As upstream's reference to the object it was given: the version the scheduler read.
        version = (obj.raw.get("metadata") or {}).get("resourceVersion")
        if version:
            ref["resourceVersion"] = str(version)
        return ref
    meta = obj.get("metadata") or {}
    return {"apiVersion": str(obj.get("apiVersion") or "v1"), "kind": str(obj.get("kind") or "Pod"),
            "namespace": str(meta.get("namespace") or ""), "name": str(meta.get("name") or ""),
            "uid": str(meta.get("uid") or "")}
