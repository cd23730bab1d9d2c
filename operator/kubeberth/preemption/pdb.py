"""PodDisruptionBudgets as preemption reads them: which victims would break one."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..model import LabelSelector, ModelError, Pod


class PDB:
    """The parts of a policy/v1 PodDisruptionBudget that preemption uses.

    `selector` is None when it can match nothing: absent, empty (upstream: "A PDB
    with a nil or empty selector matches nothing") or invalid.
    """

    __slots__ = ("disrupted_pods", "disruptions_allowed", "name", "namespace", "selector")

    def __init__(self, namespace: str, name: str, selector: LabelSelector | None,
                 disruptions_allowed: int, disrupted_pods: Iterable[str] = ()) -> None:
        self.namespace = namespace
        self.name = name
        self.selector = selector
        self.disruptions_allowed = disruptions_allowed
        self.disrupted_pods = frozenset(disrupted_pods)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> PDB:
        meta = raw.get("metadata") or {}
        spec = raw.get("spec") or {}
        status = raw.get("status") or {}
        selector: LabelSelector | None
        try:
            selector = LabelSelector.from_dict(spec.get("selector")) if spec.get("selector") else None
        except ModelError:
            selector = None
        if selector is not None and selector.is_empty():
            selector = None
        try:
            allowed = int(status.get("disruptionsAllowed") or 0)
        except (TypeError, ValueError):
            allowed = 0
        disrupted = status.get("disruptedPods") or {}
        return cls(str(meta.get("namespace") or "default"), str(meta.get("name") or ""), selector,
                   allowed, disrupted.keys() if isinstance(disrupted, Mapping) else ())

    def matches(self, pod: Pod) -> bool:
        return (self.selector is not None and pod.namespace == self.namespace
                and self.selector.matches(pod.labels))

    def __repr__(self) -> str:
        return f"PDB({self.namespace}/{self.name}, allowed={self.disruptions_allowed})"


def list_pdbs(objects: Any) -> list[PDB]:
    """Every PodDisruptionBudget of the object store, parsed."""
    if objects is None:
        return []
    return [PDB.from_dict(o) for o in objects.list("PodDisruptionBudget")]


def filter_pods_with_pdb_violation(pods: Sequence[Pod], pdbs: Sequence[PDB]) -> tuple[list[Pod], list[Pod]]:
    """Split `pods` (order kept) into those whose eviction would violate a PDB and the rest.

    As upstream: each matching PDB's budget is spent in order; a pod already in a
    PDB's disruptedPods has been counted by the API server and spends nothing. As v1.37.2's
    FilterVictimsWithPDBViolation, a pod stops at the first budget it breaks: the PDBs after it
    are not spent by that pod.
    """
    if not pdbs:
        return [], list(pods)
    allowed = [p.disruptions_allowed for p in pdbs]
    violating: list[Pod] = []
    non_violating: list[Pod] = []
    for pod in pods:
        violated = False
        if pod.labels:
            for i, pdb in enumerate(pdbs):
                if not pdb.matches(pod):
                    continue
                if pod.name in pdb.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
                    break
        (violating if violated else non_violating).append(pod)
    return violating, non_violating
