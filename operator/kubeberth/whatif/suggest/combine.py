"""`Combined`: two (or more) changes, for a unit that no single change places (searched only then).

The first step is one of (at most MAX_BASES, in this order):
- the prerequisites, all made at once when there are two or more of those below marked (P):
  without each, nothing else places the unit (printed as the steps they are);
- (P) a gang of mixed priorities (the scheduler refuses it): the pods' priorityClassName set to
  their PodGroup's (`constraint: podGroupPriority`, `pods`: which);
- (P) a gang short of pods: its missing pods created (gangs.py, AddPods);
- a gang short of pods: its minCount lowered to the pods it has (it is then tried at all);
- (P) a pod no empty node holds: its requests lowered to the allocatable of the node closest to
  holding it (0 for a resource no node offers; requests.py);
- a gang: the answers on its candidate nodes together, without eviction (on_node.py);
- the cordoned node NodeUnschedulable rejected the pod on with the fewest other reasons, uncordoned;
- for the nodes with the fewest rejecting plugins (at most 2): every pod-side constraint that
  node fails, relaxed (relax_node.py).
On the input with the first step made, the baseline is explained again (a fresh diagnosis), and
the single-change kinds are searched there as for any unit; the first that places the unit is
the second step. When the first step alone places it, it is printed alone (as its own kind). The
verification is the second step's: its re-simulation ran on the input with both changes. A gang
never tried (of mixed priorities, short of pods) gets, after its prerequisites, the combinations
searched once more on the input they make (prerequisites, a first step, a second)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..inputs import object_key
from .core import Base, Rerun, Unit, changes_of, group_name, pods_by_key, read_diagnosis, result, with_new_pods
from .gangs import min_count_base, missing_pods_base
from .on_node import gang_bases
from .relax_node import pod_labels as _labels
from .relax_node import relax_edit, terms_for
from .requests import cut_change, cut_edit, largest_cuts
from .uncordon import uncordon_bases

MAX_BASES = 6
Finder = Callable[[Rerun, Unit], list[dict[str, Any]]]


def _align_priority(rerun: Rerun, unit: Unit) -> list[Base]:
    """A gang whose pods' PriorityClasses differ from its PodGroup's (the scheduler refuses it)."""
    group = next((o for o in rerun.objects if o.get("kind") == "PodGroup" and object_key(o) == unit.group), None)
    if unit.group is None or group is None:
        return []
    want = (group.get("spec") or {}).get("priorityClassName") or None
    pods = pods_by_key(rerun.objects)
    odd = [k for k in unit.pods if k in pods and ((pods[k].get("spec") or {}).get("priorityClassName") or None) != want]
    if not odd:
        return []

    def edit(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for o in objects:
            spec = o.get("spec") or {}
            if o.get("kind") == "Pod" and group_name(o) == unit.group and not spec.get("nodeName") and \
                    (spec.get("priorityClassName") or None) != want:
                spec.pop("priority", None)
                if want is None:
                    spec.pop("priorityClassName", None)
                else:
                    spec["priorityClassName"] = want
        return objects
    step = {"kind": "Relax", "constraint": "podGroupPriority", "path": "spec.priorityClassName", "pods": odd,
            "from": sorted({str((pods[k].get("spec") or {}).get("priorityClassName") or "") for k in odd}),
            "to": want}
    return [(step, edit)]


def _to_largest_node(rerun: Rerun, unit: Unit) -> list[Base]:
    cuts = largest_cuts(rerun, unit)
    if not cuts:
        return []
    return [({"kind": "LowerRequests", **cut_change(rerun, unit, cuts)}, cut_edit(unit, cuts))]


def _relax_nodes(rerun: Rerun, unit: Unit) -> list[Base]:
    pod = pods_by_key(rerun.objects).get(unit.pods[0])
    nodes = {str((o.get("metadata") or {}).get("name")): o for o in rerun.objects if o.get("kind") == "Node"}
    if pod is None:
        return []
    out: list[Base] = []
    seen: set[str] = set()
    for name in sorted((n for n in unit.rejected if n in nodes), key=lambda n: (len(unit.rejected[n]), n)):
        terms = terms_for(pod.get("spec") or {}, nodes[name], unit.rejected[name], _labels(pod))
        if not terms or repr(terms) in seen:
            continue
        seen.add(repr(terms))
        out.append(({"kind": "Relax", "terms": terms}, relax_edit(unit, terms)))
        if len(out) == 2:
            break
    return out


def _step(s: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in s.items() if k not in ("places", "displaced", "alsoPlaces", "changes", "verified")}


def _prerequisites(rerun: Rerun, unit: Unit) -> list[Base]:
    """The changes without which nothing else can place the unit (a gang of mixed priorities, a
    gang short of pods, a request no node can hold), all made at once when there are several: a
    gang short of pods once with its missing pods created, once with its minCount lowered."""
    out: list[Base] = []
    for short in (missing_pods_base(rerun, unit), min_count_base(rerun, unit)):
        must = [*_align_priority(rerun, unit), *short, *_to_largest_node(rerun, unit)]
        if len(must) < 2:
            continue

        def edit(objects: list[dict[str, Any]], must: list[Base] = must) -> list[dict[str, Any]]:
            for _, e in must:
                objects = e(objects)
            return objects
        out.append(({"kind": "Combined", "steps": [m for m, _ in must]}, edit))
    return out


def merged(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The steps, the LowerRequests ones made one (a request lowered twice: from the first `from`
    to the last `to`)."""
    out: list[dict[str, Any]] = []
    lower: dict[str, Any] | None = None
    for s in steps:
        if s.get("kind") != "LowerRequests":
            out.append(s)
        elif lower is None:
            lower = {**s, "requests": [dict(r) for r in s["requests"]]}
            out.append(lower)
        else:
            have = {r["resource"]: r for r in lower["requests"]}
            for r in s["requests"]:
                if r["resource"] in have:
                    have[r["resource"]].update({k: v for k, v in r.items() if k != "from"})
                else:
                    lower["requests"].append(dict(r))
    return out


def _steps(first: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [dict(s) for s in first["steps"]] if first.get("kind") == "Combined" else [dict(first)]


def combined(rerun: Rerun, unit: Unit, finders: list[Finder], nested: bool = True) -> list[dict[str, Any]]:
    """The first combination that places the unit (see the module's doc); [] when none does.
    A gang never tried (of mixed priorities, short of pods): on the input with its prerequisites
    made, the combinations are searched again after the single kinds (`nested`: once), so that
    the chain is prerequisites, a first step, a second."""
    blocked = unit.group is not None and not unit.rejected
    bases = [*_prerequisites(rerun, unit), *_align_priority(rerun, unit), *missing_pods_base(rerun, unit),
             *min_count_base(rerun, unit), *_to_largest_node(rerun, unit), *gang_bases(rerun, unit),
             *uncordon_bases(rerun, unit)[:1], *_relax_nodes(rerun, unit)][:MAX_BASES]
    for first, edit in bases:
        if rerun.left() <= 1:
            break
        objects = rerun.edited(edit)
        unit_there = with_new_pods(unit, objects)
        alone = rerun.verify(unit_there, objects)
        n = changes_of(first)
        if alone is not None:
            return [result(str(first["kind"]), {k: v for k, v in first.items() if k != "kind"}, alone, n)]
        derived = Rerun(objects, list(rerun.baseline.values()), seed=rerun.seed,
                        percentage_of_nodes_to_score=rerun.percentage, registry=rerun.registry,
                        tie_break=rerun.tie_break)
        derived.budget = rerun.left()
        explained, _ = derived.run(derived.objects, explain=list(unit_there.pods))
        read_diagnosis(unit_there, {o.pod: o.explanations for o in explained})
        found: list[dict[str, Any]] = []
        chain = [*finders, lambda r, u: combined(r, u, finders, nested=False)] if nested and blocked else finders
        for finder in chain:
            if derived.left() <= 0 or found:
                break
            found = finder(derived, unit_there)
        rerun.runs += derived.runs
        rerun.budget -= derived.runs
        if found:
            second = found[0]
            out = {k: v for k, v in second.items() if k in ("places", "displaced", "alsoPlaces", "verified")}
            return [{"kind": "Combined", "steps": merged([*_steps(first), *_steps(_step(second))]), **out,
                     "changes": n + int(second.get("changes") or 1), "verified": True}]
    return []
