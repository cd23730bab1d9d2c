"""A plugin that no profile in force enables costs nothing: its module's kopf handlers do not run
(no kopf watch of their resources) and the kinds it reads are not listed nor watched; a
SchedulingProfile enabling it starts both (its pods wait for the kind's list), and deleting the
profile stops them again. A module of handlers only (no plugin) runs its handlers throughout."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kopf
import pytest
from kopf._core.intents import registries as kopf_registries

from kubeberth.operator.plugin_operators import PluginOperator
from kubeberth.plugins import use_plugins

from .conftest import stays, wait_for
from .emulator import Kind, events_for, make_node, make_pod

PLUGIN = '''
import kopf

from kubeberth.framework import FilterPlugin, ObjectKind, Status

GATE = ObjectKind("example.com", "v1", "gates", "Gate", namespaced=False)
SEEN = []


class GateOpen(FilterPlugin):
    name = "GateOpen"
    reads = (GATE,)

    def __init__(self, args, handle):
        self.handle = handle

    def filter(self, state, pod, node_info):
        gate = self.handle.objects.get(GATE.group_kind, node_info.node.name)
        return None if gate is not None and gate.get("spec", {}).get("open") else Status.unschedulable("gate closed")


@kopf.on.event("example.com", "v1", "widgets")
def widget_seen(body, **_):
    SEEN.append(body["metadata"]["name"])
'''

AUDIT = '''
import kopf

SEEN = []


@kopf.on.event("example.com", "v1", "sprockets")
def sprocket_seen(body, **_):
    SEEN.append(body["metadata"]["name"])
'''

GATED = {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": "gated"},
         "spec": {"schedulerName": "gated", "plugins": {"filter": {"enabled": [{"name": "GateOpen"}]}}}}


@pytest.fixture
def plugin_modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    """gated_plugin.py (a plugin and a kopf handler) and audit.py (a kopf handler alone), loaded as
    `--plugins` loads them, their decorators registering on a default registry of the test's."""
    registry = kopf.OperatorRegistry()
    monkeypatch.setattr(kopf_registries, "_default_registry", registry)
    monkeypatch.setattr(kopf, "get_default_registry", lambda: registry)
    (tmp_path / "gated_plugin.py").write_text(textwrap.dedent(PLUGIN))
    (tmp_path / "audit_handlers.py").write_text(textwrap.dedent(AUDIT))
    use_plugins([str(tmp_path / "gated_plugin.py"), str(tmp_path / "audit_handlers.py")], entry_points=False)
    yield sys.modules["gated_plugin"], sys.modules["audit_handlers"]
    for name in ("gated_plugin", "audit_handlers"):
        sys.modules.pop(name, None)


def requests_for(api: Any, plural: str) -> list[Any]:
    return [r for r in api.log if r.plural == plural]


async def test_a_plugins_handlers_and_kinds_run_only_while_a_profile_enables_it(cluster, start_operator,
                                                                                 plugin_modules):
    plugin, audit = plugin_modules
    api = cluster.api
    for plural, kind in (("gates", "Gate"), ("widgets", "Widget"), ("sprockets", "Sprocket")):
        api.add_kind(Kind("example.com", "v1", plural, kind, False))
    api.create("nodes", make_node("n1"))
    api.create("gates", {"metadata": {"name": "n1"}, "spec": {"open": True}})
    api.create("widgets", {"metadata": {"name": "w1"}})
    api.create("sprockets", {"metadata": {"name": "s1"}})
    op = await start_operator()
    [operator] = op.app.plugin_operators.operators
    assert operator.plugins == {"GateOpen"} and operator.handlers == 1

    # The module of handlers only runs them from the start; the plugin's module does not.
    await wait_for(lambda: audit.SEEN == ["s1"], message="the handlers-only module's handler ran")
    await stays(lambda: plugin.SEEN == [] and not requests_for(api, "widgets") and not requests_for(api, "gates"),
                0.5)
    assert not operator.running and op.app.informers.followed == {}

    # A profile enabling the plugin: its kind is listed then watched, its pods scheduled, its handlers run.
    api.create("pods", make_pod("p1", scheduler="gated"))
    api.create("schedulingprofiles", GATED)
    await wait_for(lambda: plugin.SEEN == ["w1"], message="the plugin's handler ran")
    assert [r.watch for r in requests_for(api, "gates")][:2] == [False, True]  # listed, then watched
    await wait_for(lambda: (api.get("pods", "p1", "default") or {}).get("spec", {}).get("nodeName") == "n1",
                   message="p1 bound")
    assert not events_for(api, "p1", "FailedScheduling")  # not tried before the gates were listed
    api.create("widgets", {"metadata": {"name": "w2"}})
    await wait_for(lambda: plugin.SEEN == ["w1", "w2"])

    # Deleted: both stop; what comes next is not seen by the plugin's handler, still by the other.
    api.delete("schedulingprofiles", "gated")
    await wait_for(lambda: not operator.running and op.app.informers.followed == {}, message="stopped")
    api.create("widgets", {"metadata": {"name": "w3"}})
    api.create("sprockets", {"metadata": {"name": "s2"}})
    await wait_for(lambda: audit.SEEN == ["s1", "s2"])
    await stays(lambda: plugin.SEEN == ["w1", "w2"], 0.5)
    assert "Gate.example.com" in op.app.profiles.registry.kinds_unsynced

    # Enabled again: they start again (kopf lists the widgets anew) and the scheduler goes on working.
    api.create("schedulingprofiles", GATED)
    await wait_for(lambda: plugin.SEEN[2:] and set(plugin.SEEN[2:]) == {"w1", "w2", "w3"},
                   message="the handler ran again")
    api.create("pods", make_pod("p2", scheduler="gated"))
    await wait_for(lambda: (api.get("pods", "p2", "default") or {}).get("spec", {}).get("nodeName") == "n1",
                   message="p2 bound")
    assert operator.starts == 2


async def test_a_plugin_operator_stops_without_touching_the_other_tasks_and_gives_signals_back(cluster):
    """kopf.operator() would cancel, when it stops, every task created since it started (the
    scheduler's too), and spawn_tasks in the main thread takes SIGTERM for itself."""
    source = kopf.OperatorRegistry()
    seen: list[str] = []

    @kopf.on.event("", "v1", "namespaces", registry=source)
    async def namespace_seen(body: Any, **_: Any) -> None:
        seen.append(body["metadata"]["name"])

    async def login() -> kopf.ConnectionInfo:
        return kopf.ConnectionInfo(server=cluster.url)

    async def leading() -> None:
        return None

    signalled: list[int] = []

    def configure(settings: kopf.OperatorSettings) -> None:
        settings.scanning.disabled = True

    op = PluginOperator(frozenset({"GateOpen"}), source, gate=leading, login=login, configure=configure,
                        identity="test", memo={}, on_signal=lambda: signalled.append(1))
    op.start()
    await asyncio.wait_for(op.ready.wait(), 10)
    others = asyncio.create_task(asyncio.Event().wait(), name="the scheduler's, say")  # created after it started
    await wait_for(lambda: "default" in seen, message="the handler ran")
    if threading.current_thread() is threading.main_thread():
        os.kill(os.getpid(), signal.SIGTERM)
        await wait_for(lambda: signalled, message="SIGTERM reached kubeberth's stop")
        assert op.running  # not taken by the plugin operator
    await op.stop()
    assert not op.running and not others.done()
    others.cancel()
    op.start()  # again
    await asyncio.wait_for(op.ready.wait(), 10)
    await wait_for(lambda: seen.count("default") == 2, message="the handler ran again")
    await op.stop()
