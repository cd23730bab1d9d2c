"""The scheduling queue: activeQ / backoffQ / unschedulable pods, cluster events, the nominator."""

from ..framework.events import ActionType, ClusterEvent
from .nominator import Nominator
from .pod_updates import is_pod_updated
from .profile import QueueProfile, Strategy
from .scheduling_queue import PriorityQueue
from .subqueues import ACTIVE, BACKOFF, GATED, UNSCHEDULABLE

__all__ = [
    "ACTIVE", "BACKOFF", "GATED", "UNSCHEDULABLE", "ActionType", "ClusterEvent", "Nominator", "PriorityQueue",
    "QueueProfile", "Strategy", "is_pod_updated",
]
