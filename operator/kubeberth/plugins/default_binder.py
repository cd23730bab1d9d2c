"""DefaultBinder: binds the pod through the cluster client."""

from __future__ import annotations

from typing import Any

from ..framework import (
    BindConflict,
    BindPlugin,
    CycleState,
    Handle,
    Pod,
    Status,
)


class DefaultBinder(BindPlugin):
    name = "DefaultBinder"

    def __init__(self, args: Any, handle: Handle) -> None:
        self.handle = handle

    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        client = self.handle.client
        if client is None:
            return Status.error("no cluster client to bind with")
        try:
            await client.bind(pod, node_name)
        except BindConflict as exc:
            if exc.settled:
                raise  # not a failure to report: the scheduler drops the pod (see BindConflict)
            return Status.error(str(exc))
        except Exception as exc:
            return Status.error(str(exc) or type(exc).__name__)
        return None


PLUGINS = [DefaultBinder]
