"""The shared test doubles do what the tests rely on: the recording client goes through the
product's in-memory client when it feeds a scheduler, failures are injected per call, and the
handle builder refuses arguments that contradict each other."""

from __future__ import annotations

import pytest

from kubeberth.client import BindConflict
from kubeberth.clock import FakeClock
from kubeberth.model import Pod
from kubeberth.scheduler import Scheduler
from tests.builders import make_node, make_pod, node_dict, pod_dict
from tests.doubles import ObjectWritingClient, RecordingClient, handle, store_of


def _scheduler_with_pending(name: str) -> tuple[Scheduler, Pod]:
    sched = Scheduler(clock=FakeClock(), seed=1)
    sched.on_node_add(node_dict("n1"))
    pending = sched.on_pod_add(pod_dict(name))
    assert pending is not None
    return sched, pending


@pytest.mark.parametrize(("feed", "bound"), [(True, "n1"), (False, "")], ids=["fed", "not-fed"])
async def test_a_bind_reaches_the_scheduler_only_when_fed(feed: bool, bound: str) -> None:
    sched, pending = _scheduler_with_pending("p")
    client = RecordingClient(sched, feed=feed)
    await client.bind(pending, "n1")
    assert client.calls == [("bind", "default/p", "n1")]
    assert (sched.pending_pod(pending.uid) is None) == bool(bound)
    placed = sched.cache.get_pod(pending.uid)
    assert (placed.node_name if placed is not None else "") == bound


async def test_binding_a_pod_no_longer_pending_is_the_in_memory_clients_conflict() -> None:
    sched, pending = _scheduler_with_pending("p")
    client = RecordingClient(sched)
    await client.bind(pending, "n1")
    with pytest.raises(BindConflict):
        await client.bind(pending, "n1")
    assert client.of("bind") == [("default/p", "n1")]


async def test_an_injected_failure_raises_records_nothing_and_heals() -> None:
    client = RecordingClient()
    pod = make_pod("v")
    client.fail("delete", RuntimeError("boom"))
    with pytest.raises(RuntimeError, match="boom"):
        await client.delete_pod(pod, "s: preempting")
    await client.record_event(pod, "Normal", "Preempted", "by p")
    client.fail("delete", None)
    await client.delete_pod(pod, "s: preempting")
    assert client.calls == [("event", "default/v", "Normal", "Preempted", "by p"), ("delete", "default/v")]


def test_unknown_call_names_are_refused() -> None:
    with pytest.raises(ValueError, match="RecordingClient has no call 'apply'"):
        RecordingClient().fail("apply", RuntimeError())
    with pytest.raises(ValueError, match="records no call 'binds'"):
        RecordingClient().of("binds")
    ObjectWritingClient().fail("update", RuntimeError())


def test_handle_is_bare_without_a_profile_and_built_with_one() -> None:
    bare = handle([make_node("n1")], [make_pod("on", node="n1")])
    assert bare.plugins == {} and [len(ni.pods) for ni in bare.snapshot.node_infos] == [1]
    built = handle(profile={})
    assert "DefaultBinder" in built.plugins


@pytest.mark.parametrize(("kwargs", "problem"), [
    ({"nodes": [make_node("n1")], "node_infos": []}, "one of nodes and pods, node_infos or snapshot"),
    ({"registry": object()}, "a registry without a profile"),
    ({"ctx": handle().ctx, "client": RecordingClient()}, "client cannot be given with it"),
], ids=["two-snapshots", "registry-alone", "ctx-and-client"])
def test_handle_refuses_contradicting_arguments(kwargs: dict[str, object], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        handle(**kwargs)  # type: ignore[arg-type]


def test_store_of_needs_each_objects_kind() -> None:
    with pytest.raises(ValueError, match="object 'x' has no kind"):
        store_of({"metadata": {"name": "x"}})
