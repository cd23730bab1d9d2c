"""Queue test helpers: profiles built by hand (no framework), plugins that only register events."""

from __future__ import annotations

from typing import Any

from kubeberth.clock import FakeClock
from kubeberth.framework import Status
from kubeberth.framework import events as ev
from kubeberth.framework.types import QueuedPodInfo
from kubeberth.model import Pod
from kubeberth.queue import ActionType, ClusterEvent, PriorityQueue, QueueProfile
from tests.builders import make_pod
from tests.doubles import priority_then_age

T0 = 1_700_000_000.0


class EventsPlugin:
    """A plugin known by name and the events it registers ([] = any event)."""

    def __init__(self, name: str, events: list[ClusterEvent]) -> None:
        self.name = name
        self._events = events

    def events_to_register(self) -> list[Any]:
        return list(self._events)


# Plugins as upstream registers them (the parts the tests use).
FIT = EventsPlugin("NodeResourcesFit", [
    ClusterEvent(ev.POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
    ClusterEvent(ev.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE)])
TAINTS = EventsPlugin("TaintToleration", [
    ClusterEvent(ev.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
    ClusterEvent(ev.POD, ActionType.UPDATE_POD_TOLERATION)])
AFFINITY = EventsPlugin("InterPodAffinity", [
    ClusterEvent(ev.POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
    ClusterEvent(ev.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)])
VOLUMES = EventsPlugin("VolumeBinding", [
    ClusterEvent(ev.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE),
    ClusterEvent(ev.STORAGE_CLASS, ActionType.ADD)])
ANY = EventsPlugin("Anything", [])
GATES = EventsPlugin("SchedulingGates", [
    ClusterEvent(ev.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)])
PENDING_PLUGIN = EventsPlugin("Waits", [ClusterEvent(ev.NODE, ActionType.ADD)])

PLUGINS = {p.name: p for p in (FIT, TAINTS, AFFINITY, VOLUMES, ANY, GATES, PENDING_PLUGIN)}


def gate(pod: Pod) -> Status | None:
    if pod.scheduling_gates:
        return Status.unresolvable(f"waiting for scheduling gates: [{' '.join(pod.scheduling_gates)}]",
                                   plugin="SchedulingGates")
    return None


def profile(name: str = "default-scheduler", *, initial: float = 1, maximum: float = 10,
            less: Any = priority_then_age, sort_name: str = "PrioritySort") -> QueueProfile:
    return QueueProfile(name, less, queue_sort_name=sort_name, pre_enqueue=gate, initial_backoff=initial,
                        max_backoff=maximum, plugins=PLUGINS)


def new_queue(*profiles: QueueProfile, clock: FakeClock | None = None) -> tuple[PriorityQueue, FakeClock]:
    clock = clock or FakeClock(T0)
    return PriorityQueue(profiles or (profile(),), clock=clock), clock


def pod(name: str, *, prio: int = 0, **kw: Any) -> Pod:
    return make_pod(name, priority=prio, **kw)


def fail(q: PriorityQueue, info: QueuedPodInfo, *plugins: str, pending: tuple[str, ...] = ()) -> str:
    """The scheduler's part after a failed attempt: rejectors, then back to the queue."""
    info.unschedulable_plugins = set(plugins)
    info.pending_plugins = set(pending)
    return q.add_unschedulable_if_not_present(info)


def where(q: PriorityQueue, p: Pod) -> str:
    got = q.get(p.uid)
    return got[0] if got is not None else ("in-flight" if q.in_flight(p.uid) else "absent")
