"""InterPodAffinity's QueueingHints (upstream's isSchedulableAfter... functions of plugin.go):
which assigned-pod and node changes may let a pod it rejected in."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ...framework import (
    ASSIGNED_POD,
    NODE,
    TARGET_POD,
    ActionType,
    AffinityTerm,
    ClusterEvent,
    ClusterEventWithHint,
    Node,
    Pod,
    QueueingHint,
    pod_affinity_terms,
)

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def _no_namespace_labels(namespace: str) -> Mapping[str, str]:
    # Upstream's hints match terms without namespace labels: a namespaceSelector matches only
    # when it selects everything.
    return {}


def _all_match(terms: Sequence[AffinityTerm], pod: Pod) -> bool:
    return bool(terms) and all(t.matches(pod, _no_namespace_labels) for t in terms)


def _any_match(terms: Sequence[AffinityTerm], pod: Pod) -> bool:
    return any(t.matches(pod, _no_namespace_labels) for t in terms)


def _placed(pod: Pod) -> bool:
    return bool(pod.node_name or pod.nominated_node_name)


def after_assigned_pod_change(pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
    """An assigned pod added, relabelled or deleted: Queue when it now satisfies the pod's
    affinity, or no longer (or, deleted, no more) stands against its anti-affinity."""
    if (new is not None and not _placed(new)) or (old is not None and not _placed(old)):
        return SKIP
    terms = pod_affinity_terms(pod)
    if terms.error:
        return QUEUE
    affinity, anti = terms.required_affinity, terms.required_anti
    if old is not None and new is not None:
        if not _all_match(affinity, old) and _all_match(affinity, new):
            return QUEUE
        if _any_match(anti, old) and not _any_match(anti, new):
            return QUEUE
        return SKIP
    if new is not None:
        return QUEUE if _all_match(affinity, new) else SKIP
    assert old is not None
    if _any_match(anti, old):
        return QUEUE
    return QUEUE if _any_match(pod_affinity_terms(old).required_anti, pod) else SKIP


def after_target_pod_label_update(pod: Pod, old: Pod, new: Pod) -> QueueingHint:
    """Another pod's anti-affinity may have matched the old labels and not the new ones."""
    return QUEUE


def after_node_change(pod: Pod, old: Node | None, new: Node) -> QueueingHint:
    """A node gained a topology key of the pod's affinity, or moved domain; or a node was added,
    lost a topology key of its anti-affinity, or moved domain."""
    terms = pod_affinity_terms(pod)
    if terms.error:
        return QUEUE
    for t in terms.required_affinity:
        key = t.topology_key
        if old is None:
            if key in new.labels:
                return QUEUE
            continue
        if key in new.labels and (key not in old.labels or old.labels[key] != new.labels[key]):
            return QUEUE
    for t in terms.required_anti:
        if old is None:
            return QUEUE
        key = t.topology_key
        if key in old.labels and (key not in new.labels or old.labels[key] != new.labels[key]):
            return QUEUE
    return SKIP


def registrations() -> list[ClusterEvent | ClusterEventWithHint]:
    return [
        ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL
                                          | ActionType.DELETE), after_assigned_pod_change),
        ClusterEventWithHint(ClusterEvent(TARGET_POD, ActionType.UPDATE_POD_LABEL), after_target_pod_label_update),
        ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL), after_node_change),
    ]
