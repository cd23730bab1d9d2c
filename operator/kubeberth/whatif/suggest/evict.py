"""`Evict` (running pods whose eviction would make room) and `RaisePriority` (the lowest
PriorityClass with which preemption places the unit, and what it would preempt).

Evict: the candidates are the pods bound (in the input) to nodes the diagnosis says the unit was
rejected from for the pods there only (no node-static plugin, core.STATIC_PLUGINS), taken lowest
priority first, then largest requests first; per node (at most MAX_NODES nodes, those with the
fewest such pods first) the shortest prefix of that order that places the unit is found by a
binary search; when no single node's pods do, the same search runs over the candidates of every
node at once (a gang may need room on several). Each evicted pod says its priority and whether a
PodDisruptionBudget of the input would block its eviction (its budget spent in order, as
preemption spends it: preemption/pdb.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...model import ModelError, Pod
from ...preemption.pdb import PDB, filter_pods_with_pdb_violation
from ..inputs import object_key
from .core import STATIC_PLUGINS, Rerun, Unit, Verified, group_name, result, smallest

MAX_NODES = 3
NEVER = "Never"


def priority_classes(objects: Sequence[Mapping[str, Any]]) -> dict[str, tuple[int, str]]:
    """PriorityClass name -> (value, preemptionPolicy)."""
    out = {}
    for o in objects:
        if o.get("kind") == "PriorityClass":
            try:
                out[str((o.get("metadata") or {}).get("name"))] = (
                    int(o.get("value") or 0), str(o.get("preemptionPolicy") or "PreemptLowerPriority"))
            except (TypeError, ValueError):
                continue
    return out


def priorities(objects: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Each pod's priority as admission gives it: spec.priority, else its class's value, else the
    globalDefault class's, else 0."""
    classes = priority_classes(objects)
    default = next((int(o.get("value") or 0) for o in objects
                    if o.get("kind") == "PriorityClass" and o.get("globalDefault")), 0)
    out = {}
    for o in objects:
        if o.get("kind") != "Pod":
            continue
        spec = o.get("spec") or {}
        p = spec.get("priority")
        if not isinstance(p, int) or isinstance(p, bool):
            name = spec.get("priorityClassName")
            p = classes[name][0] if name in classes else default
        out[object_key(o)] = p
    return out


def size(obj: Mapping[str, Any]) -> tuple[int, int]:
    """A pod's (milli-cpu, memory) requests; (0, 0) for a pod the model refuses."""
    try:
        r = Pod(dict(obj)).requests
    except ModelError:
        return (0, 0)
    return (r.milli_cpu, r.memory)


def shortest_prefix(rerun: Rerun, unit: Unit, order: list[str]) -> tuple[int, Verified] | None:
    """The shortest prefix of `order` whose removal places the unit (binary search)."""
    tried: dict[int, Verified | None] = {}

    def attempt(k: int) -> Verified | None:
        if k not in tried:
            gone = set(order[:k])
            tried[k] = rerun.verify(unit, [o for o in rerun.objects
                                           if o.get("kind") != "Pod" or object_key(o) not in gone], removed=order[:k])
        return tried[k]

    if not order:
        return None
    k = smallest(rerun, attempt, 1, len(order))
    v = tried.get(k) if k is not None else None
    return (k, v) if k is not None and v is not None else None


def _evicted(objects: Sequence[Mapping[str, Any]], keys: Sequence[str], prio: Mapping[str, int]
             ) -> list[dict[str, Any]]:
    by_key = {object_key(o): o for o in objects if o.get("kind") == "Pod"}
    pdbs = [PDB.from_dict(o) for o in objects if o.get("kind") == "PodDisruptionBudget"]
    pods = []
    for k in keys:
        try:
            pods.append(Pod(dict(by_key[k])))
        except ModelError:
            continue
    violating, _ = filter_pods_with_pdb_violation(pods, pdbs)
    blocked = {p.key for p in violating}
    out = []
    for k in keys:
        obj = by_key[k]
        pdb = None
        try:
            pod = Pod(dict(obj))
            pdb = next((f"{b.namespace}/{b.name}" for b in pdbs if b.matches(pod)), None)
        except ModelError:
            pass
        out.append({"pod": k, "node": (obj.get("spec") or {}).get("nodeName"), "priority": prio.get(k, 0),
                    "pdb": pdb, "pdbBlocks": k in blocked})
    return out


def eviction_entries(objects: Sequence[Mapping[str, Any]], keys: Sequence[str], rerun: Rerun
                     ) -> list[dict[str, Any]]:
    """Evict's entries for `keys` (pods bound in the input, or placed by the baseline: their node
    is the baseline's)."""
    out = _evicted(objects, keys, priorities(objects))
    for e in out:
        b = rerun.baseline.get(e["pod"])
        if not e["node"] and b is not None:
            e["node"] = b.node
    return out


def evict(rerun: Rerun, unit: Unit) -> list[dict[str, Any]]:
    """At most one Evict suggestion per node tried, and the cluster-wide one when none placed."""
    prio = priorities(rerun.objects)
    bound: dict[str, list[Mapping[str, Any]]] = {}
    for o in rerun.objects:
        node = (o.get("spec") or {}).get("nodeName") if o.get("kind") == "Pod" else None
        if node:
            bound.setdefault(str(node), []).append(o)
    rank = {n: i for i, n in enumerate(bound)}
    nodes = [n for n in bound if not unit.rejected or (n in unit.rejected and not unit.rejected[n] & STATIC_PLUGINS)]

    def order(pods: Sequence[Mapping[str, Any]]) -> list[str]:
        keyed = sorted(pods, key=lambda o: (prio.get(object_key(o), 0), tuple(-x for x in size(o)), object_key(o)))
        return [object_key(o) for o in keyed]

    out = []
    for node in sorted(nodes, key=lambda n: (len(bound[n]), rank[n]))[:MAX_NODES]:
        got = shortest_prefix(rerun, unit, order(bound[node]))
        if got is not None:
            k, v = got
            keys = order(bound[node])[:k]
            out.append(result("Evict", {"evict": _evicted(rerun.objects, keys, prio)}, v, k))
    if not out and len(nodes) > 1:
        everyone = order([o for n in nodes for o in bound[n]])
        got = shortest_prefix(rerun, unit, everyone)
        if got is not None:
            k, v = got
            out.append(result("Evict", {"evict": _evicted(rerun.objects, everyone[:k], prio)}, v, k))
    return out


def _with_class(objects: list[dict[str, Any]], unit: Unit, name: str, value: int) -> list[dict[str, Any]]:
    for o in objects:
        if o.get("kind") == "Pod" and object_key(o) in unit.pods:
            spec = o.setdefault("spec", {})
            spec["priorityClassName"] = name
            spec["priority"] = value
            spec.pop("preemptionPolicy", None)
        elif unit.group is not None and o.get("kind") == "PodGroup" and object_key(o) == unit.group:
            spec = o.setdefault("spec", {})
            spec["priorityClassName"] = name
            spec.pop("priority", None)
            spec.pop("preemptionPolicy", None)
    return objects


def raise_priority(rerun: Rerun, unit: Unit) -> list[dict[str, Any]]:
    """The lowest PriorityClass above the unit's priority (preempting ones only) that places it."""
    prio = priorities(rerun.objects)
    now = max(prio.get(k, 0) for k in unit.pods)
    classes = sorted((v, n) for n, (v, policy) in priority_classes(rerun.objects).items()
                     if v > now and policy != NEVER and v <= 1_000_000_000)
    if not classes:
        return []
    tried: dict[int, Verified | None] = {}

    def attempt(i: int) -> Verified | None:
        if i not in tried:
            value, name = classes[i]
            tried[i] = rerun.verify(unit, rerun.edited(lambda objs: _with_class(objs, unit, name, value)))
        return tried[i]

    hi = smallest(rerun, attempt, 0, len(classes) - 1)
    v = tried.get(hi) if hi is not None else None
    if hi is None or v is None:
        return []
    value, name = classes[hi]
    gone = sorted(set(v.victims) | set(v.displaced))
    change = {"priorityClass": name, "priority": value, "from": now,
              "preempts": [{"pod": k, "priority": prio.get(k, 0)} for k in gone]}
    return [result("RaisePriority", change, v, 1)]


def is_group_member(obj: Mapping[str, Any]) -> bool:
    return group_name(obj) is not None
