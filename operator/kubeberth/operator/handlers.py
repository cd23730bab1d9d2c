"""The kopf handlers: the operator's frame.

Registered per operator instance on its own `kopf.OperatorRegistry` (see `register`), so
that several operators can run in one process (tests) without sharing handlers.

kopf starts and stops the operator, logs in, and serves the liveness probe. The kinds the
scheduler reads (SchedulingProfiles included) are listed and watched by the reflectors
started from the startup handler (`reflector.py`): kopf's per-object machinery costs
tens of milliseconds per object (benchmarks/PROFILE.md), and a kind with no object gives
no signal that its listing is complete, which the initial sync needs. kopf registers no
resource handler, so it writes nothing on any object.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import kopf

if TYPE_CHECKING:
    from .app import OperatorApp

logger = logging.getLogger(__name__)


def register(registry: kopf.OperatorRegistry, app: OperatorApp) -> None:
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

    @kopf.on.probe(registry=registry, id="scheduler")
    def probe(**_: Any) -> dict[str, Any]:
        return app.health()
