"""Pod status patches off the loop: coalesced per pod, in order, failures contained."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from kubeberth.model import Pod
from kubeberth.operator.status_writer import PodStatusWriter, merge_status


def pod(name: str) -> Pod:
    return Pod({"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
                "spec": {"containers": [{"name": "c"}]}})


def unschedulable(message: str) -> dict[str, Any]:
    return {"status": {"conditions": [{"type": "PodScheduled", "status": "False", "message": message}]}}


def test_merge_keeps_conditions_by_type_and_replaces_other_fields():
    merged = merge_status(unschedulable("first"), {"status": {"nominatedNodeName": "n1"}})
    merged = merge_status(merged, unschedulable("second"))
    assert merged == {"status": {"conditions": [{"type": "PodScheduled", "status": "False", "message": "second"}],
                                 "nominatedNodeName": "n1"}}


async def test_patches_of_one_pod_are_sent_in_order_and_coalesced_while_one_is_in_flight():
    sent: list[tuple[str, Any]] = []
    release = asyncio.Event()

    async def send(p: Pod, patch: dict[str, Any]) -> None:
        sent.append((p.name, patch))
        if p.name == "a" and len(sent) == 1:
            await release.wait()  # the first patch of a is slow

    writer = PodStatusWriter(send, workers=4)
    writer.start()
    writer.submit(pod("a"), unschedulable("1"))
    await asyncio.sleep(0)
    for i in (2, 3, 4):  # while a's first patch is in flight: merged into one that follows it
        writer.submit(pod("a"), unschedulable(str(i)))
    writer.submit(pod("b"), {"status": {"nominatedNodeName": "n2"}})
    for _ in range(5):
        await asyncio.sleep(0)
    assert [name for name, _ in sent] == ["a", "b"]  # b does not wait for a
    release.set()
    await writer.flush()
    assert [(name, patch["status"].get("conditions", [{}])[0].get("message")) for name, patch in sent] == [
        ("a", "1"), ("b", None), ("a", "4")]
    assert writer.coalesced == 2
    await writer.close()


async def test_a_failing_patch_is_logged_and_the_others_go_on(caplog):
    async def send(p: Pod, patch: dict[str, Any]) -> None:
        if p.name == "bad":
            raise RuntimeError("HTTP 500")

    writer = PodStatusWriter(send, workers=1)
    writer.start()
    writer.submit(pod("bad"), unschedulable("x"))
    writer.submit(pod("good"), unschedulable("y"))
    await writer.flush()
    assert writer.sent == 1 and "Could not patch the status of default/bad" in caplog.text
    await writer.close()


async def test_a_binding_waits_for_the_patch_in_flight_and_sends_the_queued_one_first():
    """Upstream's binding cycle writes the nomination and binds only once that returned: the
    binding never overtakes a status patch of its pod, nor goes while one is in flight."""
    log: list[str] = []
    release = asyncio.Event()

    async def send(p: Pod, patch: dict[str, Any]) -> None:
        log.append(f"patch {p.name} {patch['status'].get('nominatedNodeName')}")
        if p.name in ("a", "busy"):
            await release.wait()
        log.append(f"patched {p.name}")

    writer = PodStatusWriter(send, workers=1)
    writer.start()
    writer.submit(pod("a"), {"status": {"nominatedNodeName": "n1"}})
    await asyncio.sleep(0)
    assert log == ["patch a n1"]  # in flight, slow

    async def bind(name: str) -> None:
        async with writer.binding(f"uid-{name}"):
            log.append(f"bind {name}")

    binding_a = asyncio.create_task(bind("a"))
    for _ in range(5):
        await asyncio.sleep(0)
    assert "bind a" not in log  # waits for a's patch in flight
    release.set()
    await binding_a
    assert log == ["patch a n1", "patched a", "bind a"]

    # b's patch is queued behind another pod's (the one worker is busy): the binding sends it first.
    log.clear()
    release.clear()
    writer.submit(pod("busy"), {"status": {"nominatedNodeName": "n9"}})
    writer.submit(pod("b"), {"status": {"nominatedNodeName": "n2"}})
    await asyncio.sleep(0)
    await bind("b")
    assert log == ["patch busy n9", "patch b n2", "patched b", "bind b"]
    release.set()
    await writer.flush()
    assert log.count("patch b n2") == 1  # sent once, by the binding
    await writer.close()


async def test_patches_handed_over_during_a_binding_follow_a_failed_one_and_are_dropped_after_a_success():
    sent: list[tuple[str, Any]] = []

    async def send(p: Pod, patch: dict[str, Any]) -> None:
        sent.append((p.name, patch["status"]))

    writer = PodStatusWriter(send, workers=2)
    writer.start()
    async with writer.binding("uid-a"):
        writer.submit(pod("a"), {"status": {"nominatedNodeName": "n1"}})
        await writer.flush()
        assert sent == []  # not during the binding
    await writer.flush()
    assert sent == [] and writer.dropped == 1  # the pod is bound: its nomination is no longer ours to write

    with contextlib.suppress(RuntimeError):
        async with writer.binding("uid-b"):
            writer.submit(pod("b"), unschedulable("x"))
            await writer.flush()
            raise RuntimeError("binding failed")
    await writer.flush()
    assert sent == [("b", unschedulable("x")["status"])]
    await writer.close()
