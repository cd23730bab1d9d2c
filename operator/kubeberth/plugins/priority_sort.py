"""PrioritySort: the default QueueSort plugin."""

from __future__ import annotations

from typing import Any

from ..framework import (
    Handle,
    QueuedPodInfo,
    QueueSortPlugin,
)


class PrioritySort(QueueSortPlugin):
    """Higher priority first; among equal priorities, the earlier queue timestamp first."""

    name = "PrioritySort"

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self.handle = handle

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        p1 = a.priority  # a pod group's entry: the PodGroup's priority
        p2 = b.priority
        return p1 > p2 or (p1 == p2 and a.timestamp < b.timestamp)


PLUGINS = [PrioritySort]
