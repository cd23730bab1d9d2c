"""Kinds a plugin declares it reads: simulate reads them from its input, their changes are
ClusterEvents of their kind that reach the plugin's QueueingHints, snapshot lists them."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubeberth.clock import FakeClock
from kubeberth.config import parse_spec
from kubeberth.plugins import in_tree_registry, plugin_registry, use_plugins
from kubeberth.plugins._loading import load
from kubeberth.profile import build_framework
from kubeberth.scheduler import Scheduler
from kubeberth.scheduler.watched import WATCHED, declared_kinds
from kubeberth.whatif.config_files import prepare
from kubeberth.whatif.engine import run_simulation
from kubeberth.whatif.snapshot import SnapshotError, take

from ..doubles import RecordingClient

GATE_PLUGIN = '''
from kubeberth.framework import (ActionType, ClusterEvent, ClusterEventWithHint, FilterPlugin, ObjectKind,
                                 QueueingHint, Status)

GATE = ObjectKind("example.com", "v1", "gates", "Gate", namespaced=False)

HINTS = []


class GateOpen(FilterPlugin):
    """Only nodes a Gate object named after them opens (spec.open: true)."""

    name = "GateOpen"
    reads = (GATE,)

    def __init__(self, args, handle):
        self.handle = handle

    def filter(self, state, pod, node_info):
        gate = self.handle.objects.get(GATE.group_kind, node_info.node.name)
        if gate is None or not (gate.get("spec") or {}).get("open"):
            return Status.unschedulable("gate closed")
        return None

    def events_to_register(self):
        return [ClusterEventWithHint(ClusterEvent(GATE.group_kind, ActionType.ADD | ActionType.UPDATE), self.hint)]

    def hint(self, pod, old, new):
        HINTS.append((pod.name, old is not None, (new.get("spec") or {}).get("open")))
        return QueueingHint.QUEUE if (new.get("spec") or {}).get("open") else QueueingHint.QUEUE_SKIP
'''


def gate(name: str, open_: bool, api_version: str = "example.com/v1") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": "Gate", "metadata": {"name": name}, "spec": {"open": open_}}


def node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": name},
            "spec": {"containers": [{"name": "c", "image": "x"}]}}


PROFILE = {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": "default"},
           "spec": {"schedulerName": "default-scheduler", "plugins": {"filter": {"enabled": [{"name": "GateOpen"}]}}}}


@pytest.fixture
def gate_plugin(write: Callable[[str, str], Path]) -> Path:
    path = write("gate.py", GATE_PLUGIN)
    use_plugins([str(path)], entry_points=False)
    return path


def test_declared_kinds_come_from_the_plugins(gate_plugin: Path) -> None:
    kinds = declared_kinds(plugin_registry())
    assert [(k.path, k.kind, k.event_resource, k.declared) for k in kinds] == [
        ("/apis/example.com/v1/gates", "Gate", "Gate.example.com", True)]
    assert declared_kinds(in_tree_registry()) == []


def test_simulate_reads_them_from_its_input(gate_plugin: Path) -> None:
    objects = [node("n1"), node("n2"), PROFILE, gate("n2", True), gate("n1", True, api_version="example.com/v2"),
               pod("p")]
    warn = io.StringIO()
    sim = prepare(objects, warn)
    # Gate of the declared apiVersion is read; of another it is not (upstream's informers watch one version).
    assert warn.getvalue() == "warning: 1 Gate object ignored: simulate does not read Gate\n"
    outcomes, sched = run_simulation(sim.objects, warn=warn)
    assert [(o.status, o.node) for o in outcomes] == [("Scheduled", "n2")]
    assert sched.ctx.objects.get("Gate.example.com", "n2") is not None
    assert sched.ctx.objects.get("Gate.example.com", "n1") is None  # example.com/v2 is not the declared version


def test_without_the_plugin_they_are_ignored_with_a_warning() -> None:
    warn = io.StringIO()
    prepare([gate("n1", True)], warn)
    assert warn.getvalue() == "warning: 1 Gate object ignored: simulate does not read Gate\n"


def test_their_changes_reach_the_plugins_queueing_hints(gate_plugin: Path) -> None:
    import sys

    module = next(m for m in sys.modules.values() if getattr(m, "__file__", None) == str(gate_plugin))
    hints = module.HINTS
    sched = Scheduler(clock=FakeClock())
    sched.ctx.client = RecordingClient(sched)
    sched.set_profile(build_framework(parse_spec(PROFILE["spec"]), plugin_registry(), sched.ctx))
    sched.on_node_add(node("n1"))
    sched.on_pod_add(pod("p"))
    asyncio.run(sched.run_until_idle())
    assert sched.outcomes["default/p"].status == "Unschedulable"
    sched.on_object("Gate.example.com", gate("n1", False))
    assert hints == [("p", False, False)]
    assert sched.queue.get("p")[0] == "unschedulable"  # type: ignore[index]  # QUEUE_SKIP: it stays
    sched.on_object("Gate.example.com", gate("n1", True))
    assert hints[-1] == ("p", True, True)
    assert sched.queue.get("p")[0] in ("active", "backoff")  # type: ignore[index]  # QUEUE: it moves
    sched.clock.advance(10.0)  # type: ignore[attr-defined]  # its backoff is over
    sched.queue.flush_backoff_completed()
    asyncio.run(sched.run_until_idle())
    assert (sched.outcomes["default/p"].status, sched.outcomes["default/p"].node) == ("Scheduled", "n1")


class FakeRest:
    def __init__(self, served: dict[str, list[dict[str, Any]]], forbidden: tuple[str, ...] = ()) -> None:
        self.served = served
        self.forbidden = forbidden
        self.paths: list[str] = []

    async def request(self, method: str, path: str, query: Any = None, **_: Any) -> dict[str, Any]:
        from kubernetes_asyncio.client.exceptions import ApiException

        self.paths.append(path)
        if path in self.forbidden:
            raise ApiException(status=403, reason="Forbidden")
        if path not in self.served:
            raise ApiException(status=404, reason="Not Found")
        return {"items": self.served[path], "metadata": {}}


def test_snapshot_lists_them(gate_plugin: Path) -> None:
    served = {"/apis/example.com/v1/gates": [{"metadata": {"name": "n1", "resourceVersion": "7"},
                                              "spec": {"open": True}}],
              "/api/v1/nodes": [node("n1")]}
    rest = FakeRest(served)
    got = asyncio.run(take(rest, progress=io.StringIO()))
    assert "/apis/example.com/v1/gates" in rest.paths
    assert {"apiVersion": "example.com/v1", "kind": "Gate", "metadata": {"name": "n1"},
            "spec": {"open": True}} in got
    assert len(rest.paths) == len(WATCHED) + 1


def test_snapshot_that_may_not_list_them_fails_naming_the_kind(gate_plugin: Path) -> None:
    rest = FakeRest({"/api/v1/nodes": [node("n1")]}, forbidden=("/apis/example.com/v1/gates",))
    with pytest.raises(SnapshotError, match="listing gates: HTTP 403 Forbidden"):
        asyncio.run(take(rest, progress=io.StringIO()))


def test_two_plugins_reading_one_kind_watch_it_once(write: Callable[[str, str], Path]) -> None:
    second = GATE_PLUGIN.replace('name = "GateOpen"', 'name = "GateOpenToo"').replace("class GateOpen(", "class Too(")
    reg = load(in_tree_registry(), [str(write("a.py", GATE_PLUGIN)), str(write("b.py", second))],
               entry_points=False).registry
    assert [k.kind for k in declared_kinds(reg)] == ["Gate"]
