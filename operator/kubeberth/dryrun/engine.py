"""One dry run on a scheduler: would these pods be placed now, where, with which victims.

`dry_run(sched, pods, ...)` runs, per pod, the scheduling cycle's algorithm as the scheduler's
cycle does (schedule_one.py): the cache brought into the scheduler's snapshot, the profile
chosen by the pod's schedulerName, a fresh CycleState, then algorithm.schedule_pod: PreFilter,
Filter (the nominated pods' two passes included), the filter extenders, PreScore, Score,
NormalizeScore and the pick. A pod that fits nowhere goes through DefaultPreemption's evaluation
(eligibility, candidates, victims, the pick of a node) without its last step: nothing is
evicted, nobody is nominated. Reserve, Permit, PreBind, Bind and PostBind are not run, nor
other PostFilter plugins. Metrics are off (the scheduler's, and the per-plugin counts the
frameworks gather until their next report), the scheduler's rotating start index and random
source are restored afterwards, so that every dry run on the same state gives the same answer.

A placed pod is seen by the next pod of the same request (copies, a gang), in one of two ways:
- `live=False` (a copy of the scheduler: the worker's fork): assumed in its cache, forgotten at
  the end, the cache brought into the snapshot before each pod, as the scheduler does;
- `live=True` (the live scheduler, from its event loop, between two cycles): the cache is brought
  into the snapshot once (what the next cycle does anyway), and a placed pod goes on a clone of
  its node's NodeInfo put in the snapshot's list in place of the original (as the cache's own
  update does), every original put back at the end. The cache is not touched. The whole run is
  synchronous (no extender: the service sends those elsewhere), so the scheduling loop never sees
  the clones.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..cache.snapshot import Snapshot
from ..framework import CycleState, FitError, Framework, Status
from ..framework.plugin_metrics import PluginMetrics
from ..framework.types import NodeToStatus
from ..framework.victims import Candidate
from ..model import NodeInfo, Pod
from ..model.errors import ModelError
from ..plugins.default_preemption import DefaultPreemption
from ..report.scope import scoped
from ..scheduler import explain
from ..scheduler.algorithm import decision_of, schedule_pod
from ..scheduler.errors import NoNodesAvailable, SchedulingError
from ..scheduler.records import pod_on_node
from .models import ERROR, SCHEDULED, UNSCHEDULABLE, PodAnswer, Preemption, VictimRef

if TYPE_CHECKING:
    from ..scheduler import Scheduler

EXTENSION_POINTS = ["PreFilter", "Filter", "PostFilter (DefaultPreemption, evaluation only)", "PreScore", "Score",
                    "NormalizeScore"]
SEQ_BASE = 1 << 40  # queue order among the dry-run pods: after every real pod


@dataclass
class Scope:
    """What the caller may read: its namespace, the explanation's detail (report/scope.py) and the
    cluster's namespaces (whose `namespace/name` references are hidden in free text)."""

    namespace: str
    detail: str = "counts"
    namespaces: Collection[str] = field(default_factory=tuple)


def parse_pods(sched: Scheduler, raws: Sequence[dict[str, Any]]) -> list[Pod]:
    """The pods as the scheduler reads them (priority resolved from its PriorityClass); ValueError
    naming the pod and the problem."""
    pods = []
    for i, raw in enumerate(raws):
        try:
            pod = Pod(raw, seq=SEQ_BASE + i)
            pod.priority, pod.preemption_policy = sched.ctx.objects.priorities.resolve(pod.spec)
        except ModelError as exc:
            raise ValueError(f"pods[{i}]: {exc}") from None
        if pod.node_name:
            raise ValueError(f"pods[{i}]: spec.nodeName is set: the pod is not for a scheduler to place")
        pods.append(pod)
    return pods


@contextmanager
def _quiet(sched: Scheduler) -> Iterator[None]:
    """The scheduler's shared state the cycle reads or moves, as it was before, afterwards."""
    ctx = sched.ctx
    saved = (ctx.next_start_node_index, ctx.rng.getstate(), ctx.metrics, ctx.record_victims)
    ctx.metrics = None
    ctx.record_victims = None
    # the per-plugin counts (scheduler_plugin_evaluation_total) the frameworks gather between flushes
    counts = [(fw, fw.plugin_metrics, fw._prefix_counts) for fw in sched.profiles.values()]
    for fw, _, _ in counts:
        fw.plugin_metrics, fw._prefix_counts = PluginMetrics(), {}
    try:
        yield
    finally:
        ctx.next_start_node_index, state, ctx.metrics, ctx.record_victims = saved
        ctx.rng.setstate(state)
        for fw, metrics, prefix in counts:
            fw.plugin_metrics, fw._prefix_counts = metrics, prefix


class _CachePlacer:
    """Placements assumed in the (copied) scheduler's cache."""

    def __init__(self, sched: Scheduler) -> None:
        self.sched = sched
        self.assumed: list[Pod] = []

    def before(self) -> None:
        self.sched.cache.update_snapshot(self.sched.snapshot)

    def place(self, pod: Pod, node: str) -> None:
        placed = pod_on_node(pod, node)
        self.sched.cache.assume_pod(placed)
        self.assumed.append(placed)

    def undo(self) -> None:
        for placed in reversed(self.assumed):
            self.sched.cache.forget_pod(placed)


class _SnapshotOverlay:
    """Placements on clones of the live snapshot's NodeInfos, the originals put back at the end."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.originals: dict[int, NodeInfo] = {}

    def before(self) -> None:
        pass

    def place(self, pod: Pod, node: str) -> None:
        snap = self.snapshot
        row = snap.arrays().pos.get(node)
        if row is None or snap.node_infos[row].name != node:
            row = next(i for i, ni in enumerate(snap.node_infos) if ni.name == node)
        clone = snap.node_infos[row].clone()
        clone.add_pod(pod_on_node(pod, node))
        self.originals.setdefault(row, snap.node_infos[row])
        snap.node_infos[row] = clone
        snap.by_name[node] = clone
        snap.affinity_lists_changed()

    def undo(self) -> None:
        snap = self.snapshot
        for row, original in self.originals.items():
            snap.node_infos[row] = original
            snap.by_name[original.name] = original
        if self.originals:
            snap.affinity_lists_changed()
            snap.arrays()  # the rows back as they were, now


async def dry_run(sched: Scheduler, pods: Sequence[Pod], *, scope: Scope, explain_pods: bool = False,
                  live: bool = False) -> list[PodAnswer]:
    """Each pod tried after the previous ones' placements; the scheduler left as found (see the
    module's docstring for `live`)."""
    answers: list[PodAnswer] = []
    ctx = sched.ctx
    saved_snapshot = ctx.snapshot
    placer: _CachePlacer | _SnapshotOverlay
    if live:
        sched.cache.update_snapshot(sched.snapshot)
        placer = _SnapshotOverlay(sched.snapshot)
    else:
        placer = _CachePlacer(sched)
    with _quiet(sched):
        try:
            for pod in pods:
                placer.before()
                ctx.snapshot = sched.snapshot
                answer = await _one(sched, pod, scope, explain_pods)
                answers.append(answer)
                if answer.node:
                    placer.place(pod, answer.node)
        finally:
            placer.undo()
            ctx.snapshot = saved_snapshot
    return answers


async def _one(sched: Scheduler, pod: Pod, scope: Scope, explain_pods: bool) -> PodAnswer:
    answer = PodAnswer(namespace=pod.namespace, name=pod.name, status=ERROR)
    fw = sched.profiles.get(pod.scheduler_name)
    if fw is None:
        answer.message = f"no profile schedules pods of schedulerName {pod.scheduler_name!r}"
        return answer
    state = CycleState()
    x = explain.begin(state, fw, pod, 1) if explain_pods else None
    nominating = ""
    try:
        try:
            result = await schedule_pod(fw, state, pod)
        finally:
            if x is not None:
                x.observe(fw, state, pod, decision_of(state))
        answer.status, answer.node = SCHEDULED, result.suggested_host
    except FitError as fit:
        answer.status = UNSCHEDULABLE
        if any(isinstance(p, DefaultPreemption) for p in fw.post_filter_plugins):
            best, status = await _preemption(fw, state, pod, fit.diagnosis.node_to_status)
            msg = status.message()
            fit.diagnosis.post_filter_msg = f"preemption: {msg}" if msg else ""
            if best is not None:
                nominating = best.name
                answer.preemption = _victims(best, scope.namespace)
            if x is not None:
                x.post_filtered(fit.diagnosis.post_filter_msg, nominating)
        answer.message = fit.message()
    except NoNodesAvailable as exc:
        answer.status, answer.message = UNSCHEDULABLE, str(exc) or "no nodes available to schedule pods"
    except SchedulingError as exc:
        answer.message = exc.status.message()
    except Exception as exc:  # a plugin raised: its Error, as the cycle words it
        answer.message = sched.ctx.plugin_errors.failure_status(fw.plugins, exc).message()
    if x is not None:
        x.finish(answer.status, answer.node or "", "" if answer.node else answer.message)
        x.nominated_node = nominating
        answer.explanation = scoped(x.to_dict(), scope.namespace, scope.detail, scope.namespaces)
    return answer


async def _preemption(fw: Framework, state: CycleState, pod: Pod, statuses: NodeToStatus
                      ) -> tuple[Candidate | None, Status]:
    """DefaultPreemption's evaluation up to the choice of a node (Evaluator.choose): (the chosen
    candidate or None, the status the plugin would return, without its "preemption: " prefix)."""
    plugin = next(p for p in fw.post_filter_plugins if isinstance(p, DefaultPreemption))
    best, status, _ = await plugin.evaluator.choose(state, pod, statuses)
    return best, status


def _victims(best: Candidate, namespace: str) -> Preemption:
    own = [VictimRef(namespace=v.namespace, name=v.name, priority=v.priority) for v in best.victims.pods
           if v.namespace == namespace]
    return Preemption(node=best.name, victims=own, victimsInOtherNamespaces=len(best.victims.pods) - len(own))
