"""What became of each pod (simulate reads it), and small helpers of the pod's own fields."""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..model import Pod

if TYPE_CHECKING:
    from .explain import Explanation

log = logging.getLogger("kubeberth.scheduler")


# Record statuses (simulate's contract uses the same words).
PENDING = "Pending"
SCHEDULED = "Scheduled"
UNSCHEDULABLE = "Unschedulable"
EXISTING = "Existing"
EVICTED = "Evicted"
IGNORED = "Ignored"
DELETED = "Deleted"

EVENT_MESSAGE_LIMIT = 1024  # upstream's validation.NoteLengthLimit for event messages
DEFAULT_MAX_ATTEMPTS = 10   # run_until_idle: attempts before a pod is left unschedulable
KEPT_EXPLANATIONS = 5       # an explained pod keeps its first attempt's explanation and the latest ones


class PodRecord:
    """What became of one pod. `status` is Pending, Scheduled, Unschedulable, Existing,
    Evicted, Ignored or Deleted; `error` marks a pod that could not be read (bad object,
    unknown PriorityClass)."""

    __slots__ = ("attempts", "error", "explanations", "key", "message", "node", "nominated_node",
                 "preempted_by", "status", "uid", "victims")

    def __init__(self, key: str, uid: str = "", status: str = PENDING) -> None:
        self.key = key
        self.uid = uid
        self.status = status
        self.node = ""
        self.nominated_node = ""
        self.victims: list[str] = []
        self.message = ""
        self.attempts = 0
        self.preempted_by = ""
        self.error = False
        self.explanations: list[Explanation] = []  # only for a pod someone asked to explain

    def add_explanation(self, x: Explanation) -> None:
        self.explanations.append(x)
        if len(self.explanations) > KEPT_EXPLANATIONS:
            del self.explanations[1]

    def __repr__(self) -> str:
        return f"PodRecord({self.key}: {self.status} node={self.node!r} msg={self.message!r})"


def raw_key(raw: Mapping[str, Any]) -> str:
    meta = raw.get("metadata") or {} if isinstance(raw, Mapping) else {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


def raw_uid(raw: Mapping[str, Any]) -> str:
    meta = raw.get("metadata") or {} if isinstance(raw, Mapping) else {}
    return str(meta.get("uid") or raw_key(raw))


def pod_on_node(pod: Pod, node_name: str) -> Pod:
    """A copy of `pod` with spec.nodeName set (upstream's assumed pod)."""
    c = copy.copy(pod)
    spec = {**pod.spec, "nodeName": node_name}
    c.raw = {**pod.raw, "spec": spec}
    c.spec = spec
    c.node_name = node_name
    return c


def truncate_message(message: str) -> str:
    if len(message) <= EVENT_MESSAGE_LIMIT:
        return message
    suffix = " ..."
    return message[:EVENT_MESSAGE_LIMIT - len(suffix)] + suffix
