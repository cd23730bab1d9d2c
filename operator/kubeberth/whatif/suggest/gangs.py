"""`AddPods`: a gang short of pods (its PodGroup's gang minCount more than the pods that name it)
is never tried: GangScheduling's PreEnqueue waits for minCount pods to exist. The suggestion
creates the missing ones, `minCount - existing` copies of the gang's first pending pod (the
controller that owns the gang was to create them), and is verified by simulating the input with
the copies added: every pending pod of the gang, the copies too, must then be placed.

The copies are named `<pod>-suggested-<i>`; they are of the gang's namespace (a tenant's own)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from ..inputs import object_key
from .core import Base, Rerun, Unit, first_placing, group_name, with_new_pods

__all__ = ["add_gang_pods", "min_count_base", "missing_pods_base", "relax_min_count", "shortfall", "with_new_pods"]

SUFFIX = "suggested"
MAX_MISSING = 16


def shortfall(objects: Sequence[Mapping[str, Any]], unit: Unit) -> tuple[int, int]:
    """(the gang's minCount, the pods naming its PodGroup); (0, n) for no gang policy."""
    group = next((o for o in objects if o.get("kind") == "PodGroup" and object_key(o) == unit.group), None)
    gang = (((group or {}).get("spec") or {}).get("schedulingPolicy") or {}).get("gang")
    have = sum(1 for o in objects if o.get("kind") == "Pod" and group_name(o) == unit.group)
    if unit.group is None or not isinstance(gang, Mapping):
        return 0, have
    try:
        return int(gang.get("minCount") or 0), have
    except (TypeError, ValueError):
        return 0, have


def _copies(objects: Sequence[Mapping[str, Any]], unit: Unit, count: int) -> list[dict[str, Any]]:
    template = next(o for o in objects if o.get("kind") == "Pod" and object_key(o) == unit.pods[0])
    meta = template.get("metadata") or {}
    taken = {object_key(o) for o in objects if o.get("kind") == "Pod"}
    ns = str(meta.get("namespace") or "default")
    out: list[dict[str, Any]] = []
    i = 0
    while len(out) < count:
        i += 1
        name = f"{meta.get('name')}-{SUFFIX}-{i}"
        if f"{ns}/{name}" in taken:
            continue
        pod = copy.deepcopy(dict(template))
        pod["metadata"] = {k: copy.deepcopy(v) for k, v in meta.items()
                           if k in ("namespace", "labels", "annotations", "ownerReferences")}
        pod["metadata"]["name"] = name
        pod.pop("status", None)
        out.append(pod)
    return out


def missing_pods_base(rerun: Rerun, unit: Unit) -> list[Base]:
    """The change creating the gang's missing pods, and its edit; [] when none is missing."""
    min_count, have = shortfall(rerun.objects, unit)
    missing = min_count - have
    if missing <= 0 or missing > MAX_MISSING or not unit.pods:
        return []
    new = _copies(rerun.objects, unit, missing)

    def edit(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [*objects, *copy.deepcopy(new)]
    change = {"kind": "AddPods", "podGroup": unit.group, "minCount": min_count, "existing": have,
              "count": missing, "copyOf": unit.pods[0], "newPods": [object_key(p) for p in new]}
    return [(change, edit)]


def min_count_base(rerun: Rerun, unit: Unit) -> list[Base]:
    """A gang short of pods: the change lowering its minCount to the pods it has, and its edit."""
    min_count, _ = shortfall(rerun.objects, unit)
    have = len(unit.pods)
    if unit.group is None or min_count <= have:
        return []

    def edit(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for o in objects:
            if o.get("kind") == "PodGroup" and object_key(o) == unit.group:
                o["spec"]["schedulingPolicy"]["gang"]["minCount"] = have
        return objects
    return [({"kind": "Relax", "constraint": "minCount", "path": "spec.schedulingPolicy.gang.minCount",
              "from": min_count, "to": have}, edit)]


def add_gang_pods(rerun: Rerun, unit: Unit) -> list[dict[str, Any]]:
    """The verified AddPods suggestion (see the module's doc), or none."""
    return first_placing(rerun, unit, missing_pods_base(rerun, unit))


def relax_min_count(rerun: Rerun, unit: Unit) -> list[dict[str, Any]]:
    """A gang short of pods: its minCount lowered to the pods it has."""
    return first_placing(rerun, unit, min_count_base(rerun, unit))
