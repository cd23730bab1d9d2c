"""What every profile's framework shares: the handle plugins are given (through their Framework)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from ..cache.objects import ObjectStore
from ..cache.snapshot import Snapshot
from ..client import ClusterClient
from ..clock import Clock, FakeClock
from ..model import Pod
from .isolation import PluginErrors
from .pods_in_pre_bind import PodsInPreBind
from .tie_break import RESERVOIR_RULE, TieBreak
from .waiting_pods import WaitingPods


class Nominator(Protocol):
    def nominated_pods_for_node(self, node_name: str) -> list[Pod]: ...

    def nominated_node_names(self) -> list[str]: ...

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None: ...

    def nominated_node_for(self, pod: Pod) -> str: ...


def nominated_pods_added_for(nominator: Nominator | None, pod: Pod, node_name: str) -> list[Pod]:
    """The pods nominated to the node that the two-pass filter adds for `pod`: those of equal
    or higher priority, other than `pod` itself (upstream's addGENominatedPods)."""
    if nominator is None:
        return []
    prio, uid = pod.priority, pod.uid
    return [nom for nom in nominator.nominated_pods_for_node(node_name) if nom.priority >= prio and nom.uid != uid]


class MetricsRecorder(Protocol):
    """What the scheduler reports, with kube-scheduler's metric names (kubeberth.metrics)."""

    def extension_point_duration(self, point: str, status: str, profile: str, seconds: float) -> None: ...

    def schedule_attempt(self, result: str, profile: str, seconds: float) -> None: ...

    def pod_scheduled(self, attempts: int, seconds: float) -> None: ...

    def pending_pods(self, queue: str, n: int) -> None: ...

    def preemption_attempt(self) -> None: ...

    def preemption_victims(self, n: int) -> None: ...

    def preemption_pdb_violations(self, preemptor: str, n: int) -> None: ...

    def workload_preemption_attempt(self, result: str) -> None: ...

    def workload_preemption_victims(self, victims: int, disruptions: int, pdb_violations: int) -> None: ...

    def preemption_goroutine(self, result: str, seconds: float) -> None: ...

    def scheduling_algorithm_duration(self, seconds: float) -> None: ...

    def permit_wait_duration(self, result: str, seconds: float) -> None: ...

    def queue_incoming_pod(self, queue: str, event: str) -> None: ...

    def cache_size(self, nodes: int, pods: int, assumed_pods: int) -> None: ...

    def unschedulable_pods(self, by_plugin_and_profile: Mapping[tuple[str, str], int]) -> None: ...

    def plugin_execution_durations(self, plugin: str, point: str, status: str, seconds: Sequence[float]) -> None: ...

    def plugin_evaluations(self, profile: str, counts: Mapping[tuple[str, str], int]) -> None: ...

    def queueing_hint_duration(self, plugin: str, event: str, hint: str, seconds: float) -> None: ...

    def inflight_events(self, by_event: Mapping[str, int]) -> None: ...

    def pod_scheduled_after_flush(self) -> None: ...

    def event_handling_duration(self, event: str, seconds: float) -> None: ...

    def goroutines(self, operation: str, n: int) -> None: ...

    def pod_group_schedule_attempt(self, result: str, profile: str, seconds: float) -> None: ...

    def pod_group_algorithm_duration(self, seconds: float) -> None: ...

    def generated_placements(self, profile: str, count: int) -> None: ...

    def placement_evaluation(self, result: str, profile: str, seconds: float) -> None: ...

    def queued_entities(self, counts: Mapping[tuple[str, str], int]) -> None: ...

    def plugin_error(self, plugin: str, point: str) -> None: ...


class NoMetrics:
    """A MetricsRecorder that records nothing (a scheduler without metrics: simulate, tests)."""

    def extension_point_duration(self, point: str, status: str, profile: str, seconds: float) -> None:
        pass

    def schedule_attempt(self, result: str, profile: str, seconds: float) -> None:
        pass

    def pod_scheduled(self, attempts: int, seconds: float) -> None:
        pass

    def pending_pods(self, queue: str, n: int) -> None:
        pass

    def preemption_attempt(self) -> None:
        pass

    def preemption_victims(self, n: int) -> None:
        pass

    def preemption_pdb_violations(self, preemptor: str, n: int) -> None:
        pass

    def workload_preemption_attempt(self, result: str) -> None:
        pass

    def workload_preemption_victims(self, victims: int, disruptions: int, pdb_violations: int) -> None:
        pass

    def preemption_goroutine(self, result: str, seconds: float) -> None:
        pass

    def scheduling_algorithm_duration(self, seconds: float) -> None:
        pass

    def permit_wait_duration(self, result: str, seconds: float) -> None:
        pass

    def queue_incoming_pod(self, queue: str, event: str) -> None:
        pass

    def cache_size(self, nodes: int, pods: int, assumed_pods: int) -> None:
        pass

    def unschedulable_pods(self, by_plugin_and_profile: Mapping[tuple[str, str], int]) -> None:
        pass

    def plugin_execution_durations(self, plugin: str, point: str, status: str, seconds: Sequence[float]) -> None:
        pass

    def plugin_evaluations(self, profile: str, counts: Mapping[tuple[str, str], int]) -> None:
        pass

    def queueing_hint_duration(self, plugin: str, event: str, hint: str, seconds: float) -> None:
        pass

    def inflight_events(self, by_event: Mapping[str, int]) -> None:
        pass

    def pod_scheduled_after_flush(self) -> None:
        pass

    def event_handling_duration(self, event: str, seconds: float) -> None:
        pass

    def goroutines(self, operation: str, n: int) -> None:
        pass

    def pod_group_schedule_attempt(self, result: str, profile: str, seconds: float) -> None:
        pass

    def pod_group_algorithm_duration(self, seconds: float) -> None:
        pass

    def generated_placements(self, profile: str, count: int) -> None:
        pass

    def placement_evaluation(self, result: str, profile: str, seconds: float) -> None:
        pass

    def queued_entities(self, counts: Mapping[tuple[str, str], int]) -> None:
        pass

    def plugin_error(self, plugin: str, point: str) -> None:
        pass


NO_METRICS = NoMetrics()


# A PostFilter plugin reports the pods it evicted for a preemptor (the scheduler keeps them in its records).
VictimsRecorder = Callable[[Pod, Sequence[Pod]], None]


class SchedulerContext:
    """Shared, long-lived dependencies. `snapshot` is replaced at the start of each cycle."""

    def __init__(self, *, objects: ObjectStore | None = None, client: ClusterClient | None = None,
                 nominator: Nominator | None = None, clock: Clock | None = None,
                 rng: random.Random | None = None, metrics: MetricsRecorder | None = None) -> None:
        self.objects = objects or ObjectStore()
        self.client = client
        self.nominator = nominator
        self.clock: Clock = clock or FakeClock()
        self.rng = rng or random.Random(0)
        self.metrics = metrics
        # Plugins' exceptions: counted, each kind's traceback logged once (framework/isolation.py).
        self.plugin_errors = PluginErrors(self.clock, lambda: self.metrics)
        self.waiting_pods = WaitingPods()
        self.pods_in_pre_bind = PodsInPreBind()
        # Preemptions acting in the background (their victims' API calls); simulate waits for them.
        self.preemption_tasks: set[asyncio.Task[None]] = set()
        # The scheduler's view of a pod by uid (its cache, then its pending pods); None: gone.
        self.lookup_pod: Callable[[str], Pod | None] = lambda uid: None
        # Every non-terminal pod the scheduler knows, bound, assumed or pending, optionally of one
        # namespace (upstream's pod lister). Without a scheduler: the pods on the snapshot's nodes.
        self.list_pods: Callable[[str | None], list[Pod]] = self._snapshot_pods
        # Move pods from the unschedulable pool or backoffQ to activeQ (upstream's Handle.Activate).
        self.activate: Callable[[Iterable[Pod]], None] = lambda pods: None
        self.snapshot = Snapshot()
        # Upstream's nextStartNodeIndex: where the next cycle starts looking for feasible nodes.
        self.next_start_node_index = 0
        self.record_victims: VictimsRecorder | None = None
        # The scheduler-wide percentageOfNodesToScore (a profile's own value wins); 0: adaptive.
        self.percentage_of_nodes_to_score = 0
        # How select_host (and the pod-group path's placements) break ties: upstream's reservoir
        # draw unless a what-if tool asks for another rule (tie_break.py; simulate --tie-break).
        self.tie_break: TieBreak = RESERVOIR_RULE
        # Indexes plugins build over the snapshot's pods and share between profiles, by name.
        self.shared_indexes: dict[str, Any] = {}
        # Free-form state for out-of-tree plugins and tests; kubeberth's own code does not use it.
        self.extras: dict[str, Any] = {}

    def _snapshot_pods(self, namespace: str | None = None) -> list[Pod]:
        return [p for ni in self.snapshot.node_infos for p in ni.pods
                if namespace is None or p.namespace == namespace]
