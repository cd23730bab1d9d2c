"""What `kubeberth capacity` is asked (Options, as simulate's flags) and what it answers (Answer)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...framework.tie_break import RESERVOIR

DEFAULT_MAX = 100_000
EXACT, PER_NODE = "exact", "per-node"


@dataclass
class Answer:
    """The answer (the JSON keys are `as_dict`'s)."""

    total: int
    per_node: dict[str, int]
    stopped_by: str | None  # the diagnosis of copy total+1; None when --max stopped the count
    path: str = EXACT
    per_node_limit: dict[str, int | None] | None = None  # the per-node path's count of each node (None: no end)
    not_per_node: str = ""  # why the per-node path was not taken
    victims: list[str] = field(default_factory=list)
    pending_left_out: int = 0
    max_reached: bool = False
    verified: bool | None = None  # --verify (and --allow-preemption): simulate of total+1 copies agrees

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"total": self.total, "perNode": dict(sorted(self.per_node.items())),
                               "stoppedBy": self.stopped_by, "path": self.path}
        if self.per_node_limit is not None:
            out["perNodeLimit"] = dict(sorted(self.per_node_limit.items()))
        if self.not_per_node:
            out["notPerNode"] = self.not_per_node
        if self.victims:
            out["victims"] = self.victims
        out["pendingLeftOut"] = self.pending_left_out
        out["maxReached"] = self.max_reached
        if self.verified is not None:
            out["verified"] = self.verified
        return out


@dataclass
class Options:
    """The run's choices (as simulate's flags)."""

    seed: int = 0
    tie_break: str = RESERVOIR
    percentage_of_nodes_to_score: int = 0
    allow_preemption: bool = False
    max_copies: int = DEFAULT_MAX
    per_node: bool = True  # False: the exact path always (the tests compare the two)
    verify: bool = False  # check the answer with simulate of total+1 copies
