"""Pod status patches off the loop: coalesced per pod, in order, failures contained."""

from __future__ import annotations

import asyncio
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
