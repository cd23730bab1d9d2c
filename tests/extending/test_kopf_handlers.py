"""kopf handlers of one's own beside kubeberth's: adopted from kopf's default registry into the
operator's, resource handlers gated on leadership, logins left out; `kopf run -m kubeberth.cli`
says plainly that it is not the way."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import kopf

from kubeberth.cli import KOPF_RUN_REFUSAL
from kubeberth.operator.handlers import adopt


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
