"""What a long-running scheduler keeps in memory, counted: `kubeberth_retained_objects` on /metrics.

A scheduler runs for months; nothing may be kept for pods (or nodes, PodGroups, profiles) that are
gone. `kubeberth_retained_objects{structure="..."}` counts the entries of every structure that
holds per-object state, read when /metrics is scraped (a few `len()` calls on the event loop):

- `cache.*`: the scheduler cache's nodes, pods, assumed pods, images;
- `scheduler.*`: the pending pods, the records of what became of each pod, the key -> uid and
  arrival-order maps, the pods waiting for their PriorityClass, the pods given up on, the last
  attempts of PodGroups, the background and binding tasks;
- `queue.*`: activeQ, backoffQ, the unschedulable pool, the gated pods, the pods in flight and the
  events recorded meanwhile, the pod-group entries; `nominator.pods`; `framework.*`: the pods
  waiting at Permit, those in PreBind, the preemptions under way; `pod_groups.states`;
- `objects.<Kind>`: the other objects read from the API server (services, PodGroups, ...);
- `event_recorder.*`: the events waiting to be sent and their per-object chains, the isomorphic
  cache (series), the per-object rate-limit buckets; `status_writer.*`; `api_client.bound` (the
  bindings this process made, so that none is sent twice); `explain_publisher.*`; `shadow.*`;
- `profiles.*`: the profiles in force and the queue's view of them; `reflector.<Kind>`: the objects
  each list-and-watch knows (as many as the cluster has);
- `shared_index.<name>.<attribute>`: the indexes plugins share (pods by label signature, ...);
- `plugin.<Plugin>.<attribute>`: the length of each container (dict, set, list, deque) a plugin
  instance holds (and, two levels down, the containers of its helper objects, such as
  DefaultPreemption's evaluator's executor), summed over the profiles using the plugin;
- `metrics.*_series`: the label sets kept by the histograms of plugins' durations.

The churn benchmark (benchmarks/churn.py) and tests/cluster/test_churn.py read them: once the pods
are deleted, every per-pod structure is back to its baseline. The names are for debugging, not an
API: they follow the code.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

logger = logging.getLogger(__name__)

METRIC = "kubeberth_retained_objects"
HELP = ("Entries kept by the scheduler's in-memory structures, by structure (kubeberth's own, for "
        "debugging a long run: nothing may be kept for pods that are gone).")
_CONTAINERS = (dict, set, frozenset, list, collections.deque)
_SKIPPED_ATTRIBUTES = frozenset({"handle", "args", "ctx", "scheduler", "registry"})


def _len(obj: Any, *path: str) -> int | None:
    """len() of obj.path[0].path[1]...; None where an attribute is missing (the code changed)."""
    for name in path:
        obj = getattr(obj, name, None)
        if obj is None:
            return None
    try:
        return len(obj)
    except TypeError:
        return None


def _containers(obj: Any, prefix: str, out: dict[str, int], depth: int = 1) -> None:
    """The lengths of the containers among obj's attributes (`depth` levels into kubeberth's own
    helper objects, such as DefaultPreemption's evaluator and its executor)."""
    attributes = dict(getattr(obj, "__dict__", {}))
    for cls in type(obj).__mro__:
        for slot in getattr(cls, "__slots__", ()):
            if isinstance(slot, str) and hasattr(obj, slot):
                attributes.setdefault(slot, getattr(obj, slot))
    for name, value in attributes.items():
        if name in _SKIPPED_ATTRIBUTES:
            continue
        if isinstance(value, _CONTAINERS):
            key = f"{prefix}.{name}"
            out[key] = out.get(key, 0) + len(value)
        elif depth > 0 and type(value).__module__.startswith(("kubeberth.plugins", "kubeberth.preemption",
                                                               "kubeberth_")):
            _containers(value, f"{prefix}.{name}", out, depth - 1)


def scheduler_counts(scheduler: Any) -> dict[str, int]:
    """The scheduler's own structures (also usable on a bare `Scheduler`, e.g. in unit tests)."""
    s = scheduler
    q = s.queue
    out: dict[str, int | None] = {
        "cache.nodes": _len(s.cache, "_nodes"),
        "cache.pods": _len(s.cache, "_pods"),
        "cache.assumed_pods": _len(s.cache, "_assumed"),
        "cache.images": _len(s.cache, "_image_counts"),
        "scheduler.pending": _len(s, "_pending"),
        "scheduler.records": _len(s, "outcomes"),
        "scheduler.uids": _len(s, "_uids"),
        "scheduler.arrival_order": _len(s, "_seqs"),
        "scheduler.given_up": _len(s, "_given_up"),
        "scheduler.waiting_for_priority_class": _len(s, "_wait_priority"),
        "scheduler.reported_errors": _len(s, "_reported_errors"),
        "scheduler.node_errors": _len(s, "node_errors"),
        "scheduler.pod_group_errors": _len(s, "pod_group_errors"),
        "scheduler.group_attempts": _len(s, "group_attempts"),
        "scheduler.binding_tasks": _len(s, "_binding_tasks"),
        "scheduler.background_tasks": _len(s, "_background"),
        "queue.active": _len(q, "_active"),
        "queue.backoff": _len(q, "_backoff"),
        "queue.unschedulable": _len(q, "_unschedulable"),
        "queue.gated": _len(q, "_gating"),
        "queue.in_flight_pods": _len(q, "_in_flight", "_pods"),
        "queue.in_flight_events": _len(q, "_in_flight", "_events"),
        "queue.pod_groups": _len(q, "_pod_groups"),
        "queue.incomplete_groups": _len(q, "_incomplete"),
        "queue.pending_group_members": _len(q, "_pending_members"),
        "queue.in_flight_group_members": _len(q, "_in_flight_members"),
        "queue.group_members": _len(q, "_member_of"),
        "queue.waiters": _len(q, "_waiters"),
        "nominator.pods": _len(s.nominator, "_by_uid"),
        "nominator.nodes": _len(s.nominator, "_by_node"),
        "framework.waiting_pods": _len(s.ctx, "waiting_pods", "_pods"),
        "framework.pods_in_pre_bind": _len(s.ctx, "pods_in_pre_bind", "_pods"),
        "framework.preemption_tasks": _len(s.ctx, "preemption_tasks"),
        "pod_groups.states": _len(s, "pod_groups", "_states"),
        "profiles.scheduler": _len(s, "profiles"),
        "profiles.queue": _len(q, "_profiles"),
    }
    counts = {k: v for k, v in out.items() if v is not None}
    by_kind = getattr(s.ctx.objects, "_by_kind", {})
    for kind, objs in by_kind.items():
        counts[f"objects.{kind}"] = len(objs)
    plugins: dict[str, int] = {}
    seen: set[int] = set()
    for fw in list(s.profiles.values()):
        for name, plugin in (getattr(fw, "plugins", None) or {}).items():
            if id(plugin) in seen:
                continue
            seen.add(id(plugin))
            _containers(plugin, f"plugin.{name}", plugins, depth=2)
    counts.update(plugins)
    shared: dict[str, int] = {}
    for name, index in list(s.ctx.shared_indexes.items()):
        if isinstance(index, _CONTAINERS):
            shared[f"shared_index.{name}"] = len(index)
        else:
            _containers(index, f"shared_index.{name}", shared, depth=0)
    counts.update(shared)
    metrics = s.ctx.metrics
    for attr in ("plugin_execution_duration_seconds", "queueing_hint_execution_duration_seconds"):
        n = _len(getattr(metrics, attr, None), "_series")
        if n is not None:
            counts[f"metrics.{attr}_series"] = n
    return counts


def app_counts(app: Any) -> dict[str, int]:
    """Everything the running operator keeps: the scheduler's structures and its helpers'. `app` is
    the OperatorApp (read by attribute: this module sits below app.py, which registers it)."""
    if app._scheduler is None:
        return {}
    counts = scheduler_counts(app._scheduler)
    client = app._client
    if client is not None:
        events, status = client.events, client.status
        extra: dict[str, int | None] = {
            "event_recorder.queued": getattr(events, "queued", None),
            "event_recorder.chains": _len(events, "_chains"),
            "event_recorder.series_cache": _len(events, "_cache"),
            "event_recorder.rate_buckets": _len(events, "_buckets"),
            "status_writer.pending": _len(status, "_pending"),
            "status_writer.in_flight": _len(status, "_in_flight"),
            "status_writer.returned": _len(status, "_returned"),
            "status_writer.binding": _len(status, "_binding"),
            "api_client.bound": _len(client, "_bound"),
        }
        counts.update({k: v for k, v in extra.items() if v is not None})
    publisher = getattr(app, "explain_publisher", None)
    if publisher is not None:
        for name, attr in (("explain_publisher.last", "_last"), ("explain_publisher.warned", "_warned")):
            n = _len(publisher, attr)
            if n is not None:
                counts[name] = n
        n = _len(getattr(publisher, "suggester", None), "_last")
        if n is not None:
            counts["explain_publisher.suggestions"] = n
    shadow = getattr(app, "shadow", None)
    if shadow is not None:
        for attr in ("profiles", "decisions", "pending"):
            n = _len(shadow, attr)
            if n is not None:
                counts[f"shadow.{attr}"] = n
    informers = app._informers
    if informers is not None:
        followed = [r for r, _ in list(informers.followed.values())]
        for reflector in [*informers.reflectors, *followed]:
            counts[f"reflector.{reflector.kind.store_key}"] = len(reflector.known)
    profiles = app._profiles
    if profiles is not None:
        for attr in ("running", "objects", "verdicts", "announced", "dirty"):
            n = _len(profiles, attr)
            if n is not None:
                counts[f"profiles.manager.{attr}"] = n
    return counts


class RetainedCollector(Collector):
    """`kubeberth_retained_objects{structure}`, counted at each scrape (on the event loop)."""

    def __init__(self, counts: Callable[[], Mapping[str, int]]) -> None:
        self.counts = counts

    def describe(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily(METRIC, HELP, labels=["structure"])

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(METRIC, HELP, labels=["structure"])
        try:
            counts = self.counts()
        except Exception:  # a debugging aid must never break /metrics
            logger.exception("Could not count the retained objects")
            counts = {}
        for structure, n in sorted(counts.items()):
            family.add_metric([structure], float(n))
        yield family
