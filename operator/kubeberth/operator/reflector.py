"""Informer-grade watching: client-go's Reflector and the shared informers' "wait for sync".

One `Reflector` per kind: a paginated LIST (`limit`/`continue`), then a WATCH from the list's
resourceVersion with bookmarks. A dropped stream resumes from the last resourceVersion seen;
`410 Gone` (an answer to the watch request, or an ERROR event in the stream) means the history
is gone, and the kind is listed again and *replaced* as client-go's DeltaFIFO.Replace does:
objects that are gone are delivered as deletions, changed ones as updates, unchanged ones not
at all. Failures of any kind are retried with backoff; a reflector never ends on its own.

Events reach the sink in batches (every complete line one read brought), on the event loop,
so a batch is applied between two scheduling cycles. `Informers.sync()` lists every kind
(concurrently), hands the lists to the sink in dependency order, and only then starts the
watches: nothing is scheduled before every kind has been listed once.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kubernetes_asyncio.client.exceptions import ApiException

from ..cache.objects import object_key
from ..scheduler.watched import WatchedKind
from .background import cancel_and_wait
from .rest import RestClient, describe_error

logger = logging.getLogger(__name__)

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
Event = tuple[str, dict[str, Any]]


class Sink(Protocol):
    def apply(self, kind: WatchedKind, events: list[Event]) -> None: ...


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _key(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("uid") or object_key(obj))


def _trim(obj: dict[str, Any]) -> None:
    """Drop metadata.managedFields, as kube-scheduler's pod informer does (its transform): nothing
    here reads them, and they are most of a small object's dicts, which the cache would keep and
    the cyclic collector walk."""
    meta = obj.get("metadata")
    if type(meta) is dict and "managedFields" in meta:
        del meta["managedFields"]


def _stub(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What a deletion needs of an object the reflector no longer has in full."""
    meta = _meta(obj)
    kept = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion") if meta.get(k) is not None}
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": kept}



# The API server sends a watcher that asked for bookmarks one about every minute (the watch cache's
# bookmark frequency), so a stream silent for longer than this is hung (a half-open connection, a
# proxy that stopped forwarding): it is dropped and resumed from the last resourceVersion.
WATCH_IDLE_SECONDS = 150.0


class Gone(Exception):
    """410: the resourceVersion is too old; list again."""


class HungStream(Exception):
    """A watch request or stream that stayed silent past the idle timeout."""


@dataclass
class Backoff:
    """client-go's reflector backoff: 0.8 s doubling to 30 s, reset after a quiet minute."""

    initial: float = 0.8
    maximum: float = 30.0
    reset_after: float = 60.0
    _delay: float = 0.0
    _last: float = 0.0

    def next(self) -> float:
        now = time.monotonic()
        if self._delay and now - self._last > self.reset_after:
            self._delay = 0.0
        self._delay = min(self.maximum, self._delay * 2 if self._delay else self.initial)
        self._last = now
        return self._delay * (1 + random.random() * 0.2)


ProblemHook = Callable[[WatchedKind, str | None], None]


def kind_problem(kind: WatchedKind, verb: str, exc: ApiException) -> str | None:
    """Why a kind a plugin declared cannot be read, from the answer to a `verb` (list or watch) of
    it: not served (404: its CRD is not installed) or forbidden (403: RBAC); None for other errors
    (outages, retried as for every kind)."""
    resource = f"{kind.plural}.{kind.group}" if kind.group else kind.plural
    if exc.status == 404:
        return (f"the API server does not serve {resource}/{kind.version} (404 on {verb}: is its "
                f"CustomResourceDefinition installed?)")
    if exc.status == 403:
        return (f"the ServiceAccount may not {verb} {resource} (403; its ClusterRole needs a rule "
                f"apiGroups: [\"{kind.group}\"], resources: [{kind.plural}], verbs: [list, watch])")
    return None


class Reflector:
    """Lists and watches one kind; keeps (key -> resourceVersion) to replace after a relist.

    For a kind a plugin declared (`kind.declared`), `on_problem` hears when it cannot be read
    (not served, or a verb forbidden) and when it can again; such a kind does not hold up the
    initial sync."""

    def __init__(self, *, rest: RestClient, kind: WatchedKind, sink: Sink, page_size: int = 500,
                 watch_seconds: tuple[int, int] = (300, 600),
                 on_batch: Callable[[WatchedKind], Awaitable[None]] | None = None,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
                 on_problem: ProblemHook | None = None,
                 idle_timeout: float = WATCH_IDLE_SECONDS) -> None:
        self.rest = rest
        self.kind = kind
        self.idle_timeout = idle_timeout
        self.sink = sink
        self.page_size = page_size
        self.watch_seconds = watch_seconds
        self.on_batch = on_batch
        self.sleep = sleep
        self.resource_version = ""
        self.known: dict[str, str] = {}  # key -> resourceVersion of what the sink has
        self._stubs: dict[str, dict[str, Any]] = {}
        self.backoff = Backoff()
        self.missing = False  # the server does not serve the kind (404): retried quietly
        self.failing = False  # the last list or watch failed and no later one succeeded yet
        self.lists = 0
        self.watches = 0
        self.events = 0
        self.on_problem = on_problem
        self.problem: str | None = None
        self._problem_verb = ""  # the verb `problem` is about
        self.on_listed: Callable[[WatchedKind], None] | None = None  # once, after the first list delivered
        self.listed = False

    def mark_listed(self) -> None:
        """The sink holds a complete list of the kind (the first time: tell `on_listed`)."""
        if not self.listed:
            self.listed = True
            if self.on_listed is not None:
                self.on_listed(self.kind)

    def report(self, verb: str, exc: BaseException | None) -> bool:
        """A declared kind's list or watch answered `exc` (None: it went through): tell on_problem
        when that changes whether it can be read. True when `exc` is such a problem."""
        if not self.kind.declared:
            return False
        problem = kind_problem(self.kind, verb, exc) if isinstance(exc, ApiException) else None
        if exc is not None and problem is None:
            return False  # an outage: nothing to tell the profiles
        if exc is None and verb == "list" and self._problem_verb == "watch":
            return False  # listing went through; watching still may not
        if problem != self.problem:
            self.problem, self._problem_verb = problem, verb if problem is not None else ""
            if self.on_problem is not None:
                self.on_problem(self.kind, problem)
        return problem is not None

    # --- LIST ---

    async def list_all(self) -> tuple[list[dict[str, Any]], str]:
        """Every object, page by page; restarts when a continue token expires."""
        while True:
            items: list[dict[str, Any]] = []
            query = {"limit": str(self.page_size)}
            try:
                while True:
                    page = await self.rest.request("GET", self.kind.path, query=query, timeout=60.0)
                    items.extend(page.get("items") or ())
                    meta = page.get("metadata") or {}
                    token = meta.get("continue")
                    if not token:
                        self.lists += 1
                        return items, str(meta.get("resourceVersion") or "")
                    query = {"limit": str(self.page_size), "continue": token}
            except ApiException as exc:
                if exc.status != 410:
                    raise
                logger.info("Listing %s: the continue token expired; listing again", self.kind.plural)

    def replace(self, items: list[dict[str, Any]], resource_version: str) -> list[Event]:
        """The events that make the sink's view equal to `items` (DeltaFIFO.Replace). Deletions come
        first: an object recreated under the same name must not be removed by its predecessor's."""
        present = {_key(obj) for obj in items}
        events: list[Event] = []
        for key in [k for k in self.known if k not in present]:
            del self.known[key]
            events.append((DELETED, self._stubs.pop(key)))
        for obj in items:
            obj.setdefault("apiVersion", f"{self.kind.group}/{self.kind.version}".lstrip("/"))
            obj.setdefault("kind", self.kind.kind)
            _trim(obj)
            key = _key(obj)
            rv = str(_meta(obj).get("resourceVersion") or "")
            known = self.known.get(key)
            if known is not None and rv and known == rv:
                continue
            events.append((ADDED if known is None else MODIFIED, obj))
            self.known[key] = rv
            self._stubs[key] = _stub(obj)
        self.resource_version = resource_version
        return events

    async def relist(self) -> list[Event]:
        items, rv = await self.list_all()
        return self.replace(items, rv)

    # --- WATCH ---

    def _translate(self, batch: list[dict[str, Any]]) -> list[Event]:
        events: list[Event] = []
        for ev in batch:
            etype = ev.get("type")
            obj = ev.get("object") or {}
            if etype == "ERROR":
                code = obj.get("code")
                if code == 410:
                    raise Gone(str(obj.get("message") or "resource version too old"))
                raise ApiException(status=int(code or 500), reason=str(obj.get("message") or obj.get("reason")))
            rv = str(_meta(obj).get("resourceVersion") or "")
            if etype == "BOOKMARK":
                if rv:
                    self.resource_version = rv
                continue
            key = _key(obj)
            if etype == DELETED:
                if self.known.pop(key, None) is not None:
                    self._stubs.pop(key, None)
                    events.append((DELETED, obj))
            elif etype in (ADDED, MODIFIED):
                known = self.known.get(key)
                if known is None or not rv or known != rv:
                    _trim(obj)
                    events.append((ADDED if known is None else MODIFIED, obj))
                    self.known[key] = rv
                    self._stubs[key] = _stub(obj)
            if rv:
                self.resource_version = rv
        return events

    async def _deliver(self, events: list[Event]) -> None:
        if not events:
            return
        self.events += len(events)
        self.sink.apply(self.kind, events)
        if self.on_batch is not None:
            await self.on_batch(self.kind)

    async def watch_once(self) -> None:
        """One WATCH from the last resourceVersion, until the server ends it. Raises Gone on 410."""
        seconds = random.randint(*self.watch_seconds)
        query = {"resourceVersion": self.resource_version, "allowWatchBookmarks": "true",
                 "timeoutSeconds": str(seconds)}
        self.watches += 1
        idle = min(seconds + 30.0, self.idle_timeout)
        try:
            async for batch in self.rest.watch(self.kind.path, query, read_timeout=idle):
                self.failing = False
                if self.problem is not None:
                    self.report("watch", None)
                await self._deliver(self._translate(batch))
        except ApiException as exc:
            if exc.status == 410:
                raise Gone(str(exc.reason)) from exc
            raise
        except TimeoutError as exc:
            raise HungStream(f"nothing read for {idle:.0f}s, not even a bookmark: a hung stream") from exc

    async def run(self) -> None:
        """Watch forever (after the initial list): resume, relist on 410, back off on failures."""
        while True:
            verb = "list"
            try:
                if not self.resource_version:
                    await self._deliver(await self.relist())
                    self.mark_listed()
                    self.failing = False
                    if self.missing:
                        self.missing = False
                        logger.info("The API server serves %s now", self.kind.path)
                    self.report("list", None)
                verb = "watch"
                await self.watch_once()
                continue  # the server ended the stream (timeoutSeconds): resume
            except asyncio.CancelledError:
                raise
            except Gone as exc:
                logger.info("Watching %s: %s; listing again", self.kind.plural, exc)
                self.resource_version = ""
                continue
            except Exception as exc:
                self.failing = not self.missing
                if self.report(verb, exc):
                    self.failing = False  # refused profiles say why; the kind is not an outage
                delay = self.backoff.next()
                if isinstance(exc, ApiException) and exc.status == 404 and self.missing:
                    logger.debug("%s is still not served; retrying in %.1fs", self.kind.path, delay)
                else:
                    logger.warning("Watching %s failed (%s); retrying in %.1fs", self.kind.plural,
                                   describe_error(exc), delay)
                await self.sleep(delay)


class Informers:
    """The reflectors of every watched kind, synced together before anything is scheduled.

    The kinds plugins declare they read are not among them: `follow(kinds)` starts a reflector for
    each kind a profile needs now and stops (forgetting its objects) those no profile needs any
    more; `on_listed` hears when a started kind has been listed into the sink (its WaitForCacheSync)."""

    def __init__(self, *, rest: RestClient, kinds: Iterable[WatchedKind], sink: Sink,
                 on_batch: Callable[[WatchedKind], Awaitable[None]] | None = None,
                 page_size: int = 500, sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
                 on_problem: ProblemHook | None = None,
                 idle_timeout: float = WATCH_IDLE_SECONDS) -> None:
        self._make = functools.partial(Reflector, rest=rest, sink=sink, page_size=page_size, on_batch=on_batch,
                                       sleep=sleep, on_problem=on_problem, idle_timeout=idle_timeout)
        self.reflectors: list[Reflector] = [self._make(kind=k) for k in kinds]
        self.sink = sink
        self.on_batch = on_batch
        self.sleep = sleep
        self.synced = asyncio.Event()
        self.sync_seconds: float | None = None
        self._tasks: list[asyncio.Task[None]] = []
        # Kinds started by follow(): store key -> (reflector, its task once started).
        self.on_listed: Callable[[WatchedKind], None] | None = None
        self.on_forgotten: Callable[[WatchedKind], None] | None = None
        self.followed: dict[str, tuple[Reflector, asyncio.Task[None] | None]] = {}
        self._started = False
        self._stopped: list[asyncio.Task[None]] = []

    # --- kinds profiles need now ---

    def follow(self, kinds: Iterable[WatchedKind]) -> None:
        """Watch exactly these (declared) kinds besides the table's: start the new ones (listed, then
        watched), stop the others at once, their objects delivered as deletions."""
        wanted = {k.store_key: k for k in kinds}
        self._stopped = [t for t in self._stopped if not t.done()]
        for key in [k for k in self.followed if k not in wanted]:
            reflector, task = self.followed.pop(key)
            if task is not None:
                task.cancel()  # it delivers nothing more: the cancellation lands at its next await
                self._stopped.append(task)
            self.reflectors.remove(reflector)
            gone = reflector.replace([], "")
            if gone:
                self.sink.apply(reflector.kind, gone)
            logger.info("Stopped watching %s: no profile needs it", reflector.kind.path)
            if self.on_forgotten is not None:
                self.on_forgotten(reflector.kind)
        for key, kind in wanted.items():
            if key not in self.followed:
                reflector = self._make(kind=kind)
                reflector.on_listed = self.on_listed
                self.reflectors.append(reflector)
                self.followed[key] = (reflector, None)
        if self._started:
            self._start_followed()

    def _start_followed(self) -> None:
        loop = asyncio.get_running_loop()
        for key, (reflector, task) in list(self.followed.items()):
            if task is None:
                logger.info("Watching %s: a profile needs it", reflector.kind.path)
                task = loop.create_task(self._run_followed(reflector), name=f"kubeberth watch {reflector.kind.plural}")
                self.followed[key] = (reflector, task)

    async def _run_followed(self, reflector: Reflector) -> None:
        events = await self._initial(reflector)
        if reflector.problem is None:  # listed (not refused): into the sink, then watched
            reflector.events += len(events)
            self.sink.apply(reflector.kind, events)
            if self.on_batch is not None:
                await self.on_batch(reflector.kind)
            reflector.mark_listed()
        await reflector.run()

    async def _initial(self, reflector: Reflector) -> list[Event]:
        backoff = Backoff()
        while True:
            try:
                return await reflector.relist()
            except asyncio.CancelledError:
                raise
            except ApiException as exc:
                if reflector.report("list", exc):  # a plugin's kind: its profiles are refused, the rest go on
                    logger.warning("Cannot list %s, which plugins read: %s", reflector.kind.path, reflector.problem)
                    reflector.missing = exc.status == 404
                    return []
                if exc.status == 404:  # not served (a CRD not installed yet): empty until it is
                    logger.warning("The API server does not serve %s (404): taking it as empty, and watching "
                                   "for it to appear", reflector.kind.path)
                    reflector.missing = True
                    return []
                delay = backoff.next()
                logger.warning("Listing %s failed (HTTP %s %s); retrying in %.1fs", reflector.kind.plural,
                               exc.status, exc.reason, delay)
                await self.sleep(delay)
            except Exception as exc:
                delay = backoff.next()
                logger.warning("Listing %s failed (%s: %s); retrying in %.1fs", reflector.kind.plural,
                               type(exc).__name__, exc, delay)
                await self.sleep(delay)

    async def sync(self) -> None:
        """List every kind, apply the lists in dependency order, then start watching."""
        started = time.monotonic()
        self._started = True
        self._start_followed()
        followed = {id(r) for r, _ in self.followed.values()}
        table = [r for r in self.reflectors if id(r) not in followed]
        lists = await asyncio.gather(*(self._initial(r) for r in table))
        for reflector, events in sorted(zip(table, lists), key=lambda rl: rl[0].kind.order):
            reflector.events += len(events)
            self.sink.apply(reflector.kind, events)
            if self.on_batch is not None:
                await self.on_batch(reflector.kind)
        self.sync_seconds = time.monotonic() - started
        logger.info("Scheduler cache synced in %.2fs: %d objects listed", self.sync_seconds,
                    sum(len(events) for events in lists))
        self.synced.set()
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(r.run(), name=f"kubeberth watch {r.kind.plural}") for r in table]

    @property
    def connected(self) -> bool:
        """Listed once, and every kind's last list or watch went through (none is failing now)."""
        return self.synced.is_set() and not any(r.failing for r in self.reflectors)

    async def stop(self) -> None:
        followed = [task for _, task in self.followed.values() if task is not None]
        await cancel_and_wait([*self._tasks, *followed, *self._stopped])
        self._tasks, self._stopped = [], []
