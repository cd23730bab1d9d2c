"""Prometheus metrics with kube-scheduler's names, labels and buckets.

`SchedulerMetrics` owns a dedicated `CollectorRegistry` (so several schedulers in one
process, e.g. tests, never collide) and implements the framework's `MetricsRecorder`
protocol plus what the scheduler loop, the queue and preemption report.
`operator/secure_serving.py` serves it on the secure port.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.metrics_core import HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from . import features

logger = logging.getLogger(__name__)

# kube-scheduler exposes no *_created series; neither do we (a process-wide prometheus-client switch).
disable_created_metrics()


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """Upstream's metrics.ExponentialBuckets."""
    return [start * factor**i for i in range(count)]


# Results of a scheduling attempt, as upstream labels them.
SCHEDULED = "scheduled"
UNSCHEDULABLE = "unschedulable"
ERROR = "error"
RESULTS = (SCHEDULED, UNSCHEDULABLE, ERROR)

# Queues of scheduler_pending_pods.
QUEUES = ("active", "backoff", "unschedulable", "gated")


class BulkHistogram(Collector):
    """A labelled histogram kept as plain counts: for the series observed per pod or per plugin
    call (a sampled cycle times every plugin call on every node), where prometheus-client's
    observe() (a lock per bucket and per sum, a Python loop over the bounds) was 2-3% of the
    operator's CPU. `observe_many` takes many observations in one call. Exposed like any
    histogram; one without labels shows its zero series from the start, as prometheus-client's."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str], buckets: Sequence[float],
                 registry: CollectorRegistry) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = list(labelnames)
        self.bounds = list(buckets)
        self._series: dict[tuple[str, ...], list[float]] = {}  # labels -> bucket counts, then sum
        if not self.labelnames:
            self._series_of(())
        registry.register(self)

    def _series_of(self, labels: tuple[str, ...]) -> list[float]:
        series = self._series.get(labels)
        if series is None:
            series = self._series[labels] = [0.0] * (len(self.bounds) + 2)
        return series

    def observe(self, labels: tuple[str, ...], value: float) -> None:
        """One observation of the series `labels` (the values in the label names' order)."""
        series = self._series_of(labels)
        series[bisect.bisect_left(self.bounds, value)] += 1
        series[-1] += value

    def observe_many(self, labels: tuple[str, ...], values: Iterable[float]) -> None:
        series = self._series_of(labels)
        bounds = self.bounds
        total = 0.0
        for v in values:
            series[bisect.bisect_left(bounds, v)] += 1
            total += v
        series[-1] += total

    def describe(self) -> Iterator[Metric]:
        yield HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for labels, series in sorted(self._series.items()):
            cumulative, buckets = 0.0, []
            for bound, n in zip([*map(floatToGoString, self.bounds), "+Inf"], series[:-1]):
                cumulative += n
                buckets.append((bound, cumulative))
            family.add_metric(list(labels), buckets, series[-1])
        yield family


class SchedulerMetrics:
    """The scheduler_* metrics. Safe to call from the event loop (prometheus-client is thread-safe)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        r = self.registry
        self.podgroup_schedule_attempts_total: Counter | None = None
        self.podgroup_scheduling_attempt_duration_seconds: Histogram | None = None
        self.podgroup_scheduling_algorithm_duration_seconds: Histogram | None = None
        self.workload_preemption_attempts_total: Counter | None = None
        self.workload_preemption_victims_histogram: Histogram | None = None
        self.preemption_workload_disruptions: Histogram | None = None
        self.preemption_pdb_violations_total: Counter | None = None
        self.schedule_attempts_total = Counter(
            "scheduler_schedule_attempts_total",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not "
            "be scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"], registry=r)
        self.scheduling_attempt_duration_seconds = BulkHistogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"], exponential_buckets(0.001, 2, 15), r)
        self.pending_pods_gauge = Gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; "
            "'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in "
            "unschedulablePods that the scheduler attempted to schedule and failed; 'gated' is the "
            "number of unschedulable pods that the scheduler never attempted to schedule because "
            "they are gated.",
            ["queue"], registry=r)
        self.preemption_attempts_total = Counter(
            "scheduler_preemption_attempts_total",
            "Total preemption attempts in the cluster till now", registry=r)
        self.preemption_victims_histogram = Histogram(
            "scheduler_preemption_victims",
            "Number of selected preemption victims",
            buckets=exponential_buckets(1, 2, 7), registry=r)
        self.preemption_goroutines_duration_seconds = Histogram(
            "scheduler_preemption_goroutines_duration_seconds",
            "(Deprecated since 1.37.0) Duration in seconds for running goroutines for the preemption.",
            ["result"], buckets=exponential_buckets(0.01, 2, 20), registry=r)
        self.preemption_goroutines_execution_total = Counter(
            "scheduler_preemption_goroutines_execution_total",
            "Number of preemption goroutines executed.", ["result"], registry=r)
        self.event_handling_duration_seconds = BulkHistogram(
            "scheduler_event_handling_duration_seconds", "Event handling latency in seconds.",
            ["event"], exponential_buckets(0.0001, 2, 12), r)
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}  # (metric, label values) -> series
        self.goroutines_gauge = Gauge(
            "scheduler_goroutines", "Number of running goroutines split by the work they do such as binding.",
            ["operation"], registry=r)
        self.framework_extension_point_duration_seconds = BulkHistogram(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"], exponential_buckets(0.0001, 2, 12), r)
        self.pod_scheduling_sli_duration_seconds = BulkHistogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue "
            "and might involve multiple scheduling attempts.",
            ["attempts"], exponential_buckets(0.01, 2, 20), r)
        self.pod_scheduling_attempts = BulkHistogram(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            [], exponential_buckets(1, 2, 5), r)
        self.scheduling_algorithm_duration_seconds = BulkHistogram(
            "scheduler_scheduling_algorithm_duration_seconds",
            "Scheduling algorithm latency in seconds",
            [], exponential_buckets(0.001, 2, 15), r)
        self.permit_wait_duration_seconds = Histogram(
            "scheduler_permit_wait_duration_seconds",
            "Duration of waiting on permit.",
            ["result"], buckets=exponential_buckets(0.001, 2, 15), registry=r)
        self.queue_incoming_pods_total = Counter(
            "scheduler_queue_incoming_pods_total",
            "Number of pods added to scheduling queues by event and queue type.",
            ["queue", "event"], registry=r)
        self.cache_size_gauge = Gauge(
            "scheduler_cache_size",
            "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
            ["type"], registry=r)
        self.unschedulable_pods_gauge = Gauge(
            "scheduler_unschedulable_pods",
            "The number of unschedulable pods broken down by plugin name. A pod will increment the gauge "
            "for all plugins that caused it to not schedule and so this metric have meaning only when "
            "broken down by plugin.",
            ["plugin", "profile"], registry=r)
        self.plugin_execution_duration_seconds = BulkHistogram(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ["plugin", "extension_point", "status"], exponential_buckets(0.00001, 1.5, 20), r)
        self.plugin_evaluation_total = Counter(
            "scheduler_plugin_evaluation_total",
            "Number of attempts to schedule pods by each plugin and the extension point (available only "
            "in PreFilter, Filter, PreScore, and Score).",
            ["plugin", "extension_point", "profile"], registry=r)
        self.queueing_hint_execution_duration_seconds = BulkHistogram(
            "scheduler_queueing_hint_execution_duration_seconds",
            "Duration for running a queueing hint function of a plugin.",
            ["plugin", "event", "hint"], exponential_buckets(0.00001, 1.5, 20), r)
        self.inflight_events_gauge = Gauge(
            "scheduler_inflight_events",
            "Number of events currently tracked in the scheduling queue.", ["event"], registry=r)
        self.queued_entities_gauge = Gauge(
            "scheduler_queued_entities",
            "Number of queued scheduling entities ('pod' or 'podgroup'; 'pod' stands for individual pods "
            "that are not members of any podgroup) by the queue type. 'active' means number of entities in "
            "activeQ; 'backoff' means number of entities in backoffQ; 'unschedulable' means number of entities "
            "in unschedulableEntities that the scheduler attempted to schedule and failed; 'gated' is the number "
            "of unschedulable entities that the scheduler never attempted to schedule because they are gated.",
            ["queue", "type"], registry=r)
        self.queue_incoming_entities_total = Counter(
            "scheduler_queue_incoming_entities_total",
            "Number of entities added to scheduling queues by event, queue type, and entity type.",
            ["queue", "event", "type"], registry=r)
        self.pod_scheduled_after_flush_total = Counter(
            "scheduler_pod_scheduled_after_flush_total",
            "Number of pods that were successfully scheduled after being flushed from unschedulableEntities "
            "due to timeout. This metric helps detect potential queueing hint misconfigurations or event "
            "handling issues.", registry=r)
        # kubeberth's own (no upstream counterpart): requests the API server refused with 403.
        self.api_forbidden_total = Counter(
            "kubeberth_api_forbidden_total",
            "Number of API requests refused with 403 Forbidden, by RBAC verb and resource (as `kubectl auth "
            "can-i` names it, e.g. create pods/binding): a permission the scheduler's credentials lack.",
            ["verb", "resource"], registry=r)
        # kubeberth's own: plugins' exceptions (framework/isolation.py logs one traceback per kind).
        self.plugin_errors_total = Counter(
            "kubeberth_plugin_errors_total",
            "Number of exceptions raised by plugins, by plugin and extension point. Each fails the "
            "attempt it was raised in (at Unreserve, PostBind and QueueSort it is logged and ignored).",
            ["plugin", "extension_point"], registry=r)
        self._plugin_errors: dict[tuple[str, str], Any] = {}  # (plugin, point) -> its series
        if features.current().generic_workload:  # registered with GenericWorkload only, as upstream
            self._pod_group_metrics(r)
        self.generated_placements_total: Counter | None = None
        self.placement_evaluations_total: Counter | None = None
        self.placement_evaluation_duration_seconds: Histogram | None = None
        if features.current().topology_aware_workload_scheduling:  # as upstream, with the gate only
            self._placement_metrics(r)
        self._inflight_labels: set[str] = set()
        self._unschedulable_labels: set[tuple[str, str]] = set()
        for queue in QUEUES:
            self.pending_pods_gauge.labels(queue=queue).set(0)
            self.queued_entities_gauge.labels(queue=queue, type="pod").set(0)

    def _pod_group_metrics(self, r: CollectorRegistry) -> None:
        self.podgroup_schedule_attempts_total = Counter(
            "scheduler_podgroup_schedule_attempts_total",
            "Number of attempts to schedule pod group, by the result. 'unschedulable' means a pod group could "
            "not be scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"], registry=r)
        self.podgroup_scheduling_attempt_duration_seconds = Histogram(
            "scheduler_podgroup_scheduling_attempt_duration_seconds",
            "Pod group scheduling attempt latency in seconds",
            ["result", "profile"], buckets=exponential_buckets(0.001, 2, 15), registry=r)
        self.podgroup_scheduling_algorithm_duration_seconds = Histogram(
            "scheduler_podgroup_scheduling_algorithm_duration_seconds",
            "Pod group scheduling algorithm latency in seconds",
            buckets=exponential_buckets(0.001, 2, 15), registry=r)
        self._workload_preemption_metrics(r)

    def _workload_preemption_metrics(self, r: CollectorRegistry) -> None:
        """Group preemption's (GenericWorkload), upstream's names and help."""
        self.workload_preemption_attempts_total = Counter(
            "scheduler_workload_preemption_attempts_total",
            "Total preemption attempts initiated by workload (including pod groups) in the cluster till now.",
            ["result"], registry=r)
        self.workload_preemption_victims_histogram = Histogram(
            "scheduler_workload_preemption_victims", "Number of pod preemption victims caused by workload preemption.",
            buckets=exponential_buckets(1, 2, 11), registry=r)
        self.preemption_workload_disruptions = Histogram(
            "scheduler_preemption_workload_disruptions",
            "Number of workload preemption units being preempted. A single preemption unit can be all pods in a pod "
            "group (in case of DisruptionMode=all), or a single pod (in case of DisruptionMode=single).",
            ["preemptor"], buckets=exponential_buckets(1, 2, 11), registry=r)
        self.preemption_pdb_violations_total = Counter(
            "scheduler_preemption_pdb_violations_total",
            "Total number of pod disruption budget violations caused by preemption.", ["preemptor"], registry=r)

    def workload_preemption_attempt(self, result: str) -> None:
        if self.workload_preemption_attempts_total is not None:
            self.workload_preemption_attempts_total.labels(result=result).inc()

    def preemption_pdb_violations(self, preemptor: str, n: int) -> None:
        """upstream's observeVictims' PDB count for a pod preemptor: registered only with GenericWorkload."""
        if n > 0 and self.preemption_pdb_violations_total is not None:
            self.preemption_pdb_violations_total.labels(preemptor=preemptor).inc(n)

    def workload_preemption_victims(self, victims: int, disruptions: int, pdb_violations: int) -> None:
        """upstream's observeVictims for a pod group preemptor."""
        if self.workload_preemption_victims_histogram is not None:
            self.workload_preemption_victims_histogram.observe(victims)
        if disruptions > 0 and self.preemption_workload_disruptions is not None:
            self.preemption_workload_disruptions.labels(preemptor="podgroup").observe(disruptions)
        if pdb_violations > 0 and self.preemption_pdb_violations_total is not None:
            self.preemption_pdb_violations_total.labels(preemptor="podgroup").inc(pdb_violations)

    def _placement_metrics(self, r: CollectorRegistry) -> None:
        self.generated_placements_total = Counter(
            "scheduler_generated_placements_total",
            "Number of candidate placements generated when scheduling pod groups.", ["profile"], registry=r)
        self.placement_evaluations_total = Counter(
            "scheduler_placement_evaluations_total",
            "Number of candidate placements evaluated when scheduling pod groups, by result. 'feasible' means "
            "the pod group fit into the placement, while 'infeasible' means it did not.",
            ["result", "profile"], registry=r)
        self.placement_evaluation_duration_seconds = Histogram(
            "scheduler_placement_evaluation_duration_seconds",
            "Latency in seconds of evaluating a single candidate placement when scheduling pod groups, by "
            "result. 'feasible' means the pod group fit into the placement, while 'infeasible' means it did not.",
            ["result", "profile"], buckets=exponential_buckets(0.001, 2, 15), registry=r)

    def generated_placements(self, profile: str, count: int) -> None:
        if self.generated_placements_total is not None:
            self.generated_placements_total.labels(profile=profile).inc(count)

    def placement_evaluation(self, result: str, profile: str, seconds: float) -> None:
        """One candidate placement tried: feasible or infeasible."""
        if self.placement_evaluations_total is None or self.placement_evaluation_duration_seconds is None:
            return
        self.placement_evaluations_total.labels(result=result, profile=profile).inc()
        self.placement_evaluation_duration_seconds.labels(result=result, profile=profile).observe(max(seconds, 0.0))

    def pod_group_schedule_attempt(self, result: str, profile: str, seconds: float) -> None:
        """One pod group's attempt: scheduled, unschedulable, waiting_on_preemption or error."""
        if self.podgroup_schedule_attempts_total is None or self.podgroup_scheduling_attempt_duration_seconds is None:
            return
        self.podgroup_schedule_attempts_total.labels(result=result, profile=profile).inc()
        self.podgroup_scheduling_attempt_duration_seconds.labels(result=result, profile=profile).observe(
            max(seconds, 0.0))

    def queued_entities(self, counts: Mapping[tuple[str, str], int]) -> None:
        """scheduler_queued_entities by (queue, type): "pod" (pods of no group) and "podgroup" entries."""
        for (queue, kind), n in counts.items():
            self.queued_entities_gauge.labels(queue=queue, type=kind).set(n)

    def pod_group_algorithm_duration(self, seconds: float) -> None:
        if self.podgroup_scheduling_algorithm_duration_seconds is not None:
            self.podgroup_scheduling_algorithm_duration_seconds.observe(max(seconds, 0.0))

    def _child(self, metric: Any, *values: str) -> Any:
        """`metric.labels(*values)`, kept: labels() checks and orders its arguments on every call, and
        these are called several times per pod. The values are given in the metric's label order."""
        key = (id(metric), values)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*values)
        return child

    # framework.context.MetricsRecorder
    def extension_point_duration(self, point: str, status: str, profile: str, seconds: float) -> None:
        self.framework_extension_point_duration_seconds.observe((point, status or "Success", profile),
                                                                max(seconds, 0.0))

    def schedule_attempt(self, result: str, profile: str, seconds: float) -> None:
        """One scheduling attempt: result is scheduled, unschedulable or error."""
        if result not in RESULTS:
            raise ValueError(f"result must be one of {', '.join(RESULTS)}, got {result!r}")
        self._child(self.schedule_attempts_total, result, profile).inc()
        self.scheduling_attempt_duration_seconds.observe((result, profile), max(seconds, 0.0))

    def pod_scheduled(self, attempts: int, seconds: float) -> None:
        """A pod bound: end-to-end latency since it first entered the queue, and how many tries it took."""
        attempts = max(int(attempts), 1)
        self.pod_scheduling_sli_duration_seconds.observe((str(attempts),), max(seconds, 0.0))
        self.pod_scheduling_attempts.observe((), attempts)

    def pending_pods(self, queue: str, n: int) -> None:
        self._child(self.pending_pods_gauge, queue).set(n)
        if queue in QUEUES:  # incomplete / pending (pod groups' pods) are no entities' queues
            self._child(self.queued_entities_gauge, queue, "pod").set(n)

    def preemption_attempt(self) -> None:
        self.preemption_attempts_total.inc()

    def preemption_victims(self, n: int) -> None:
        self.preemption_victims_histogram.observe(n)

    def event_handling_duration(self, event: str, seconds: float) -> None:
        self.event_handling_duration_seconds.observe((event,), seconds)

    def goroutines(self, operation: str, n: int) -> None:
        self._child(self.goroutines_gauge, operation).set(n)

    def preemption_goroutine(self, result: str, seconds: float) -> None:
        self.preemption_goroutines_duration_seconds.labels(result).observe(seconds)
        self.preemption_goroutines_execution_total.labels(result).inc()

    def scheduling_algorithm_duration(self, seconds: float) -> None:
        self.scheduling_algorithm_duration_seconds.observe((), max(seconds, 0.0))

    def permit_wait_duration(self, result: str, seconds: float) -> None:
        self.permit_wait_duration_seconds.labels(result=result).observe(max(seconds, 0.0))

    def queue_incoming_pod(self, queue: str, event: str) -> None:
        self._child(self.queue_incoming_pods_total, queue, event).inc()
        self._child(self.queue_incoming_entities_total, queue, event, "pod").inc()

    def queueing_hint_duration(self, plugin: str, event: str, hint: str, seconds: float) -> None:
        self.queueing_hint_execution_duration_seconds.observe_many((plugin, event, hint), (seconds,))

    def inflight_events(self, by_event: Mapping[str, int]) -> None:
        for label in self._inflight_labels - set(by_event):
            self.inflight_events_gauge.labels(event=label).set(0)
        for label, n in by_event.items():
            self.inflight_events_gauge.labels(event=label).set(n)
        self._inflight_labels |= set(by_event)

    def pod_scheduled_after_flush(self) -> None:
        self.pod_scheduled_after_flush_total.inc()

    def cache_size(self, nodes: int, pods: int, assumed_pods: int) -> None:
        for kind, n in (("nodes", nodes), ("pods", pods), ("assumed_pods", assumed_pods)):
            self.cache_size_gauge.labels(type=kind).set(n)

    def unschedulable_pods(self, by_plugin_and_profile: Mapping[tuple[str, str], int]) -> None:
        """The pods waiting in the unschedulable pool, counted under each plugin that rejected them."""
        for key in self._unschedulable_labels - set(by_plugin_and_profile):
            self.unschedulable_pods_gauge.labels(plugin=key[0], profile=key[1]).set(0)
        for (plugin, profile), n in by_plugin_and_profile.items():
            self.unschedulable_pods_gauge.labels(plugin=plugin, profile=profile).set(n)
        self._unschedulable_labels |= set(by_plugin_and_profile)

    def plugin_execution_durations(self, plugin: str, point: str, status: str, seconds: Sequence[float]) -> None:
        self.plugin_execution_duration_seconds.observe_many((plugin, point, status or "Success"), seconds)

    def plugin_evaluations(self, profile: str, counts: Mapping[tuple[str, str], int]) -> None:
        """Calls of each (plugin, extension point) since the last report."""
        for (plugin, point), n in counts.items():
            self.plugin_evaluation_total.labels(plugin=plugin, extension_point=point, profile=profile).inc(n)

    def plugin_error(self, plugin: str, point: str) -> None:
        """A plugin raised at `point` (every time; the log has one traceback per kind)."""
        series = self._plugin_errors.get((plugin, point))
        if series is None:
            series = self._plugin_errors[(plugin, point)] = self.plugin_errors_total.labels(
                plugin=plugin, extension_point=point)
        series.inc()

    def api_forbidden(self, verb: str, resource: str) -> None:
        self.api_forbidden_total.labels(verb=verb, resource=resource).inc()

    def render(self) -> bytes:
        """The text exposition format, as served on /metrics."""
        return generate_latest(self.registry)

    def sample(self, name: str, labels: dict[str, str] | None = None) -> float | None:
        """A sample's current value (tests and debugging)."""
        return self.registry.get_sample_value(name, labels or {})

