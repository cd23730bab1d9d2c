"""Extenders built into a profile's framework and used by the scheduling cycle."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubeberth.config import ConfigError
from kubeberth.extender import HTTPExtender, close_extenders
from kubeberth.framework import CycleState
from kubeberth.scheduler.algorithm import SchedulingError, schedule_pod
from kubeberth.whatif.simulate import simulate
from tests.builders import make_node, make_pod, node_dict, pod_dict
from tests.doubles import handle
from tests.extender.conftest import ExtenderServer

FOO = "example.com/foo"


def profile(*extenders: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"extenders": list(extenders), **spec}


async def test_framework_holds_the_profile_extenders() -> None:
    fw = handle(profile=profile({"urlPrefix": "http://127.0.0.1:1/a", "filterVerb": "filter"},
                               {"urlPrefix": "http://127.0.0.1:1/b", "prioritizeVerb": "p", "weight": 2}))
    assert [type(e) for e in fw.extenders] == [HTTPExtender, HTTPExtender]
    assert [e.name for e in fw.extenders] == ["http://127.0.0.1:1/a", "http://127.0.0.1:1/b"]
    assert fw.extenders[0].node_infos_source() is fw.snapshot
    assert handle(profile={}).extenders == []


def test_invalid_extender_rejects_the_profile() -> None:
    with pytest.raises(ConfigError) as info:
        handle(profile=profile({"urlPrefix": "http://127.0.0.1:1/a", "managedResources": [{"name": "cpu"}]}))
    assert info.value.path == "spec.extenders[0].managedResources[0].name"


def test_a_binding_extender_stands_in_for_bind_plugins() -> None:
    no_binder = {"plugins": {"bind": {"disabled": [{"name": "*"}]}}}
    with pytest.raises(ConfigError, match="bind"):
        handle(profile=no_binder)
    fw = handle(profile=profile({"urlPrefix": "http://127.0.0.1:1/a", "bindVerb": "bind"}, **no_binder))
    assert fw.bind_plugins == [] and fw.extenders[0].is_binder


async def test_cycle_uses_extender_filter_and_scores(server: ExtenderServer) -> None:
    server.handlers["filter"] = lambda args: {"NodeNames": [n for n in args["NodeNames"] if n != "n1"],
                                             "FailedNodes": {"n1": "n1 is reserved"}}
    server.handlers["prioritize"] = lambda args: [{"Host": "n3", "Score": 10}]
    nodes = [make_node(f"n{i}") for i in (1, 2, 3)]
    fw = handle(profile=profile({"urlPrefix": server.url, "filterVerb": "filter", "prioritizeVerb": "prioritize",
                                "weight": 5, "nodeCacheCapable": True}), nodes=nodes)
    try:
        result = await schedule_pod(fw, CycleState(), make_pod("p", cpu="100m"))
        assert result.suggested_host == "n3"
        assert result.feasible_nodes == 2
    finally:
        await close_extenders(fw.extenders)


@pytest.mark.parametrize("ignorable", [False, True])
async def test_cycle_fails_on_a_broken_extender_unless_ignorable(server: ExtenderServer, ignorable: bool) -> None:
    server.handlers["filter"] = server.hang()
    fw = handle(profile=profile({"urlPrefix": server.url, "filterVerb": "filter", "httpTimeout": "100ms",
                                "ignorable": ignorable}), nodes=[make_node("n1"), make_node("n2")])
    try:
        if ignorable:
            result = await schedule_pod(fw, CycleState(), make_pod("p"))
            assert result.suggested_host in {"n1", "n2"}
        else:
            with pytest.raises(SchedulingError, match=r"filter with extender at URL .* timed out after 0\.1s"):
                await schedule_pod(fw, CycleState(), make_pod("p"))
    finally:
        await close_extenders(fw.extenders)


@pytest.mark.parametrize("ignored", [True, False])
async def test_ignored_by_scheduler_resources_reach_node_resources_fit(server: ExtenderServer, ignored: bool) -> None:
    """NodeResourcesFit skips the resources its own profile's extenders manage with ignoredByScheduler."""
    server.handlers["filter"] = lambda args: {"NodeNames": ["n2"]}
    nodes = [make_node("n1"), make_node("n2")]
    fw = handle(profile=profile({"urlPrefix": server.url, "filterVerb": "filter", "nodeCacheCapable": True,
                                "managedResources": [{"name": FOO, "ignoredByScheduler": ignored}]}), nodes=nodes)
    pod = make_pod("p", requests={"cpu": "100m", FOO: "2"})
    try:
        if ignored:
            result = await schedule_pod(fw, CycleState(), pod)
            assert result.suggested_host == "n2"
        else:
            with pytest.raises(Exception, match=f"Insufficient {FOO}"):
                await schedule_pod(fw, CycleState(), pod)
    finally:
        await close_extenders(fw.extenders)


async def test_simulate_skips_resources_ignored_by_scheduler(server: ExtenderServer) -> None:
    server.handlers["filter"] = lambda args: {"NodeNames": args["NodeNames"]}
    objects = [
        node_dict("n1"),
        pod_dict("gpu-job", requests={"cpu": "100m", FOO: "1"}),
        {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": "default"},
         "spec": profile({"urlPrefix": server.url, "filterVerb": "filter", "nodeCacheCapable": True,
                          "managedResources": [{"name": FOO, "ignoredByScheduler": True}]})},
    ]
    (outcome,) = await asyncio.to_thread(simulate, objects)
    assert (outcome.status, outcome.node) == ("Scheduled", "n1"), outcome.message


@pytest.mark.parametrize("cache", [False, True], ids=["full-victims", "meta-victims"])
async def test_default_preemption_asks_a_real_extender(server: ExtenderServer, make_extender, cache: bool) -> None:
    """DefaultPreemption's candidates go to the extender, which keeps n2; the preemptor is nominated there."""
    from tests.preemption.fakes import Env, node, pod

    def keep_n2(args: dict[str, Any]) -> dict[str, Any]:
        if cache:
            return {"NodeNameToMetaVictims": {"n2": args["NodeNameToMetaVictims"]["n2"]}}
        victims = args["NodeNameToVictims"]["n2"]
        return {"nodeNameToMetaVictims": {"n2": {"pods": [{"uid": p["metadata"]["uid"]} for p in victims["Pods"]],
                                                 "numPDBViolations": victims["NumPDBViolations"]}}}

    server.handlers["preempt"] = keep_n2
    ext = make_extender(server.url, preemptVerb="preempt", nodeCacheCapable=cache)
    pods = [pod("a", cpu="4", prio=1, node="n1"), pod("b", cpu="4", prio=5, node="n2")]
    env = Env([node("n1"), node("n2")], pods, extenders=[ext])
    ext.node_infos_source = lambda: env.ctx.snapshot
    result, status = await env.post_filter(pod("p", cpu="4", prio=10))
    assert status.is_success(), status
    assert result.nominated_node_name == "n2"
    assert [c[0] for c in env.client.of("delete")] == ["default/b"]
    assert sorted(server.last("preempt").body["NodeNameToMetaVictims" if cache else "NodeNameToVictims"]) == [
        "n1", "n2"]
