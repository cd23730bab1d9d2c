"""The event recorder's senders: each object's events in order, one at a time; objects not held up
behind one another; as many in flight as there are workers; a bounded queue. Its events as
kube-scheduler's broadcaster writes them (events.k8s.io/v1): fields, names, series of isomorphic
repeats and their housekeeping."""

from __future__ import annotations

import asyncio
import re
from typing import Any, cast

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from kubeberth.clock import FakeClock
from kubeberth.model import Pod
from kubeberth.operator.api_client import KubernetesClusterClient
from kubeberth.operator.api_retry import Api
from kubeberth.operator.event_recorder import EventRecorder, event_name, limit_note

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
        return [body["note"] for _, _, body in self.calls if body and "note" in body]


def pod(name: str, version: int = 1) -> Pod:
    """A pod as the scheduler read it at `version` (its resourceVersion)."""
    raw = make_pod(name)
    raw["metadata"]["uid"] = f"uid-{name}"
    raw["metadata"]["resourceVersion"] = str(version)
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
    for i in range(3):  # each failure at the version its predecessor's condition made: three Events
        rec.record(pod("p", version=i), "Warning", "FailedScheduling", f"attempt {i}")
    rec.record(pod("p", version=3), "Normal", "Scheduled", "Successfully assigned default/p to n1")
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
    b = pod("b")
    for i in range(5):
        rec.record(pod("a", version=i), "Warning", "FailedScheduling", f"a {i}")
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
    rec.record(pod("a", version=2), "Warning", "FailedScheduling", "a 1")
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


# --- the Events as kube-scheduler writes them (client-go's tools/events) ---


class OpenApi:
    """Answers every call at once; a PATCH of an Event in `gone` is answered 404."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any, str | None]] = []
        self.gone: set[str] = set()

    async def call(self, method: str, path: str, *, what: str, body: Any = None,
                   content_type: str | None = None, query: Any = None) -> Any:
        self.calls.append((method, path, body, content_type))
        if method == "PATCH" and path.rsplit("/", 1)[1] in self.gone:
            raise ApiException(status=404, reason="Not Found")
        return {}


async def sent(rec: EventRecorder) -> None:
    await settle()
    await rec.flush()


MICRO = "2023-11-14T22:13:20.000000Z"  # FakeClock's start, as metav1.MicroTime


async def test_an_event_has_kube_schedulers_fields() -> None:
    api = OpenApi()
    rec = EventRecorder(cast(Api, api), clock=FakeClock(), host="node-a")
    rec.start()
    rec.record(pod("p", version=7), "Warning", "FailedScheduling", "0/1 nodes are available: 1 Insufficient cpu.")
    await sent(rec)
    [(method, path, body, _)] = api.calls
    assert (method, path) == ("POST", "/apis/events.k8s.io/v1/namespaces/default/events")
    assert body == {
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": f"p.{1_700_000_000 * 10**9:x}", "namespace": "default"},
        "eventTime": MICRO,
        "reportingController": "default-scheduler", "reportingInstance": "default-scheduler-node-a",
        "action": "Scheduling", "reason": "FailedScheduling",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": "default", "name": "p", "uid": "uid-p",
                      "resourceVersion": "7"},
        "note": "0/1 nodes are available: 1 Insufficient cpu.", "type": "Warning",
    }
    await rec.close()


@pytest.mark.parametrize(("reason", "action"), [("Scheduled", "Binding"), ("FailedScheduling", "Scheduling"),
                                                ("Preempted", "Preempting"), ("ProfileRefused", "ProfileRefused")])
async def test_each_reason_has_upstreams_action(reason: str, action: str) -> None:
    api = OpenApi()
    rec = EventRecorder(cast(Api, api), clock=FakeClock(), host="h")
    rec.start()
    rec.record(pod("p"), "Normal", reason, "x", component="team-sched")
    await sent(rec)
    [(_, _, body, _)] = api.calls
    assert (body["action"], body["reportingController"], body["reportingInstance"]) == (
        action, "team-sched", "team-sched-h")
    await rec.close()


async def test_an_isomorphic_repeat_patches_the_series_once_then_counts_in_memory() -> None:
    """The second of a kind (whatever its note) PATCHes the first Event's series with count 2; the
    third and later are counted, not written (client-go writes them when the series ends)."""
    api = OpenApi()
    clock = FakeClock()
    rec = EventRecorder(cast(Api, api), clock=clock, host="h")
    rec.start()
    for i in range(4):
        rec.record(pod("p"), "Warning", "FailedScheduling", f"attempt {i}")
        clock.advance(1.5)
    await sent(rec)
    assert [(m, c) for m, _, _, c in api.calls] == [("POST", None), ("PATCH", "application/strategic-merge-patch+json")]
    first = api.calls[0][2]
    assert api.calls[1][1] == f"/apis/events.k8s.io/v1/namespaces/default/events/{first['metadata']['name']}"
    assert api.calls[1][2] == {"series": {"count": 2, "lastObservedTime": "2023-11-14T22:13:21.500000Z"}}
    assert (rec.sent, rec.patched, rec.counted) == (1, 1, 2)
    await rec.close()


@pytest.mark.parametrize("other", [
    pytest.param(lambda: pod("p", version=2), id="the pod at another resourceVersion"),
    pytest.param(lambda: pod("q"), id="another pod"),
])
async def test_a_repeat_about_another_reference_is_another_event(other: Any) -> None:
    api = OpenApi()
    rec = EventRecorder(cast(Api, api), clock=FakeClock(), host="h")
    rec.start()
    rec.record(pod("p"), "Warning", "FailedScheduling", "same")
    rec.record(other(), "Warning", "FailedScheduling", "same")
    await sent(rec)
    assert [m for m, _, _, _ in api.calls] == ["POST", "POST"]
    assert rec.patched == 0
    await rec.close()


async def test_another_reason_or_type_is_another_event() -> None:
    api = OpenApi()
    rec = EventRecorder(cast(Api, api), clock=FakeClock(), host="h")
    rec.start()
    p = pod("p")
    rec.record(p, "Warning", "FailedScheduling", "x")
    rec.record(p, "Normal", "FailedScheduling", "x")
    rec.record(p, "Normal", "Scheduled", "x")
    await sent(rec)
    assert [m for m, _, _, _ in api.calls] == ["POST", "POST", "POST"]
    await rec.close()


async def test_a_quiet_series_is_finished_with_its_count_and_forgotten() -> None:
    api = OpenApi()
    clock = FakeClock()
    rec = EventRecorder(cast(Api, api), clock=clock, host="h")
    rec.start()
    for _ in range(4):
        rec.record(pod("p"), "Warning", "FailedScheduling", "x")
    rec.record(pod("q"), "Normal", "Scheduled", "q bound")  # a singleton
    await sent(rec)
    assert len(api.calls) == 3
    clock.advance(300)
    rec.housekeep()  # five minutes: nothing ends yet
    await sent(rec)
    assert len(api.calls) == 3
    clock.advance(61)
    rec.housekeep()
    await sent(rec)
    assert [(m, b) for m, _, b, _ in api.calls[3:]] == [
        ("PATCH", {"series": {"count": 4, "lastObservedTime": MICRO}})]
    # Both entries are gone: the same events again start new Events.
    rec.record(pod("p"), "Warning", "FailedScheduling", "x")
    rec.record(pod("q"), "Normal", "Scheduled", "q bound")
    await sent(rec)
    assert [m for m, _, _, _ in api.calls[4:]] == ["POST", "POST"]
    await rec.close()


async def test_open_series_are_written_again_every_thirty_minutes() -> None:
    api = OpenApi()
    clock = FakeClock()
    rec = EventRecorder(cast(Api, api), clock=clock, host="h")
    rec.start()
    for _ in range(0, 31, 5):  # a repeat every five minutes: the series never ends
        rec.record(pod("p"), "Warning", "FailedScheduling", "x")
        await sent(rec)
        clock.advance(300)
        rec.housekeep()
        await sent(rec)
    patches = [b["series"]["count"] for m, _, b, _ in api.calls if m == "PATCH"]
    assert patches == [2, 6]  # the first repeat, then the refresh at thirty minutes (count 6 by then)
    await rec.close()


async def test_a_series_whose_event_is_gone_creates_it_again_with_its_series() -> None:
    api = OpenApi()
    rec = EventRecorder(cast(Api, api), clock=FakeClock(), host="h")
    rec.start()
    rec.record(pod("p"), "Warning", "FailedScheduling", "first note")
    await sent(rec)
    first = api.calls[0][2]
    api.gone.add(first["metadata"]["name"])  # expired (the Event TTL)
    rec.record(pod("p"), "Warning", "FailedScheduling", "second note")
    await sent(rec)
    assert [m for m, _, _, _ in api.calls] == ["POST", "PATCH", "POST"]
    again = api.calls[2][2]
    assert again == {**first, "series": {"count": 2, "lastObservedTime": MICRO}}  # the first note, its name
    await rec.close()


async def test_a_full_cache_writes_the_series_it_forgets() -> None:
    api = OpenApi()
    rec = EventRecorder(cast(Api, api), clock=FakeClock(), host="h", cache_size=2)
    rec.start()
    for _ in range(3):
        rec.record(pod("a"), "Warning", "FailedScheduling", "x")
    await sent(rec)
    rec.record(pod("b"), "Normal", "Scheduled", "b")
    rec.record(pod("c"), "Normal", "Scheduled", "c")  # a's entry goes: its count 3 is written
    await sent(rec)
    assert [(m, b.get("series")) for m, _, b, _ in api.calls if m == "PATCH"] == [
        ("PATCH", {"count": 2, "lastObservedTime": MICRO}), ("PATCH", {"count": 3, "lastObservedTime": MICRO})]
    await rec.close()


@pytest.mark.parametrize(("name", "nano", "expected"), [
    ("p", 255, "p.ff"),
    ("web-0.svc", 16, "web-0.svc.10"),
    ("x" * 250, 255, "x" * 250 + ".ff"),  # 253 characters: still a name
    ("x" * 251, 255, None),  # longer than 253 with its suffix: a UUID
    ("Upper", 1, None),  # not a DNS subdomain
])
def test_event_names_as_client_go(name: str, nano: int, expected: str | None) -> None:
    got = event_name(name, nano)
    if expected is not None:
        assert got == expected
    else:
        assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", got)


@pytest.mark.parametrize(("note", "expected"), [
    ("a" * 1024, "a" * 1024),
    ("a" * 1025, "a" * 1020 + " ..."),
    ("é" * 600, "é" * 510 + " ..."),  # 1200 bytes: cut by bytes, never inside a character
])
def test_the_note_is_held_to_1_kib(note: str, expected: str) -> None:
    assert limit_note(note) == expected and len(limit_note(note).encode()) <= 1024


async def test_two_events_in_one_nanosecond_have_two_names() -> None:
    api = OpenApi()
    rec = EventRecorder(cast(Api, api), clock=FakeClock(), host="h")
    rec.start()
    rec.record(pod("p", version=1), "Warning", "FailedScheduling", "x")
    rec.record(pod("p", version=2), "Warning", "FailedScheduling", "x")
    await sent(rec)
    names = [b["metadata"]["name"] for _, _, b, _ in api.calls]
    assert len(set(names)) == 2
    await rec.close()
