"""What the framework, the scheduling cycle and preemption see of a scheduler extender.

The HTTP client (kubeberth.extender.HTTPExtender) implements `Extender`; the framework holds
a profile's extenders as this protocol, so nothing here depends on the extender package.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from ..model import NodeInfo, Pod
from .victims import Victims


class ExtenderError(Exception):
    """A call to an extender failed: transport, HTTP status, timeout, undecodable or error answer."""

    def __init__(self, extender: str, verb: str, message: str) -> None:
        self.extender = extender
        self.verb = verb
        self.detail = message
        super().__init__(message)


class NodeInfoLister(Protocol):
    def get(self, name: str) -> NodeInfo | None: ...


class Extender(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def is_ignorable(self) -> bool: ...

    @property
    def is_filter(self) -> bool: ...

    @property
    def is_prioritizer(self) -> bool: ...

    @property
    def supports_preemption(self) -> bool: ...

    @property
    def is_binder(self) -> bool: ...

    @property
    def preempt_verb(self) -> str: ...

    @property
    def ignored_resources(self) -> frozenset[str]:
        """Extended resources it manages with ignoredByScheduler (NodeResourcesFit skips them)."""
        ...

    def is_interested(self, pod: Pod) -> bool: ...

    async def filter(self, pod: Pod, node_infos: Sequence[NodeInfo]
                     ) -> tuple[list[NodeInfo], dict[str, str], dict[str, str]]: ...

    async def prioritize(self, pod: Pod, node_infos: Sequence[NodeInfo]) -> tuple[list[tuple[str, int]], int]: ...

    async def process_preemption(self, pod: Pod, node_to_victims: Mapping[str, Victims],
                                 node_infos: NodeInfoLister | None = None) -> dict[str, Victims]: ...

    async def bind(self, pod: Pod, node_name: str) -> None: ...

    async def close(self) -> None: ...
