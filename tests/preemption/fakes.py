"""The preemption tests' cluster: small filter plugins and DefaultPreemption wired by hand into a
bare handle (so the tests depend on no other in-tree plugin), over the shared test doubles."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from kubeberth.framework import (
    CycleState,
    FilterPlugin,
    NodeToStatus,
    PreFilterExtensions,
    PreFilterPlugin,
    Status,
)
from kubeberth.model import Node, NodeInfo, Pod
from kubeberth.plugins.default_preemption import DefaultPreemption, DefaultPreemptionArgs
from kubeberth.queue.nominator import Nominator
from tests.builders import make_node, pod_dict
from tests.doubles import CountingMetrics, CpuFit, FixedRng, RecordingClient, handle, store_of

T0 = 1_700_000_000.0


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(name: str, *, cpu: str = "1", prio: int = 0, node: str = "", start: float | None = None,
        labels: dict[str, str] | None = None, deleting: bool = False, nominated: str = "",
        policy: str | None = None, namespace: str = "default", pods: int | None = None,
        preempted: bool = False, scheduler: str | None = None, generation: int | None = None) -> Pod:
    """A pod; `start` is seconds after T0 for status.startTime; `deleting` sets deletionTimestamp;
    `preempted` also sets the DisruptionTarget condition the scheduler adds to its victims."""
    extra: dict[str, Any] = {}
    if policy is not None:
        extra["preemptionPolicy"] = policy
    raw = pod_dict(name, namespace, cpu=cpu, priority=prio, node=node, labels=labels, scheduler=scheduler, **extra)
    if generation is not None:
        raw["metadata"]["generation"] = generation
    if start is not None:
        raw["status"]["startTime"] = iso(T0 + start)
    if deleting or preempted:
        raw["metadata"]["deletionTimestamp"] = iso(T0)
    if preempted:
        raw["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True",
                                        "reason": "PreemptionByScheduler"}]
    if nominated:
        raw["status"]["nominatedNodeName"] = nominated
    return Pod(raw)


def node(name: str, cpu: str = "4", *, pods: str = "110", labels: dict[str, str] | None = None) -> Node:
    return make_node(name, cpu=cpu, pods=pods, labels=labels)


# ---- plugins -------------------------------------------------------------------
class _Counts:
    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts

    def clone(self) -> _Counts:
        return _Counts(dict(self.counts))


class FakePodCount(PreFilterPlugin, FilterPlugin, PreFilterExtensions):
    """Counts pods per node in CycleState at PreFilter and keeps the count with AddPod/RemovePod;
    Filter reads only the state, so a dry run that skips the extensions decides wrongly."""

    name = "FakePodCount"

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        self.adds = 0
        self.removes = 0

    def pre_filter(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[None, None]:
        state.write(self.name, _Counts({ni.name: len(ni.pods) for ni in nodes}))
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions:
        return self

    def add_pod(self, state: CycleState, pod_to_schedule: Pod, pod_to_add: Pod,
                node_info: NodeInfo) -> Status | None:
        self.adds += 1
        c: _Counts = state.read(self.name)
        c.counts[node_info.name] = c.counts.get(node_info.name, 0) + 1
        return None

    def remove_pod(self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: Pod,
                   node_info: NodeInfo) -> Status | None:
        self.removes += 1
        c: _Counts = state.read(self.name)
        c.counts[node_info.name] = c.counts.get(node_info.name, 0) - 1
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        c: _Counts = state.read(self.name)
        if c.counts.get(node_info.name, 0) + 1 > node_info.allocatable.allowed_pod_number:
            return Status.unschedulable("Too many pods")
        return None


class FakeSelector(FilterPlugin):
    """Unresolvable on nodes labelled fake/off=true."""

    name = "FakeSelector"

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        pass

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if node_info.node is not None and node_info.node.labels.get("fake/off") == "true":
            return Status.unresolvable("node(s) didn't match Pod's node affinity/selector")
        return None


class Env:
    """A framework over a snapshot with the fake plugins and DefaultPreemption."""

    def __init__(self, nodes: Sequence[Node], pods: Sequence[Pod] = (), *,
                 pdbs: Sequence[dict[str, Any]] = (), args: dict[str, Any] | None = None,
                 rng: random.Random | None = None, nominated: Sequence[tuple[Pod, str]] = (),
                 extenders: Sequence[Any] = (), pod_count: bool = True,
                 scheduler_name: str = "default-scheduler") -> None:
        self.client = RecordingClient()
        self.nominator = Nominator()
        for p, n in nominated:
            self.nominator.add_nominated_pod(p, n)
        self.metrics = CountingMetrics()
        fw = handle(nodes, pods, objects=store_of(*pdbs), client=self.client, nominator=self.nominator,
                    rng=rng or FixedRng(0), metrics=self.metrics, scheduler_name=scheduler_name)
        self.ctx = fw.ctx
        self.recorded: list[tuple[str, list[str]]] = []
        self.ctx.record_victims = lambda p, victims: self.recorded.append(
            (p.key, [v.key for v in victims]))
        self.fit = CpuFit()
        self.count = FakePodCount()
        self.selector = FakeSelector()
        filters: list[Any] = [self.selector, self.fit]
        if pod_count:
            fw.pre_filter_plugins = [self.count]
            filters.append(self.count)
        fw.filter_plugins = filters
        self.plugin = DefaultPreemption(DefaultPreemptionArgs.model_validate(args or {}), fw)
        fw.post_filter_plugins = [self.plugin]
        fw.plugins = {p.name: p for p in [*filters, self.plugin]}
        fw.extenders = list(extenders)
        self.fw = fw
        self.evaluator = self.plugin.evaluator

    def state_for(self, p: Pod) -> CycleState:
        state = CycleState()
        _, s, _ = self.fw.run_pre_filter(state, p, self.ctx.snapshot.node_infos)
        assert s is None
        return state

    def statuses(self, state: CycleState, p: Pod) -> NodeToStatus:
        """The scheduling cycle's filter statuses for `p` (every node must fail)."""
        m = NodeToStatus()
        for ni in self.ctx.snapshot.node_infos:
            s = self.fw.run_filter_with_nominated_pods(state, p, ni)
            assert s is not None, f"{p.key} fits {ni.name}"
            m.set(ni.name, s)
        return m

    async def post_filter(self, p: Pod) -> tuple[Any, Status]:
        """PostFilter, then what the scheduler's failure handling does with its result
        (nominate the pod, or clear its nomination), then the end of the preemption's
        background work."""
        state = self.state_for(p)
        result, status = await self.fw.run_post_filter(state, p, self.statuses(state, p))
        if result is not None and self.ctx.nominator is not None:
            self.nominator.add_nominated_pod(p, result.nominated_node_name)
        if result is not None and self.ctx.client is not None and result.nominated_node_name != p.nominated_node_name:
            await self.client.set_nominated_node(p, result.nominated_node_name)
        await self.background()
        return result, status

    async def background(self) -> None:
        """Wait for the preemptions acting in the background."""
        while self.ctx.preemption_tasks:
            await asyncio.gather(*list(self.ctx.preemption_tasks))

    def pods_on(self, node_name: str) -> list[str]:
        ni = self.ctx.snapshot.get(node_name)
        assert ni is not None
        return [p.name for p in ni.pods]


def pdb(name: str, match: dict[str, str] | None, allowed: int, *, namespace: str = "default",
        disrupted: Sequence[str] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"minAvailable": 1}
    if match is not None:
        spec["selector"] = {"matchLabels": match}
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec,
            "status": {"disruptionsAllowed": allowed, "disruptedPods": {d: iso(T0) for d in disrupted}}}
