"""What the queue needs of one profile (its QueueSort, PreEnqueue, backoff settings and the
plugins' QueueingHints), and upstream's isPodWorthRequeuing over them."""

from __future__ import annotations

import enum
import functools
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..framework import events as ev
from ..framework.events import ClusterEvent, ClusterEventWithHint, QueueingHint
from ..framework.types import QueuedPodInfo
from ..model import Pod
from .group_gate import PreEnqueueStep, run_steps

if TYPE_CHECKING:
    from ..framework.isolation import PluginErrors
    from ..framework.runtime import Framework

log = logging.getLogger("kubeberth.queue")

DEFAULT_POD_INITIAL_BACKOFF_SECONDS = 1.0
DEFAULT_POD_MAX_BACKOFF_SECONDS = 10.0

# Told (plugin, event label, hint label, seconds) for each hint run:
# scheduler_queueing_hint_execution_duration_seconds.
HintObserver = Callable[[str, str, str, float], None]


class Strategy(enum.IntEnum):
    """How a pod leaves the unschedulable pool (upstream's queueingStrategy)."""

    SKIP = 0
    AFTER_BACKOFF = 1
    IMMEDIATELY = 2


def fallback_less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    """The order between pods of profiles with different QueueSort plugins."""
    pa, pb = a.priority, b.priority
    return pa > pb or (pa == pb and a.timestamp < b.timestamp)


class QueueProfile:
    """One profile as the queue sees it."""

    __slots__ = ("_hints", "errors", "initial_backoff", "less", "max_backoff", "plugins", "pre_enqueue",
                 "pre_enqueue_steps", "queue_sort_name", "scheduler_name")

    def __init__(self, scheduler_name: str, less: Callable[[QueuedPodInfo, QueuedPodInfo], bool], *,
                 queue_sort_name: str = "", pre_enqueue: Callable[[Pod], Any] | None = None,
                 pre_enqueue_steps: Sequence[PreEnqueueStep] | None = None,
                 initial_backoff: float = DEFAULT_POD_INITIAL_BACKOFF_SECONDS,
                 max_backoff: float = DEFAULT_POD_MAX_BACKOFF_SECONDS,
                 plugins: Mapping[str, Any] | None = None, errors: PluginErrors | None = None) -> None:
        """`pre_enqueue`: the profile's PreEnqueue for a pod (the first failure, None when every
        plugin lets it through); `pre_enqueue_steps`: the same plugin by plugin, which lets a pod
        group's entry keep the answers that cannot have changed (group_gate.py). Given the steps
        alone, `pre_enqueue` runs them; given `pre_enqueue` alone, a group's entry asks it for
        every pod on every pass. `errors`: the scheduler's PluginErrors, through which a
        QueueingHint's exception is counted and logged (one traceback per kind), else logged
        every time."""
        self.scheduler_name = scheduler_name
        self.less = less
        self.queue_sort_name = queue_sort_name
        self.pre_enqueue_steps: tuple[PreEnqueueStep, ...] | None = (
            tuple(pre_enqueue_steps) if pre_enqueue_steps is not None else None)
        if pre_enqueue is None and self.pre_enqueue_steps:
            steps = self.pre_enqueue_steps

            def pre_enqueue(pod: Pod) -> Any:
                return run_steps(steps, pod)

        self.pre_enqueue = pre_enqueue
        self.initial_backoff = float(initial_backoff)
        self.max_backoff = float(max_backoff)
        self.plugins = dict(plugins or {})
        self._hints: dict[str, list[ClusterEventWithHint] | None] = {}
        self.errors = errors

    @classmethod
    def from_framework(cls, fw: Framework) -> QueueProfile:
        sort = fw.queue_sort_plugins[0] if fw.queue_sort_plugins else None
        steps = [PreEnqueueStep(p.name, functools.partial(fw.run_pre_enqueue_plugin, p), p.pre_enqueue_scope)
                 for p in fw.pre_enqueue_plugins]
        return cls(fw.scheduler_name, fw.queue_sort_less, queue_sort_name=sort.name if sort else "",
                   pre_enqueue=fw.run_pre_enqueue, pre_enqueue_steps=steps,
                   initial_backoff=fw.spec.podInitialBackoffSeconds,
                   max_backoff=fw.spec.podMaxBackoffSeconds, plugins=fw.plugins, errors=fw.ctx.plugin_errors)

    def hints_for(self, plugin: str) -> list[ClusterEventWithHint] | None:
        """The events (with hints) the plugin registered; None: any event (no list, or an
        unknown plugin)."""
        if plugin not in self._hints:
            p = self.plugins.get(plugin)
            registered = None
            if p is not None:
                try:
                    got = p.events_to_register()
                except Exception:
                    log.exception("Plugin %s: events_to_register failed; any event will requeue its pods", plugin)
                    got = None
                registered = [ev.with_hint(e) for e in got or ()
                              if isinstance(e, (ClusterEvent, ClusterEventWithHint))] or None
            self._hints[plugin] = registered
        return self._hints[plugin]

    def events_for(self, plugin: str) -> list[ClusterEvent] | None:
        hints = self.hints_for(plugin)
        return [h.event for h in hints] if hints is not None else None

    def backoff_duration(self, count: int) -> float:
        """0 before any failure, then initial * 2^(count-1), capped at max (upstream's formula)."""
        if count <= 0:
            return 0.0
        duration = self.initial_backoff
        for _ in range(1, count):
            if duration > self.max_backoff - duration:
                return self.max_backoff
            duration += duration
        return min(duration, self.max_backoff)


def worth_requeuing(prof: QueueProfile | None, q: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any,
                    target: str = "", observe: HintObserver | None = None) -> Strategy:
    """Upstream's isPodWorthRequeuing: the hints of the plugins that rejected the pod decide.
    A Queue from a plugin that left the pod Pending requeues it at once; from one that found it
    unschedulable, after its backoff. A new version of the pod's own profile requeues it after
    its backoff whoever rejected it (the rejection was that of a version no longer in force);
    another profile's new version leaves it where it is."""
    concerns = ev.profile_event_concerns(event, new, q.pod)
    if concerns is not None:
        return Strategy.AFTER_BACKOFF if concerns else Strategy.SKIP
    rejectors = q.unschedulable_plugins | q.pending_plugins
    if not rejectors:
        return Strategy.AFTER_BACKOFF
    if event.is_wildcard():
        if target and target != q.pod.uid:
            return Strategy.SKIP
        return Strategy.AFTER_BACKOFF
    if prof is None:
        return Strategy.AFTER_BACKOFF
    strategy = Strategy.SKIP
    for plugin in sorted(rejectors):
        registered = prof.hints_for(plugin)
        if registered is None:
            hints: list[ClusterEventWithHint] = [ClusterEventWithHint(event)]
        else:
            hints = [h for h in registered if h.event.match(event)]
        for h in hints:
            if _run_hint(prof, plugin, h, q.pod, event, old, new, observe) == QueueingHint.QUEUE_SKIP:
                continue
            if plugin in q.pending_plugins:
                return Strategy.IMMEDIATELY
            if not q.pending_plugins:
                return Strategy.AFTER_BACKOFF
            strategy = Strategy.AFTER_BACKOFF
    return strategy


def _run_hint(prof: QueueProfile, plugin: str, h: ClusterEventWithHint, pod: Pod, event: ClusterEvent, old: Any,
              new: Any, observe: HintObserver | None) -> QueueingHint:
    if h.hint is None:
        return QueueingHint.QUEUE
    started = time.perf_counter()
    try:
        hint = QueueingHint(h.hint(pod, old, new))
        label = "Queue" if hint == QueueingHint.QUEUE else "QueueSkip"
    except Exception as exc:
        # As upstream: a failing hint must not leave the pod stuck in the unschedulable pool.
        if prof.errors is not None:
            prof.errors.raised("QueueingHint", plugin, exc)
        else:
            log.exception("QueueingHint of %s for %s failed on pod %s; requeuing it", plugin, event.label, pod.key)
        hint, label = QueueingHint.QUEUE, "Error"
    if observe is not None:
        observe(plugin, event.label, label, time.perf_counter() - started)
    return hint
