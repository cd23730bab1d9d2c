"""The replay: a discrete-event simulation on a virtual clock around simulate's scheduler
(whatif/engine.py: the same Scheduler, profiles, plugins, feature gates, preemption, gangs, DRA).

Events wait in a heap: arrivals and departures of pods, nodes and other objects, and the
departure of a pod `duration` after it was bound. The scheduler's own timers (backoff expiries,
Permit deadlines, the periodic retry of pods left unschedulable) are asked for after each
instant. The clock jumps to the earliest of them; at each instant the events apply in a fixed
order (pods leave, nodes and objects leave, objects arrive, nodes arrive, pods arrive; input
order within each), the timers due fire, then the scheduler runs until idle. Nothing sleeps.

A departed pod leaves the scheduler entirely (its record there too: `keep_deleted_records`
False); the replay keeps only its compact record (ledger.py).

A protocol (the paper's, say) plugs in through `ReplayOptions`: it builds the workload
(a `ReplayInput`), may drop pods left unschedulable after their attempt, watches each sample
(`on_sample`), configures the scheduler before it runs (`configure`) and adds keys to the result
(`extend_result`).
"""

from __future__ import annotations

import asyncio
import heapq
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from ...cache.objects import object_key as store_key
from ...clock import FakeClock
from ...framework.interfaces import Plugin
from ...framework.registry import Registry
from ...model import ModelError, Node, Pod
from ...plugins import plugin_registry
from ...scheduler import Scheduler
from ...scheduler.watched import OBJECT_KINDS, POD_GROUP, declared_kinds, table_kind
from ..cluster import InMemoryClient
from ..engine import admit_pod_group, end_terminating_victims_at_once, load_objects, with_template_claims
from ..inputs import object_key
from .ledger import DROPPED, IGNORED, ORPHANED, PENDING, PREEMPTED, Ledger, PodEntry, resource_names
from .workload import SUMMARY_STORE_KEY, ReplayInput, Timed, workload_summary

START = 1_700_000_000.0   # the virtual clock's epoch second at replay time 0
NO_GIVING_UP = 1 << 62     # a replayed pod is tried as long as it is there

# Ranks of the events of one instant, applied in this order.
POD_LEAVES, OBJECT_LEAVES, OBJECT_ARRIVES, NODE_ARRIVES, POD_ARRIVES = range(5)


@dataclass
class Sample:
    """One row of the time series as `on_sample` sees it: `values[column]`."""

    time: float
    values: dict[str, float | int | None]


@dataclass
class ReplayOptions:
    """How to replay. `seed`: the scheduler's random tie-breaks. `until`: stop at that time
    (seconds; None: when nothing more can happen). `sample_every`: a row every so many seconds
    (None: after every instant). `percentage_of_nodes_to_score`: the scheduler-wide value (0:
    upstream's adaptive default; profiles may set their own). `drop_unschedulable`: a pod left
    unschedulable at the end of the instant it was tried in is deleted and recorded as Dropped
    (arrived and failed, never retried). `progress`: a tqdm bar on stderr.

    Hooks: `configure(scheduler)` once its profiles are built, before any event; `on_instant(
    scheduler, time)` at each instant once its events are applied and its timers due have fired,
    just before the scheduler runs (the cluster as the scheduler then finds it: its cache, its
    queue; to look at, not to change); `on_sample(sample)` after each row;
    `extend_result(result)` returns keys added to the result (e.g. `gpuAllocation`).
    `input_info`: the result's `input` section (format, files, profile, protocol, tune,
    tieBreak), as the caller describes its input. `summary_pods`: the pod objects the published
    WorkloadSummary counts (None: the pods replayed; a protocol may count the original trace
    instead of the workload it built from it)."""

    seed: int = 0
    until: float | None = None
    sample_every: float | None = None
    percentage_of_nodes_to_score: int = 0
    drop_unschedulable: bool = False
    progress: bool = False
    configure: Callable[[Scheduler], None] | None = None
    on_instant: Callable[[Scheduler, float], None] | None = None
    on_sample: Callable[[Sample], None] | None = None
    extend_result: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None
    input_info: dict[str, Any] = field(default_factory=dict)
    summary_pods: Sequence[Mapping[str, Any]] | None = None


class ReplayClient(InMemoryClient):
    """simulate's in-memory cluster, telling the replay what it writes: bindings (with the
    annotations written before them), failures; it keeps no events (a long replay would pile
    them up)."""

    def __init__(self, scheduler: Scheduler, replay: Replay) -> None:
        super().__init__(scheduler)
        self.replay = replay

    async def bind(self, pod: Pod, node_name: str) -> None:
        latest = self.scheduler.pending_pod(pod.uid) or pod
        annotations = {**latest.annotations, **pod.annotations}  # the pending pod's, and the assumed copy's
        await super().bind(pod, node_name)
        self.replay.bound(pod.key, node_name, annotations)

    async def set_unschedulable(self, pod: Pod, message: str, reason: str = "Unschedulable") -> None:
        self.replay.attempt_failed(pod.key, message)

    async def record_event(self, pod: Pod, event_type: str, reason: str, message: str, *,
                           reporter: str | None = None) -> None:
        return None


class Replay:
    """One replay of `data` under `options`; `run()` returns the ledger (output.py makes the
    result). `registry`: the plugins profiles are built from (default: the process's)."""

    def __init__(self, data: ReplayInput, options: ReplayOptions, *, registry: Registry | None = None,
                 warn: TextIO | None = None) -> None:
        self.data = data
        self.options = options
        self.registry = registry if registry is not None else plugin_registry()
        self.warn = warn if warn is not None else sys.stderr
        self.clock = FakeClock(START)
        self.sched = Scheduler(clock=self.clock, seed=options.seed, keep_deleted_records=False)
        self.sched.ctx.client = ReplayClient(self.sched, self)
        self.sched.ctx.waiting_pods.virtual_clock = self.clock
        self.sched.ctx.percentage_of_nodes_to_score = options.percentage_of_nodes_to_score
        end_terminating_victims_at_once(self.sched)
        recorded = self.sched.ctx.record_victims

        def victims(preemptor: Pod, pods: Any) -> None:
            pods = list(pods)
            for v in pods:
                self._left(v.key, PREEMPTED)
            if recorded is not None:
                recorded(preemptor, pods)

        self.sched.ctx.record_victims = victims
        self.summary = workload_summary(options.summary_pods if options.summary_pods is not None
                                        else (t.obj for t in data.pods))
        self.ledger = Ledger(self._resources(self.summary))
        self.now = 0.0
        self.end = 0.0
        self._heap: list[tuple[float, int, int, Timed]] = []
        self._seq = 0
        self._on_node: dict[str, set[str]] = {}
        self._node_alloc: dict[str, tuple[int, ...]] = {}
        self._claims: dict[str, list[str]] = {}
        self._failed_now: list[str] = []
        self._changed = False
        self._last_change = START
        self._declared: dict[tuple[str, str], str] = {}
        self._templates = [o for o in data.static if o.get("kind") == "ResourceClaimTemplate"]
        self._samplers: list[tuple[str, Plugin]] = []
        self._arrival_annotations: dict[str, dict[str, str]] = {}
        self._progress: Any = None

    def _resources(self, summary: Mapping[str, Any]) -> list[str]:
        """cpu, memory and every other resource the nodes offer or the workload's shapes request."""
        amounts = []
        for t in self.data.timed:
            if t.kind == "Node":
                try:
                    amounts.append(Node(t.obj).allocatable)
                except ModelError:
                    continue
        names = {*resource_names(amounts), *(n for shape in summary["spec"]["shapes"] for n in shape["requests"])}
        storage = ["ephemeral-storage"] if "ephemeral-storage" in names else []
        return ["cpu", "memory", *storage, *sorted(names - {"cpu", "memory", "ephemeral-storage"})]

    # ---- what the cluster tells ------------------------------------------------------------
    def bound(self, key: str, node: str, annotations: Mapping[str, str]) -> None:
        e = self.ledger.entries.get(key)
        if e is None or e.status != PENDING:
            return
        before = self._arrival_annotations.get(key, {})
        written = {k: v for k, v in annotations.items() if before.get(k) != v}
        self.ledger.bind(e, self.now, node, written)
        self._arrival_annotations.pop(key, None)
        self._on_node.setdefault(node, set()).add(key)
        self._changed = True
        if e.duration is not None:
            self._push(self.now + e.duration, POD_LEAVES, Timed({"kind": "Pod", "metadata": _meta(key)},
                                                                 e.arrival, self.now + e.duration))

    def attempt_failed(self, key: str, message: str) -> None:
        e = self.ledger.entries.get(key)
        if e is not None:
            self.ledger.failed_attempt(e, message)
            if self.options.drop_unschedulable:
                self._failed_now.append(key)

    def _left(self, key: str, status: str | None = None) -> PodEntry | None:
        e = self.ledger.entries.get(key)
        if e is None or e.departure is not None:
            return None
        if e.node is not None:
            self._on_node.get(e.node, set()).discard(key)
        self._arrival_annotations.pop(key, None)
        self.ledger.leave(e, self.now, status)
        self._changed = True
        return e

    # ---- events ---------------------------------------------------------------------------------
    def _push(self, t: float, rank: int, item: Timed) -> None:
        heapq.heappush(self._heap, (t, rank, self._seq, item))
        self._seq += 1

    def _schedule_input(self) -> None:
        for t in self.data.timed:
            rank = {"Pod": POD_ARRIVES, "Node": NODE_ARRIVES}.get(t.kind, OBJECT_ARRIVES)
            self._push(t.arrival, rank, t)
            if t.departure is not None:
                self._push(t.departure, POD_LEAVES if t.kind == "Pod" else OBJECT_LEAVES, t)

    def _apply(self, rank: int, item: Timed) -> None:
        obj, kind = item.obj, item.kind
        if rank in (POD_ARRIVES, NODE_ARRIVES, OBJECT_ARRIVES):
            {POD_ARRIVES: lambda: self._pod_arrives(item), NODE_ARRIVES: lambda: self._node_arrives(obj),
             OBJECT_ARRIVES: lambda: self._object_arrives(obj)}[rank]()
            if item.departure is not None and item.departure <= self.now:
                # It leaves at the instant it came: its departure's event, earlier in the
                # instant's order, found nothing to remove.
                self._apply(POD_LEAVES if kind == "Pod" else OBJECT_LEAVES, item)
        elif kind == "Pod":
            self._pod_leaves(object_key(obj), item.arrival)
        elif kind == "Node":
            self._node_leaves(str((obj.get("metadata") or {}).get("name")))
        else:
            self.sched.on_object_delete(self._store_kind(obj), store_key(obj))
        self._changed = True

    def _pod_arrives(self, item: Timed) -> None:
        key = object_key(item.obj)
        if key in self.ledger.entries and self.ledger.entries[key].departure is None:
            self.warn.write(f"skipping pod {key} arriving at {self.now:g}: a pod of that name is still there\n")
            return
        raw = item.obj
        claims: list[dict[str, Any]] = []
        if (raw.get("spec") or {}).get("resourceClaims") and self._templates:
            made = with_template_claims([*self._templates, raw])
            raw = made[-1]
            claims = [o for o in made[len(self._templates):-1] if o.get("kind") == "ResourceClaim"]
        for claim in claims:
            self.sched.on_object("ResourceClaim", claim)
        pod = self.sched.on_pod_add(raw)  # the scheduler's own reading of it, used here too
        if pod is None:  # malformed, or naming a PriorityClass that does not exist
            rec = self.sched.outcomes.get(key)
            self.warn.write(f"skipping pod {key}: {rec.message if rec is not None else 'unreadable'}\n")
            self.sched.on_pod_delete(raw)  # nothing of it is kept
            for claim in claims:
                self.sched.on_object_delete("ResourceClaim", store_key(claim))
            return
        if claims:
            self._claims[key] = [store_key(c) for c in claims]
        e = self.ledger.arrive(key, self.now, self.ledger.vector(pod.requests), item.duration)
        self._arrival_annotations[key] = dict(pod.annotations)
        if self._progress is not None:
            self._progress.update(1)
        if pod.node_name:  # bound already (as in a cluster's dump): running from its arrival
            self.bound(key, pod.node_name, pod.annotations)
        elif pod.scheduler_name not in self.sched.profiles:
            e.status = IGNORED

    def _pod_leaves(self, key: str, arrival: float) -> None:
        e = self.ledger.entries.get(key)
        if e is None or e.departure is not None or e.arrival != arrival:
            return
        self.sched.on_pod_delete(key)
        for claim in self._claims.pop(key, []):
            self.sched.on_object_delete("ResourceClaim", claim)
        self._left(key)

    def _node_arrives(self, obj: dict[str, Any]) -> None:
        node = self.sched.on_node_add(obj)
        name = str((obj.get("metadata") or {}).get("name"))
        if node is None:
            self.warn.write(f"skipping node: {self.sched.node_errors.get(name, name)}\n")
            return
        alloc = self.ledger.vector(node.allocatable)
        self._node_alloc[name] = alloc
        self.ledger.node_added(alloc)

    def _node_leaves(self, name: str) -> None:
        for key in sorted(self._on_node.pop(name, set())):
            self.sched.on_pod_delete(key)
            self._left(key, ORPHANED)
        alloc = self._node_alloc.pop(name, None)
        if alloc is not None:
            self.sched.on_node_delete(name)
            self.ledger.node_removed(alloc)

    def _store_kind(self, obj: Mapping[str, Any]) -> str:
        return self._declared.get((str(obj.get("apiVersion")), str(obj.get("kind"))), str(obj.get("kind")))

    def _object_arrives(self, obj: dict[str, Any]) -> None:
        store_key = self._declared.get((str(obj.get("apiVersion")), str(obj.get("kind"))))
        if store_key is not None:
            self.sched.on_object(store_key, obj)
        elif table_kind(obj) == POD_GROUP and self.sched.pod_groups_enabled:
            admitted = admit_pod_group(self.sched, obj, self.data.origins)
            if admitted is None:
                self.warn.write(f"skipping podgroup: {self.sched.pod_group_errors[object_key(obj)]}\n")
            else:
                self.sched.on_object(POD_GROUP, admitted)
        elif table_kind(obj) in OBJECT_KINDS:
            self.sched.on_object(str(obj["kind"]), obj)
        else:
            self.warn.write(f"skipping {obj.get('kind')} {object_key(obj)}: replay does not read that kind\n")

    # ---- the loop -------------------------------------------------------------------------------
    def _next_timer(self) -> float | None:
        """The absolute time of the scheduler's next timer: a backoff, a Permit deadline, or the
        periodic flush (every 30 s) that retries pods unschedulable for 5 minutes, for those
        tried before the cluster last changed."""
        times = [t for t in (self.sched.next_timer(),) if t is not None]
        leftover = self.sched.queue.next_unschedulable_timeout(tried_by=self._last_change)
        if leftover is not None:
            ticks = int((leftover - START) // FLUSH_EVERY) + 1
            times.append(max(START + ticks * FLUSH_EVERY, self.clock.now()))
        return min(times) if times else None

    async def _instant(self) -> None:
        self.sched.queue.flush_backoff_completed()
        self.sched.ctx.waiting_pods.expire_due(self.clock.now())
        if _on_tick(self.clock.now()):
            self.sched.queue.flush_unschedulable_leftover()
        if self.options.on_instant is not None:
            self.options.on_instant(self.sched, self.now)
        await self.sched.run_until_idle(max_attempts=NO_GIVING_UP, advance_clock=False)
        if self._failed_now:
            for key in self._failed_now:
                e = self.ledger.entries.get(key)
                if e is not None and e.status == PENDING and e.departure is None:
                    self.sched.on_pod_delete(key)
                    self._left(key, DROPPED)
            self._failed_now = []
        if self._changed:
            self._last_change = self.clock.now()
            self._changed = False

    def _sample(self, t: float) -> None:
        metrics: dict[str, float] = {}
        for name, plugin in self._samplers:
            for metric, value in plugin.sample_metrics().items():
                metrics.setdefault(f"{name}.{metric}", float(value))
        row = self.ledger.sample(t, dict(sorted(metrics.items())))
        if self.options.on_sample is not None:
            self.options.on_sample(Sample(t, dict(zip(self.ledger.columns, row, strict=False))))

    def _prepare(self) -> None:
        load_objects(self.sched, self.data.static, self.registry, warn=self.warn, origins=self.data.origins)
        self._declared = {(k.api_version, k.kind): k.store_key for k in declared_kinds(self.registry)}
        self.sched.on_object(SUMMARY_STORE_KEY, self.summary)
        seen: set[str] = set()
        for _, fw in sorted(self.sched.profiles.items()):
            for name, plugin in sorted(fw.plugins.items()):
                if name not in seen and type(plugin).sample_metrics is not Plugin.sample_metrics:
                    seen.add(name)
                    self._samplers.append((name, plugin))
        if self.options.configure is not None:
            self.options.configure(self.sched)
        self._schedule_input()

    async def _run(self) -> None:
        self._prepare()
        every = self.options.sample_every
        next_sample = 0.0
        until = self.options.until
        while True:
            timer = self._next_timer()
            t_event = self._heap[0][0] if self._heap else None
            if t_event is None and timer is None:
                break
            if timer is not None and (t_event is None or timer - START < t_event):
                t, absolute = round(timer - START, 9), timer
            else:
                assert t_event is not None
                t, absolute = t_event, START + t_event
            if until is not None and t > until:
                break
            if every is not None:
                while next_sample < t:
                    self._sample(next_sample)
                    next_sample += every
            self.now = t
            self.clock.set(absolute)
            while self._heap and self._heap[0][0] <= t:
                _, rank, _, item = heapq.heappop(self._heap)
                self._apply(rank, item)
            await self._instant()
            self.end = t
            if every is None:
                self._sample(t)
        if until is not None:
            self.end = max(self.end, until)
        if every is not None:
            while next_sample <= self.end:
                self._sample(next_sample)
                next_sample += every
        self.now = self.end
        self.ledger.finish(self.end)

    def run(self) -> Ledger:
        """Replay to the end (or `until`); the books."""
        self._progress = _progress_bar(len(self.data.pods)) if self.options.progress else None
        try:
            asyncio.run(self._run())
        finally:
            if self._progress is not None:
                self._progress.close()
        return self.ledger


FLUSH_EVERY = 30.0  # upstream's flushUnschedulablePodsLeftover period


def _on_tick(now: float) -> bool:
    """Whether the periodic flush of pods left unschedulable runs at this moment."""
    ticks = (now - START) / FLUSH_EVERY
    return abs(ticks - round(ticks)) < 1e-9


def _meta(key: str) -> dict[str, str]:
    ns, _, name = key.partition("/")
    return {"namespace": ns, "name": name}


def _progress_bar(total: int) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, unit="pod", file=sys.stderr, mininterval=0.5, dynamic_ncols=True, desc="replay")
