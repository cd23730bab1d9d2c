"""The test doubles every test area shares: the cluster client, the plugin handle, and the two
plugins the scheduler, queue and preemption tests stand on instead of the in-tree ones.

`RecordingClient` is the product's in-memory cluster client (simulate's `InMemoryClient`, the one
`kubeberth simulate` runs on) with every call recorded and failures injectable per call. `handle`
builds the one thing plugins are given, a `Framework` over a `SchedulerContext`, either bare (a
plugin under test gets it as its handle; a test may wire plugins into it) or from a profile.
"""

from __future__ import annotations

import asyncio
import copy
import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kubeberth.cache.objects import ObjectStore
from kubeberth.cache.snapshot import Snapshot
from kubeberth.clock import Clock, FakeClock
from kubeberth.config import parse_spec
from kubeberth.framework import CycleState, FilterPlugin, Framework, QueueSortPlugin, SchedulerContext, Status
from kubeberth.framework import events as ev
from kubeberth.framework.context import MetricsRecorder, NoMetrics, Nominator
from kubeberth.framework.events import ActionType, ClusterEvent
from kubeberth.framework.registry import Registry
from kubeberth.framework.types import QueuedPodInfo
from kubeberth.model import Node, NodeInfo, Pod, PodGroup
from kubeberth.plugins import in_tree_registry
from kubeberth.profile import build_framework
from kubeberth.scheduler import Scheduler
from kubeberth.testing import InMemoryClient
from kubeberth.whatif.volumes import bind_claimed_volume, provision_claim


class RecordingClient:
    """A ClusterClient recording each call that succeeded as `(call, *args)` in `calls`.

    Given a scheduler (and `feed`), each call also goes through the product's `InMemoryClient`,
    which changes the pod and sends the scheduler the watch event the API server would (a bind
    of a pod no longer pending raises its `BindConflict`). Without one, or with `feed=False`, the
    calls are only recorded. `fail(call, error)` makes that call raise `error` (recording
    nothing) until `fail(call, None)`.
    """

    # What it records, by the name `of()` and `fail()` take.
    CALLS: tuple[str, ...] = ("bind", "nominate", "unschedulable", "delete", "event", "podgroup", "annotate")

    def __init__(self, scheduler: Scheduler | None = None, *, feed: bool = True) -> None:
        self.cluster = InMemoryClient(scheduler) if scheduler is not None and feed else None
        self.calls: list[tuple[str, ...]] = []
        self.failing: dict[str, BaseException] = {}
        # Beside `calls` (whose tuples tests compare whole): each deleted victim's DisruptionTarget
        # message; each event's (pod, reason, reporting profile); and the
        # metadata.generation of the pod a condition was written for, as (call, pod, generation).
        self.disruptions: list[tuple[str, str]] = []
        self.reporters: list[tuple[str, str, str]] = []
        self.generations: list[tuple[str, str, int]] = []

    def fail(self, call: str, error: BaseException | None) -> None:
        if call not in self.CALLS:
            raise ValueError(f"{type(self).__name__} has no call {call!r} to fail; "
                             f"it has {', '.join(self.CALLS)}")
        if error is None:
            self.failing.pop(call, None)
        else:
            self.failing[call] = error

    def of(self, call: str) -> list[tuple[str, ...]]:
        """The arguments of each recorded `call`, in order."""
        if call not in self.CALLS:
            raise ValueError(f"{type(self).__name__} records no call {call!r}; it records {', '.join(self.CALLS)}")
        return [c[1:] for c in self.calls if c[0] == call]

    def _raise_if_failing(self, call: str) -> None:
        error = self.failing.get(call)
        if error is not None:
            raise error

    async def bind(self, pod: Pod, node_name: str) -> None:
        self._raise_if_failing("bind")
        if self.cluster is not None:
            await self.cluster.bind(pod, node_name)
        self.calls.append(("bind", pod.key, node_name))

    async def set_nominated_node(self, pod: Pod, node_name: str) -> None:
        self._raise_if_failing("nominate")
        if self.cluster is not None:
            await self.cluster.set_nominated_node(pod, node_name)
        self.calls.append(("nominate", pod.key, node_name))

    async def set_unschedulable(self, pod: Pod, message: str, reason: str = "Unschedulable") -> None:
        self._raise_if_failing("unschedulable")
        if self.cluster is not None:
            await self.cluster.set_unschedulable(pod, message, reason)
        self.calls.append(("unschedulable", pod.key, reason, message))
        self.generations.append(("unschedulable", pod.key, pod.generation))

    async def delete_pod(self, pod: Pod, disruption_message: str) -> None:
        self._raise_if_failing("delete")
        if self.cluster is not None:
            await self.cluster.delete_pod(pod, disruption_message)
        self.calls.append(("delete", pod.key))
        self.disruptions.append((pod.key, disruption_message))
        self.generations.append(("delete", pod.key, pod.generation))

    async def record_event(self, pod: Pod, event_type: str, reason: str, message: str, *,
                           reporter: str | None = None) -> None:
        self._raise_if_failing("event")
        if self.cluster is not None:
            await self.cluster.record_event(pod, event_type, reason, message, reporter=reporter)
        self.calls.append(("event", pod.key, event_type, reason, message))
        self.reporters.append((pod.key, reason, reporter or pod.scheduler_name))

    async def annotate_pod(self, pod: Pod, annotations: Mapping[str, str]) -> None:
        self._raise_if_failing("annotate")
        if self.cluster is not None:
            await self.cluster.annotate_pod(pod, annotations)
        self.calls.append(("annotate", pod.key, *(f"{k}={v}" for k, v in sorted(annotations.items()))))

    async def set_pod_group_condition(self, pod_group: PodGroup, condition: Mapping[str, Any]) -> None:
        self._raise_if_failing("podgroup")
        if self.cluster is not None:
            await self.cluster.set_pod_group_condition(pod_group, condition)
        self.calls.append(("podgroup", pod_group.key, str(condition.get("type")), str(condition.get("status")),
                           str(condition.get("reason")), str(condition.get("message"))))


class ObjectWritingClient(RecordingClient):
    """A client that also writes volume bindings (VolumeBinding's PreBind) and records
    `("update", kind, name)`. Given a scheduler, the writes go through `InMemoryClient` (which
    plays the PV controller and a provisioner); given a `store`, they go into it with a new
    resourceVersion each, and with `controller` simulate's PV controller and provisioner
    (`kubeberth.whatif.volumes`) then bind the claims there too. `written`: the objects as written."""

    CALLS = (*RecordingClient.CALLS, "update")

    def __init__(self, scheduler: Scheduler | None = None, *, feed: bool = True, store: ObjectStore | None = None,
                 controller: bool = False) -> None:
        super().__init__(scheduler, feed=feed)
        self.store = store
        self.controller = controller
        self.written: list[dict[str, Any]] = []
        self._rv = 100

    async def update_persistent_volume(self, pv: Mapping[str, Any]) -> dict[str, Any]:
        return await self._update("PersistentVolume", pv)

    async def update_persistent_volume_claim(self, pvc: Mapping[str, Any]) -> dict[str, Any]:
        return await self._update("PersistentVolumeClaim", pvc)

    async def _update(self, kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
        self._raise_if_failing("update")
        if self.cluster is not None:
            written = await (self.cluster.update_persistent_volume(obj) if kind == "PersistentVolume"
                             else self.cluster.update_persistent_volume_claim(obj))
        else:
            written = copy.deepcopy(dict(obj))
            self._rv += 1
            written.setdefault("metadata", {})["resourceVersion"] = str(self._rv)
            if self.store is not None:
                self.store.put(kind, written)
                if self.controller:
                    done = (bind_claimed_volume(self.store, written) if kind == "PersistentVolume"
                            else provision_claim(self.store, written, {}))
                    for k, o in done:
                        self.store.put(k, o)
        self.calls.append(("update", kind, str(written["metadata"].get("name"))))
        self.written.append(copy.deepcopy(written))
        return written


class CountingMetrics(NoMetrics):
    """Counts preemption attempts, the victims of each and the results of their background work."""

    def __init__(self) -> None:
        self.attempts = 0
        self.victims: list[int] = []
        self.goroutines: list[str] = []

    def preemption_goroutine(self, result: str, seconds: float) -> None:
        self.goroutines.append(result)

    def preemption_attempt(self) -> None:
        self.attempts += 1

    def preemption_victims(self, n: int) -> None:
        self.victims.append(n)


class FixedRng(random.Random):
    """randrange always answers `value` (modulo the range)."""

    def __init__(self, value: int = 0) -> None:
        super().__init__(0)
        self.value = value

    def randrange(self, start: int, stop: int | None = None, step: int = 1) -> int:
        n = start if stop is None else stop - start
        return self.value % n


def priority_then_age(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    """PrioritySort's order: higher priority first, then the earlier queued (a pod group's entry: its PodGroup's)."""
    pa, pb = a.priority, b.priority
    return pa > pb or (pa == pb and a.timestamp < b.timestamp)


class Sort(QueueSortPlugin):
    name = "Sort"

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        pass

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return priority_then_age(a, b)


class CpuFit(FilterPlugin):
    """NodeResourcesFit on cpu alone ("Insufficient cpu"), registering the events it does;
    `calls` lists the nodes it filtered, in order."""

    name = "CpuFit"

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        self.calls: list[str] = []

    def events_to_register(self) -> list[Any]:
        return [ClusterEvent(ev.POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
                ClusterEvent(ev.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE)]

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        self.calls.append(node_info.name)
        if node_info.requested.milli_cpu + pod.requests.milli_cpu > node_info.allocatable.milli_cpu:
            return Status.unschedulable("Insufficient cpu")
        return None


def store_of(*objs: dict[str, Any]) -> ObjectStore:
    """An ObjectStore holding `objs`, each filed under its own `kind`."""
    store = ObjectStore()
    for o in objs:
        kind = o.get("kind")
        if not kind:
            raise ValueError(f"store_of: object {o.get('metadata', {}).get('name')!r} has no kind")
        store.put(kind, o)
    return store


def handle(nodes: Sequence[Node] = (), pods: Sequence[Pod] = (), *,
           node_infos: Iterable[NodeInfo] | None = None, snapshot: Snapshot | None = None,
           objects: ObjectStore | None = None, profile: dict[str, Any] | None = None,
           registry: Registry | None = None, client: Any = None, nominator: Nominator | None = None,
           rng: random.Random | None = None, metrics: MetricsRecorder | None = None,
           clock: Clock | None = None, extras: dict[str, Any] | None = None,
           ctx: SchedulerContext | None = None, vectorise: bool | None = None,
           scheduler_name: str = "default-scheduler") -> Framework:
    """A framework, the handle plugins get, over a snapshot of `nodes` with the bound `pods`
    (or of ready-made `node_infos`, or `snapshot` itself) and a context holding the other
    arguments; or over `ctx` as it is (another profile's framework in the same scheduler).

    Without `profile` it has no plugins; with one (a SchedulingProfile spec dict, `{}` for the
    defaults) the plugins come from `registry` (the in-tree plugins unless given); without one it
    is the profile of `scheduler_name`. `vectorise`:
    False keeps plugins on their per-node path whatever the cluster's size; True lets them
    vectorise from the first node; None keeps the framework's defaults."""
    if sum((bool(nodes or pods), node_infos is not None, snapshot is not None)) > 1:
        raise ValueError("handle: give one of nodes and pods, node_infos or snapshot")
    if registry is not None and profile is None:
        raise ValueError("handle: a registry without a profile enables nothing; give the profile too")
    if ctx is not None:
        given = {"nodes": nodes, "pods": pods, "node_infos": node_infos, "snapshot": snapshot,
                 "objects": objects, "client": client, "nominator": nominator, "rng": rng,
                 "metrics": metrics, "clock": clock, "extras": extras}
        clash = [k for k, v in given.items() if v is not None and (v or not isinstance(v, (tuple, list)))]
        if clash:
            raise ValueError(f"handle: ctx is used as it is; {', '.join(clash)} cannot be given with it")
    else:
        ctx = SchedulerContext(objects=objects, client=client, nominator=nominator, clock=clock, rng=rng,
                               metrics=metrics)
        if snapshot is None:
            snapshot = Snapshot(node_infos) if node_infos is not None else Snapshot.from_objects(nodes, pods)
        ctx.snapshot = snapshot
        ctx.extras.update(extras or {})
    if profile is None:
        fw = Framework(scheduler_name, parse_spec({"schedulerName": scheduler_name}), ctx)
    else:
        fw = build_framework(parse_spec(profile), registry if registry is not None else in_tree_registry(), ctx)
    if vectorise is not None:
        fw.vectorise = vectorise
        fw.vector_min_nodes = 0
    return fw


def run_scenario(sc: Mapping[str, Any], *, vectorise: bool) -> dict[str, Any]:
    """A whole simulate-style run of a generated scenario (`profile`, `seed`, `nodes`, `running`,
    `pending`, and optionally `pdbs` and the rotating `start`), with the framework's vectorised
    path and shortcuts on or off; what was decided, the events, where the rotation ended and the
    random generator's next draw, for comparing the two paths."""
    sched = Scheduler(clock=FakeClock(), seed=sc["seed"])
    client = InMemoryClient(sched)
    sched.ctx.client = client
    fw = build_framework(parse_spec(sc["profile"]), in_tree_registry(), sched.ctx)
    fw.vectorise = vectorise
    fw.vector_min_nodes = 0
    sched.set_profile(fw)
    sched.ctx.next_start_node_index = sc.get("start", 0)
    for raw in sc.get("pdbs", ()):
        sched.on_object("PodDisruptionBudget", raw)
    for raw in sc["nodes"]:
        sched.on_node_add(raw)
    for raw in sc["running"]:
        sched.on_pod_add(raw)
    for raw in sc["pending"]:
        sched.on_pod_add(raw)
    asyncio.run(sched.run_until_idle())
    outcomes = {k: (r.status, r.node, r.message, r.nominated_node, tuple(r.victims))
                for k, r in sorted(sched.outcomes.items())}
    return {"outcomes": outcomes, "events": list(client.events), "start": sched.ctx.next_start_node_index,
            "rng": sched.ctx.rng.random()}
