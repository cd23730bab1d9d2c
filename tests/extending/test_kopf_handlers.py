"""kopf handlers of one's own beside kubeberth's: adopted from kopf's default registry into the
operator's, resource handlers gated on leadership, logins left out; `kopf run -m kubeberth.cli`
says plainly that it is not the way."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kopf
import pytest

from kubeberth.cli import KOPF_RUN_REFUSAL
from kubeberth.operator.handlers import adopt, owners_of, partition
from kubeberth.plugins import in_tree_registry
from kubeberth.plugins._loading import load

from .conftest import score_plugin


def test_kopf_run_with_kubeberths_module_refuses_plainly(tmp_path: Path) -> None:
    mine = tmp_path / "mine.py"
    mine.write_text("import kopf\n\n@kopf.on.event('pods')\ndef seen(**_):\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "kopf", "run", "--standalone", "-m", "kubeberth.cli", str(mine)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode != 0
    assert KOPF_RUN_REFUSAL in done.stderr


async def test_handlers_are_adopted_resource_ones_wait_for_the_lease() -> None:
    source = kopf.OperatorRegistry()
    calls: list[str] = []
    threads: list[str] = []

    @kopf.on.event("example.com", "v1", "gates", registry=source)
    async def on_gate(**_: Any) -> None:
        calls.append("event")

    @kopf.on.update("example.com", "v1", "gates", registry=source)
    def on_update(**_: Any) -> None:  # a sync handler: still off the event loop
        threads.append(threading.current_thread().name)
        calls.append("update")

    @kopf.timer("example.com", "v1", "gates", interval=5, registry=source)
    async def tick(**_: Any) -> None:
        calls.append("timer")

    @kopf.index("pods", registry=source)
    def by_node(**_: Any) -> Any:
        calls.append("index")

    @kopf.on.startup(registry=source)
    async def started(**_: Any) -> None:
        calls.append("startup")

    @kopf.on.login(registry=source)
    def login(**_: Any) -> None:
        raise AssertionError("the operator logs in itself")

    target = kopf.OperatorRegistry()
    elected = asyncio.Event()

    async def gate() -> None:
        await elected.wait()

    assert adopt(target, source, gate) == 5  # all but the login
    assert [h.id.rsplit(".", 1)[-1] for h in target._activities.get_all_handlers()] == ["started"]
    event = next(iter(target._watching.get_all_handlers()))
    update = next(iter(target._changing.get_all_handlers()))
    timer = next(iter(target._spawning.get_all_handlers()))
    index = next(iter(target._indexing.get_all_handlers()))
    assert index.fn is by_node  # indices on every replica, as is
    pending = [asyncio.ensure_future(h.fn()) for h in (event, update, timer)]
    await asyncio.sleep(0.01)
    assert calls == [] and not any(t.done() for t in pending)  # a standby: they wait
    elected.set()
    await asyncio.gather(*pending)
    assert sorted(calls) == ["event", "timer", "update"]
    assert threads and threads[0] != threading.current_thread().name
    assert [h.id.rsplit(".", 1)[-1] for h in (event, update, timer)] == ["on_gate", "on_update", "tick"]


# --- whose handlers: the plugins of the package that defined them ---

@pytest.mark.parametrize("module, owners", [
    ("gangs", {"Gang"}),
    ("gangs.controller", {"Gang"}),
    ("gangs_extra.controller", set()),  # another package that only starts with the name
    ("myplugins", {"PreferLabel", "GateOpen"}),
    ("audit", set()),  # a module of handlers only: no plugin of its own
])
def test_handlers_belong_to_the_plugins_of_their_package(module: str, owners: set[str]) -> None:
    provides = {"gangs": frozenset({"Gang"}), "myplugins": frozenset({"PreferLabel", "GateOpen"})}
    assert owners_of(module, provides) == owners


def test_the_default_registry_is_split_by_owner() -> None:
    source = kopf.OperatorRegistry()

    def defined_in(module: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
            fn.__module__ = module
            return fn
        return mark

    @kopf.on.event("scheduling.x-k8s.io", "v1alpha1", "podgroups", registry=source)
    @defined_in("gangs.controller")
    async def group_event(**_: Any) -> None: ...

    @kopf.on.startup(registry=source)
    @defined_in("gangs.controller")
    async def gang_startup(**_: Any) -> None: ...

    @kopf.on.probe(registry=source)
    @defined_in("gangs.controller")
    def gang_probe(**_: Any) -> int:
        return 1

    @kopf.on.event("pods", registry=source)
    @defined_in("audit")
    def audit_pod(**_: Any) -> None: ...

    parts = partition(source, {"gangs": frozenset({"Gang"})})
    assert set(parts) == {frozenset({"Gang"}), frozenset()}
    gang, always = parts[frozenset({"Gang"})], parts[frozenset()]
    assert [h.fn for h in gang._watching.get_all_handlers()] == [group_event]
    assert [h.fn for h in gang._activities.get_all_handlers()] == [gang_startup]
    # Probes answer on kubeberth's liveness endpoint, served by its own kopf: they stay there.
    assert [h.fn for h in always._activities.get_all_handlers()] == [gang_probe]
    assert [h.fn for h in always._watching.get_all_handlers()] == [audit_pod]


def test_the_loader_says_which_package_brings_which_plugins(install: Callable[..., Path],
                                                            write: Callable[[str, str], Path]) -> None:
    install("gangs", "1.0", {
        "gangs.__init__": "from . import controller\nfrom .plugin import Gang\nPLUGINS = [Gang]\n",
        "gangs.controller": "HANDLED = []\n",
        "gangs.plugin": score_plugin("Gang"),
    }, {"Gang": "gangs"})
    got = load(in_tree_registry(), [str(write("mine.py", score_plugin("Mine"))),
                                    str(write("audit.py", "import kopf\n"))], entry_points=True)
    assert got.provides["gangs"] == {"Gang"}
    assert got.provides["mine"] == {"Mine"}
    assert "audit" in got.modules and "audit" not in got.provides
