"""What a pod group's last attempt did, pod by pod (simulate's groups, `--explain` of a group's pods).

The pod-group cycle (schedule_one_podgroup.py) tries the group's queued pods one after the other and
stops as soon as GangScheduling says `minCount` cannot be reached. `GroupAttempt` keeps, per group,
the latest attempt: the policy, how many of its pods were scheduled before it, each pod tried (where
it was placed, or the reason it fits nowhere) and those never tried, and the group's result and
message. `to_dict` is the `podGroup` section of an explained group pod's attempt (README, "Workloads").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model import PodGroup

GANG, BASIC = "gang", "basic"


@dataclass
class PodTry:
    pod: str
    node: str = ""      # where the attempt placed it ("" when it fits nowhere, or was not tried)
    message: str = ""   # why it fits nowhere (its FitError or error)
    tried: bool = True  # False: the attempt stopped before this pod

    def to_dict(self) -> dict[str, Any]:
        return {"pod": self.pod, "tried": self.tried, "node": self.node or None, "message": self.message}


@dataclass
class GroupAttempt:
    group: str
    policy: str
    min_count: int | None
    attempt: int
    scheduled_before: int                     # bound or assumed before this attempt
    pods: list[PodTry] = field(default_factory=list)
    result: str = ""                          # scheduled | unschedulable | error
    message: str = ""                         # the group's status (the condition's message)

    def placed(self) -> int:
        return sum(1 for p in self.pods if p.node)

    def summary(self) -> str:
        """One line: what the attempt found."""
        tried = sum(1 for p in self.pods if p.tried)
        quorum = f"minCount {self.min_count}" if self.min_count is not None else "no quorum (basic)"
        line = (f"pod group {self.group} ({quorum}): attempt {self.attempt} tried {tried} of {len(self.pods)} "
                f"queued pod(s), placed {self.placed()}, {self.scheduled_before} scheduled before: {self.result}")
        return line + (f": {self.message}" if self.message else "")

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.group, "policy": self.policy, "minCount": self.min_count, "attempt": self.attempt,
                "scheduledBefore": self.scheduled_before, "result": self.result, "message": self.message,
                "pods": [p.to_dict() for p in self.pods]}


def begin(pg: PodGroup, attempt: int, scheduled_before: int, pods: Sequence[str]) -> GroupAttempt:
    return GroupAttempt(pg.key, GANG if pg.is_gang else BASIC, pg.min_count, attempt, scheduled_before,
                        [PodTry(p, tried=False) for p in pods])
