"""The lists `kubeberth run` sends while it is still importing (operator/prefetch.py), against a real
HTTP server: taken by the reflectors as their initial list, or left alone when they cannot be."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from kubeberth.operator import prefetch
from kubeberth.operator.reflector import ADDED, Informers

from .test_reflector import CLASSES, NODES, PODS, Server, Sink, _until, no_sleep, obj

API: dict[str, list[dict[str, Any]]] = {
    "nodes": [obj(f"n{i}", 100 + i) for i in range(5)],
    "pods": [obj(f"p{i}", 200 + i, spec={"nodeName": "n0"}) for i in range(3)],
}


class Apiserver:
    """Paged lists of nodes and pods at resourceVersion 300, over HTTP; `fail` answers 500."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.fail = False
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        self.requests.append(request.path_qs)
        if self.fail:
            return web.json_response({"kind": "Status", "code": 500}, status=500)
        items = API[request.match_info["plural"]]
        start, limit = int(request.query.get("continue") or 0), int(request.query["limit"])
        token = str(start + 2) if start + 2 < len(items) else ""
        assert limit == prefetch.PAGE_SIZE
        return web.json_response({"items": items[start:start + 2],  # pages of 2, whatever the limit
                                  "metadata": {"resourceVersion": "300", "continue": token}})


@pytest.fixture
async def apiserver() -> AsyncIterator[Apiserver]:
    server = Apiserver()
    app = web.Application()
    app.router.add_get("/api/v1/{plural}", server.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    server.url = f"http://127.0.0.1:{port}"
    yield server
    await runner.cleanup()


def options(url: str) -> prefetch.Options:
    return prefetch.Options(kubeconfig=None, context=None, in_cluster=None, server=url)


async def test_the_lists_sent_during_the_imports_are_the_informers_initial_lists(apiserver: Apiserver) -> None:
    early = prefetch.Prefetch(["--server", apiserver.url, "--seed=0"]).start()
    server, sink = Server(), Sink()
    server.objects = {"priorityclasses": {"c": obj("c", 1)}}
    informers = Informers(rest=server, kinds=[PODS, NODES, CLASSES], sink=sink, sleep=no_sleep,  # type: ignore[arg-type]
                          prefetched=early.take)
    await server.streams.put([])
    await informers.sync()
    assert early.options == options(apiserver.url)
    assert sink.applied == [("PriorityClass", ADDED, "c"), *[("Node", ADDED, f"n{i}") for i in range(5)],
                            *[("Pod", ADDED, f"p{i}") for i in range(3)]]
    # Listed once, by the prefetch, page by page; the informers asked only for the rest, then watch
    # nodes and pods from the prefetched list's version.
    assert sorted(apiserver.requests) == sorted([
        "/api/v1/nodes?limit=500", "/api/v1/nodes?limit=500&continue=2", "/api/v1/nodes?limit=500&continue=4",
        "/api/v1/pods?limit=500", "/api/v1/pods?limit=500&continue=2"])
    assert [path for path, q in server.requests if not q.get("watch")] == ["/apis/scheduling.k8s.io/v1/priorityclasses"]
    await _until(lambda: len({path for path, q in server.requests if q.get("watch")}) == 3)
    watched: dict[str, str] = {}
    for path, q in server.requests:
        if q.get("watch"):
            watched.setdefault(path, q["resourceVersion"])  # each kind's first watch
    assert watched["/api/v1/pods"] == watched["/api/v1/nodes"] == "300"
    assert early.take("/api/v1/pods") is None  # given once
    await informers.stop()


async def test_a_prefetch_that_failed_leaves_the_informers_to_list_themselves(apiserver: Apiserver) -> None:
    apiserver.fail = True
    early = prefetch.Prefetch(["--server", apiserver.url]).start()
    server, sink = Server(), Sink()
    server.objects = {"pods": {"q": obj("q", 7)}}
    informers = Informers(rest=server, kinds=[PODS], sink=sink, sleep=no_sleep,  # type: ignore[arg-type]
                          prefetched=early.take)
    await server.streams.put([])
    await informers.sync()
    await _until(lambda: len(apiserver.requests) == 2)
    assert sorted(apiserver.requests) == ["/api/v1/nodes?limit=500", "/api/v1/pods?limit=500"]  # refused
    assert sink.applied == [("Pod", ADDED, "q")]  # the informers' own list
    assert [path for path, q in server.requests if not q.get("watch")] == ["/api/v1/pods"]
    await informers.stop()


@pytest.mark.parametrize("argv", [["--help"], ["--seed", "x"], ["--no-such-option"], ["--server"]],
                         ids=["help", "bad-value", "unknown-option", "missing-value"])
def test_arguments_the_run_command_would_refuse_send_nothing(argv: list[str]) -> None:
    assert prefetch.parse_options(argv) is None


@pytest.mark.parametrize("argv, want", [
    (["--kubeconfig=/k", "--context", "c"], prefetch.Options("/k", "c", None, None)),
    (["--in-cluster", "--leader-elect"], prefetch.Options(None, None, True, None)),
    (["--server", "http://127.0.0.1:1/"], prefetch.Options(None, None, None, "http://127.0.0.1:1/")),
], ids=["kubeconfig", "in-cluster", "server"])
def test_the_connection_options_are_read_as_the_run_command_reads_them(argv: list[str],
                                                                       want: prefetch.Options) -> None:
    assert prefetch.parse_options(argv) == want


def test_the_prefetch_is_handed_over_once_and_only_to_an_operator_that_connects_the_same_way(
        monkeypatch: pytest.MonkeyPatch) -> None:
    early = prefetch.Prefetch(["--server", "http://127.0.0.1:9"])
    assert early.options == options("http://127.0.0.1:9")
    monkeypatch.setattr(prefetch, "_current", early)
    assert prefetch.taken_by(options("http://127.0.0.1:8")) is None  # another server: not its lists
    monkeypatch.setattr(prefetch, "_current", early)
    assert prefetch.taken_by(options("http://127.0.0.1:9")) is early
    assert prefetch.taken_by(options("http://127.0.0.1:9")) is None
