"""events.k8s.io/v1 Events about pods, sent in the background, as kube-scheduler's broadcaster sends
them (client-go's tools/events), with kubeberth's own rate limits and per-object ordering."""

from __future__ import annotations

import asyncio
import logging
import re
import socket
import uuid
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubernetes_asyncio.client.exceptions import ApiException

from ..clock import Clock, RealClock
from ..model import Pod
from .api_retry import Api
from .background import cancel_and_wait, drain_then_cancel
from .rest import describe_error

logger = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"

EVENTS_API = "/apis/events.k8s.io/v1"
# The `action` kube-scheduler passes with each reason (schedule_one.go, preemption/executor.go,
# dynamicresources.go); kubeberth's own reasons (ProfileRefused) name themselves.
ACTIONS = {
    "Scheduled": "Binding",
    "FailedScheduling": "Scheduling",
    "Preempted": "Preempting",
    "FailedBinding": "Binding",
    "BindingConditionsPending": "Scheduling",
}
NOTE_LIMIT = 1024  # bytes: the API server's validation.NoteLengthLimit
# client-go's tools/events: a series that saw no repeat for 6 minutes is finished (its count written,
# its entry dropped; an event that never repeated is dropped after 6 minutes), and every 30 minutes
# each open series is written again (the Event's TTL starts over).
FINISH_SECONDS = 360.0
REFRESH_SECONDS = 1800.0

_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = re.compile(rf"{_DNS_LABEL}(\.{_DNS_LABEL})*")


def rfc3339(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_micro(t: float) -> str:
    """metav1.MicroTime's wire form: six fractional digits, UTC."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def event_name(regarding_name: str, unix_nano: int) -> str:
    """`<name>.<nanoseconds in hex>`, as client-go's GenerateEventName; a random UUID when that is
    not a valid object name (longer than 253 characters, or a name that is no DNS subdomain)."""
    name = f"{regarding_name}.{unix_nano:x}"
    if len(name) > 253 or not _DNS_SUBDOMAIN.fullmatch(name):
        return str(uuid.uuid4())
    return name


def limit_note(note: str) -> str:
    """The note within the API server's 1 KiB (bytes), cut as the scheduler's truncateMessage."""
    raw = note.encode()
    if len(raw) <= NOTE_LIMIT:
        return note
    suffix = " ..."
    return raw[:NOTE_LIMIT - len(suffix)].decode(errors="ignore") + suffix


class TokenBucket:
    __slots__ = ("burst", "last", "rate", "tokens")

    def __init__(self, burst: float, rate: float, now: float) -> None:
        self.burst = burst
        self.rate = rate  # tokens per second
        self.tokens = burst
        self.last = now

    def full(self, now: float) -> bool:
        """Refilled to its burst by `now`: the same as a new bucket, so it need not be kept."""
        return self.tokens + (now - self.last) * self.rate >= self.burst

    def take(self, now: float) -> bool:
        self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False


@dataclass
class _Cached:
    """An Event as created, the isomorphic key's entry (client-go's eventCache); `series` once it
    repeated: {count, lastObservedTime}, `last_observed` the latter as a number."""

    event: dict[str, Any]
    chain: str
    time: float
    series: dict[str, Any] | None = None
    last_observed: float = 0.0
    written: dict[str, Any] | None = None  # the series as last written


def _isomorphic_key(event: Mapping[str, Any]) -> tuple[Any, ...]:
    """client-go's eventKey: type, action, reason, reporting controller and instance, the regarding
    and related references (every field, resourceVersion included). Not the note: a repeat with
    another note counts in the first Event's series."""
    related = event.get("related")
    return (event["type"], event["action"], event["reason"], event["reportingController"],
            event["reportingInstance"], tuple(sorted(event["regarding"].items())),
            tuple(sorted(related.items())) if related else None)


class EventRecorder:
    """events.k8s.io/v1 Events, sent from background tasks, as kube-scheduler writes them.

    As client-go's tools/events broadcaster (which kube-scheduler uses): an Event named
    `<object>.<nanoseconds hex>` with eventTime, reportingController (the profile's scheduler name),
    reportingInstance (`<controller>-<hostname>`), action, reason, regarding, note and type. An
    isomorphic repeat (same type, action, reason, reporter and references, whatever its note) is
    not another Event: the first repeat PATCHes the Event's `series` (count 2, lastObservedTime),
    later ones count in memory; a series quiet for 6 minutes gets its final count written, and
    every open series is written again every 30 minutes. A series whose Event is gone (TTL) is
    created again with its series.

    kubeberth's own, beyond upstream: a per-object token bucket (burst 25, one more every 5
    minutes) and an overall one cap what is recorded; the queue is bounded and drops the newest
    when full; the isomorphic cache is bounded (the least recently seen entry goes, a series with
    its final count written). Dropped events are counted, not raised: events are informative and
    must never block scheduling.

    `workers` events are sent at once, one per object at a time and each object's in the
    order recorded; objects take turns in the order their next event became ready. The
    operator gives it as many workers as binding slots, so that the Scheduled events keep
    pace with the bindings they follow instead of queueing behind them.
    """

    def __init__(self, api: Api, *, clock: Clock | None = None, host: str | None = None,
                 instance: str | None = None, per_object_burst: int = 25,
                 per_object_refill_seconds: float = 300.0, overall_burst: int = 5000,
                 overall_qps: float = 1000.0, queue_size: int = 8192, cache_size: int = 16384,
                 workers: int = 16, may_write: Callable[[], bool] = lambda: True,
                 finish_seconds: float = FINISH_SECONDS, refresh_seconds: float = REFRESH_SECONDS,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep) -> None:
        self.api = api
        self.may_write = may_write
        self.clock = clock or RealClock()
        self.host = host if host is not None else socket.gethostname()
        self.instance = instance or self.host
        self.per_object_burst = per_object_burst
        self.per_object_rate = 1.0 / per_object_refill_seconds if per_object_refill_seconds > 0 else 0.0
        self._overall = TokenBucket(overall_burst, overall_qps, self.clock.now())
        self._buckets: OrderedDict[tuple[str, ...], TokenBucket] = OrderedDict()
        self._cache: OrderedDict[tuple[Any, ...], _Cached] = OrderedDict()
        self._cache_size = cache_size
        self.finish_seconds = finish_seconds
        self.refresh_seconds = refresh_seconds
        self._sleep = sleep
        self._last_refresh = self.clock.now()
        self._last_nano = 0
        # Every object's events wait in a chain of their own, sent one at a time in order (a repeat finds
        # the Event its predecessor created); the workers take the objects whose next event may go in
        # the order they became ready, so an event is not held up behind another object's.
        self.workers = workers
        self.queue_size = queue_size
        self._chains: dict[str, deque[tuple[str, Any]]] = {}
        self._ready: asyncio.Queue[str] = asyncio.Queue()
        self.queued = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._housekeeper: asyncio.Task[None] | None = None
        self.sent = 0
        self.patched = 0
        self.counted = 0  # repeats counted in memory only (a series' third and later)
        self.dropped = 0

    def reporting_instance(self, controller: str) -> str:
        return f"{controller}-{self.instance}"[:128]

    # --- producer side (never blocks, never raises) ---

    def record(self, obj: Pod | Mapping[str, Any], event_type: str, reason: str, note: str, *,
               component: str | None = None, related: Pod | None = None, action: str | None = None) -> bool:
        """Queue an event about a pod (or another object); False when a limit dropped it."""
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
        if self.queued >= self.queue_size:
            self.dropped += 1
            logger.debug("Event %s for %s/%s dropped: %d events wait already", reason, ref["namespace"], ref["name"],
                         self.queued)
            return False
        event: dict[str, Any] = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": event_name(ref["name"], self._unix_nano(now)),
                         "namespace": ref["namespace"] or "default"},  # cluster-scoped objects': default
            "eventTime": rfc3339_micro(now),
            "reportingController": component,
            "reportingInstance": self.reporting_instance(component),
            "action": action or ACTIONS.get(reason, reason),
            "reason": reason,
            "regarding": ref,
            "note": limit_note(note),
            "type": event_type,
        }
        if related is not None:
            event["related"] = _object_ref(related)
        self._enqueue(ref["uid"] or f"{ref['kind']}/{ref['namespace']}/{ref['name']}", ("record", (event, now)))
        return True

    def _unix_nano(self, now: float) -> int:
        """The event's time in nanoseconds, made unique within this process (two events about one
        object in the same nanosecond would otherwise share a name)."""
        nano = max(int(now * 1e9), self._last_nano + 1)
        self._last_nano = nano
        return nano

    def _enqueue(self, key: str, item: tuple[str, Any]) -> None:
        chain = self._chains.get(key)
        if chain is None:  # nothing of this object waits or is being sent: it is ready
            chain = self._chains[key] = deque()
            self._ready.put_nowait(key)
        chain.append(item)
        self.queued += 1

    # --- consumer side ---

    def start(self) -> None:
        if not self._tasks:
            self._tasks = [asyncio.create_task(self._run(), name=f"kubeberth event recorder {i}")
                           for i in range(self.workers)]
            self._housekeeper = asyncio.create_task(self._housekeeping(), name="kubeberth event series")

    async def close(self, timeout: float = 2.0) -> None:
        """Send what is queued (within `timeout`), then stop."""
        if not self._tasks:
            return
        if self._housekeeper is not None:
            await cancel_and_wait([self._housekeeper])
            self._housekeeper = None
        await drain_then_cancel(self._tasks, self.flush, timeout)
        self._tasks = []

    async def flush(self) -> None:
        await self._ready.join()

    async def _run(self) -> None:
        while True:
            key = await self._ready.get()
            chain = self._chains[key]
            op, arg = chain.popleft()
            self.queued -= 1
            try:
                if op == "record":
                    await self._record(key, *arg)
                else:
                    await self._write_series(arg)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                event = arg[0] if op == "record" else arg.event
                logger.warning("Could not record event %s for %s/%s: %s", event["reason"],
                               event["regarding"]["namespace"], event["regarding"]["name"], describe_error(exc))
            finally:
                if chain:  # the object's next event: behind the objects that became ready meanwhile
                    self._ready.put_nowait(key)
                else:
                    del self._chains[key]
                self._ready.task_done()

    async def _record(self, chain: str, event: dict[str, Any], now: float) -> None:
        if not self.may_write():  # queued by a leader that has lost its Lease since (or was frozen)
            self.dropped += 1
            logger.debug("Event %s for %s not sent: not the leader", event["reason"], event["metadata"]["name"])
            return
        key = _isomorphic_key(event)
        cached = self._cache.get(key)
        if cached is None:
            self._cache[key] = _Cached(event=event, chain=chain, time=now)
            if len(self._cache) > self._cache_size:
                self._evict()
            await self._create(event)
            return
        self._cache.move_to_end(key)
        cached.last_observed = now
        if cached.series is not None:  # written when the series ends or is refreshed
            cached.series = {"count": cached.series["count"] + 1, "lastObservedTime": rfc3339_micro(now)}
            self.counted += 1
            return
        cached.series = {"count": 2, "lastObservedTime": rfc3339_micro(now)}
        await self._write_series(cached)

    async def _create(self, event: dict[str, Any]) -> None:
        meta = event["metadata"]
        await self.api.call("POST", f"{EVENTS_API}/namespaces/{meta['namespace']}/events", what="create event",
                            body=event)
        self.sent += 1

    async def _write_series(self, cached: _Cached) -> None:
        """The series as it stands, as client-go's recordEvent: a strategic merge patch of `series`
        onto the Event; the Event gone, created again with it."""
        if not self.may_write():
            return
        series = dict(cached.series or {})
        if not series or cached.written == series:
            return
        meta = cached.event["metadata"]
        path = f"{EVENTS_API}/namespaces/{meta['namespace']}/events/{meta['name']}"
        try:
            await self.api.call("PATCH", path, what="patch event series", body={"series": series},
                                content_type="application/strategic-merge-patch+json")
            self.patched += 1
        except ApiException as exc:
            if exc.status != 404:
                raise
            await self._create({**cached.event, "series": series})
        cached.written = series

    def _evict(self) -> None:
        _, old = self._cache.popitem(last=False)
        if old.series is not None and old.written != old.series:
            self._enqueue(old.chain, ("series", old))

    # --- series housekeeping (client-go's finishSeries and refreshExistingEventSeries) ---

    def housekeep(self) -> None:
        """Finish the series quiet for `finish_seconds` (their final count queued, their entry
        dropped), drop the singletons as old and the rate-limit buckets refilled; every
        `refresh_seconds`, queue each open series again (the Event's TTL starts over)."""
        now = self.clock.now()
        refresh = now - self._last_refresh >= self.refresh_seconds
        if refresh:
            self._last_refresh = now
        # A per-object bucket refilled to its burst is as a new one: dropped, so that the buckets of
        # pods long gone are not kept (until `cache_size` of them pushed the oldest out).
        for bucket_key in [k for k, b in self._buckets.items() if b.full(now)]:
            del self._buckets[bucket_key]
        for key, cached in list(self._cache.items()):
            if cached.series is None:
                if cached.time < now - self.finish_seconds:
                    del self._cache[key]
            elif cached.last_observed < now - self.finish_seconds:
                del self._cache[key]
                self._enqueue(cached.chain, ("series", cached))
            elif refresh:
                cached.written = None
                self._enqueue(cached.chain, ("series", cached))

    async def _housekeeping(self) -> None:
        while True:
            await self._sleep(self.finish_seconds)
            try:
                self.housekeep()
            except Exception:
                logger.exception("Event series housekeeping failed")


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

