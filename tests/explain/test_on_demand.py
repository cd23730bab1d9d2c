"""Explain on demand: annotating a pending pod `kubeberth.io/explain: "true"` brings it to an
attempt soon, its backoff respected, instead of at the next cluster event or the five-minute
flush of unschedulable pods. Other updates move nothing (upstream's Update for an annotation)."""

from __future__ import annotations

import asyncio
from typing import Any

from kubeberth.framework import events as ev
from kubeberth.model import Pod
from kubeberth.queue import ACTIVE, BACKOFF, GATED, UNSCHEDULABLE
from kubeberth.scheduler import Scheduler
from kubeberth.scheduler.explain import EVENT_EXPLAIN_REQUESTED, Explanation, wants_explanation
from tests.builders import pod_dict
from tests.queue.fakes import fail, new_queue, pod
from tests.queue.fakes import where as queue_where
from tests.scheduler.fakes import add_pod, scheduler

ASK = {"kubeberth.io/explain": "true"}


def where(sched: Scheduler, p: Pod) -> str:
    got = sched.queue.get(p.uid)
    return got[0] if got is not None else ("in-flight" if sched.queue.in_flight(p.uid) else "absent")


def annotated(name: str, annotations: dict[str, str], cpu: str = "4") -> dict[str, Any]:
    raw = pod_dict(name, cpu=cpu)
    raw["metadata"]["annotations"] = annotations
    return raw


def explaining(sched: Scheduler) -> list[tuple[str, Explanation]]:
    told: list[tuple[str, Explanation]] = []

    async def record(p: Pod, x: Explanation) -> None:
        told.append((p.key, x))

    sched.explain_pods = wants_explanation
    sched.on_explained = record
    return told


async def unschedulable_pod(sched: Scheduler) -> Pod:
    p = add_pod(sched, "big", cpu="4")  # n1 has 2 cpu
    assert await sched.schedule_one()
    assert where(sched, p) == UNSCHEDULABLE
    return p


async def test_an_unschedulable_pod_annotated_is_attempted_at_once() -> None:
    sched, _, clock = scheduler()
    told = explaining(sched)
    p = await unschedulable_pod(sched)
    assert told == []
    clock.advance(120)  # long unschedulable: its backoff is over, the five-minute flush is not due
    sched.queue.flush_backoff_completed()
    sched.queue.flush_unschedulable_leftover()
    assert where(sched, p) == UNSCHEDULABLE
    sched.on_pod_update(annotated("big", ASK))
    assert where(sched, p) == ACTIVE
    assert await sched.schedule_one()
    await asyncio.sleep(0)
    [(key, x)] = told
    assert key == "default/big" and x.result == "Unschedulable"
    assert where(sched, p) == UNSCHEDULABLE  # and back where it was, explained


async def test_its_backoff_is_respected() -> None:
    sched, _, clock = scheduler()
    explaining(sched)
    p = await unschedulable_pod(sched)
    clock.advance(0.1)  # still backing off (1 s)
    sched.on_pod_update(annotated("big", ASK))
    assert where(sched, p) == BACKOFF
    assert sched.queue.flush_backoff_completed() == 0
    clock.advance(2)
    assert sched.queue.flush_backoff_completed() == 1 and where(sched, p) == ACTIVE


async def test_only_the_annotation_turning_on_moves_the_pod() -> None:
    sched, _, clock = scheduler()
    explaining(sched)
    sched.on_pod_add(annotated("big", ASK))
    p = sched._pending[sched._uids["default/big"]]
    assert await sched.schedule_one()
    assert where(sched, p) == UNSCHEDULABLE
    clock.advance(120)
    # Another update of an explained pod (its own explanation written back, say) moves nothing.
    sched.on_pod_update(annotated("big", {**ASK, "kubeberth.io/explanation": "{}"}))
    assert where(sched, p) == UNSCHEDULABLE
    # Nor does an annotation other than the request, or a request turned off.
    sched.on_pod_update(annotated("big", {"kubeberth.io/explain": "false"}))
    sched.on_pod_update(annotated("big", {"kubeberth.io/explain": "false", "other": "x"}))
    assert where(sched, p) == UNSCHEDULABLE


async def test_nothing_moves_where_nothing_is_explained() -> None:
    sched, _, clock = scheduler()  # as simulate without --explain: no explain_pods
    p = await unschedulable_pod(sched)
    clock.advance(120)
    sched.on_pod_update(annotated("big", ASK))
    assert where(sched, p) == UNSCHEDULABLE


# ---- the queue's part ---------------------------------------------------------------------------
def test_queue_moves_an_unschedulable_pod_respecting_backoff() -> None:
    q, clock = new_queue()
    p = pod("a")
    q.add(p)
    info = q.pop_nowait()
    assert info is not None and fail(q, info, "NodeResourcesFit") == UNSCHEDULABLE
    q.move_to_active_or_backoff(p, EVENT_EXPLAIN_REQUESTED)
    assert queue_where(q, p) == BACKOFF
    clock.advance(30)
    q.flush_backoff_completed()
    info = q.pop_nowait()
    assert info is not None and fail(q, info, "NodeResourcesFit") == UNSCHEDULABLE
    clock.advance(30)
    q.move_to_active_or_backoff(p, EVENT_EXPLAIN_REQUESTED)
    assert queue_where(q, p) == ACTIVE


def test_queue_leaves_active_and_backoff_pods_and_gated_ones_where_they_are() -> None:
    q, _ = new_queue()
    backing_off = pod("backing-off", prio=10)
    q.add(backing_off)
    info = q.pop_nowait()
    assert info is not None and fail(q, info) == BACKOFF  # an error: backoffQ
    active, gated = pod("active"), pod("gated", schedulingGates=[{"name": "wait"}])
    q.add(active)
    q.add(gated)
    for p, want in ((active, ACTIVE), (backing_off, BACKOFF), (gated, GATED)):
        assert queue_where(q, p) == want
        q.move_to_active_or_backoff(p, EVENT_EXPLAIN_REQUESTED)
        assert queue_where(q, p) == want, p.name


def test_queue_requeues_an_in_flight_pod_after_its_attempt() -> None:
    q, _ = new_queue()
    p = pod("a")
    q.add(p)
    info = q.pop_nowait()
    assert info is not None
    q.move_to_active_or_backoff(p, EVENT_EXPLAIN_REQUESTED)
    assert fail(q, info, "NodeResourcesFit") == BACKOFF  # not the unschedulable pool: asked while in flight
    # Without the request the same failure parks it.
    q.add(other := pod("b"))
    info = q.pop_nowait()
    assert info is not None and info.pod.name == "b"
    assert fail(q, info, "NodeResourcesFit") == UNSCHEDULABLE
    assert queue_where(q, other) == UNSCHEDULABLE
    assert EVENT_EXPLAIN_REQUESTED.is_wildcard() and EVENT_EXPLAIN_REQUESTED.label == "ExplainRequested"
    assert ev.EVENT_FORCE_ACTIVATE != EVENT_EXPLAIN_REQUESTED
