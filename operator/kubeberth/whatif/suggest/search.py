"""The search: for each unit left unschedulable, the candidates of every kind, each verified by a
re-simulation, ranked, at most `limit` kept.

Ranking (least disruption first, then the fewest changes): the key is
1. the pods disrupted: pods placed in the baseline that the change leaves unplaced (preempted or
   displaced), plus the pods it evicts itself (twice those whose eviction a PDB blocks);
2. the kind, in this order: AddPods (a gang short of pods: the missing ones created), Relax,
   LowerRequests (the pod's own spec only), Uncordon (a cordoned node made schedulable), AddNodes (capacity
   bought, nothing disturbed), RaisePriority, Evict, Combined (two changes: combine.py, searched
   only for a unit no single change places, with half a budget more; then, when that found none,
   the changes on one node, on_node.py, with half a budget again; the two in the other order
   when the first candidate node needs a change of its own, node_change.py: RaiseVolumeLimit and
   AddNodeResource, ranked after Uncordon);
3. the number of edits (`changes`: nodes added, pods evicted, resources lowered; 1 for the rest);
4. the order found.

Cost: the kinds run in the order above, each under a share of the unit's re-simulation budget
(`budget`, core.DEFAULT_BUDGET); the baseline is run once more with the unschedulable pods
explained, for the diagnosis that bounds the candidates."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...framework.registry import Registry
from ...framework.tie_break import RESERVOIR
from ..outcomes import PodOutcome
from .combine import combined
from .core import DEFAULT_BUDGET, Rerun, Unit, read_diagnosis, units
from .evict import evict, raise_priority
from .gangs import add_gang_pods, relax_min_count
from .nodes import add_nodes
from .on_node import node_side_first, on_nodes
from .relax import relax
from .relax_node import relax_for_node
from .requests import lower_requests, lower_to_largest
from .uncordon import uncordon

DEFAULT_LIMIT = 5
KIND_ORDER = ("AddPods", "Relax", "LowerRequests", "Uncordon", "RaiseVolumeLimit", "AddNodeResource", "AddNodes",
              "RaisePriority", "Evict", "RelaxProfile", "Combined")
Finder = Callable[[Rerun, Unit], list[dict[str, Any]]]
# Each kind's share of the budget (the rest of what the previous kinds left is added to it).
FINDERS: tuple[tuple[Finder, float], ...] = ((add_gang_pods, 0.0), (relax_min_count, 0.0), (relax, 0.2),
                                             (relax_for_node, 0.05), (lower_requests, 0.1), (lower_to_largest, 0.0),
                                             (uncordon, 0.0), (add_nodes, 0.25), (raise_priority, 0.15), (evict, 0.25))

# The second steps of combine.py's combinations, in the order tried.
COMBINED_FINDERS: list[Finder] = [relax, lower_requests, uncordon, add_nodes, evict, raise_priority,
                                  lambda r, u: on_nodes(r, u, profile=False)]

# A finder skipped when an earlier one already found a suggestion of this kind.
AFTER: dict[Finder, str] = {relax_for_node: "Relax", lower_to_largest: "LowerRequests"}


@dataclass
class UnitSuggestions:
    """One unit's suggestions, ranked, and what the search cost."""

    unit: Unit
    message: str
    suggestions: list[dict[str, Any]] = field(default_factory=list)
    runs: int = 0
    seconds: float = 0.0
    # A kind's search that failed (an edit the model refused, say): "Kind: error"; the others go on.
    errors: list[str] = field(default_factory=list)


def disruption(s: Mapping[str, Any]) -> int:
    """Pods the change leaves unplaced or evicts; an eviction a PodDisruptionBudget blocks counts twice."""
    evicted = s.get("evict") or () if s["kind"] == "Evict" else ()
    return len(s.get("displaced") or ()) + len(evicted) + sum(1 for e in evicted if e.get("pdbBlocks"))


def rank(found: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The suggestions in the documented order (see the module's doc)."""
    keyed = [(disruption(s), KIND_ORDER.index(s["kind"]), int(s.get("changes") or 1), i, s)
             for i, s in enumerate(found)]
    return [k[-1] for k in sorted(keyed, key=lambda k: k[:4])]


def suggest(objects: Sequence[Mapping[str, Any]], outcomes: Sequence[PodOutcome], *, seed: int = 0,
            percentage_of_nodes_to_score: int = 0, registry: Registry | None = None, tie_break: str = RESERVOIR,
            limit: int = DEFAULT_LIMIT, budget: int = DEFAULT_BUDGET,
            pods: Collection[str] | None = None) -> list[UnitSuggestions]:
    """The ranked, verified suggestions of every unit (pod or gang) `outcomes` leaves unschedulable.
    `objects` and the options are simulate's own (the feature gates in force are the process's,
    as for simulate); `limit`: suggestions kept per unit; `budget`: re-simulations per unit;
    `pods`: only the units of these pods (None: every one)."""
    todo = [u for u in units(objects, outcomes) if pods is None or any(k in pods for k in u.pods)]
    if not todo:
        return []
    rerun = Rerun(objects, outcomes, seed=seed, percentage_of_nodes_to_score=percentage_of_nodes_to_score,
                  registry=registry, tie_break=tie_break)
    explained, _ = rerun.run(rerun.objects, explain=[k for u in todo for k in u.pods])
    explanations = {o.pod: o.explanations for o in explained}
    messages = {o.pod: o.message for o in outcomes}
    out = []
    for unit in todo:
        read_diagnosis(unit, explanations)
        start, runs = time.perf_counter(), rerun.runs
        found: list[dict[str, Any]] = []
        errors: list[str] = []
        spare = 0
        # A gang never tried (short of pods, or of mixed priorities): only the gang's own changes
        # can place it alone; the rest of the budget goes to the combinations.
        blocked = unit.group is not None and not unit.rejected
        for finder, share in FINDERS:
            rerun.budget = max(1, int(budget * share)) + spare
            if blocked and finder not in (add_gang_pods, relax_min_count):
                spare = rerun.budget
                continue
            after = AFTER.get(finder)
            if after is None or not any(s["kind"] == after for s in found):
                found += _guarded(finder, rerun, unit, errors)
            spare = max(0, rerun.budget)
        if not found:
            # The changes on one node first when the node needs a change of its own (node_change.py).
            late: list[Finder] = [lambda r, u: combined(r, u, COMBINED_FINDERS), on_nodes]
            if node_side_first(rerun, unit):
                late.reverse()
            rerun.budget = max(rerun.budget, budget // 2)
            found = _guarded(late[0], rerun, unit, errors)
            if not found and unit.rejected:
                rerun.budget = budget // 2
                found = _guarded(late[1], rerun, unit, errors)
        message = next((messages[k] for k in unit.pods if messages.get(k)), "")
        out.append(UnitSuggestions(unit, message, rank(found)[:limit], rerun.runs - runs,
                                   time.perf_counter() - start, errors))
    return out


def _guarded(finder: Finder, rerun: Rerun, unit: Unit, errors: list[str]) -> list[dict[str, Any]]:
    """The finder's suggestions; [] and the error noted when it fails (one kind's failure never
    stops the others, nor simulate)."""
    try:
        return finder(rerun, unit)
    except Exception as exc:  # any failure of one search is reported, not raised
        errors.append(f"{getattr(finder, '__name__', 'search')}: {type(exc).__name__}: {exc}")
        return []


def by_pod(results: Sequence[UnitSuggestions]) -> dict[str, list[dict[str, Any]]]:
    """Pod key -> its unit's suggestions (each pod of a gang gets the gang's)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        for k in r.unit.pods:
            out[k] = r.suggestions
    return out


def attach(objects: Sequence[Mapping[str, Any]], outcomes: Sequence[PodOutcome], **options: Any
           ) -> list[UnitSuggestions]:
    """`suggest`, its results set as each outcome's `suggestions` (a gang's pods each get the
    gang's; [] for a pod with none or not unschedulable). `options`: suggest's."""
    results = suggest(objects, outcomes, **options)
    found = by_pod(results)
    for o in outcomes:
        o.suggestions = found.get(o.pod, [])
    return results
