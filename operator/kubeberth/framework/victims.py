"""Values of preemption shared by the framework, preemption and extenders: the victims on a node
and a candidate node."""

from __future__ import annotations

from collections.abc import Iterable

from ..model import Pod


class Victims:
    """Pods to evict on one node, most important first, and how many of them
    violate a PodDisruptionBudget (upstream's extenderv1.Victims).

    Also the value an extender receives and returns per node in
    `process_preemption(pod, {node: Victims})`.
    """

    __slots__ = ("num_pdb_violations", "pods")

    def __init__(self, pods: Iterable[Pod] = (), num_pdb_violations: int = 0) -> None:
        self.pods: list[Pod] = list(pods)
        self.num_pdb_violations = num_pdb_violations

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Victims):
            return NotImplemented
        return (self.num_pdb_violations == other.num_pdb_violations
                and [p.uid for p in self.pods] == [p.uid for p in other.pods])

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Victims({[p.key for p in self.pods]}, num_pdb_violations={self.num_pdb_violations})"


class Candidate:
    """A node the preemptor could be nominated to, with the victims to evict there."""

    __slots__ = ("name", "victims")

    def __init__(self, name: str, victims: Victims) -> None:
        self.name = name
        self.victims = victims

    def __repr__(self) -> str:
        return f"Candidate({self.name}, {self.victims!r})"


def candidates_to_victims_map(candidates: Iterable[Candidate]) -> dict[str, Victims]:
    """node name -> victims, in candidate order (one candidate per node)."""
    return {c.name: c.victims for c in candidates}
