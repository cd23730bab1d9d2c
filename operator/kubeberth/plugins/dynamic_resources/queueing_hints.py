"""DynamicResources' registrations and QueueingHints (upstream's EventsToRegister,
isSchedulableAfterClaimChange and isSchedulableAfterTargetPodUpdate)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...framework import events as ev
from ...framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from ...model import Pod
from .claims import ClaimRefError

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP

# The claims a pod names, as PreEnqueue reads them; raises ClaimRefError when one is missing,
# being deleted or not made for the pod.
PodClaims = Callable[[Pod], list[Mapping[str, Any]]]


def _uid(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def _allocation(obj: Mapping[str, Any]) -> Any:
    return (obj.get("status") or {}).get("allocation")


def after_claim_change(pod_claims: PodClaims, pod: Pod, old: Mapping[str, Any] | None,
                       new: Mapping[str, Any] | None) -> QueueingHint:
    if new is None:
        # A deleted claim frees its devices only if it had some.
        return SKIP if old is None or _allocation(old) is None else QUEUE
    try:
        uses = any(_uid(c) == _uid(new) for c in pod_claims(pod))
    except ClaimRefError:
        return SKIP  # the pod still lacks one of its claims: PreEnqueue keeps it out anyway
    if old is not None and _allocation(old) is not None and _allocation(new) is None:
        return QUEUE  # devices were given back
    if not uses:
        return SKIP
    if old is None:
        return QUEUE
    return SKIP if (old.get("status") or {}) == (new.get("status") or {}) else QUEUE


def after_target_pod_update(pod_claims: PodClaims, pod: Pod, old: Pod, new: Pod) -> QueueingHint:
    """The pod's status names a claim the controller generated: it may pass PreEnqueue now."""
    try:
        pod_claims(new)
    except ClaimRefError:
        return SKIP
    return QUEUE


def registrations(pod_claims: PodClaims) -> list[ClusterEvent | ClusterEventWithHint]:
    return [
        ClusterEvent(ev.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE),
        ClusterEventWithHint(ClusterEvent(ev.RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE | ActionType.DELETE),
                             lambda pod, old, new: after_claim_change(pod_claims, pod, old, new)),
        ClusterEventWithHint(ClusterEvent(ev.TARGET_POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
                             lambda pod, old, new: after_target_pod_update(pod_claims, pod, old, new)),
        ClusterEvent(ev.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE),
        ClusterEvent(ev.RESOURCE_SLICE, ActionType.ADD | ActionType.UPDATE),
    ]
