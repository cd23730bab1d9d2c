"""PodTopologySpread's QueueingHints (upstream's isSchedulableAfter... functions of plugin.go):
which pod and node changes may let a pod it rejected in."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ...framework import (
    ASSIGNED_POD,
    NODE,
    TARGET_POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Node,
    Pod,
    QueueingHint,
)
from .common import DO_NOT_SCHEDULE, HONOR, Constraint

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP

# The pod's hard constraints (its own, or the defaults); raises ValueError when they do not parse.
Constraints = Callable[[Pod, str], list[Constraint]]


def _involved(other: Pod, pod: Pod) -> bool:
    """A placed (or nominated) pod of the pod's namespace."""
    return bool(other.node_name or other.nominated_node_name) and other.namespace == pod.namespace


def _any_selects(constraints: Sequence[Constraint], labels: Mapping[str, str]) -> bool:
    return any(c.selector.matches(labels) for c in constraints)


def _label_change(old: Pod, new: Pod, constraints: Sequence[Constraint]) -> QueueingHint:
    if old.labels == new.labels:
        return SKIP
    for c in constraints:
        if c.selector.matches(old.labels) != c.selector.matches(new.labels):
            return QUEUE
    return SKIP


def _keys_present(labels: Mapping[str, str], constraints: Sequence[Constraint]) -> bool:
    return all(c.topology_key in labels for c in constraints)


class QueueingHints:
    def __init__(self, constraints: Constraints) -> None:
        self._constraints = constraints

    def registrations(self) -> list[ClusterEvent | ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL
                                              | ActionType.DELETE), self.after_assigned_pod_change),
            ClusterEventWithHint(ClusterEvent(TARGET_POD, ActionType.UPDATE_POD_TOLERATION
                                              | ActionType.UPDATE_POD_LABEL), self.after_target_pod_change),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL
                                              | ActionType.UPDATE_NODE_TAINT), self.after_node_change),
        ]

    def after_target_pod_change(self, pod: Pod, old: Pod, new: Pod) -> QueueingHint:
        try:
            constraints = self._constraints(pod, DO_NOT_SCHEDULE)
        except ValueError:
            return QUEUE
        if new.tolerations != old.tolerations and any(c.node_taints_policy == HONOR for c in constraints):
            return QUEUE
        return _label_change(old, new, constraints)

    def after_assigned_pod_change(self, pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
        if (new is not None and not _involved(new, pod)) or (old is not None and not _involved(old, pod)):
            return SKIP
        try:
            constraints = self._constraints(pod, DO_NOT_SCHEDULE)
        except ValueError:
            return QUEUE
        if old is not None and new is not None:
            return _label_change(old, new, constraints)
        changed = new if new is not None else old
        assert changed is not None
        return QUEUE if _any_selects(constraints, changed.labels) else SKIP

    def after_node_change(self, pod: Pod, old: Node | None, new: Node | None) -> QueueingHint:
        try:
            constraints = self._constraints(pod, DO_NOT_SCHEDULE)
        except ValueError:
            return QUEUE
        old_ok = old is not None and _keys_present(old.labels, constraints)
        new_ok = new is not None and _keys_present(new.labels, constraints)
        if old is not None and new is not None:
            if old_ok != new_ok:
                return QUEUE
            keys_moved = any(old.labels.get(c.topology_key) != new.labels.get(c.topology_key) for c in constraints)
            if new_ok and (keys_moved or old.taints != new.taints):
                return QUEUE
            return SKIP
        if new is not None:
            return QUEUE if new_ok else SKIP
        return QUEUE if old_ok else SKIP
