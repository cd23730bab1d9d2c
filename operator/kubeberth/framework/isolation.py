"""A plugin that raises fails its pod's attempt, never the scheduler: the exception becomes an
Error status worded as upstream wraps a plugin's error at that point (`running "X" filter
plugin: ...`), the pod backs off, and the loop goes on.

Some runners catch around each call (those whose failure would otherwise escape the cycle:
PreEnqueue, QueueSort, Reserve, Unreserve, Permit, PostBind, AddPod/RemovePod); everywhere else
(the filter walks, the vectorised hooks, preemption's dry runs, scoring, the binding cycle)
the cycle's own `except Exception` asks `attribute` which plugin raised, from the traceback.

A scheduler goes through its `PluginErrors` (`SchedulerContext.plugin_errors`): every exception
is counted (kubeberth_plugin_errors_total), but a plugin that fails for every pod does not flood
the log: the first exception of each (plugin, extension point, exception type) is logged with
its traceback, the next ones only as a count, one line per `SUMMARY_INTERVAL` seconds (and when
the scheduler asks, e.g. at the end of simulate).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

from .status import PluginError, Status

if TYPE_CHECKING:
    from ..clock import Clock

log = logging.getLogger("kubeberth.plugins")

# Extension point -> upstream's wrapping of a plugin's error there.
WORDING: dict[str, str] = {
    "PreEnqueue": 'running PreEnqueue plugin "{plugin}": {error}',
    "QueueSort": 'running QueueSort plugin "{plugin}": {error}',
    "PreFilter": 'running PreFilter plugin "{plugin}": {error}',
    "AddPod": 'running AddPod on PreFilter plugin "{plugin}": {error}',
    "RemovePod": 'running RemovePod on PreFilter plugin "{plugin}": {error}',
    "Filter": 'running "{plugin}" filter plugin: {error}',
    "PostFilter": 'running PostFilter plugin "{plugin}": {error}',
    "PreScore": 'running PreScore plugin "{plugin}": {error}',
    "Score": 'running Score plugins: plugin "{plugin}" failed with: {error}',
    "NormalizeScore": 'running Normalize on Score plugins: plugin "{plugin}" failed with: {error}',
    "Reserve": 'running Reserve plugin "{plugin}": {error}',
    "Unreserve": 'running Unreserve plugin "{plugin}": {error}',
    "Permit": 'running Permit plugin "{plugin}": {error}',
    "PreBindPreFlight": 'running PreBindPreFlight "{plugin}": {error}',
    "PreBind": 'running PreBind plugin "{plugin}": {error}',
    "Bind": 'running Bind plugin "{plugin}": {error}',
    "PostBind": 'running PostBind plugin "{plugin}": {error}',
    # Upstream logs it ("error in QueueingHint function"); the pod is requeued, as there.
    "QueueingHint": 'running QueueingHint of plugin "{plugin}": {error}; requeuing the pod',
    "": 'running plugin "{plugin}": {error}',
}

# A plugin's method -> the extension point it serves.
METHOD_POINTS: dict[str, str] = {
    "pre_enqueue": "PreEnqueue", "less": "QueueSort", "pre_filter": "PreFilter", "add_pod": "AddPod",
    "remove_pod": "RemovePod", "filter": "Filter", "filter_all": "Filter", "filter_statuses": "Filter",
    "post_filter": "PostFilter", "pre_score": "PreScore", "score": "Score", "score_all": "Score",
    "normalize_score": "NormalizeScore", "normalize_all": "NormalizeScore", "reserve": "Reserve",
    "unreserve": "Unreserve", "permit": "Permit", "pre_bind_pre_flight": "PreBindPreFlight",
    "pre_bind": "PreBind", "bind": "Bind", "post_bind": "PostBind",
}


def error_text(exc: BaseException) -> str:
    """A PluginError's own message; any other exception with its type, as Python prints it."""
    if isinstance(exc, PluginError):
        return str(exc)
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def message_of(point: str, plugin: str, exc: BaseException) -> str:
    """Upstream's wording of `plugin` raising `exc` at `point`."""
    return WORDING.get(point, WORDING[""]).format(plugin=plugin, error=error_text(exc))


def raised(point: str, plugin: str, exc: BaseException) -> Status:
    """The Error status of `plugin` raising `exc` at `point` (logged with the traceback, every
    time: a scheduler's `PluginErrors.raised` logs one per kind of failure)."""
    message = message_of(point, plugin, exc)
    log.error("%s", message, exc_info=(type(exc), exc, exc.__traceback__))
    return Status.error(message, plugin)


def _frames(tb: TracebackType | None) -> list[TracebackType]:
    out = []
    while tb is not None:
        out.append(tb)
        tb = tb.tb_next
    return out


def raiser(plugins: Mapping[str, object], exc: BaseException) -> tuple[str, str] | None:
    """(extension point, plugin name) of the plugin (one of `plugins`, by name) whose
    extension-point method raised `exc`, the innermost such call in the traceback; None when no
    plugin's did."""
    by_id = {id(p): name for name, p in plugins.items()}
    for tb in reversed(_frames(exc.__traceback__)):
        frame = tb.tb_frame
        point = METHOD_POINTS.get(frame.f_code.co_name)
        if point is None:
            continue
        name = by_id.get(id(frame.f_locals.get("self")))
        if name is not None:
            return point, name
    return None


def attribute(plugins: Mapping[str, object], exc: BaseException) -> Status | None:
    """The Error status of the plugin whose extension-point method raised `exc` (`raiser`);
    None when no plugin's did."""
    found = raiser(plugins, exc)
    return raised(found[0], found[1], exc) if found is not None else None


def unattributed(exc: BaseException) -> Status:
    """An exception that escaped a cycle and that no plugin raised: an Error with its text."""
    log.error("scheduling cycle failed", exc_info=(type(exc), exc, exc.__traceback__))
    return Status.error(str(exc) or type(exc).__name__)


def failure_status(plugins: Mapping[str, object], exc: BaseException) -> Status:
    """What an exception that escaped a cycle makes of the attempt: the raising plugin's Error
    with upstream's wording, else (no plugin raised it) an Error with the exception's text."""
    status = attribute(plugins, exc)
    return status if status is not None else unattributed(exc)


# Seconds between two lines counting a plugin's exceptions of one kind (its first is logged whole).
SUMMARY_INTERVAL = 60.0


@dataclass
class _Kind:
    """The exceptions of one (plugin, extension point, exception type) since the last line."""

    plugin: str
    point: str
    error: str  # the exception type's name
    reported_at: float  # when the last line about them was written
    more: int = 0  # raised since then, not logged
    last: str = ""  # the last one's message


class PluginErrorCounter(Protocol):
    """What PluginErrors reports to: the scheduler's MetricsRecorder (context.py) is one."""

    def plugin_error(self, plugin: str, point: str) -> None: ...


class PluginErrors:
    """A scheduler's plugins' exceptions: each one counted (`kubeberth_plugin_errors_total`
    through the metrics `metrics()` returns, when there are any); the first of each (plugin,
    extension point, exception type) logged with its traceback; the later ones logged as a
    count, at most once per `interval` seconds of `clock` per kind (`summarise` writes the
    counts due, or all of them). Messages and statuses are `raised`'s, word for word."""

    def __init__(self, clock: Clock, metrics: Callable[[], PluginErrorCounter | None] = lambda: None,
                 interval: float = SUMMARY_INTERVAL) -> None:
        self.clock = clock
        self.metrics = metrics
        self.interval = interval
        self._kinds: dict[tuple[str, str, type[BaseException]], _Kind] = {}

    def raised(self, point: str, plugin: str, exc: BaseException) -> Status:
        """`raised(point, plugin, exc)`, the log throttled and the exception counted."""
        message = message_of(point, plugin, exc)
        metrics = self.metrics()
        if metrics is not None:
            metrics.plugin_error(plugin, point)
        key = (plugin, point, type(exc))
        kind = self._kinds.get(key)
        now = self.clock.now()
        if kind is None:
            self._kinds[key] = _Kind(plugin, point, type(exc).__name__, now)
            log.error("%s", message, exc_info=(type(exc), exc, exc.__traceback__))
        else:
            kind.more += 1
            kind.last = message
            if now - kind.reported_at >= self.interval:
                self._report(kind, now)
        return Status.error(message, plugin)

    def failure_status(self, plugins: Mapping[str, object], exc: BaseException) -> Status:
        """`failure_status(plugins, exc)` with the raising plugin's exception through `raised`."""
        found = raiser(plugins, exc)
        return self.raised(found[0], found[1], exc) if found is not None else unattributed(exc)

    def summarise(self, *, everything: bool = False) -> None:
        """Log the counts not yet logged: those whose interval has passed, or all (`everything`)."""
        now = self.clock.now()
        for kind in self._kinds.values():
            if kind.more and (everything or now - kind.reported_at >= self.interval):
                self._report(kind, now)

    def _report(self, kind: _Kind, now: float) -> None:
        log.error('plugin "%s" raised %s at %s %d more time%s in %.0fs (its traceback is logged once; '
                  "kubeberth_plugin_errors_total counts them all); the last: %s", kind.plugin, kind.error,
                  kind.point, kind.more, "" if kind.more == 1 else "s", now - kind.reported_at, kind.last)
        kind.more = 0
        kind.last = ""
        kind.reported_at = now
