"""The parts every kind of suggestion shares: the units to help (an unschedulable pod, or a gang
whose pods are not all placed), the diagnosis read from the baseline's explanations, and the
`Rerun` that verifies a change by simulating the edited input again with the same seed, profiles,
plugins, tie-break rule and feature gates."""

from __future__ import annotations

import copy
import io
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...framework.registry import Registry
from ...framework.tie_break import RESERVOIR
from ...scheduler import EXISTING, SCHEDULED, UNSCHEDULABLE
from ..engine import run_simulation
from ..inputs import object_key
from ..outcomes import PodOutcome

PLACED = (EXISTING, SCHEDULED)

# Filter plugins whose verdict on a node depends only on the node and the pod (not on the pods
# bound there): a fresh copy of a node one of them rejects is rejected as well.
STATIC_PLUGINS = frozenset({"NodeName", "NodeUnschedulable", "TaintToleration", "NodeAffinity", "VolumeZone",
                            "VolumeBinding", "NodeDeclaredFeatures"})

# Re-simulations allowed per unit (pod or gang), over every kind of suggestion.
DEFAULT_BUDGET = 48


def group_name(obj: Mapping[str, Any]) -> str | None:
    """The PodGroup a pod names (`spec.schedulingGroup.podGroupName`), as NAMESPACE/NAME."""
    sg = (obj.get("spec") or {}).get("schedulingGroup") or {}
    name = sg.get("podGroupName") if isinstance(sg, Mapping) else None
    if not name:
        return None
    return f"{(obj.get('metadata') or {}).get('namespace') or 'default'}/{name}"


@dataclass
class Unit:
    """What one suggestion must place: one pod, or every pending pod of a gang (`group`)."""

    key: str                    # the pod's key, or the PodGroup's
    pods: list[str]             # the pending pods that must all be placed
    group: str | None = None
    # node -> the filter plugins that rejected the unit's (first) pod there, from the baseline's
    # explanation; empty when the pod was never tried.
    rejected: dict[str, set[str]] = field(default_factory=dict)

    @property
    def namespace(self) -> str:
        return self.key.split("/", 1)[0]

    def failing_plugins(self) -> set[str]:
        """Every plugin that rejected the pod on some node."""
        return {p for ps in self.rejected.values() for p in ps}


def units(objects: Sequence[Mapping[str, Any]], outcomes: Sequence[PodOutcome]) -> list[Unit]:
    """The units left unschedulable, in input order: a pod of no group that ended Unschedulable,
    and each PodGroup of which some pending pod did (all its pending pods to be placed)."""
    status = {o.pod: o.status for o in outcomes}
    pending_of: dict[str, list[str]] = {}
    group_of: dict[str, str] = {}
    for obj in objects:
        if obj.get("kind") != "Pod" or (obj.get("spec") or {}).get("nodeName"):
            continue
        key = object_key(obj)
        g = group_name(obj)
        if g is not None:
            group_of[key] = g
            pending_of.setdefault(g, []).append(key)
    out: list[Unit] = []
    seen: set[str] = set()
    for o in outcomes:
        if o.status != UNSCHEDULABLE:
            continue
        g = group_of.get(o.pod)
        if g is None:
            out.append(Unit(o.pod, [o.pod]))
        elif g not in seen:
            seen.add(g)
            out.append(Unit(g, [k for k in pending_of[g] if k in status], group=g))
    return out


def read_diagnosis(unit: Unit, explanations: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
    """Fill `unit.rejected` from the latest explained attempt of its first pod that has one."""
    for key in unit.pods:
        attempts = explanations.get(key) or ()
        if not attempts:
            continue
        last = attempts[-1]
        for nd in (last.get("filter") or {}).get("nodes") or ():
            failed = {p for p, v in (nd.get("plugins") or {}).items() if v != "pass"}
            if not failed and nd.get("plugin"):
                failed = {str(nd["plugin"])}
            if not failed and nd.get("verdict") == EXCLUDED_BY_PREFILTER:
                failed = _restricting(last, str(nd.get("reason") or ""))
            if failed:
                unit.rejected[str(nd["node"])] = failed
        if unit.rejected:
            return


EXCLUDED_BY_PREFILTER = "ExcludedByPreFilter"


def _restricting(attempt: Mapping[str, Any], reason: str) -> set[str]:
    """The PreFilter plugins that left a node out of an attempt (NodeAffinity's matchFields on
    metadata.name, say): the explanation's `preFilter.restrictedBy`, else the plugins the node's
    reason names ("didn't satisfy plugin(s) [NodeAffinity]")."""
    by = (attempt.get("preFilter") or {}).get("restrictedBy")
    if isinstance(by, str) and by:
        return {by}
    if isinstance(by, list) and by:
        return {str(p) for p in by}
    if "[" in reason and "]" in reason:
        return set(reason.rsplit("[", 1)[1].split("]", 1)[0].split())
    return set()


@dataclass
class Verified:
    """A change that placed the unit: where its pods went, and what else changed."""

    placed: dict[str, str]                                  # pod -> node
    displaced: list[str] = field(default_factory=list)      # placed before, not now (not removed by the change)
    also_placed: list[str] = field(default_factory=list)    # other pods unschedulable before, placed now
    victims: list[str] = field(default_factory=list)        # preempted by the unit's pods


class Rerun:
    """Simulates edited copies of one input as simulate did (same seed, percentage, tie-break,
    plugins; the caller keeps the feature gates in force), counting the runs against a budget."""

    def __init__(self, objects: Sequence[Mapping[str, Any]], baseline: Sequence[PodOutcome], *, seed: int = 0,
                 percentage_of_nodes_to_score: int = 0, registry: Registry | None = None,
                 tie_break: str = RESERVOIR) -> None:
        self.objects = [copy.deepcopy(dict(o)) for o in objects]
        self.baseline = {o.pod: o for o in baseline}
        self.seed = seed
        self.percentage = percentage_of_nodes_to_score
        self.registry = registry
        self.tie_break = tie_break
        self.runs = 0
        self.budget = DEFAULT_BUDGET
        self.last: list[PodOutcome] = []     # the outcomes of the latest run

    def left(self) -> int:
        return self.budget

    def run(self, objects: Sequence[Mapping[str, Any]], explain: Sequence[str] | None = None
            ) -> tuple[list[PodOutcome], Any]:
        self.runs += 1
        self.budget -= 1
        outcomes, rest = run_simulation([copy.deepcopy(dict(o)) for o in objects], seed=self.seed,
                                        warn=io.StringIO(), percentage_of_nodes_to_score=self.percentage,
                                        explain=explain, registry=self.registry, tie_break=self.tie_break)
        self.last = outcomes
        return outcomes, rest

    def edited(self, edit: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> list[dict[str, Any]]:
        """A fresh copy of the input, passed through `edit`."""
        return edit(copy.deepcopy(self.objects))

    def verify(self, unit: Unit, objects: Sequence[Mapping[str, Any]], removed: Sequence[str] = ()
               ) -> Verified | None:
        """Run `objects`; the outcome when every pod of `unit` is then placed, else None. None as
        well once the budget is spent."""
        if self.budget <= 0:
            return None
        outcomes, _ = self.run(objects)
        got = {o.pod: o for o in outcomes}
        placed = {}
        for key in unit.pods:
            o = got.get(key)
            if o is None or o.status not in PLACED or not o.node:
                return None
            placed[key] = o.node
        gone = set(removed)
        displaced = [k for k, b in self.baseline.items()
                     if b.status in PLACED and k not in gone and (k not in got or got[k].status not in PLACED)]
        also = [k for k, b in self.baseline.items()
                if b.status == UNSCHEDULABLE and k not in placed and k in got and got[k].status in PLACED]
        victims = sorted({v for k in unit.pods for v in got[k].victims})
        return Verified(placed, displaced, also, victims)


def result(kind: str, change: dict[str, Any], v: Verified, changes: int) -> dict[str, Any]:
    """A verified suggestion as printed: `kind`, the change's fields, what it places and what else
    it changes. `changes` counts the edits (nodes added, pods evicted, resources lowered, ...)."""
    out: dict[str, Any] = {"kind": kind, **change, "places": [{"pod": k, "node": n} for k, n in v.placed.items()]}
    out["displaced"] = list(v.displaced)
    out["alsoPlaces"] = list(v.also_placed)
    out["changes"] = changes
    out["verified"] = True
    return out


def pods_by_key(objects: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {object_key(o): o for o in objects if o.get("kind") == "Pod"}


Edit = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
# A candidate change: its printed fields (with `kind`) and the edit making it on a copy of the input.
Base = tuple[dict[str, Any], Edit]


def with_new_pods(unit: Unit, objects: Sequence[Mapping[str, Any]]) -> Unit:
    """`unit` on an edited input: a gang's pending pods there (the pods a change added too)."""
    if unit.group is None:
        return Unit(unit.key, list(unit.pods), None)
    pods = [object_key(o) for o in objects if o.get("kind") == "Pod" and group_name(o) == unit.group
            and not (o.get("spec") or {}).get("nodeName")]
    return Unit(unit.key, pods or list(unit.pods), unit.group)


def changes_of(change: Mapping[str, Any]) -> int:
    """The edits a change makes: pods added, nodes added, pods evicted, terms relaxed, requests
    lowered, a Combined change's steps' sum; else 1."""
    kind = change.get("kind")
    if kind == "Combined":
        return sum(changes_of(s) for s in change.get("steps") or ())
    if kind in ("AddPods", "AddNodes"):
        return int(change["count"])
    return len(change.get("evict") or change.get("terms") or change.get("requests") or [change])


def verify_change(rerun: Rerun, unit: Unit, change: Mapping[str, Any], edit: Edit,
                  removed: Sequence[str] = ()) -> dict[str, Any] | None:
    """The input edited by `edit`, simulated again: the verified suggestion of `change` (its `kind`
    and fields) when every pending pod of the unit (those the edit added too) is then placed,
    else None (None as well once the budget is spent). `removed`: pods the edit deletes."""
    if rerun.left() <= 0:
        return None
    objects = rerun.edited(edit)
    v = rerun.verify(with_new_pods(unit, objects), objects, removed=removed)
    if v is None:
        return None
    return result(str(change["kind"]), {k: w for k, w in change.items() if k != "kind"}, v, changes_of(change))


def first_placing(rerun: Rerun, unit: Unit, bases: Sequence[Base]) -> list[dict[str, Any]]:
    """The first of `bases` whose change places the unit, verified; [] when none does."""
    for change, edit in bases:
        if rerun.left() <= 0:
            break
        found = verify_change(rerun, unit, change, edit)
        if found is not None:
            return [found]
    return []


def smallest(rerun: Rerun, attempt: Callable[[int], Any], first: int, last: int) -> int | None:
    """The smallest n in [first, last] for which `attempt(n)` (a verification, monotone in n) is not
    None: `first` tried, then `last`, then a binary search between, while the budget lasts;
    None when `last` fails too."""
    if attempt(first) is not None:
        return first
    if last <= first or attempt(last) is None:
        return None
    lo, hi = first, last  # lo fails, hi places
    while hi - lo > 1 and rerun.left() > 0:
        mid = (lo + hi) // 2
        if attempt(mid) is not None:
            hi = mid
        else:
            lo = mid
    return hi
