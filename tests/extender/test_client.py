"""HTTPExtender against real servers on 127.0.0.1: each verb, both node modes, failures."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from aiohttp import web

from kubeberth.extender import ExtenderError
from kubeberth.extender.wire import node_name_of
from kubeberth.framework.victims import Victims
from tests.builders import make_node, make_pod, node_info, snapshot
from tests.extender.conftest import ExtenderServer

NODES = [node_info(make_node(n, labels={"zone": z})) for n, z in (("n1", "a"), ("n2", "b"), ("n3", "a"))]


def keep_zone_a(args: dict[str, Any]) -> dict[str, Any]:
    """A non-cache filter: answers the NodeList it was sent, minus zone b."""
    items = args["Nodes"]["items"]
    kept = [n for n in items if n["metadata"]["labels"].get("zone") == "a"]
    failed = {n["metadata"]["name"]: "zone b is closed" for n in items if n not in kept}
    return {"Nodes": {"metadata": {}, "items": kept}, "NodeNames": None, "FailedNodes": failed,
            "FailedAndUnresolvableNodes": {}, "Error": ""}


async def test_filter_sends_node_list_and_reads_nodes(server: ExtenderServer, make_extender) -> None:
    server.handlers["filter"] = keep_zone_a
    ext = make_extender(server.url, filterVerb="filter")
    pod = make_pod("p")
    feasible, failed, unresolvable = await ext.filter(pod, NODES)
    assert [ni.name for ni in feasible] == ["n1", "n3"]
    assert feasible[0] is NODES[0]  # the snapshot's NodeInfo, not a copy
    assert failed == {"n2": "zone b is closed"}
    assert unresolvable == {}
    call = server.last("filter")
    assert set(call.body) == {"Pod", "Nodes", "NodeNames"}
    assert call.body["NodeNames"] is None
    assert call.body["Pod"] == pod.raw
    assert call.body["Nodes"]["items"] == [ni.node.raw for ni in NODES]
    assert call.headers["Content-Type"] == "application/json"


async def test_filter_node_cache_capable_sends_and_reads_names(server: ExtenderServer, make_extender) -> None:
    server.handlers["filter"] = lambda args: {"NodeNames": [n for n in args["NodeNames"] if n != "n1"],
                                             "FailedAndUnresolvableNodes": {"n1": "gone for good"}}
    ext = make_extender(server.url, filterVerb="filter", nodeCacheCapable=True)
    feasible, failed, unresolvable = await ext.filter(make_pod("p"), NODES)
    assert [ni.name for ni in feasible] == ["n2", "n3"]
    assert (failed, unresolvable) == ({}, {"n1": "gone for good"})
    body = server.last("filter").body
    assert body["NodeNames"] == ["n1", "n2", "n3"]
    assert body["Nodes"] is None


async def test_filter_lowercase_response_keys(server: ExtenderServer, make_extender) -> None:
    server.handlers["filter"] = lambda args: {
        "nodes": {"items": [n for n in args["Nodes"]["items"] if node_name_of(n) == "n2"]},
        "failednodes": {"n1": "lower"}, "failedAndUnresolvableNodes": {"n3": "camel"}, "error": ""}
    ext = make_extender(server.url, filterVerb="filter")
    feasible, failed, unresolvable = await ext.filter(make_pod("p"), NODES)
    assert [ni.name for ni in feasible] == ["n2"]
    assert failed == {"n1": "lower"}
    assert unresolvable == {"n3": "camel"}


async def test_filter_all_filtered_out_when_no_nodes_returned(server: ExtenderServer, make_extender) -> None:
    server.handlers["filter"] = lambda args: {"FailedNodes": {"n1": "x"}}
    ext = make_extender(server.url, filterVerb="filter")
    feasible, failed, _ = await ext.filter(make_pod("p"), NODES)
    assert feasible == [] and failed == {"n1": "x"}


@pytest.mark.parametrize(
    ("answer", "match"),
    [
        pytest.param({"Error": "quota service down"}, "returned an error from filter: quota service down",
                     id="error-field"),
        pytest.param({"error": "lowercase error"}, "lowercase error", id="error-field-lowercase"),
        pytest.param({"NodeNames": ["n1", "n9"]}, "claims a filtered node 'n9' which is not found",
                     id="unknown-node"),
        pytest.param(web.Response(status=500, text="internal trouble"),
                     r"failed filter with extender at URL http://127\.0\.0\.1:\d+/api/filter, code 500: internal",
                     id="http-500"),
        pytest.param(web.Response(status=201, text="{}"), "code 201", id="only-200-is-ok"),
        pytest.param(web.Response(status=200, text="{not json", content_type="application/json"),
                     "decoding the filter response .* invalid JSON", id="malformed-json"),
        pytest.param(web.Response(status=200, text="", content_type="application/json"), "EOF", id="empty-body"),
        pytest.param({"NodeNames": "n1"}, "decoding the filter response .*NodeNames", id="wrong-type"),
    ],
)
async def test_filter_failures(server: ExtenderServer, make_extender, answer: Any, match: str) -> None:
    server.handlers["filter"] = lambda args: answer
    ext = make_extender(server.url, filterVerb="filter", nodeCacheCapable=True)
    with pytest.raises(ExtenderError, match=match) as info:
        await ext.filter(make_pod("p"), NODES)
    assert info.value.extender == server.url
    assert info.value.verb == "filter"


async def test_filter_timeout(server: ExtenderServer, make_extender) -> None:
    server.handlers["filter"] = server.hang()
    ext = make_extender(server.url, filterVerb="filter", httpTimeout="150ms")
    started = time.monotonic()
    with pytest.raises(ExtenderError, match=r"filter with extender at URL .* timed out after 0\.15s"):
        await ext.filter(make_pod("p"), NODES)
    assert time.monotonic() - started < 2


async def test_connection_refused(make_extender, server: ExtenderServer) -> None:
    url = server.url
    await server.close()
    ext = make_extender(url, filterVerb="filter")
    with pytest.raises(ExtenderError, match="failed filter with extender at URL"):
        await ext.filter(make_pod("p"), NODES)


async def test_no_filter_verb_passes_everything_without_calling(server: ExtenderServer, make_extender) -> None:
    ext = make_extender(server.url, prioritizeVerb="prioritize")
    feasible, failed, unresolvable = await ext.filter(make_pod("p"), NODES)
    assert feasible == NODES and failed == {} and unresolvable == {}
    assert server.calls == []


@pytest.mark.parametrize("cache", [False, True], ids=["node-list", "node-names"])
async def test_prioritize(server: ExtenderServer, make_extender, cache: bool) -> None:
    def score(args: dict[str, Any]) -> list[dict[str, Any]]:
        names = args["NodeNames"] if cache else [node_name_of(n) for n in args["Nodes"]["items"]]
        return [{"Host": n, "Score": i * 5} for i, n in enumerate(names)]

    server.handlers["prioritize"] = score
    ext = make_extender(server.url, prioritizeVerb="prioritize", weight=3, nodeCacheCapable=cache)
    scores, weight = await ext.prioritize(make_pod("p"), NODES)
    assert scores == [("n1", 0), ("n2", 5), ("n3", 10)]
    assert weight == 3
    body = server.last("prioritize").body
    assert (body["Nodes"] is None) == cache and (body["NodeNames"] is None) == (not cache)


async def test_prioritize_lowercase_keys(server: ExtenderServer, make_extender) -> None:
    server.handlers["prioritize"] = lambda args: [{"host": "n2", "score": 9}]
    ext = make_extender(server.url, prioritizeVerb="prioritize")
    assert await ext.prioritize(make_pod("p"), NODES) == ([("n2", 9)], 1)


async def test_prioritize_without_verb_is_zero_weight(server: ExtenderServer, make_extender) -> None:
    ext = make_extender(server.url, filterVerb="filter")
    assert await ext.prioritize(make_pod("p"), NODES[:1]) == ([("n1", 0)], 0)
    assert server.calls == []


def _preempt_world():
    v1 = make_pod("v1", node="n1", priority=1, uid="u1")
    v2 = make_pod("v2", node="n1", priority=2, uid="u2")
    v3 = make_pod("v3", node="n2", priority=1, uid="u3")
    other = make_pod("o", node="n2", priority=1, uid="u4")
    snap = snapshot([make_node("n1"), make_node("n2")], [v1, v2, v3, other])
    return snap, {"n1": Victims([v1, v2], 1), "n2": Victims([v3], 0)}, (v1, v2, v3, other)


async def test_preempt_full_victims(server: ExtenderServer, make_extender) -> None:
    snap, victims, (v1, v2, _v3, other) = _preempt_world()

    def keep_n2_choose_other(args: dict[str, Any]) -> dict[str, Any]:
        assert args["NodeNameToMetaVictims"] is None
        assert sorted(args["NodeNameToVictims"]) == ["n1", "n2"]
        return {"NodeNameToMetaVictims": {"n2": {"Pods": [{"UID": "u4"}], "NumPDBViolations": 0}}}

    server.handlers["preempt"] = keep_n2_choose_other
    ext = make_extender(server.url, preemptVerb="preempt")
    preemptor = make_pod("p", priority=10)
    out = await ext.process_preemption(preemptor, victims, snap)
    assert out == {"n2": Victims([other], 0)}
    assert out["n2"].pods[0] is other  # the snapshot's pod
    sent = server.last("preempt").body
    assert sent["Pod"] == preemptor.raw
    assert sent["NodeNameToVictims"]["n1"] == {"Pods": [v1.raw, v2.raw], "NumPDBViolations": 1}


async def test_preempt_meta_victims_when_node_cache_capable(server: ExtenderServer, make_extender) -> None:
    snap, victims, (_v1, v2, _, _) = _preempt_world()
    server.handlers["preempt"] = lambda args: {
        "nodenametometavictims": {"n1": {"pods": [{"uid": "u2"}], "numpdbviolations": 0}}}
    ext = make_extender(server.url, preemptVerb="preempt", nodeCacheCapable=True)
    out = await ext.process_preemption(make_pod("p", priority=10), victims, snap)
    assert out == {"n1": Victims([v2], 0)}
    sent = server.last("preempt").body
    assert sent["NodeNameToVictims"] is None
    assert sent["NodeNameToMetaVictims"] == {
        "n1": {"Pods": [{"UID": "u1"}, {"UID": "u2"}], "NumPDBViolations": 1},
        "n2": {"Pods": [{"UID": "u3"}], "NumPDBViolations": 0}}


async def test_preempt_uses_snapshot_source_when_not_given(server: ExtenderServer, make_extender) -> None:
    snap, victims, (_, _, _, other) = _preempt_world()
    server.handlers["preempt"] = lambda args: {"NodeNameToMetaVictims": {"n2": {"Pods": [{"UID": "u4"}]}}}
    ext = make_extender(server.url, preemptVerb="preempt")
    ext.node_infos_source = lambda: snap
    assert await ext.process_preemption(make_pod("p"), victims) == {"n2": Victims([other], 0)}
    ext.node_infos_source = None  # only the proposed victims are known then
    with pytest.raises(ExtenderError, match=r"claims to preempt pod \(UID: u4\) on node: n2"):
        await ext.process_preemption(make_pod("p"), victims)


@pytest.mark.parametrize(
    ("answer", "match"),
    [
        pytest.param({"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "nope"}]}}},
                     r"claims to preempt pod \(UID: nope\) on node: n1, but the pod is not found", id="unknown-uid"),
        pytest.param({"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "u3"}]}}},
                     r"\(UID: u3\) on node: n1", id="pod-on-another-node"),
        pytest.param({"NodeNameToMetaVictims": {"n9": {"Pods": []}}}, "'n9' .* not in the snapshot",
                     id="unknown-node"),
        pytest.param(web.Response(status=500), "failed preempt .* code 500", id="http-500"),
    ],
)
async def test_preempt_failures(server: ExtenderServer, make_extender, answer: Any, match: str) -> None:
    snap, victims, _ = _preempt_world()
    server.handlers["preempt"] = lambda args: answer
    ext = make_extender(server.url, preemptVerb="preempt")
    with pytest.raises(ExtenderError, match=match):
        await ext.process_preemption(make_pod("p"), victims, snap)


async def test_bind(server: ExtenderServer, make_extender) -> None:
    server.handlers["bind"] = lambda args: {"Error": ""}
    ext = make_extender(server.url, bindVerb="bind")
    assert ext.is_binder
    pod = make_pod("web", "shop", uid="uid-123")
    await ext.bind(pod, "n2")
    assert server.last("bind").body == {"PodName": "web", "PodNamespace": "shop", "PodUID": "uid-123",
                                        "Node": "n2"}


@pytest.mark.parametrize(
    ("answer", "match"),
    [
        pytest.param({"Error": "node is full"}, "failed to bind pod shop/web to node n2: node is full", id="error"),
        pytest.param({"error": "lower"}, "lower", id="error-lowercase"),
        pytest.param(web.Response(status=500), "code 500", id="http-500"),
    ],
)
async def test_bind_failures(server: ExtenderServer, make_extender, answer: Any, match: str) -> None:
    server.handlers["bind"] = lambda args: answer
    ext = make_extender(server.url, bindVerb="bind")
    with pytest.raises(ExtenderError, match=match):
        await ext.bind(make_pod("web", "shop"), "n2")


async def test_url_joins_prefix_and_verb(server: ExtenderServer, make_extender) -> None:
    server.handlers["filter"] = lambda args: {"NodeNames": args["NodeNames"]}
    ext = make_extender(server.url + "/", filterVerb="filter", nodeCacheCapable=True)
    await ext.filter(make_pod("p"), NODES)
    assert server.verbs() == ["filter"]


async def test_one_pooled_connection(server: ExtenderServer, make_extender) -> None:
    server.handlers["filter"] = lambda args: {"NodeNames": args["NodeNames"]}
    ext = make_extender(server.url, filterVerb="filter", nodeCacheCapable=True)
    for _ in range(3):
        await ext.filter(make_pod("p"), NODES)
    assert len({c.peer for c in server.calls}) == 1  # keep-alive: one client port
    session = ext._session
    await asyncio.gather(*(ext.filter(make_pod("p"), NODES) for _ in range(4)))
    assert ext._session is session
    await ext.close()
    assert session is not None and session.closed
    await ext.filter(make_pod("p"), NODES)  # usable again: a new session
    assert ext._session is not session


def test_session_survives_event_loop_changes(server_url_in_thread) -> None:
    """simulate may call asyncio.run more than once: each loop gets its own session."""
    from kubeberth.config.models import ExtenderConfig
    from kubeberth.extender import HTTPExtender

    ext = HTTPExtender(ExtenderConfig(urlPrefix=server_url_in_thread, filterVerb="filter", nodeCacheCapable=True))
    for _ in range(2):
        feasible, _, _ = asyncio.run(ext.filter(make_pod("p"), NODES))
        assert [ni.name for ni in feasible] == ["n1", "n2", "n3"]

    async def close() -> None:
        await ext.close()

    asyncio.run(close())


@pytest.fixture
def server_url_in_thread():
    """An extender server in its own thread and loop, for tests that run their own loops."""
    import threading

    ready = threading.Event()
    box: dict[str, Any] = {}

    def run() -> None:
        loop = asyncio.new_event_loop()
        box["loop"] = loop

        async def main() -> None:
            srv = await ExtenderServer().start()
            srv.handlers["filter"] = lambda args: {"NodeNames": args["NodeNames"]}
            box["srv"] = srv
            box["stop"] = asyncio.Event()
            ready.set()
            await box["stop"].wait()
            await srv.close()

        loop.run_until_complete(main())
        loop.close()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    assert ready.wait(5)
    yield box["srv"].url
    box["loop"].call_soon_threadsafe(box["stop"].set)
    t.join(5)
