"""A plugin that raises fails its pod's attempt, never the scheduler: the exception becomes an
Error status worded as upstream wraps a plugin's error at that point (`running "X" filter
plugin: ...`), the pod backs off, and the loop goes on.

Some runners catch around each call (those whose failure would otherwise escape the cycle:
PreEnqueue, QueueSort, Reserve, Unreserve, Permit, PostBind, AddPod/RemovePod); everywhere else
(the filter walks, the vectorised hooks, preemption's dry runs, scoring, the binding cycle)
the cycle's own `except Exception` asks `attribute` which plugin raised, from the traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from types import TracebackType

from .status import PluginError, Status

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


def raised(point: str, plugin: str, exc: BaseException) -> Status:
    """The Error status of `plugin` raising `exc` at `point` (logged with the traceback)."""
    message = WORDING.get(point, WORDING[""]).format(plugin=plugin, error=error_text(exc))
    log.error("%s", message, exc_info=(type(exc), exc, exc.__traceback__))
    return Status.error(message, plugin)


def _frames(tb: TracebackType | None) -> list[TracebackType]:
    out = []
    while tb is not None:
        out.append(tb)
        tb = tb.tb_next
    return out


def attribute(plugins: Mapping[str, object], exc: BaseException) -> Status | None:
    """The Error status of the plugin (one of `plugins`, by name) whose extension-point method
    raised `exc`, the innermost such call in the traceback; None when no plugin's did."""
    by_id = {id(p): name for name, p in plugins.items()}
    for tb in reversed(_frames(exc.__traceback__)):
        frame = tb.tb_frame
        point = METHOD_POINTS.get(frame.f_code.co_name)
        if point is None:
            continue
        name = by_id.get(id(frame.f_locals.get("self")))
        if name is not None:
            return raised(point, name, exc)
    return None


def failure_status(plugins: Mapping[str, object], exc: BaseException) -> Status:
    """What an exception that escaped a cycle makes of the attempt: the raising plugin's Error
    with upstream's wording, else (no plugin raised it) an Error with the exception's text."""
    status = attribute(plugins, exc)
    if status is not None:
        return status
    log.error("scheduling cycle failed", exc_info=(type(exc), exc, exc.__traceback__))
    return Status.error(str(exc) or type(exc).__name__)
