"""What preemption notes for an explained pod (the rest of an explanation is captured by
scheduler/explain.py, which puts these notes into the CycleState; preemption, below the scheduler,
reads them from there). Nothing is noted for a pod nobody asked to explain."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .cycle_state import CycleState
from .status import Status
from .victims import Candidate

PREEMPTION_NOTES_KEY = "kubeberth.io/explain-preemption"


@dataclass
class PreemptionCandidate:
    node: str
    victims: list[str]
    pdb_violations: int


@dataclass
class PreemptionNotes:
    """Candidates of the dry run with their victims, the nodes it rejected and why, the pick."""

    candidates: list[PreemptionCandidate] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)
    chosen: str = ""
    chosen_victims: list[str] = field(default_factory=list)

    def note_candidates(self, candidates: Iterable[Candidate], rejected: Iterable[tuple[str, Status]]) -> None:
        self.candidates = [PreemptionCandidate(c.name, [p.key for p in c.victims.pods], c.victims.num_pdb_violations)
                           for c in candidates]
        self.rejected = {name: status.message() or status.code.upstream_name for name, status in rejected}

    def note_chosen(self, candidate: Candidate) -> None:
        self.chosen = candidate.name
        self.chosen_victims = [p.key for p in candidate.victims.pods]


def preemption_notes(state: CycleState) -> PreemptionNotes | None:
    """The notes to fill for this cycle's pod, None when it is not explained."""
    notes = state.get(PREEMPTION_NOTES_KEY)
    return notes if isinstance(notes, PreemptionNotes) else None
