"""Extenders in the cycle: order, interest, ignorable failures, scores, binders, preemption."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from aiohttp import web

from kubeberth.config.models import ExtenderConfig
from kubeberth.extender import (
    ExtenderError,
    bind_with_extenders,
    find_binder,
    ignored_resources,
    run_filter_extenders,
    run_prioritize_extenders,
)
from kubeberth.framework import Code, NodeToStatus
from kubeberth.framework.victims import Victims
from kubeberth.preemption.extenders import call_preempt_extenders
from tests.builders import make_node, make_pod, node_info, snapshot
from tests.extender.conftest import ExtenderServer

NODES = [node_info(make_node(f"n{i}")) for i in range(1, 5)]
FOO = "example.com/foo"


def drop(*names: str, unresolvable: tuple[str, ...] = ()) -> Any:
    """A nodeCacheCapable filter dropping `names` (Unschedulable) and `unresolvable`."""
    def handler(args: dict[str, Any]) -> dict[str, Any]:
        sent = args["NodeNames"]
        return {"NodeNames": [n for n in sent if n not in names and n not in unresolvable],
                "FailedNodes": {n: f"{n} dropped" for n in names if n in sent},
                "FailedAndUnresolvableNodes": {n: f"{n} unresolvable" for n in unresolvable if n in sent}}
    return handler


def scores(table: dict[str, int]) -> Any:
    return lambda args: [{"Host": h, "Score": s} for h, s in table.items()]


def foo_pod(where: str = "requests", init: bool = False) -> Any:
    """A pod asking for example.com/foo in a container's requests or limits."""
    from kubeberth.model import Pod

    asking = {"name": "c", "resources": {where: {FOO: "1"}}}
    spec: dict[str, Any] = {"containers": [{"name": "main"}], "initContainers": [asking]} if init else {
        "containers": [asking]}
    return Pod({"metadata": {"name": "foo", "namespace": "default", "uid": "uid-foo"}, "spec": spec})


async def test_filter_extenders_run_in_order_on_survivors(make_server, make_extender) -> None:
    first, second = await make_server(), await make_server()
    first.handlers["filter"] = drop("n1", unresolvable=("n2",))
    second.handlers["filter"] = drop("n4")
    exts = [make_extender(first.url, filterVerb="filter", nodeCacheCapable=True),
            make_extender(second.url, filterVerb="filter", nodeCacheCapable=True)]
    statuses = NodeToStatus()
    feasible = await run_filter_extenders(exts, make_pod("p"), NODES, statuses)
    assert [ni.name for ni in feasible] == ["n3"]
    assert second.last("filter").body["NodeNames"] == ["n3", "n4"]
    got = {n: (s.code, s.reasons) for n, s in statuses.statuses.items()}
    assert got == {"n1": (Code.UNSCHEDULABLE, ["n1 dropped"]),
                   "n2": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["n2 unresolvable"]),
                   "n4": (Code.UNSCHEDULABLE, ["n4 dropped"])}


async def test_unresolvable_takes_precedence(server: ExtenderServer, make_extender) -> None:
    server.handlers["filter"] = lambda args: {"NodeNames": [], "FailedNodes": {"n1": "soft"},
                                             "FailedAndUnresolvableNodes": {"n1": "hard"}}
    statuses = NodeToStatus()
    ext = make_extender(server.url, filterVerb="filter", nodeCacheCapable=True)
    assert await run_filter_extenders([ext], make_pod("p"), NODES, statuses) == []
    assert statuses.get("n1").code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert statuses.get("n1").reasons == ["hard"]


async def test_no_call_once_nothing_survives(make_server, make_extender) -> None:
    first, second = await make_server(), await make_server()
    first.handlers["filter"] = drop("n1", "n2", "n3", "n4")
    exts = [make_extender(s.url, filterVerb="filter", nodeCacheCapable=True) for s in (first, second)]
    assert await run_filter_extenders(exts, make_pod("p"), NODES, NodeToStatus()) == []
    assert second.calls == []


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(web.Response(status=500, text="broken"), id="http-500"),
        pytest.param(web.Response(status=200, text="<html>", content_type="text/html"), id="malformed-json"),
        pytest.param("hang", id="timeout"),
    ],
)
async def test_filter_failure_fails_the_cycle_unless_ignorable(make_server, make_extender, caplog, failure) -> None:
    bad, good = await make_server(), await make_server()
    bad.handlers["filter"] = bad.hang() if failure == "hang" else (lambda args: failure)
    good.handlers["filter"] = drop("n1")
    strict = [make_extender(bad.url, filterVerb="filter", nodeCacheCapable=True, httpTimeout="100ms"),
              make_extender(good.url, filterVerb="filter", nodeCacheCapable=True)]
    with pytest.raises(ExtenderError) as info:
        await run_filter_extenders(strict, make_pod("p"), NODES, NodeToStatus())
    assert bad.url in str(info.value)
    assert good.calls == []

    lenient = [make_extender(bad.url, filterVerb="filter", nodeCacheCapable=True, httpTimeout="100ms",
                             ignorable=True),
               make_extender(good.url, filterVerb="filter", nodeCacheCapable=True)]
    with caplog.at_level(logging.INFO, logger="kubeberth.extender"):
        feasible = await run_filter_extenders(lenient, make_pod("p"), NODES, NodeToStatus())
    assert [ni.name for ni in feasible] == ["n2", "n3", "n4"]
    assert any("ignorable" in r.getMessage() and bad.url in r.getMessage() for r in caplog.records)


async def test_pod_not_interested_is_not_sent(server: ExtenderServer, make_extender) -> None:
    server.handlers["filter"] = drop("n1")
    server.handlers["prioritize"] = scores({"n2": 10})
    ext = make_extender(server.url, filterVerb="filter", prioritizeVerb="prioritize", nodeCacheCapable=True,
                        managedResources=[{"name": FOO}])
    plain = make_pod("plain", cpu="1")
    assert not ext.is_interested(plain)
    assert len(await run_filter_extenders([ext], plain, NODES, NodeToStatus())) == 4
    assert await run_prioritize_extenders([ext], plain, NODES) == {}
    assert server.calls == []

    interested = foo_pod()
    assert len(await run_filter_extenders([ext], interested, NODES, NodeToStatus())) == 3
    assert await run_prioritize_extenders([ext], interested, NODES) == {"n2": 100}
    assert server.verbs() == ["filter", "prioritize"]


@pytest.mark.parametrize(
    ("pod", "managed", "want"),
    [
        pytest.param(make_pod("p"), [], True, id="no-managed-resources-means-all"),
        pytest.param(make_pod("p", cpu="1"), [FOO], False, id="not-requested"),
        pytest.param(foo_pod("requests"), [FOO], True, id="requests"),
        pytest.param(foo_pod("limits"), [FOO], True, id="limits"),
        pytest.param(foo_pod("requests", init=True), [FOO], True, id="init-container"),
        pytest.param(foo_pod("requests"), ["example.com/bar"], False, id="other-resource"),
    ],
)
def test_is_interested(pod, managed: list[str], want: bool) -> None:
    from kubeberth.extender import HTTPExtender

    ext = HTTPExtender(ExtenderConfig(urlPrefix="http://127.0.0.1:1/api",
                                      managedResources=[{"name": n} for n in managed]))
    assert ext.is_interested(pod) is want


async def test_prioritize_scaled_by_weight_and_summed(make_server, make_extender) -> None:
    a, b = await make_server(), await make_server()
    a.handlers["prioritize"] = scores({"n1": 10, "n2": 5, "n9": 10})  # n9 was not sent: ignored
    b.handlers["prioritize"] = scores({"n2": 2, "n3": 1})
    exts = [make_extender(a.url, prioritizeVerb="prioritize", weight=1),
            make_extender(b.url, prioritizeVerb="prioritize", weight=3, nodeCacheCapable=True)]
    breakdown: dict[str, dict[str, int]] = {}
    got = await run_prioritize_extenders(exts, make_pod("p"), NODES, breakdown)
    # score x weight x (MaxNodeScore / MaxExtenderPriority = 10)
    assert got == {"n1": 100, "n2": 50 + 60, "n3": 30}
    assert breakdown["n2"] == {a.url: 50, b.url: 60}


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(web.Response(status=500), id="http-500"),
        pytest.param(web.Response(status=200, text="[{", content_type="application/json"), id="malformed-json"),
        pytest.param("hang", id="timeout"),
    ],
)
async def test_prioritize_errors_are_ignored(make_server, make_extender, failure) -> None:
    bad, good = await make_server(), await make_server()
    bad.handlers["prioritize"] = bad.hang() if failure == "hang" else (lambda args: failure)
    good.handlers["prioritize"] = scores({"n1": 4})
    exts = [make_extender(bad.url, prioritizeVerb="prioritize", weight=5, httpTimeout="100ms"),
            make_extender(good.url, prioritizeVerb="prioritize", weight=2)]
    assert await run_prioritize_extenders(exts, make_pod("p"), NODES) == {"n1": 80}


async def test_filter_only_extender_does_not_prioritize(server: ExtenderServer, make_extender) -> None:
    server.handlers["filter"] = drop()
    ext = make_extender(server.url, filterVerb="filter", nodeCacheCapable=True)
    assert await run_prioritize_extenders([ext], make_pod("p"), NODES) == {}
    assert server.calls == []


async def test_bind_with_extenders(make_server, make_extender) -> None:
    bad, good = await make_server(), await make_server()
    bad.handlers["bind"] = lambda args: {"Error": "cannot"}
    good.handlers["bind"] = lambda args: {}
    pod = make_pod("p")
    plain = make_extender(good.url, filterVerb="filter")
    assert find_binder([plain], pod) is None
    assert await bind_with_extenders([plain], pod, "n1") is False  # the bind plugins bind

    strict = make_extender(bad.url, bindVerb="bind")
    assert find_binder([plain, strict], pod) is strict
    with pytest.raises(ExtenderError, match="cannot"):
        await bind_with_extenders([plain, strict], pod, "n1")

    ignorable = make_extender(bad.url, bindVerb="bind", ignorable=True)
    binder = make_extender(good.url, bindVerb="bind")
    assert await bind_with_extenders([ignorable, binder], pod, "n1") is True
    assert good.last("bind").body["Node"] == "n1"

    picky = make_extender(good.url, bindVerb="bind", managedResources=[{"name": FOO}])
    assert find_binder([picky], pod) is None
    assert find_binder([picky], foo_pod()) is picky
    assert await bind_with_extenders([picky], pod, "n1") is False


def _candidates():
    v1 = make_pod("v1", node="n1", uid="u1")
    v2 = make_pod("v2", node="n2", uid="u2")
    v3 = make_pod("v3", node="n3", uid="u3")
    snap = snapshot([make_node("n1"), make_node("n2"), make_node("n3")], [v1, v2, v3])
    return snap, {"n1": Victims([v1]), "n2": Victims([v2]), "n3": Victims([v3])}, (v1, v2, v3)


def keep(*nodes: str) -> Any:
    def handler(args: dict[str, Any]) -> dict[str, Any]:
        victims = args["NodeNameToMetaVictims"] or {
            n: {"Pods": [{"UID": p["metadata"]["uid"]} for p in v["Pods"]], "NumPDBViolations": v["NumPDBViolations"]}
            for n, v in args["NodeNameToVictims"].items()}
        return {"NodeNameToMetaVictims": {n: v for n, v in victims.items() if n in nodes}}
    return handler


async def test_preempt_extenders_chain(make_server, make_extender) -> None:
    snap, candidates, (_v1, v2, _v3) = _candidates()
    a, b, c = await make_server(), await make_server(), await make_server()
    a.handlers["preempt"] = keep("n1", "n2")
    b.handlers["preempt"] = keep("n2", "n3")
    exts = [make_extender(a.url, preemptVerb="preempt"),
            make_extender(c.url, filterVerb="filter"),  # no preempt verb: not asked
            make_extender(b.url, preemptVerb="preempt", nodeCacheCapable=True)]
    out = await call_preempt_extenders(exts, make_pod("p", priority=9), candidates, snap)
    assert out == {"n2": Victims([v2])}
    assert sorted(b.last("preempt").body["NodeNameToMetaVictims"]) == ["n1", "n2"]
    assert c.calls == []


async def test_preempt_extender_failures(make_server, make_extender) -> None:
    snap, candidates, _ = _candidates()
    bad = await make_server()
    bad.handlers["preempt"] = lambda args: web.Response(status=500)
    with pytest.raises(ExtenderError, match="code 500"):
        await call_preempt_extenders([make_extender(bad.url, preemptVerb="preempt")], make_pod("p"), candidates,
                                     snap)
    out = await call_preempt_extenders([make_extender(bad.url, preemptVerb="preempt", ignorable=True)],
                                       make_pod("p"), candidates, snap)
    assert out == candidates

    empty = await make_server()
    empty.handlers["preempt"] = lambda args: {"NodeNameToMetaVictims": {"n1": {"Pods": []}, "n2": {"Pods": [
        {"UID": "u2"}]}}}
    with pytest.raises(ExtenderError, match="expected at least one victim pod on node 'n1'"):
        await call_preempt_extenders([make_extender(empty.url, preemptVerb="preempt")], make_pod("p"),
                                     candidates, snap)
    out = await call_preempt_extenders([make_extender(empty.url, preemptVerb="preempt", ignorable=True)],
                                       make_pod("p"), candidates, snap)
    assert list(out) == ["n2"]


async def test_preempt_extender_not_interested(server: ExtenderServer, make_extender) -> None:
    snap, candidates, _ = _candidates()
    ext = make_extender(server.url, preemptVerb="preempt", managedResources=[{"name": FOO}])
    assert await call_preempt_extenders([ext], make_pod("p"), candidates, snap) == candidates
    assert server.calls == []


async def test_evaluator_can_call_process_preemption_with_two_args(server: ExtenderServer, make_extender) -> None:
    """The preemption evaluator calls ext.process_preemption(pod, victims); the snapshot comes from
    the source build_framework gives each extender."""
    snap, candidates, (_, v2, _) = _candidates()
    server.handlers["preempt"] = keep("n2")
    ext = make_extender(server.url, preemptVerb="preempt")
    ext.node_infos_source = lambda: snap
    assert await ext.process_preemption(make_pod("p"), candidates) == {"n2": Victims([v2])}


def test_ignored_resources() -> None:
    from kubeberth.extender import build_extenders

    configs = [ExtenderConfig(urlPrefix="http://127.0.0.1:1/a", managedResources=[
                   {"name": FOO, "ignoredByScheduler": True}, {"name": "example.com/bar"}]),
               ExtenderConfig(urlPrefix="http://127.0.0.1:1/b", managedResources=[
                   {"name": "example.com/baz", "ignoredByScheduler": True}])]
    assert ignored_resources(build_extenders(configs)) == {FOO, "example.com/baz"}
    assert ignored_resources(configs) == {FOO, "example.com/baz"}
    assert ignored_resources([]) == set()
