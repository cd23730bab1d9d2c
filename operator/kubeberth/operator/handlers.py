"""The kopf handlers: thin translations of watch events into the scheduler.

Registered per operator instance on its own `kopf.OperatorRegistry` (see `register`), so
that several operators can run in one process (tests) without sharing handlers.

Pods and Nodes (and every other watched kind) are only observed: `@kopf.index` and
`@kopf.on.event` handlers never patch the object, and with no change-detecting handlers
kopf writes no finalizers, annotations or progress markers on them. SchedulingProfiles
are observed the same way: their creation, resumption at start, updates and deletion
all arrive as events; the Accepted status is written by the operator itself.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import kopf

from .ingest import WATCHED, WatchedKind

if TYPE_CHECKING:
    from .app import OperatorApp

logger = logging.getLogger(__name__)


def register(registry: kopf.OperatorRegistry, app: OperatorApp) -> None:
    for kind in WATCHED:
        _register_kind(registry, app, kind)

    @kopf.on.startup(registry=registry, id="kubeberth_startup")
    async def startup(settings: kopf.OperatorSettings, **_: Any) -> None:
        app.configure_settings(settings)
        await app.start()

    @kopf.on.cleanup(registry=registry, id="kubeberth_cleanup")
    async def cleanup(**_: Any) -> None:
        await app.stop()

    @kopf.on.login(registry=registry, id="kubeberth_login")
    async def login(**_: Any) -> kopf.ConnectionInfo:
        return await app.connection_info()

    @kopf.on.probe(registry=registry, id="scheduler")
    def probe(**_: Any) -> dict[str, Any]:
        return app.health()


def _register_kind(registry: kopf.OperatorRegistry, app: OperatorApp, kind: WatchedKind) -> None:
    @kopf.index(kind.group, kind.version, kind.plural, registry=registry, id=kind.handler_id)
    async def listed(body: kopf.Body, **_: Any) -> None:
        # Async so it runs on the event loop with everything else the scheduler touches,
        # not in kopf's thread pool (the ingest buffer is not thread-safe).
        app.ingest.indexed(kind, dict(body))
        return None

    @kopf.on.event(kind.group, kind.version, kind.plural, registry=registry, id=f"{kind.handler_id}_event")
    async def event(event: kopf.RawEvent, **_: Any) -> None:
        app.ingest.event(kind, event.get("type"), event["object"])
        await app.after_event()
