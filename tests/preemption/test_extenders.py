"""Candidates go through the extenders that support preemption before a node is picked."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from kubeberth.extender.client import ExtenderError
from kubeberth.framework import Code
from kubeberth.model import Pod
from kubeberth.preemption import Candidate, Victims
from tests.preemption.fakes import Env, node, pod


class FakeExtender:
    def __init__(self, answer: Callable[[Mapping[str, Victims]], dict[str, Victims]] | Exception, *,
                 preempt: bool = True, ignorable: bool = False, interested: bool = True) -> None:
        self.answer = answer
        self.supports_preemption = preempt
        self.is_ignorable = ignorable
        self.interested = interested
        self.name = "fake"
        self.preempt_verb = "preempt"
        self.seen: list[dict[str, list[str]]] = []

    def is_interested(self, pod: Pod) -> bool:
        return self.interested

    async def process_preemption(self, pod: Pod, node_to_victims: Mapping[str, Victims],
                                 node_infos: Any = None) -> dict[str, Victims]:
        self.seen.append({n: [p.name for p in v.pods] for n, v in node_to_victims.items()})
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer(node_to_victims)


def _env(*extenders: FakeExtender) -> Env:
    pods = [pod("a", cpu="4", prio=1, node="n1"), pod("b", cpu="4", prio=5, node="n2"),
            pod("c1", cpu="2", prio=1, node="n3"), pod("c2", cpu="2", prio=1, node="n3")]
    return Env([node("n1"), node("n2"), node("n3")], pods, extenders=list(extenders))


def keep(*nodes: str) -> Callable[[Mapping[str, Victims]], dict[str, Victims]]:
    return lambda m: {n: v for n, v in m.items() if n in nodes}


async def test_no_extender_path():
    env = _env()
    candidates = [Candidate("n1", Victims([pod("a")]))]
    out, status = await env.evaluator.call_extenders(pod("p"), candidates)
    assert out is candidates and status is None
    result, status = await env.post_filter(pod("p", cpu="4", prio=10))
    assert status.is_success() and result.nominated_node_name == "n1"


@pytest.mark.parametrize(
    ("extenders", "want_node", "want_deleted"),
    [
        pytest.param([FakeExtender(keep("n1", "n2", "n3"))], "n1", ["default/a"], id="keeps-all"),
        pytest.param([FakeExtender(keep("n2", "n3"))], "n3", ["default/c1", "default/c2"], id="drops-best"),
        pytest.param([FakeExtender(keep("n2", "n3")), FakeExtender(keep("n2"))], "n2", ["default/b"],
                     id="chained"),
        pytest.param([FakeExtender(keep("n2"), preempt=False)], "n1", ["default/a"], id="not-preempting-skipped"),
        pytest.param([FakeExtender(keep("n2"), interested=False)], "n1", ["default/a"], id="not-interested-skipped"),
        pytest.param([FakeExtender(ExtenderError("fake", "preempt", "down"), ignorable=True)], "n1", ["default/a"],
                     id="ignorable-error-skipped"),
        pytest.param([FakeExtender(lambda m: {"n1": Victims(), "n3": m["n3"]}, ignorable=True)], "n3",
                     ["default/c1", "default/c2"], id="ignorable-node-without-victims-dropped"),
        pytest.param([FakeExtender(lambda m: {"n3": Victims(m["n3"].pods[:1], 0)})], "n3", ["default/c1"],
                     id="changes-victims"),
    ],
)
async def test_extenders_shape_the_candidates(extenders, want_node, want_deleted):
    env = _env(*extenders)
    result, status = await env.post_filter(pod("p", cpu="4", prio=10))
    assert status.is_success()
    assert result.nominated_node_name == want_node
    assert sorted(c[0] for c in env.client.of("delete")) == want_deleted


async def test_extender_sees_the_dry_run_victims():
    ext = FakeExtender(keep("n1"))
    env = _env(ext)
    await env.post_filter(pod("p", cpu="4", prio=10))
    assert ext.seen == [{"n1": ["a"], "n2": ["b"], "n3": ["c1", "c2"]}]


@pytest.mark.parametrize(
    ("ext", "want"),
    [
        pytest.param(FakeExtender(ExtenderError("fake", "preempt", "down")), "down", id="error"),
        pytest.param(FakeExtender(lambda m: {"n1": Victims()}), "expected at least one victim pod on node 'n1'",
                     id="node-without-victims"),
    ],
)
async def test_extender_failure_is_an_error(ext, want):
    env = _env(ext)
    result, status = await env.post_filter(pod("p", cpu="4", prio=10))
    assert result is None
    assert status.code == Code.ERROR
    assert want in status.message()
    assert env.client.calls == []


async def test_extender_dropping_everything():
    env = _env(FakeExtender(keep()))
    result, status = await env.post_filter(pod("p", cpu="4", prio=10))
    assert result is None
    assert status.code == Code.UNSCHEDULABLE
    assert status.reasons == ["preemption: no candidate node for preemption"]
    assert env.client.calls == []
