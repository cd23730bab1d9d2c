"""The scheduler, shaped as upstream's pkg/scheduler: scheduler.py (wiring, profiles, the loops),
event_handlers.py (watch events into cache and queue), schedule_one.py (a pod's scheduling and
binding cycles, failures), algorithm.py (filter, score, pick a node) over evaluator/ (the nodes
evaluated one by one or vectorised), schedule_one_podgroup.py (a pod group's cycle),
records.py (what became of each pod), base.py (the state they share)."""

from .records import (
    DEFAULT_MAX_ATTEMPTS,
    DELETED,
    EVENT_MESSAGE_LIMIT,
    EVICTED,
    EXISTING,
    IGNORED,
    PENDING,
    SCHEDULED,
    UNSCHEDULABLE,
    PodRecord,
    pod_on_node,
    truncate_message,
)
from .scheduler import Scheduler

__all__ = [
    "DEFAULT_MAX_ATTEMPTS", "DELETED", "EVENT_MESSAGE_LIMIT", "EVICTED", "EXISTING", "IGNORED", "PENDING",
    "SCHEDULED", "UNSCHEDULABLE", "PodRecord", "Scheduler", "pod_on_node", "truncate_message",
]
