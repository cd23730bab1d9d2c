"""`RelaxProfile`: a scheduling profile's NodeAffinity `addedAffinity` (a node affinity the
scheduler adds to every pod of the profile) excludes the nodes the pod could otherwise use (the
only nodes its PersistentVolume allows, say): no edit of the pod answers that. The change removes
the addedAffinity from the pod's profiles (those of its `spec.schedulerName`) that set one;
profiles of other scheduler names are left as they are. It concerns every pod those profiles schedule,
so it comes last (on_node.py, when no node the profile admits has answers) and its re-simulation
reports the pods it displaces. `note` says what to do: widen or remove the addedAffinity, or give
the pod a scheduler profile without it (`spec.schedulerName`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...model import ModelError
from ...model.selectors import NodeSelector
from ..config_files import is_shadow, scheduler_name
from .core import Edit

NOTE = ("the profile adds this node affinity to every pod it schedules: widen or remove its addedAffinity "
        "(NodeAffinity's args), or schedule the pod with a profile without it (spec.schedulerName)")


def _walk(v: Any, found: list[Mapping[str, Any]]) -> None:
    """Every mapping under `v` that holds an `addedAffinity`."""
    if isinstance(v, Mapping):
        if isinstance(v.get("addedAffinity"), Mapping):
            found.append(v)
        for w in v.values():
            _walk(w, found)
    elif isinstance(v, list):
        for w in v:
            _walk(w, found)


def _holders(objects: Sequence[Mapping[str, Any]], scheduler: str) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """(name, the mappings holding an addedAffinity) of each SchedulingProfile of `scheduler`
    that sets one. Shadow profiles schedule nothing: their addedAffinity keeps no pod off a node."""
    out = []
    for o in objects:
        if o.get("kind") == "SchedulingProfile" and scheduler_name(o) == scheduler and not is_shadow(o):
            found: list[Mapping[str, Any]] = []
            _walk(o.get("spec"), found)
            if found:
                out.append((str((o.get("metadata") or {}).get("name")), found))
    return out


def added_affinity(objects: Sequence[Mapping[str, Any]], scheduler: str) -> list[NodeSelector]:
    """The required node selectors the SchedulingProfiles of `scheduler` add to every pod they
    schedule (NodeAffinity's addedAffinity): no edit of the pod answers those."""
    out: list[NodeSelector] = []
    for _, holders in _holders(objects, scheduler):
        for h in holders:
            req = h["addedAffinity"].get("requiredDuringSchedulingIgnoredDuringExecution")
            if req:
                try:
                    out.append(NodeSelector.from_dict(req))
                except (ModelError, TypeError, ValueError, KeyError):
                    pass
    return out


def excluded(objects: Sequence[Mapping[str, Any]], scheduler: str, node: Mapping[str, Any]) -> bool:
    """Whether an addedAffinity of a profile of `scheduler` leaves `node` out."""
    meta = node.get("metadata") or {}
    return not all(s.matches(str(meta.get("name")), meta.get("labels") or {})
                   for s in added_affinity(objects, scheduler))


def own_affinity_matches(pod: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """Whether the pod's own nodeSelector and required node affinity admit `node`."""
    spec = pod.get("spec") or {}
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    req = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    try:
        return not req or NodeSelector.from_dict(req).matches(str(meta.get("name")), labels)
    except (ModelError, TypeError, ValueError, KeyError):
        return False


def profile_change(objects: Sequence[Mapping[str, Any]], scheduler: str) -> dict[str, Any]:
    held = _holders(objects, scheduler)
    removed = [h["addedAffinity"] for _, holders in held for h in holders]
    return {"kind": "RelaxProfile", "profiles": [name for name, _ in held],
            "path": "pluginConfig[NodeAffinity].args.addedAffinity",
            "from": removed[0] if len(removed) == 1 else removed, "to": None, "note": NOTE}


def profile_edit(scheduler: str) -> Edit:
    """The edit removing the addedAffinity of the SchedulingProfiles of `scheduler`."""
    def edit(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for _, holders in _holders(objects, scheduler):
            for h in holders:
                if isinstance(h, dict):
                    h.pop("addedAffinity", None)
        return objects
    return edit
