"""The scheduling queue: activeQ / backoffQ / unschedulable pods, cluster events, the nominator."""

from ..framework.events import ActionType, ClusterEvent
from .nominator import Nominator
from .profile import QueueProfile, Strategy
from .scheduling_queue import (
    ACTIVE,
    BACKOFF,
    GATED,
    UNSCHEDULABLE,
    PriorityQueue,
    is_pod_updated,
)

__all__ = [
    "ACTIVE", "BACKOFF", "GATED", "UNSCHEDULABLE", "ActionType", "ClusterEvent", "Nominator", "PriorityQueue",
    "QueueProfile", "Strategy", "is_pod_updated",
]
