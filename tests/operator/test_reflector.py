"""The reflectors against a scripted server: pages, resumed watches, 410 and Replace, sync order.

The real API server shows the same behaviours end to end (tests/cluster/test_recovery.py,
test_flow.py); here each path is taken on demand and the exact requests are checked.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from kubeberth.operator.reflector import ADDED, DELETED, MODIFIED, Event, Informers, Reflector
from kubeberth.operator.rest import api_exception
from kubeberth.scheduler.watched import WatchedKind

PODS = WatchedKind("", "v1", "pods", "Pod", 4)
NODES = WatchedKind("", "v1", "nodes", "Node", 3)
CLASSES = WatchedKind("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", 0)


def obj(name: str, rv: int, **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": str(rv)}, **extra}


class Server:
    """Answers LISTs from `objects` (paged) and WATCHes from scripted streams."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, dict[str, Any]]] = {}
        self.rv = 10
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.streams: asyncio.Queue[list[list[dict[str, Any]]] | Exception] = asyncio.Queue()
        self.expire_continue_once = False
        self.list_gate: dict[str, asyncio.Event] = {}

    async def request(self, method: str, path: str, *, query: Mapping[str, str] | None = None,
                      **_: Any) -> Any:
        query = dict(query or {})
        self.requests.append((path, query))
        plural = path.rsplit("/", 1)[1]
        if plural in self.list_gate:
            await self.list_gate[plural].wait()
        items = sorted(self.objects.get(plural, {}).values(), key=lambda o: o["metadata"]["name"])
        start = int(query.get("continue") or 0)
        if start and self.expire_continue_once:
            self.expire_continue_once = False
            raise api_exception(410, "Expired", b"continue token expired")
        limit = int(query.get("limit") or len(items) or 1)
        page = items[start:start + limit]
        token = str(start + limit) if start + limit < len(items) else ""
        return {"items": [dict(o) for o in page], "metadata": {"resourceVersion": str(self.rv), "continue": token}}

    async def watch(self, path: str, query: Mapping[str, str], **_: Any) -> AsyncIterator[list[dict[str, Any]]]:
        self.requests.append((path, {**query, "watch": "true"}))
        script = await self.streams.get()
        if isinstance(script, Exception):
            raise script
        for batch in script:
            yield batch


class Sink:
    def __init__(self) -> None:
        self.applied: list[tuple[str, str, str]] = []

    def apply(self, kind: WatchedKind, events: list[Event]) -> None:
        self.applied += [(kind.kind, etype, raw["metadata"]["name"]) for etype, raw in events]


async def no_sleep(_: float) -> None:
    await asyncio.sleep(0)


def reflector(server: Server, sink: Sink, kind: WatchedKind = PODS, page_size: int = 2) -> Reflector:
    return Reflector(rest=server, kind=kind, sink=sink, page_size=page_size, sleep=no_sleep)  # type: ignore[arg-type]


async def test_a_list_is_read_page_by_page_and_restarted_when_its_continue_token_expires():
    server, sink = Server(), Sink()
    server.objects["pods"] = {n: obj(n, i) for i, n in enumerate("abcde", 1)}
    server.expire_continue_once = True
    r = reflector(server, sink)
    events = await r.relist()
    assert [e[1]["metadata"]["name"] for e in events] == list("abcde")
    assert all(e[0] == ADDED for e in events) and r.resource_version == "10"
    continues = [q.get("continue", "") for _, q in server.requests]
    assert continues == ["", "2", "", "2", "4"]  # the expired token: the list starts over


async def test_a_relist_replaces_deletions_changes_and_additions_and_skips_the_unchanged():
    server, sink = Server(), Sink()
    server.objects["pods"] = {"keep": obj("keep", 1), "change": obj("change", 2), "gone": obj("gone", 3)}
    r = reflector(server, sink)
    await r.relist()
    server.objects["pods"] = {"keep": obj("keep", 1), "change": obj("change", 7), "new": obj("new", 8)}
    events = await r.relist()
    assert [(t, o["metadata"]["name"]) for t, o in events] == [  # deletions first
        (DELETED, "gone"), (MODIFIED, "change"), (ADDED, "new")]
    deleted = next(o for t, o in events if t == DELETED)
    assert deleted["metadata"] == {"name": "gone", "uid": "uid-gone", "resourceVersion": "3"}


async def test_a_watch_resumes_from_the_last_version_and_relists_on_410():
    server, sink = Server(), Sink()
    server.objects["pods"] = {"a": obj("a", 1), "b": obj("b", 2)}
    r = reflector(server, sink)
    await r.relist()
    await server.streams.put([[{"type": "ADDED", "object": obj("c", 11)}],
                              [{"type": "MODIFIED", "object": obj("a", 12)},
                               {"type": "MODIFIED", "object": obj("a", 12)},  # a repeat: applied once
                               {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "15"}}}]])
    await server.streams.put(ConnectionResetError("stream cut"))  # the next watch fails: resumes
    await server.streams.put([[{"type": "ERROR", "object": {"kind": "Status", "code": 410,
                                                            "message": "too old resource version"}}]])
    server.objects["pods"] = {"a": obj("a", 12), "c": obj("c", 11), "d": obj("d", 16)}  # b went in the gap
    server.rv = 20
    await server.streams.put(api_exception(410, "Gone", b""))  # 410 as the answer to the watch request
    await server.streams.put([[{"type": "DELETED", "object": obj("d", 21)}]])
    task = asyncio.get_running_loop().create_task(r.run())
    while len(sink.applied) < 5:
        await asyncio.sleep(0)
    await asyncio.sleep(0.01)
    task.cancel()
    assert sink.applied == [("Pod", ADDED, "c"), ("Pod", MODIFIED, "a"),
                            ("Pod", DELETED, "b"), ("Pod", ADDED, "d"),  # the relist after the 410 event
                            ("Pod", DELETED, "d")]
    watches = [q["resourceVersion"] for _, q in server.requests if q.get("watch")]
    # 10: after the list; 15: resumed from the bookmark; 15 again: 410; 20: after the relist, 410
    # answered to the request itself; 20 after the next relist; then from the last event.
    assert watches[:6] == ["10", "15", "15", "20", "20", "21"]
    assert sorted(r.known) == ["uid-a", "uid-c"]


async def test_other_watch_failures_back_off_and_never_end_the_reflector():
    server, sink = Server(), Sink()
    r = reflector(server, sink)
    await r.relist()
    for _ in range(3):
        await server.streams.put(api_exception(500, "Internal Server Error", b""))
    await server.streams.put([[{"type": "ADDED", "object": obj("x", 11)}]])
    task = asyncio.get_running_loop().create_task(r.run())
    while not sink.applied:
        await asyncio.sleep(0)
    task.cancel()
    assert sink.applied == [("Pod", ADDED, "x")] and r.backoff._delay > r.backoff.initial


async def test_nothing_is_applied_before_every_kind_is_listed_then_in_dependency_order():
    server, sink = Server(), Sink()
    server.objects = {"pods": {"p": obj("p", 3)}, "nodes": {"n": obj("n", 2)}, "priorityclasses": {"c": obj("c", 1)}}
    server.list_gate["nodes"] = asyncio.Event()  # nodes are listed last
    informers = Informers(rest=server, kinds=[PODS, NODES, CLASSES], sink=sink, sleep=no_sleep)  # type: ignore[arg-type]
    sync = asyncio.get_running_loop().create_task(informers.sync())
    for _ in range(20):
        await asyncio.sleep(0)
    assert sink.applied == [] and not informers.synced.is_set()
    server.list_gate["nodes"].set()
    await sync
    assert sink.applied == [("PriorityClass", ADDED, "c"), ("Node", ADDED, "n"), ("Pod", ADDED, "p")]
    assert informers.synced.is_set()
    await informers.stop()


@pytest.mark.parametrize("status", [403, 500])
async def test_a_list_that_keeps_failing_is_retried_not_fatal(status: int):
    server, sink = Server(), Sink()
    calls = 0
    original = server.request

    async def flaky(method: str, path: str, **kw: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls <= 2:
            raise ApiException(status=status, reason="nope")
        return await original(method, path, **kw)

    server.request = flaky  # type: ignore[method-assign]
    informers = Informers(rest=server, kinds=[PODS], sink=sink, sleep=no_sleep)  # type: ignore[arg-type]
    await informers.sync()
    assert informers.synced.is_set() and calls == 3
    await informers.stop()


async def test_a_kind_the_server_does_not_serve_is_empty_and_picked_up_once_it_is():
    server, sink = Server(), Sink()
    served = False
    original = server.request

    async def crd_missing(method: str, path: str, **kw: Any) -> Any:
        if path.endswith("/priorityclasses") and not served:
            raise ApiException(status=404, reason="Not Found")
        return await original(method, path, **kw)

    server.request = crd_missing  # type: ignore[method-assign]
    server.objects = {"pods": {"p": obj("p", 3)}}
    informers = Informers(rest=server, kinds=[PODS, CLASSES], sink=sink, sleep=no_sleep)  # type: ignore[arg-type]
    await server.streams.put([])  # the pods' first watch ends at once; later ones wait
    await informers.sync()
    assert informers.synced.is_set() and sink.applied == [("Pod", ADDED, "p")]
    served = True
    server.objects["priorityclasses"] = {"c": obj("c", 4)}
    while ("PriorityClass", ADDED, "c") not in sink.applied:
        await asyncio.sleep(0)
    await informers.stop()


async def _until(predicate: Any) -> None:
    async def poll() -> None:
        while not predicate():
            await asyncio.sleep(0)
    await asyncio.wait_for(poll(), 5.0)


async def test_informers_are_not_connected_while_a_watch_fails_and_again_once_one_is_accepted():
    server, sink = Server(), Sink()
    informers = Informers(rest=server, kinds=[PODS], sink=sink, sleep=no_sleep)  # type: ignore[arg-type]
    assert not informers.connected
    await server.streams.put(api_exception(503, "Service Unavailable", b""))
    await informers.sync()
    await _until(lambda: any(r.failing for r in informers.reflectors))
    assert not informers.connected  # pods cannot be watched: the cache may be stale
    await server.streams.put([[]])  # a watch accepted (the empty batch a stream starts with), then ended
    await _until(lambda: not any(r.failing for r in informers.reflectors))
    assert informers.connected
    await informers.stop()


async def test_a_silent_watch_is_dropped_at_the_idle_timeout_and_resumed_from_its_version():
    """The API server sends a bookmark about every minute: a stream silent for longer is hung (a
    half-open connection, a stalled proxy). Against a real HTTP server that accepts and says nothing."""
    from aiohttp import web
    from kubernetes_asyncio.client import Configuration

    from kubeberth.operator.reflector import HungStream
    from kubeberth.operator.rest import RestClient

    watches: list[str] = []
    done = asyncio.Event()

    async def silent(request: web.Request) -> web.StreamResponse:
        watches.append(request.query.get("resourceVersion", ""))
        response = web.StreamResponse()
        await response.prepare(request)  # headers sent, then nothing
        await done.wait()
        return response

    app = web.Application()
    app.router.add_get("/api/v1/pods", silent)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    cfg = Configuration()
    cfg.host = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
    rest = RestClient(cfg)
    try:
        r = Reflector(rest=rest, kind=PODS, sink=Sink(), sleep=no_sleep, idle_timeout=0.2)
        r.resource_version = "42"
        with pytest.raises(HungStream, match="nothing read for 0s, not even a bookmark"):
            await r.watch_once()
        task = asyncio.get_running_loop().create_task(r.run())
        while len(watches) < 3:
            await asyncio.sleep(0.01)
        task.cancel()
        assert watches == ["42", "42", "42"]  # resumed from where it was, never listed again
        assert r.lists == 0
    finally:
        done.set()
        await rest.close()
        await runner.cleanup()


@pytest.mark.parametrize(("watch_seconds", "idle", "want"), [
    ((300, 600), 150.0, 150.0),  # the default: well past the API server's minute between bookmarks
    ((10, 10), 150.0, 40.0),     # a short watch: the server ends it first
], ids=["idle-timeout", "watch-timeout"])
async def test_a_watch_reads_with_the_shorter_of_its_timeout_and_the_idle_timeout(watch_seconds, idle, want):
    seen: list[float] = []

    class Recording(Server):
        async def watch(self, path: str, query: Mapping[str, str], **kw: Any) -> AsyncIterator[list[dict[str, Any]]]:
            seen.append(kw["read_timeout"])
            yield []

    r = Reflector(rest=Recording(), kind=PODS, sink=Sink(), watch_seconds=watch_seconds,  # type: ignore[arg-type]
                  idle_timeout=idle)
    await r.watch_once()
    assert seen == [want]


async def test_managed_fields_are_dropped_from_listed_and_watched_objects():
    """As kube-scheduler's pod informer does: the cache never keeps them."""
    fields = [{"manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1",
               "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}}]
    server, seen = Server(), []

    class Keep(Sink):
        def apply(self, kind: WatchedKind, events: list[Event]) -> None:
            seen.extend(raw for _, raw in events)

    listed = obj("a", 1)
    listed["metadata"]["managedFields"] = fields
    server.objects["pods"] = {"a": listed}
    r = reflector(server, Keep())
    await r._deliver(await r.relist())
    watched = obj("b", 11)
    watched["metadata"]["managedFields"] = fields
    await server.streams.put([[{"type": "ADDED", "object": watched}]])
    await r.watch_once()
    assert [o["metadata"]["name"] for o in seen] == ["a", "b"]
    assert all("managedFields" not in o["metadata"] for o in seen)
    assert seen[1]["metadata"] == {"name": "b", "uid": "uid-b", "resourceVersion": "11"}
