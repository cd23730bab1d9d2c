"""The event recorder's senders: each object's events in order, one at a time; objects not held up
behind one another; as many in flight as there are workers; a bounded queue."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from kubeberth.clock import FakeClock
from kubeberth.model import Pod
from kubeberth.operator.api_client import KubernetesClusterClient
from kubeberth.operator.api_retry import Api
from kubeberth.operator.event_recorder import EventRecorder

from .emulator import make_pod


class GatedApi:
    """Records each call and holds it until the test releases it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.gates: list[asyncio.Future[None]] = []
        self.in_flight = 0
        self.most_in_flight = 0

    async def call(self, method: str, path: str, *, what: str, body: Any = None,
                   content_type: str | None = None, query: Any = None) -> Any:
        self.calls.append((method, path, body))
        gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.gates.append(gate)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await gate
        finally:
            self.in_flight -= 1
        return {}

    def release_all(self) -> None:
        for gate in self.gates:
            if not gate.done():
                gate.set_result(None)

    def messages(self) -> list[str]:
        return [body["message"] for _, _, body in self.calls if body and "message" in body]


def pod(name: str) -> Pod:
    raw = make_pod(name)
    raw["metadata"]["uid"] = f"uid-{name}"
    return Pod(raw)


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def recorder(api: GatedApi, **kw: Any) -> EventRecorder:
    return EventRecorder(cast(Api, api), clock=FakeClock(), host="h", **kw)


async def test_an_objects_events_go_in_order_one_at_a_time() -> None:
    api = GatedApi()
    rec = recorder(api, workers=8)
    rec.start()
    p = pod("p")
    for i in range(3):
        rec.record(p, "Warning", "FailedScheduling", f"attempt {i}")
    rec.record(p, "Normal", "Scheduled", "Successfully assigned default/p to n1")
    await settle()
    assert api.messages() == ["attempt 0"]  # eight workers, yet one event of p at a time
    for expected in (["attempt 0", "attempt 1"], ["attempt 0", "attempt 1", "attempt 2"]):
        api.release_all()
        await settle()
        assert api.messages() == expected
    api.release_all()
    await settle()
    api.release_all()
    await rec.flush()
    assert api.messages()[-1] == "Successfully assigned default/p to n1"
    await rec.close()


async def test_an_object_is_not_held_up_behind_anothers_events() -> None:
    """With two workers, a's event in flight and more of a's waiting, b's event goes at once (with
    one queue per worker and the objects hashed to them, b could have waited behind all of a's)."""
    api = GatedApi()
    rec = recorder(api, workers=2)
    rec.start()
    a, b = pod("a"), pod("b")
    for i in range(5):
        rec.record(a, "Warning", "FailedScheduling", f"a {i}")
    rec.record(b, "Normal", "Scheduled", "b bound")
    await settle()
    assert api.messages() == ["a 0", "b bound"]
    api.release_all()
    await settle()
    api.release_all()
    await settle()
    api.release_all()
    await settle()
    api.release_all()
    await settle()
    api.release_all()
    await rec.flush()
    assert api.messages() == ["a 0", "b bound", "a 1", "a 2", "a 3", "a 4"]
    await rec.close()


async def test_objects_take_turns_in_the_order_they_became_ready() -> None:
    api = GatedApi()
    rec = recorder(api, workers=1)
    rec.start()
    a, b, c = pod("a"), pod("b"), pod("c")
    rec.record(a, "Warning", "FailedScheduling", "a 0")
    rec.record(a, "Warning", "FailedScheduling", "a 1")
    rec.record(b, "Normal", "Scheduled", "b")
    rec.record(c, "Normal", "Scheduled", "c")
    for _ in range(4):
        await settle()
        api.release_all()
    await rec.flush()
    assert api.messages() == ["a 0", "b", "c", "a 1"]
    await rec.close()


@pytest.mark.parametrize("workers", [1, 4, 64])
async def test_as_many_objects_in_flight_as_workers(workers: int) -> None:
    api = GatedApi()
    rec = recorder(api, workers=workers)
    rec.start()
    for i in range(100):
        rec.record(pod(f"p{i}"), "Normal", "Scheduled", f"p{i} bound")
    await settle()
    assert api.in_flight == workers
    api.release_all()
    while api.in_flight or rec.queued:
        api.release_all()
        await asyncio.sleep(0)
    await rec.flush()
    assert api.most_in_flight == workers and len(api.calls) == 100
    await rec.close()


async def test_the_queue_is_bounded_across_objects() -> None:
    api = GatedApi()
    rec = recorder(api, workers=1, queue_size=3)
    results = [rec.record(pod(f"p{i}"), "Normal", "Scheduled", f"p{i}") for i in range(5)]
    assert results == [True, True, True, False, False] and rec.dropped == 2 and rec.queued == 3
    rec.start()
    await settle()
    assert rec.queued == 2  # one taken by the worker: room for one more
    assert rec.record(pod("late"), "Normal", "Scheduled", "late") is True
    while rec.queued or api.in_flight:
        api.release_all()
        await asyncio.sleep(0)
    await rec.flush()
    assert api.messages() == ["p0", "p1", "p2", "late"]
    await rec.close()


def test_the_operators_client_has_an_event_sender_per_binding_slot() -> None:
    client = KubernetesClusterClient(cast(Any, object()), bind_concurrency=48)
    assert client.events.workers == 48
    assert KubernetesClusterClient(cast(Any, object()), bind_concurrency=48, event_workers=5).events.workers == 5
