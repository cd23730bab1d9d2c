"""What the scheduler asks of the cluster. The operator implements it against the
API server; simulate implements it on in-memory objects."""

from __future__ import annotations

from typing import Protocol

from .model import Pod


class BindConflict(Exception):
    """The pod is already bound or changed (HTTP 409); forget it and requeue."""


class ClusterClient(Protocol):
    async def bind(self, pod: Pod, node_name: str) -> None: ...

    async def set_nominated_node(self, pod: Pod, node_name: str) -> None:
        """Patch status.nominatedNodeName ('' clears it)."""

    async def set_unschedulable(self, pod: Pod, message: str) -> None:
        """Patch the PodScheduled=False condition with reason Unschedulable."""

    async def delete_pod(self, pod: Pod) -> None:
        """Delete a preemption victim (with a UID precondition)."""

    async def record_event(self, pod: Pod, event_type: str, reason: str, message: str) -> None: ...
