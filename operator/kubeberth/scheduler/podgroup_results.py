"""A pod group's attempt, pod by pod: what each pod of the group came to (upstream's
algorithmResult) and the group's own statuses, shared by the pod-group cycle
(schedule_one_podgroup.py), its placements (schedule_one_placement.py), its preemption
(podgroup_preemption.py) and its outcome (podgroup_outcome.py)."""

from __future__ import annotations

from ..framework import CycleState, FitError, Status
from ..framework.status import Code
from ..framework.types import QueuedPodInfo

SCHEDULED, UNSCHEDULABLE, ERROR = "scheduled", "unschedulable", "error"
WAITING_ON_PREEMPTION = "waiting_on_preemption"

# upstream's errPodGroupUnschedulable (what a status carrying it says as an error)
ERR_POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"


def as_error(status: Status | None) -> str:
    """upstream's status.AsError() text: the group's error when the status carries it (kubeberth
    keeps it as the first reason), else the message."""
    if status is None:
        return "<nil>"
    if status.reasons and status.reasons[0] == ERR_POD_GROUP_UNSCHEDULABLE:
        return ERR_POD_GROUP_UNSCHEDULABLE
    return status.message()


class PodResult:
    """One pod's part of the attempt (upstream's algorithmResult)."""

    __slots__ = ("fit", "host", "q", "state", "status")

    def __init__(self, q: QueuedPodInfo, state: CycleState, status: Status | None, host: str = "",
                 fit: FitError | None = None) -> None:
        self.q = q
        self.state = state
        self.status = status  # None: placed
        self.host = host
        self.fit = fit


def result_of(status: Status | None) -> str:
    if status is None or status.is_success():
        return SCHEDULED
    return UNSCHEDULABLE if status.is_rejected() else ERROR


def group_rejection(*reasons: str) -> Status:
    """Unschedulable with upstream's errPodGroupUnschedulable before the reasons."""
    return Status(Code.UNSCHEDULABLE, ERR_POD_GROUP_UNSCHEDULABLE, *reasons)
