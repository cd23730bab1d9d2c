"""`Relax`: the one constraint term of the unit's pods to relax, and what relaxing it places.

The terms tried are those of the plugins the diagnosis names (all of the pod's when it was never
tried): NodeAffinity: each nodeSelector key removed, each expression of a required
nodeSelectorTerm removed (a term left empty: the required node affinity removed, as an empty term
would match nothing); TaintToleration: a toleration for one taint that rejected it (at most
MAX_TAINTS taints); PodTopologySpread: a DoNotSchedule constraint's maxSkew raised to the smallest
value that places it (binary search up to the number of pods), else whenUnsatisfiable
ScheduleAnyway; InterPodAffinity: a required (anti-)affinity term removed. The change is made on
every pod of the unit (a gang's pods share their template)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..inputs import object_key
from .core import Rerun, Unit, pods_by_key, result

MAX_TAINTS = 6
Edit = Callable[[dict[str, Any]], None]


def _apply(rerun: Rerun, unit: Unit, edit: Edit) -> list[dict[str, Any]]:
    def on(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for o in objects:
            if o.get("kind") == "Pod" and object_key(o) in unit.pods:
                edit(o.setdefault("spec", {}))
        return objects
    return rerun.edited(on)


def _node_affinity(spec: Mapping[str, Any]) -> Iterator[tuple[dict[str, Any], Edit]]:
    for key, value in (spec.get("nodeSelector") or {}).items():
        def drop(s: dict[str, Any], key: str = key) -> None:
            s.get("nodeSelector", {}).pop(key, None)
        yield {"constraint": "nodeSelector", "path": f"spec.nodeSelector[{key}]", "from": f"{key}={value}",
               "to": None}, drop
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms") or []
    for i, term in enumerate(terms):
        for field in ("matchExpressions", "matchFields"):
            for j, expr in enumerate(term.get(field) or []):
                def drop_expr(s: dict[str, Any], i: int = i, field: str = field, j: int = j) -> None:
                    na = s["affinity"]["nodeAffinity"]
                    t = na["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][i]
                    del t[field][j]
                    if not any(t.get(f) for f in ("matchExpressions", "matchFields")):
                        del na["requiredDuringSchedulingIgnoredDuringExecution"]
                yield {"constraint": "nodeAffinity",
                       "path": f"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                               f".nodeSelectorTerms[{i}].{field}[{j}]",
                       "from": _expr(expr), "to": None}, drop_expr


def _expr(expr: Mapping[str, Any]) -> str:
    values = expr.get("values") or []
    return f"{expr.get('key')} {expr.get('operator')}" + (f" {','.join(map(str, values))}" if values else "")


def _tolerations(rerun: Rerun, unit: Unit) -> Iterator[tuple[dict[str, Any], Edit]]:
    nodes = {str((o.get("metadata") or {}).get("name")): o for o in rerun.objects if o.get("kind") == "Node"}
    seen: list[str] = []
    for name, plugins in unit.rejected.items():
        if "TaintToleration" not in plugins or name not in nodes:
            continue
        for t in (nodes[name].get("spec") or {}).get("taints") or []:
            if t.get("effect") not in ("NoSchedule", "NoExecute"):
                continue
            ident = json.dumps(t, sort_keys=True)
            if ident not in seen:
                seen.append(ident)
    for ident in seen[:MAX_TAINTS]:
        taint = json.loads(ident)
        tol = {"key": taint.get("key"), "effect": taint.get("effect")}
        if taint.get("value"):
            tol.update(operator="Equal", value=taint["value"])
        else:
            tol["operator"] = "Exists"

        def add(s: dict[str, Any], tol: dict[str, Any] = tol) -> None:
            s.setdefault("tolerations", []).append(dict(tol))
        yield {"constraint": "toleration", "path": "spec.tolerations", "from": None, "to": tol,
               "taint": taint}, add


def _pod_affinity(spec: Mapping[str, Any]) -> Iterator[tuple[dict[str, Any], Edit]]:
    aff = spec.get("affinity") or {}
    for kind in ("podAntiAffinity", "podAffinity"):
        terms = (aff.get(kind) or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or []
        for i, term in enumerate(terms):
            def drop(s: dict[str, Any], kind: str = kind, i: int = i) -> None:
                del s["affinity"][kind]["requiredDuringSchedulingIgnoredDuringExecution"][i]
            yield {"constraint": kind,
                   "path": f"spec.affinity.{kind}.requiredDuringSchedulingIgnoredDuringExecution[{i}]",
                   "from": {"topologyKey": term.get("topologyKey"), "labelSelector": term.get("labelSelector")},
                   "to": None}, drop


def _spread(rerun: Rerun, unit: Unit, spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    # No skew exceeds the number of pods (+1 for the pod itself): the search's upper end.
    pods = sum(1 for o in rerun.objects if o.get("kind") == "Pod")
    for i, c in enumerate(spec.get("topologySpreadConstraints") or []):
        if c.get("whenUnsatisfiable", "DoNotSchedule") != "DoNotSchedule" or rerun.left() <= 0:
            continue
        path = f"spec.topologySpreadConstraints[{i}]"
        skew = int(c.get("maxSkew") or 1)

        def set_skew(value: int, i: int = i) -> list[dict[str, Any]]:
            def edit(s: dict[str, Any]) -> None:
                s["topologySpreadConstraints"][i]["maxSkew"] = value
            return _apply(rerun, unit, edit)

        top = skew + pods + 1
        v = rerun.verify(unit, set_skew(top))
        if v is not None:
            lo, hi, best = skew, top, v
            while hi - lo > 1 and rerun.left() > 0:
                mid = (lo + hi) // 2
                got = rerun.verify(unit, set_skew(mid))
                if got is not None:
                    hi, best = mid, got
                else:
                    lo = mid
            out.append(result("Relax", {"constraint": "topologySpreadConstraint", "path": f"{path}.maxSkew",
                                        "from": skew, "to": hi}, best, 1))
            continue

        def anyway(s: dict[str, Any], i: int = i) -> None:
            s["topologySpreadConstraints"][i]["whenUnsatisfiable"] = "ScheduleAnyway"
        v = rerun.verify(unit, _apply(rerun, unit, anyway))
        if v is not None:
            out.append(result("Relax", {"constraint": "topologySpreadConstraint", "path": f"{path}.whenUnsatisfiable",
                                        "from": "DoNotSchedule", "to": "ScheduleAnyway"}, v, 1))
    return out


def relax(rerun: Rerun, unit: Unit) -> list[dict[str, Any]]:
    """Every verified one-term relaxation, in the order tried."""
    pod = pods_by_key(rerun.objects).get(unit.pods[0])
    if pod is None:
        return []
    spec = copy.deepcopy(pod.get("spec") or {})
    failing = unit.failing_plugins()
    wants = (lambda p: p in failing) if failing else (lambda p: True)
    candidates: list[tuple[dict[str, Any], Edit]] = []
    if wants("NodeAffinity"):
        candidates += list(_node_affinity(spec))
    if wants("TaintToleration"):
        candidates += list(_tolerations(rerun, unit))
    if wants("InterPodAffinity"):
        candidates += list(_pod_affinity(spec))
    out = []
    for change, edit in candidates:
        if rerun.left() <= 0:
            break
        v = rerun.verify(unit, _apply(rerun, unit, edit))
        if v is not None:
            out.append(result("Relax", change, v, 1))
    if wants("PodTopologySpread"):
        out += _spread(rerun, unit, spec)
    return out
