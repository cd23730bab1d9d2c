"""`Uncordon`: a cordoned node (`spec.unschedulable: true`) that NodeUnschedulable alone rejected
the pod on, made schedulable again (`kubectl uncordon`), verified by re-simulation. The cordoned
nodes rejected for the fewest other reasons are also first steps of combine.py (uncordoned, then
one more change), at most MAX_NODES of each."""

from __future__ import annotations

from typing import Any

from .core import Base, Edit, Rerun, Unit, first_placing

PLUGIN = "NodeUnschedulable"
MAX_NODES = 2


def _cordoned(rerun: Rerun, unit: Unit) -> list[str]:
    """The cordoned nodes NodeUnschedulable rejected the pod on, the fewest other reasons first."""
    cordoned = {str((o.get("metadata") or {}).get("name")) for o in rerun.objects
                if o.get("kind") == "Node" and (o.get("spec") or {}).get("unschedulable")}
    names = [n for n, ps in unit.rejected.items() if PLUGIN in ps and n in cordoned]
    return sorted(names, key=lambda n: (len(unit.rejected[n]), n))


def uncordon_edit(name: str) -> Edit:
    """The edit uncordoning node `name`."""
    def edit(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for o in objects:
            if o.get("kind") == "Node" and (o.get("metadata") or {}).get("name") == name:
                o.setdefault("spec", {}).pop("unschedulable", None)
                o["spec"]["taints"] = [t for t in o["spec"].get("taints") or ()
                                       if t.get("key") != "node.kubernetes.io/unschedulable"]
        return objects
    return edit


def uncordon_change(name: str) -> dict[str, Any]:
    return {"kind": "Uncordon", "node": name, "path": "spec.unschedulable", "from": True, "to": None}


def uncordon_bases(rerun: Rerun, unit: Unit) -> list[Base]:
    """The first steps of combinations: the cordoned nodes with the fewest other reasons."""
    return [(uncordon_change(n), uncordon_edit(n)) for n in _cordoned(rerun, unit)[:MAX_NODES]]


def uncordon(rerun: Rerun, unit: Unit) -> list[dict[str, Any]]:
    """The first cordoned node, rejected for being cordoned alone, whose uncordoning places the unit."""
    return first_placing(rerun, unit, [(change, edit) for change, edit in uncordon_bases(rerun, unit)
                                       if unit.rejected[change["node"]] == {PLUGIN}])
