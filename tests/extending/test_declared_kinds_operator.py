"""The operator's side of declared kinds: the reflectors list and watch them; one that is not
served (CRD missing) or that RBAC forbids does not hold up the sync, and the profiles whose
plugins read it are refused naming the kind and the verb while the others keep running."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from kubeberth.operator.profiles import ProfileManager
from kubeberth.operator.reflector import ADDED, Informers
from kubeberth.plugins import in_tree_registry
from kubeberth.plugins._loading import load
from kubeberth.scheduler import Scheduler
from kubeberth.scheduler.watched import WatchedKind, declared_kinds

from ..operator.test_reflector import PODS, Server, Sink, _until, no_sleep, obj
from .test_declared_kinds import GATE_PLUGIN

GATES = WatchedKind("example.com", "v1", "gates", "Gate", 2, "Gate.example.com", declared=True,
                  store_as="Gate.example.com")


@pytest.mark.parametrize("status, problem", [
    (404, "the API server does not serve gates.example.com/v1 (404 on list: is its CustomResourceDefinition "
          "installed?)"),
    (403, 'the ServiceAccount may not list gates.example.com (403; its ClusterRole needs a rule apiGroups: '
          '["example.com"], resources: [gates], verbs: [list, watch])'),
])
async def test_a_declared_kind_that_cannot_be_listed_does_not_hold_up_the_sync(status: int, problem: str) -> None:
    server, sink = Server(), Sink()
    allowed = False
    original = server.request

    async def refusing(method: str, path: str, **kw: Any) -> Any:
        if path.endswith("/gates") and not allowed:
            raise ApiException(status=status, reason="nope")
        return await original(method, path, **kw)

    server.request = refusing  # type: ignore[method-assign]
    server.objects = {"pods": {"p": obj("p", 3)}}
    heard: list[tuple[str, str | None]] = []
    informers = Informers(rest=server, kinds=[PODS, GATES], sink=sink, sleep=no_sleep,  # type: ignore[arg-type]
                          on_problem=lambda kind, why: heard.append((kind.kind, why)))
    await server.streams.put([])
    await informers.sync()
    assert informers.synced.is_set() and sink.applied == [("Pod", ADDED, "p")]
    assert heard == [("Gate", problem)]
    assert informers.connected  # a refused plugin kind is not an outage
    allowed = True  # the CRD is installed, or RBAC granted
    server.objects["gates"] = {"g": obj("g", 4)}
    await _until(lambda: ("Gate", ADDED, "g") in sink.applied)
    assert heard == [("Gate", problem), ("Gate", None)]
    await informers.stop()


async def test_a_declared_kind_that_may_be_listed_but_not_watched() -> None:
    server, sink = Server(), Sink()
    server.objects = {"gates": {"g": obj("g", 4)}}
    heard: list[tuple[str, str | None]] = []
    informers = Informers(rest=server, kinds=[GATES], sink=sink, sleep=no_sleep,  # type: ignore[arg-type]
                          on_problem=lambda kind, why: heard.append((kind.kind, why)))
    await server.streams.put(ApiException(status=403, reason="Forbidden"))
    await informers.sync()
    await _until(lambda: heard)
    assert heard == [("Gate", 'the ServiceAccount may not watch gates.example.com (403; its ClusterRole needs a '
                              'rule apiGroups: ["example.com"], resources: [gates], verbs: [list, watch])')]
    await server.streams.put([[]])  # RBAC granted: a watch goes through
    await _until(lambda: len(heard) == 2)
    assert heard[-1] == ("Gate", None)
    await informers.stop()


def profile(name: str, scheduler: str, plugins: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name, "generation": 1}, "spec": {"schedulerName": scheduler, "plugins": plugins}}


def test_profiles_whose_plugins_read_it_are_refused_the_others_run(write: Callable[[str, str], Path]) -> None:
    registry = load(in_tree_registry(), [str(write("gate.py", GATE_PLUGIN))], entry_points=False).registry
    assert [k.kind for k in declared_kinds(registry)] == ["Gate"]
    sched = Scheduler()
    manager = ProfileManager(sched, registry)
    problem = "the ServiceAccount may not watch gates.example.com (403; ...)"
    manager.set_kind_problem("Gate.example.com", problem)
    manager.apply("gated", profile("gated", "gated", {"filter": {"enabled": [{"name": "GateOpen"}]}}))
    manager.apply("plain", profile("plain", "plain", {}))
    refused = manager.verdicts["gated"]
    assert (refused.accepted, refused.reason) == (False, "PluginUnavailable")
    assert refused.message == f"plugin 'GateOpen' reads Gate: {problem}"
    assert manager.verdicts["plain"].accepted
    assert set(sched.profiles) == {"default-scheduler", "plain"}
    manager.pending_status()
    manager.set_kind_problem("Gate.example.com", None)  # readable again: the refused profile is judged again
    assert manager.verdicts["gated"].accepted and "gated" in sched.profiles
    assert [name for name, _ in manager.pending_status()] == ["gated"]
