"""`LowerRequests`: the requests to lower, each to the largest value at which the unit fits.

The nodes tried are those the diagnosis says rejected the pod for NodeResourcesFit alone. On each,
the room left once the baseline placed its pods (allocatable minus the requests of the pods bound
there) bounds the pod's request of each resource it lacks: that room is the largest value that
fits there. The candidates (one per node, the fewest resources and the smallest cut first; at
most MAX_TRIES tried) are verified by re-simulation. The cut is taken from the pod-level request
when the pod has one, else from its containers, the largest request first; a container that gave
only a limit gets a request.

`lower_to_largest` covers a pod no empty node can hold (more than any node's allocatable, or an
extended resource no node offers): the requests lowered to the allocatable of the node closest to
holding it, to 0 (the request removed, said in `note`) for a resource no node offers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from ...model import ModelError, Node, Pod, parse_quantity
from ...model.quantity import format_milli_cpu
from ..inputs import object_key
from .core import PLACED, Edit, Rerun, Unit, first_placing, pods_by_key, verify_change, with_new_pods

MAX_TRIES = 3
RESOURCE_PLUGIN = "NodeResourcesFit"
CPU, MEMORY = "cpu", "memory"


def fmt(name: str, amount: int) -> str:
    """A request as a quantity: cpu in millicores, memory in Mi when whole, else plain."""
    if name == CPU:
        return format_milli_cpu(amount)
    if name == MEMORY and amount % (1 << 20) == 0:
        return f"{amount >> 20}Mi"
    return str(amount)


def _units(name: str, q: Any) -> int:
    d = parse_quantity(q)
    return int(d * 1000) if name == CPU else int(d)


def _to_quantity(name: str, amount: int) -> str:
    return fmt(name, amount)


def room(objects: Sequence[Mapping[str, Any]], rerun: Rerun) -> dict[str, dict[str, int]]:
    """Per node, the room left per resource after the baseline (pods too)."""
    pods = pods_by_key([dict(o) for o in objects])
    out: dict[str, dict[str, int]] = {}
    for o in objects:
        if o.get("kind") != "Node":
            continue
        try:
            node = Node(dict(o))
        except ModelError:
            continue
        a = node.allocatable
        out[node.name] = {n: a.get(n) for n in (CPU, MEMORY, *a.scalar)}
        out[node.name]["pods"] = a.allowed_pod_number
    for key, b in rerun.baseline.items():
        if b.status not in PLACED or not b.node or b.node not in out or key not in pods:
            continue
        try:
            r = Pod(dict(pods[key])).requests
        except ModelError:
            continue
        free = out[b.node]
        for n in list(free):
            free[n] -= 1 if n == "pods" else r.get(n)
    return out


def _requested(c: dict[str, Any], name: str) -> int | None:
    res = c.setdefault("resources", {})
    q = (res.get("requests") or {}).get(name, (res.get("limits") or {}).get(name))
    return None if q is None else _units(name, q)


def lower_in_spec(spec: dict[str, Any], name: str, value: int) -> None:
    """Lower the pod's request of `name` to `value` (millicores for cpu): the pod-level request
    when there is one; else the containers' and the sidecars' (init containers restarted
    `Always`: they run alongside), the largest first, by what their sum exceeds `value`, and each
    other init container's (at most `value`: the pod asks for the larger of the two); the pod's
    overhead, added to either, kept."""
    pod_level = ((spec.get("resources") or {}).get("requests") or {})
    if name in pod_level:
        pod_level[name] = _to_quantity(name, min(value, _units(name, pod_level[name])))
        _drop_zero(spec, name)
        return
    overhead = (spec.get("overhead") or {}).get(name)
    value = max(0, value - (_units(name, overhead) if overhead is not None else 0))  # the overhead is added
    inits = spec.get("initContainers") or []
    for c in inits:
        have = _requested(c, name)
        if c.get("restartPolicy") != "Always" and have is not None and have > value:
            c["resources"].setdefault("requests", {})[name] = _to_quantity(name, value)
            _drop_zero(c, name)
    running = [*(spec.get("containers") or []), *(c for c in inits if c.get("restartPolicy") == "Always")]
    containers = [(have, c) for c in running if (have := _requested(c, name)) is not None]
    cut = sum(h for h, _ in containers) - value
    containers.sort(key=lambda x: -x[0])
    for have, c in containers:
        if cut <= 0:
            break
        take = min(have, cut)
        c["resources"].setdefault("requests", {})[name] = _to_quantity(name, have - take)
        _drop_zero(c, name)
        cut -= take


def _drop_zero(holder: dict[str, Any], name: str) -> None:
    """An extended resource's request lowered to 0: the request and its limit removed (its request
    must equal its limit)."""
    res = holder.get("resources") or {}
    if name in (CPU, MEMORY) or _units(name, (res.get("requests") or {}).get(name, 1)) != 0:
        return
    for part in ("requests", "limits"):
        (res.get(part) or {}).pop(name, None)


def lower_requests(rerun: Rerun, unit: Unit) -> list[dict[str, Any]]:
    """The first verified LowerRequests candidate (see the module's doc)."""
    nodes = [n for n, ps in unit.rejected.items() if ps == {RESOURCE_PLUGIN}]
    if not nodes:
        return []
    pod_obj = pods_by_key(rerun.objects).get(unit.pods[0])
    if pod_obj is None:
        return []
    try:
        want = Pod(dict(pod_obj)).requests
    except ModelError:
        return []
    free = room(rerun.objects, rerun)
    unoffered = {name for name, best in largest_cuts(rerun, unit) if best == 0}
    candidates: dict[tuple[tuple[str, int], ...], float] = {}
    for n in nodes:
        f = free.get(n)
        if f is None or f.get("pods", 0) < len(unit.pods):
            continue
        cuts: list[tuple[str, int]] = []
        ok = True
        for name in sorted({*f, *unoffered} - {"pods"}):
            have, need = f.get(name, 0), want.get(name)
            if need > have:
                if have <= 0 and name not in unoffered:
                    ok = False
                    break
                cuts.append((name, max(have, 0)))
        if ok and cuts:
            key = tuple(sorted(cuts))
            candidates[key] = sum(Decimal(want.get(r) - v) / max(want.get(r), 1) for r, v in cuts).__float__()
    ranked = sorted(candidates, key=lambda k: (len(k), candidates[k], k))[:MAX_TRIES]
    for chosen in ranked:
        if rerun.left() <= 0:
            break
        found = verify_change(rerun, unit, {"kind": "LowerRequests", **cut_change(rerun, unit, chosen)},
                              cut_edit(unit, chosen))
        if found is not None:
            return [found]
    return []


def largest_cuts(rerun: Rerun, unit: Unit) -> list[tuple[str, int]]:
    """When no empty node holds the unit's pod: (resource, allocatable) for each request the pod
    must lower to fit the allocatable of the node closest to holding it (the fewest requests
    lowered, then the smallest cut); 0 for a resource no node offers. [] when some node holds it."""
    pod = pods_by_key(rerun.objects).get(unit.pods[0])
    if pod is None:
        return []
    try:
        want = Pod(dict(pod)).requests
        allocs = [Node(dict(o)).allocatable for o in rerun.objects if o.get("kind") == "Node"]
    except ModelError:
        return []
    names = (CPU, MEMORY, *want.scalar)
    offered = {n for n in names if any(a.get(n) > 0 for a in allocs)}
    best: tuple[int, float, list[tuple[str, int]]] | None = None
    for a in allocs:
        cuts = [(n, a.get(n)) for n in names if want.get(n) > a.get(n)]
        if not cuts:
            return []
        if any(v <= 0 and n in offered for n, v in cuts):
            continue
        key = (len(cuts), sum(float(want.get(n) - v) / max(want.get(n), 1) for n, v in cuts), cuts)
        if best is None or key[:2] < best[:2]:
            best = key
    return best[2] if best else []


def cut_change(rerun: Rerun, unit: Unit, cuts: Sequence[tuple[str, int]]) -> dict[str, Any]:
    """The LowerRequests change of `cuts`, each with a `note` when it removes the request."""
    pod = pods_by_key(rerun.objects)[unit.pods[0]]
    want = Pod(dict(pod)).requests
    out = []
    for name, value in cuts:
        r = {"resource": name, "from": fmt(name, want.get(name)), "to": fmt(name, value)}
        if value == 0:
            r["note"] = f"no node offers {name}: remove the request"
        out.append(r)
    return {"requests": out}


def cut_edit(unit: Unit, cuts: Sequence[tuple[str, int]]) -> Edit:
    """The edit lowering the requests of every pending pod of the unit (a gang's pods added by an
    earlier edit too) to `cuts`."""
    def edit(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
        targets = set(with_new_pods(unit, objects).pods)
        for o in objects:
            if o.get("kind") == "Pod" and object_key(o) in targets:
                want = Pod(dict(o)).requests
                for name, value in cuts:
                    if want.get(name) > value:
                        lower_in_spec(o.setdefault("spec", {}), name, value)
        return objects
    return edit


def lower_to_largest(rerun: Rerun, unit: Unit) -> list[dict[str, Any]]:
    """The requests no node can hold lowered to the largest node's allocatable (see the module's
    doc), when that alone places the unit."""
    cuts = largest_cuts(rerun, unit)
    if not cuts:
        return []
    return first_placing(rerun, unit, [({"kind": "LowerRequests", **cut_change(rerun, unit, cuts)},
                                        cut_edit(unit, cuts))])
