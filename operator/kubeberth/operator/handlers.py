"""The kopf handlers: the operator's frame.

Registered per operator instance on its own `kopf.OperatorRegistry` (see `register`), so
that several operators can run in one process (tests) without sharing handlers.

kopf starts and stops the operator and logs in; the liveness endpoint is `liveness.py`'s (the
scheduler's answer made at each request, kopf's probe cache would hold it 10 s). The kinds the
scheduler reads (SchedulingProfiles included) are listed and watched by the reflectors
started from the startup handler (`reflector.py`): kopf's per-object machinery costs
tens of milliseconds per object (benchmarks/PROFILE.md), and a kind with no object gives
no signal that its listing is complete, which the initial sync needs. kopf registers no
resource handler, so it writes nothing on any object.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Protocol

import kopf

logger = logging.getLogger(__name__)


class Frame(Protocol):
    """What the frame's handlers call: the operator (`app.OperatorApp`)."""

    @property
    def api_client(self) -> Any: ...

    def configure_settings(self, settings: kopf.OperatorSettings) -> None: ...

    async def start(self) -> None: ...

    async def stop(self, timeout: float = 5.0) -> None: ...

    async def connection_info(self) -> kopf.ConnectionInfo: ...


def register(registry: kopf.OperatorRegistry, app: Frame) -> None:
    @kopf.on.startup(registry=registry, id="kubeberth_startup")
    async def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
        app.configure_settings(settings)
        # Plugins' own kopf handlers write with the scheduler's credentials: kopf copies the
        # operator's memo into every object's, so `memo.kubeberth_api_client` (a kubernetes-asyncio
        # ApiClient) is theirs to use, e.g. for a status patch of an object other than theirs.
        memo["kubeberth_api_client"] = app.api_client
        await app.start()

    @kopf.on.cleanup(registry=registry, id="kubeberth_cleanup")
    async def cleanup(**_: Any) -> None:
        await app.stop()

    @kopf.on.login(registry=registry, id="kubeberth_login")
    async def login(**_: Any) -> kopf.ConnectionInfo:
        return await app.connection_info()

    if getattr(getattr(app, "config", None), "kueue_admission_check", False):  # --kueue-admission-check
        from .kueue_check import install

        install(registry, app)


# --- kopf handlers of one's own ---

Gate = Callable[[], Awaitable[None]]

# kopf's resource registries, and whether their handlers run on the leader only.
_RESOURCE_REGISTRIES: tuple[tuple[str, bool], ...] = (
    ("_indexing", False),  # indices: read-only, kept on every replica as our cache is
    ("_watching", True),   # @kopf.on.event
    ("_spawning", True),   # @kopf.timer, @kopf.daemon
    ("_changing", True),   # @kopf.on.create/update/delete/resume/field
    ("_webhooks", False),  # admission webhooks answer on every replica
)


def _gated(fn: Callable[..., Any], gate: Gate) -> Callable[..., Awaitable[Any]]:
    """`fn`, called once `gate()` returns (this replica leads). An async function either way (no
    functools.wraps: kopf would take a wrapped sync function for a sync one)."""
    if inspect.iscoroutinefunction(fn):
        async def call_async(*args: Any, **kwargs: Any) -> Any:
            await gate()
            return await fn(*args, **kwargs)
        return call_async

    async def call_sync(*args: Any, **kwargs: Any) -> Any:
        await gate()
        ctx = contextvars.copy_context()
        return await asyncio.get_running_loop().run_in_executor(None, functools.partial(ctx.run, fn, *args,
                                                                                        **kwargs))
    return call_sync


_ALL_REGISTRIES = ("_activities", *(attr for attr, _ in _RESOURCE_REGISTRIES))


def owners_of(module: str, provides: Mapping[str, Iterable[str]]) -> frozenset[str]:
    """The plugins a handler defined in `module` belongs to: those of every plugin-bringing package
    (`Loaded.provides`) that `module` is, or is part of. Empty: a module that brings no plugin."""
    names: set[str] = set()
    for package, plugins in provides.items():
        if module == package or module.startswith(package + "."):
            names.update(plugins)
    return frozenset(names)


def partition(source: kopf.OperatorRegistry,
              provides: Mapping[str, Iterable[str]]) -> dict[frozenset[str], kopf.OperatorRegistry]:
    """The handlers of `source` (kopf's default registry) by the plugins their module belongs to
    (`owners_of` on the handler function's module), each set on a registry of its own: the key
    frozenset() holds those of modules that bring no plugin. Probes stay with those: they answer on
    kubeberth's liveness endpoint, which only the operator's own kopf feeds (liveness.py)."""
    parts: dict[frozenset[str], kopf.OperatorRegistry] = {}
    for attr in _ALL_REGISTRIES:
        for handler in getattr(source, attr).get_all_handlers():
            owners = owners_of(str(getattr(handler.fn, "__module__", "") or ""), provides)
            if attr == "_activities" and handler.activity == "probe":
                owners = frozenset()
            target = parts.get(owners)
            if target is None:
                target = parts[owners] = kopf.OperatorRegistry()
            getattr(target, attr).append(handler)
    return parts


def adopt(registry: kopf.OperatorRegistry, source: kopf.OperatorRegistry, gate: Gate) -> int:
    """Put the handlers that plugins' modules registered with kopf's decorators on `source` (kopf's
    default registry) into the operator's `registry`: their resource handlers (events, timers,
    daemons, changes) run once `gate()` returns, i.e. on the leader only (indices and webhooks on
    every replica); their activities (startup, cleanup, probes) on every replica; their login
    handlers not at all (the operator logs in as the scheduler does). Returns how many."""
    adopted = 0
    for handler in source._activities.get_all_handlers():
        if handler.activity == "authentication":  # kopf's Activity.AUTHENTICATION (a StrEnum)
            continue
        registry._activities.append(handler)
        adopted += 1
    for attr, leader_only in _RESOURCE_REGISTRIES:
        target = getattr(registry, attr)
        for handler in getattr(source, attr).get_all_handlers():
            target.append(dataclasses.replace(handler, fn=_gated(handler.fn, gate)) if leader_only else handler)
            adopted += 1
    return adopted
