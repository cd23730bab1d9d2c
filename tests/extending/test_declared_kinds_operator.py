"""The operator's side of declared kinds: the reflectors list and watch them; one that is not
served (CRD missing) or that RBAC forbids does not hold up the sync, and the profiles whose
plugins read it are refused naming the kind and the verb while the others keep running."""

from __future__ import annotations

import asyncio
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


# --- a declared kind is watched only while a profile needs it ---

GATED = {"filter": {"enabled": [{"name": "GateOpen"}]}}


def waiting_manager(write: Callable[[str, str], Path]) -> tuple[ProfileManager, Scheduler, list[int]]:
    """A manager as the operator has it: the declared kinds not listed yet; `demands` counts on_demand."""
    registry = load(in_tree_registry(), [str(write("gate.py", GATE_PLUGIN))], entry_points=False).registry
    registry.kinds_unsynced = {k.store_key for k in declared_kinds(registry)}
    sched = Scheduler()
    manager = ProfileManager(sched, registry)
    demands: list[int] = []
    manager.on_demand = lambda: demands.append(1)
    return manager, sched, demands


def test_a_profile_waits_for_the_kinds_its_plugins_read_then_runs(write: Callable[[str, str], Path]) -> None:
    manager, sched, demands = waiting_manager(write)
    assert manager.plugins_wanted() == frozenset() and demands == []
    manager.apply("plain", profile("plain", "plain", {}))  # in-tree plugins only: nothing to wait for
    assert "plain" in sched.profiles and declared_kinds(manager.registry, manager.plugins_wanted()) == []
    manager.pending_status()
    manager.apply("gated", profile("gated", "gated", GATED))
    # Not in force, no verdict (no status written), but its plugin is wanted: its kind gets watched.
    assert "gated" not in sched.profiles and "gated" not in manager.verdicts and manager.pending_status() == []
    assert "GateOpen" in manager.plugins_wanted() and "GateOpen" not in manager.plugins_in_force()
    assert [k.store_key for k in declared_kinds(manager.registry, manager.plugins_wanted())] == ["Gate.example.com"]
    assert demands
    manager.set_kind_synced("Gate.example.com", True)  # listed: judged now
    assert "gated" in sched.profiles and manager.verdicts["gated"].accepted
    assert "GateOpen" in manager.plugins_in_force()
    assert [name for name, _ in manager.pending_status()] == ["gated"]
    manager.apply("gated", None)  # deleted: nothing needs the kind
    assert manager.plugins_wanted() == manager.plugins_in_force() and "GateOpen" not in manager.plugins_wanted()


def test_an_edit_that_waits_leaves_the_previous_version_in_force(write: Callable[[str, str], Path]) -> None:
    manager, sched, _ = waiting_manager(write)
    manager.apply("p", profile("p", "p", {}))
    before = sched.profiles["p"]
    manager.apply("p", profile("p", "p", GATED))
    assert sched.profiles["p"] is before and "GateOpen" not in sched.profiles["p"].plugins
    manager.set_kind_problem("Gate.example.com", "the ServiceAccount may not list gates.example.com (403)")
    refused = manager.verdicts["p"]
    assert (refused.accepted, refused.reason) == (False, "PluginUnavailable")
    assert refused.message.endswith("(403) (the previous version stays in force)")
    assert sched.profiles["p"] is before
    assert "GateOpen" in manager.plugins_wanted()  # still watched: it may become readable
    manager.set_kind_problem("Gate.example.com", None)
    manager.set_kind_synced("Gate.example.com", True)
    assert manager.verdicts["p"].accepted and "GateOpen" in sched.profiles["p"].plugins
    manager.apply("p", profile("p", "p", {}))  # edited back: the plugin is neither in force nor wanted
    assert "GateOpen" not in manager.plugins_wanted()
    manager.set_kind_synced("Gate.example.com", False)  # no longer watched: a later profile waits again
    manager.apply("q", profile("q", "q", GATED))
    assert "q" not in sched.profiles and "q" in manager.waiting


async def test_informers_follow_the_kinds_profiles_need() -> None:
    server, sink = Server(), Sink()
    server.objects = {"pods": {"p": obj("p", 3)}, "gates": {"g": obj("g", 4)}}
    listed: list[str] = []
    forgotten: list[str] = []
    informers = Informers(rest=server, kinds=[PODS], sink=sink, sleep=no_sleep)  # type: ignore[arg-type]
    informers.on_listed = lambda kind: listed.append(kind.kind)
    informers.on_forgotten = lambda kind: forgotten.append(kind.kind)
    await server.streams.put([])
    await informers.sync()
    assert sink.applied == [("Pod", ADDED, "p")]
    assert not [p for p, _ in server.requests if p.endswith("/gates")]  # nobody needs it: never asked for
    informers.follow([GATES])
    await _until(lambda: listed == ["Gate"])
    assert ("Gate", ADDED, "g") in sink.applied
    assert [q.get("watch") for p, q in server.requests if p.endswith("/gates")][:1] == [None]  # a list first
    informers.follow([GATES])  # already followed: nothing new
    informers.follow([])
    assert sink.applied[-1] == ("Gate", "DELETED", "g") and forgotten == ["Gate"]
    assert informers.followed == {} and [r.kind.kind for r in informers.reflectors] == ["Pod"]
    asked = len(server.requests)
    for _ in range(20):
        await asyncio.sleep(0)
    assert all(not p.endswith("/gates") for p, _ in server.requests[asked:])  # its watch ended
    await informers.stop()
