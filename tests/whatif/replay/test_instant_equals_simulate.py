"""A replay's decisions at an instant are `kubeberth simulate`'s of the cluster at that instant,
under the fixed node order as tie-break (issue 40).

The claim made exact. At an instant the replay applies its events, fires its timers, then runs
the scheduler: it tries first exactly the pods in activeQ at that moment, in pop order (pods that
arrive now, pods whose backoff ended, pods moved by the instant's events); once activeQ is empty
it pops pods still backing off, the head of backoffQ first (PopFromBackoffQ). The test captures,
through the engine's `on_instant` hook, the cluster as the scheduler then finds it (the nodes, the
pods bound with their nodeName and the annotations plugins wrote, activeQ's pods in pop order,
backoffQ's pods) and records every attempt of the instant with its first result (the node bound
to, or the unschedulable message).

The attempts compared at an instant (Instant.compared): the captured activeQ, when the replay
tried it first and in order, then the pods it popped from the captured backoffQ, up to the first
attempt of a pod that entered activeQ during the instant or of one tried again there (simulate
would not know of those). simulate gets the captured nodes and bound pods (Existing), those pods
as its pending pods in that order (creationTimestamps in that order: its queue's order), the same
static objects (the profile; the WorkloadSummary the replay published), seed and rule. Its first
pass tries each pending pod once, in that order, against the same cluster (a pod failing there
waits in its backoffQ until activeQ is empty), so the first attempt of each (simulate's
explanation of attempt 1) must equal the replay's: the same node, or unschedulable with the same
message. Later attempts are not compared: simulate retries its failures (backoff, settle rounds)
once every other pending pod was placed, which the replay does at later instants or never.
Pods left in the unschedulable pool are not given to simulate: they hold no nomination (all pods
share one priority: preemption runs, finds no victims, and its message is part of the compared
message), so they change no other pod's decision. The test asserts that nearly all of the
replay's attempts are comparable and that the sample includes failures and retries.
"""

from __future__ import annotations

import copy
import io
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import pytest
import yaml

from kubeberth.framework.tie_break import FIXED_ORDER, tie_break_rule
from kubeberth.scheduler import Scheduler
from kubeberth.whatif.engine import run_simulation
from kubeberth.whatif.replay.engine import Replay, ReplayOptions
from kubeberth.whatif.replay.workload import ARRIVAL, DEPARTURE, DURATION, ReplayInput, timed_from_annotations

NS = "default"
GPU_MILLI = "alibabacloud.com/gpu-milli"
GPU_COUNT = "alibabacloud.com/gpu-count"
GPU_MODEL = "alibabacloud.com/gpu-card-model"
GPU_INDEX = "alibabacloud.com/gpu-index"


def plain(value: Any) -> Any:
    """A deep copy made of dicts and lists (raw objects may be read-only mappings)."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return copy.copy(value)


def key_of(raw: Mapping[str, Any]) -> str:
    return f"{raw['metadata'].get('namespace') or NS}/{raw['metadata']['name']}"


@dataclass
class Instant:
    """The cluster just before the scheduler acts at `time`, and what the replay did there."""

    time: float
    nodes: list[dict[str, Any]]
    bound: list[dict[str, Any]]
    active: list[str]                     # activeQ's pods in pop order
    backoff: set[str]                     # backoffQ's pods
    pending: dict[str, dict[str, Any]]    # the raw objects of both
    attempts: list[str] = field(default_factory=list)                # pod keys, in the order tried
    first: dict[str, tuple[str, str]] = field(default_factory=dict)  # key -> ("node"|"failed", node|message)

    def compared(self) -> list[str]:
        """The attempts simulate makes the same way: the captured activeQ when the replay tried it
        first, in order (else none), then each pod popped from the captured backoffQ, up to the
        first attempt of another pod or a second attempt of one (a pod that entered activeQ or
        failed during the instant)."""
        n = len(self.active)
        if self.attempts[:n] != self.active:
            return []
        out = list(self.active)
        for key in self.attempts[n:]:
            if key in out or key not in self.backoff:
                break
            out.append(key)
        return out


class Recorder:
    """Replays `data` with the fixed node order (seed `seed`), capturing every instant."""

    def __init__(self, data: ReplayInput, seed: int) -> None:
        self.instants: list[Instant] = []
        self.replay = Replay(data, ReplayOptions(seed=seed, configure=self.configure, on_instant=self.capture),
                             warn=io.StringIO())
        self.seed = seed
        bound, failed = self.replay.bound, self.replay.attempt_failed

        def on_bound(key: str, node: str, annotations: Mapping[str, str]) -> None:
            self._first(key, ("node", node))
            bound(key, node, annotations)

        def on_failed(key: str, message: str) -> None:
            self._first(key, ("failed", message))
            failed(key, message)

        self.replay.bound = on_bound  # type: ignore[method-assign]
        self.replay.attempt_failed = on_failed  # type: ignore[method-assign]

    def _first(self, key: str, result: tuple[str, str]) -> None:
        if self.instants:
            self.instants[-1].first.setdefault(key, result)

    def configure(self, sched: Scheduler) -> None:
        sched.ctx.tie_break = tie_break_rule(FIXED_ORDER, self.seed)
        popped = sched.schedule_popped

        async def schedule_popped(q: Any) -> None:
            if self.instants:
                self.instants[-1].attempts.append(q.pod.key)
            await popped(q)

        sched.schedule_popped = schedule_popped  # type: ignore[method-assign]

    def capture(self, sched: Scheduler, time: float) -> None:
        nodes = [plain(sched.cache.node(name).raw) for name in sorted(sched.cache.node_names())]  # type: ignore[union-attr]
        bound = [plain(p.raw) for p in sorted(sched.cache.pods(), key=lambda p: p.key)]
        active = [plain(p.raw) for p in sched.queue.pods_in_active()]
        backoff = [plain(p.raw) for p in sched.queue.pods_in_backoff()]
        assert all(p["spec"].get("nodeName") for p in bound)
        self.instants.append(Instant(time, nodes, bound, [key_of(p) for p in active], {key_of(p) for p in backoff},
                                     {key_of(p): p for p in [*active, *backoff]}))

    def run(self) -> list[Instant]:
        self.replay.run()
        return self.instants


def simulate_instant(instant: Instant, keys: list[str], static: Sequence[dict[str, Any]], seed: int
                     ) -> dict[str, tuple[str, str]]:
    """simulate of the captured cluster with the pods `keys` pending, in that order: each one's first
    attempt, as Recorder records it."""
    pending = []
    for i, key in enumerate(keys):
        raw = plain(instant.pending[key])
        raw["metadata"]["creationTimestamp"] = f"2026-01-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z"
        pending.append(raw)
    objects = [*plain(list(static)), *instant.nodes, *instant.bound, *pending]
    outcomes, _ = run_simulation(objects, seed=seed, tie_break=FIXED_ORDER, explain=keys, warn=io.StringIO())
    assert {o.pod: o.status for o in outcomes if o.pod not in keys} == {key_of(p): "Existing" for p in instant.bound}
    first: dict[str, tuple[str, str]] = {}
    for o in outcomes:
        if o.pod in keys:
            x = o.explanations[0]
            assert x["attempt"] == 1, (o.pod, x["attempt"])
            result = x["result"]
            scheduled = result["status"] == "Scheduled"
            first[o.pod] = ("node", result["node"]) if scheduled else ("failed", result["message"])
    return first


@dataclass
class Coverage:
    """What one `compare` compared: instants, pods (first attempts), of which failed, of which
    tried before (arrived earlier: a retry after a backoff or an event), and bound pods carrying
    a `gpu-index` annotation in the simulated clusters."""

    instants: int = 0
    pods: int = 0
    failed: int = 0
    retried: int = 0
    gpu_indexed: int = 0


def compare(data: ReplayInput, seed: int, *, most: int) -> Coverage:
    """Replays `data`, then simulates at up to `most` of the instants where it placed pods (spread
    over the run) and asserts the decisions equal (Instant.compared's attempts)."""
    recorder = Recorder(data, seed)
    instants = recorder.run()
    usable = [i for i in instants if i.compared()]
    tried = [i for i in instants if i.attempts]
    assert len(usable) >= 0.9 * len(tried), (len(usable), len(tried))
    assert sum(len(i.compared()) for i in usable) >= 0.9 * sum(len(i.attempts) for i in tried)
    # those where the replay placed pods (the tie-break at work), spread over the run
    placing = [i for i in usable if any(i.first[k][0] == "node" for k in i.compared())]
    step = max(1, len(placing) // most)
    chosen = placing[::step][:most]
    static = [*data.static, recorder.replay.summary]  # the WorkloadSummary the replay published
    arrival = {f"{NS}/{t.obj['metadata']['name']}": t.arrival for t in data.pods}
    seen = Coverage()
    for instant in chosen:
        keys = instant.compared()
        replayed = {k: instant.first[k] for k in keys}
        simulated = simulate_instant(instant, keys, static, seed)
        assert simulated == replayed, f"t={instant.time:g} seed={seed}: " + "; ".join(
            f"{k}: replay {replayed[k]} simulate {simulated.get(k)}" for k in keys if simulated.get(k) != replayed[k])
        seen.instants += 1
        seen.pods += len(keys)
        seen.failed += sum(1 for k in keys if replayed[k][0] == "failed")
        seen.retried += sum(1 for k in keys if arrival[k] < instant.time)
        seen.gpu_indexed += sum(1 for p in instant.bound if GPU_INDEX in (p["metadata"].get("annotations") or {}))
    return seen


# ---- a general cluster: ties (identical nodes), failures, selectors, taints, spread, anti-affinity ----
NODE_SHAPES = [("4", "8Gi"), ("8", "16Gi")]
POD_SHAPES = [("500m", "1Gi"), ("1", "2Gi"), ("2", "4Gi"), ("3", "2Gi"), ("1", "6Gi")]


def node(name: str, cpu: str, memory: str, labels: dict[str, str], taints: list[dict[str, str]],
         times: dict[str, str]) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}}
    if times:
        meta["annotations"] = times
    alloc = {"cpu": cpu, "memory": memory, "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": {"taints": taints} if taints else {},
            "status": {"allocatable": dict(alloc), "capacity": dict(alloc)}}


def general_workload(seed: int) -> ReplayInput:
    rng = random.Random(seed)
    n_nodes = rng.randint(10, 24)
    timed = []
    leaving = rng.randrange(n_nodes)
    for i in range(n_nodes):
        cpu, memory = NODE_SHAPES[0] if i % 3 else NODE_SHAPES[1]
        labels = {"topology.kubernetes.io/zone": f"zone-{i % 3}"}
        if i % 4 == 0:
            labels["disk"] = "ssd"
        taints = []
        if i % 7 == 3:
            taints.append({"key": "dedicated", "value": "infra", "effect": "NoSchedule"})
        elif i % 5 == 1:
            taints.append({"key": "spot", "value": "yes", "effect": "PreferNoSchedule"})
        times = {}
        if i >= n_nodes - n_nodes // 5:
            times[ARRIVAL] = str(rng.randint(5, 40))
        elif i == leaving:
            times[DEPARTURE] = str(rng.randint(20, 50))
        timed.append(timed_from_annotations(node(f"node-{i:02d}", cpu, memory, labels, taints, times), "node"))
    n_pods = min(200, max(50, n_nodes * rng.randint(7, 9)))
    for j in range(n_pods):
        cpu, memory = rng.choice(POD_SHAPES)
        spec: dict[str, Any] = {"containers": [{"name": "c", "image": "pause",
                                                "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
        labels: dict[str, str] = {}
        kind = rng.random()
        if kind < 0.2:
            spec["nodeSelector"] = {"disk": "ssd"}
        elif kind < 0.3:
            spec["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"}]
        elif kind < 0.5:
            labels["app"] = "web"
            spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                                  "whenUnsatisfiable": "DoNotSchedule",
                                                  "labelSelector": {"matchLabels": {"app": "web"}}}]
        elif kind < 0.65:
            labels["app"] = "db"
            spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "db"}}}]}}
        times = {ARRIVAL: str(rng.randint(0, 60))}
        if rng.random() < 0.7:
            times[DURATION] = str(rng.choice([10, 30, 60, 90]))
        else:
            times[DEPARTURE] = str(int(times[ARRIVAL]) + rng.choice([20, 60, 120]))
        meta: dict[str, Any] = {"name": f"pod-{j:03d}", "namespace": NS, "annotations": times}
        if labels:
            meta["labels"] = labels
        timed.append(timed_from_annotations({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}, "pod"))
    return ReplayInput(static=[], timed=timed)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_replay_instant_equals_simulate(seed: int) -> None:
    seen = compare(general_workload(seed), seed, most=12)
    assert seen.instants >= 8
    assert 0 < seen.failed < seen.pods  # both outcomes were compared
    assert seen.retried > 0             # and pods tried again, not only new arrivals


# ---- gpushare's profiles on a small GPU cluster, the WorkloadSummary published ----
def gpu_workload(seed: int, profile: dict[str, Any]) -> ReplayInput:
    rng = random.Random(seed)
    timed = []
    for i in range(10):
        gpus = 8 if i % 2 else 2
        cpu, memory = ("64000m", "262144Mi") if gpus == 8 else ("32000m", "131072Mi")
        alloc = {"cpu": cpu, "memory": memory, "pods": "110", GPU_COUNT: str(gpus), GPU_MILLI: str(gpus * 1000)}
        obj = {"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": f"gpu-{i:02d}", "labels": {"kubernetes.io/hostname": f"gpu-{i:02d}",
                                                                 GPU_MODEL: "V100M16" if i % 3 else "V100M32"}},
               "status": {"allocatable": dict(alloc), "capacity": dict(alloc)}}
        timed.append(timed_from_annotations(obj, "node"))
    for j in range(rng.randint(100, 160)):
        cpu = rng.choice([2000, 4000, 8000])
        requests = {"cpu": f"{cpu}m", "memory": f"{cpu * 2}Mi"}
        annotations = {ARRIVAL: str(rng.randint(0, 40)), DURATION: str(rng.choice([20, 60, 120]))}
        if rng.random() < 0.85:
            milli = rng.choice([250, 500, 500, 1000])
            count = rng.choice([1, 2, 4]) if milli == 1000 else 1
            requests[GPU_MILLI] = str(milli * count)
            annotations.update({GPU_MILLI: str(milli), GPU_COUNT: str(count)})
            if rng.random() < 0.2:
                annotations[GPU_MODEL] = "V100M32"
        obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"task-{j:03d}", "namespace": NS,
                                                               "annotations": annotations},
               "spec": {"containers": [{"name": "c", "image": "pause", "resources": {"requests": requests}}]}}
        timed.append(timed_from_annotations(obj, "pod"))
    return ReplayInput(static=[profile], timed=timed)


@pytest.mark.parametrize(("policy", "seed"), [("BestFit", 4), ("BestFit", 5), ("FGD", 6)])
def test_gpushare_instant_equals_simulate(policy: str, seed: int) -> None:
    """gpushare's BestFit; and FGD, which reads the WorkloadSummary (simulate without it fails)."""
    gpushare = pytest.importorskip("kubeberth_gpushare", reason="the gpushare plugins are not installed")
    profile = yaml.safe_load(resources.files(gpushare).joinpath(f"profiles/{policy}.yaml").read_text())
    seen = compare(gpu_workload(seed, profile), seed, most=12)
    assert seen.instants >= 8
    assert 0 < seen.failed < seen.pods
    assert seen.gpu_indexed > 0  # simulate read the GPUs the replay's pods hold from their annotation
