"""QueueingHints in the queue, and upstream v1.37's backoffQ: popped when activeQ is empty,
errors kept apart, metrics of hints and in-flight events."""

from __future__ import annotations

from typing import Any

from kubeberth.framework import events as ev
from kubeberth.framework.events import ClusterEvent, ClusterEventWithHint, QueueingHint
from kubeberth.model import Pod
from kubeberth.queue import ACTIVE, BACKOFF, UNSCHEDULABLE, ActionType, PriorityQueue, QueueProfile
from tests.doubles import priority_then_age
from tests.queue.fakes import fail, new_queue, pod, where

NODE_ADD = ev.EVENT_NODE_ADD


class HintedPlugin:
    """Registers Node/Add with a hint that queues only for nodes labelled ok=true (or raises)."""

    name = "Hinted"

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any, Any]] = []

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(NODE_ADD, self._hint),
                ClusterEventWithHint(ClusterEvent(ev.TARGET_POD, ActionType.UPDATE_POD_LABEL), self._pod_hint)]

    def _hint(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        self.calls.append((pod.name, old, new))
        if new == "boom":
            raise RuntimeError("broken hint")
        return QueueingHint.QUEUE if new == "ok" else QueueingHint.QUEUE_SKIP

    def _pod_hint(self, pod: Pod, old: Pod, new: Pod) -> QueueingHint:
        return QueueingHint.QUEUE if new.labels.get("ready") == "yes" else QueueingHint.QUEUE_SKIP


def hinted_queue() -> tuple[PriorityQueue, Any, HintedPlugin]:
    plugin = HintedPlugin()
    prof = QueueProfile("default-scheduler", priority_then_age, queue_sort_name="PrioritySort",
                        plugins={plugin.name: plugin})
    q, clock = new_queue(prof)
    return q, clock, plugin


def test_a_skip_hint_leaves_the_pod_and_a_queue_hint_moves_it() -> None:
    q, clock, plugin = hinted_queue()
    p = pod("p")
    q.add(p)
    fail(q, q.pop_nowait(), "Hinted")  # type: ignore[arg-type]
    hints: list[tuple[str, str, str]] = []
    q.on_hint = lambda plugin_name, event, hint, seconds: hints.append((plugin_name, event, hint))
    q.move_all_to_active_or_backoff(NODE_ADD, None, "not-ok")
    assert where(q, p) == UNSCHEDULABLE
    assert plugin.calls == [("p", None, "not-ok")]
    clock.advance(5)
    q.move_all_to_active_or_backoff(NODE_ADD, None, "ok")
    assert where(q, p) == ACTIVE
    assert hints == [("Hinted", "NodeAdd", "QueueSkip"), ("Hinted", "NodeAdd", "Queue")]


def test_a_failing_hint_counts_as_queue() -> None:
    q, _, _ = hinted_queue()
    p = pod("p")
    q.add(p)
    fail(q, q.pop_nowait(), "Hinted")  # type: ignore[arg-type]
    hints: list[str] = []
    q.on_hint = lambda plugin_name, event, hint, seconds: hints.append(hint)
    q.move_all_to_active_or_backoff(NODE_ADD, None, "boom")
    assert where(q, p) == BACKOFF and hints == ["Error"]


def test_the_pods_own_update_goes_through_the_hints() -> None:
    q, clock, _ = hinted_queue()
    p = pod("p")
    q.add(p)
    fail(q, q.pop_nowait(), "Hinted")  # type: ignore[arg-type]
    clock.advance(5)
    q.update(p, pod("p", labels={"ready": "no"}))
    assert where(q, p) == UNSCHEDULABLE
    q.update(p, pod("p", labels={"ready": "yes"}))
    assert where(q, p) == ACTIVE


def test_hints_see_the_events_of_an_in_flight_pod() -> None:
    q, _, plugin = hinted_queue()
    p = pod("p")
    q.add(p)
    info = q.pop_nowait()
    q.move_all_to_active_or_backoff(NODE_ADD, None, "ok")  # arrives while p is being scheduled
    assert q.inflight_events() == {"PodPopped": 1, "NodeAdd": 1}
    assert fail(q, info, "Hinted") == BACKOFF  # type: ignore[arg-type]
    assert plugin.calls == [("p", None, "ok")]
    assert q.inflight_events() == {"PodPopped": 0}


def test_pop_takes_from_backoff_when_active_is_empty() -> None:
    q, _ = new_queue()
    a, b = pod("a"), pod("b", prio=10)
    for p in (a, b):
        q.add(p)
    for _ in range(2):
        info = q.pop_nowait()
        assert info is not None
        fail(q, info, "NodeResourcesFit")
    incoming: list[tuple[str, str]] = []
    q.on_incoming = lambda queue, event: incoming.append((queue, event))
    q.move_all_to_active_or_backoff(ev.EVENT_ASSIGNED_POD_DELETE)
    assert where(q, a) == BACKOFF and where(q, b) == BACKOFF
    # Both back off until the same window: the higher priority goes first, as activeQ would order them.
    assert q.pop_nowait(from_backoff=False) is None
    first = q.pop_nowait()
    assert first is not None and first.pod.name == "b"
    assert ("active", "PopFromBackoffQ") in incoming


def test_a_pod_that_failed_with_an_error_is_not_popped_early() -> None:
    q, clock = new_queue()
    p = pod("p")
    q.add(p)
    fail(q, q.pop_nowait())  # type: ignore[arg-type]  # no rejecting plugin: an error
    assert where(q, p) == BACKOFF
    assert q.pop_nowait() is None
    clock.advance(2)
    assert q.flush_backoff_completed() == 1 and where(q, p) == ACTIVE


def test_backoff_counts_rejections_and_errors_separately() -> None:
    q, _ = new_queue()
    p = pod("p")
    q.add(p)
    for _ in range(3):
        info = q.pop_nowait()
        assert info is not None
        fail(q, info, "NodeResourcesFit")
        q.activate([p])
    info = q.pop_nowait()
    assert info is not None and info.unschedulable_count == 3
    assert q.backoff_duration(info) == 4  # 1, 2, 4 s
    fail(q, info)  # an error resets nothing of the rejections but backs off by errors in a row
    assert info.consecutive_errors == 1 and q.backoff_duration(info) == 1
