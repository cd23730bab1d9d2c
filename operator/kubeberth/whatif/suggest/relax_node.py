"""`Relax` beyond one term, when no single term places the unit:

- per node (the nodes whose diagnosis names the fewest plugins first, at most MAX_NODES), when
  relax.py's single terms placed nothing: every
  pod-side constraint that node fails relaxed at once, each as a whole (the required node
  affinity and the nodeSelector removed, a toleration for each of the node's NoSchedule and
  NoExecute taints, the required pod (anti-)affinity removed, each DoNotSchedule spread made
  ScheduleAnyway). Printed as one Relax with `terms`, one per relaxed constraint. (A gang's
minCount lowered to the pods it has: gangs.py.)"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..inputs import object_key
from .core import Edit, Rerun, Unit, verify_change, with_new_pods

MAX_NODES = 2
NODE_SIDE = frozenset({"NodeName", "NodeUnschedulable", "VolumeZone", "VolumeBinding", "NodeDeclaredFeatures",
                       "NodeResourcesFit", "NodePorts", "VolumeRestrictions", "NodeVolumeLimits"})


DEFAULTS = "the scheduling profile's defaultConstraints"


def terms_for(spec: Mapping[str, Any], node: Mapping[str, Any], plugins: set[str],
              labels: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The pod-side constraints `node` fails (`plugins` rejected the pod there), each relaxed as a
    whole; `labels`: the pod's (a pod without spread constraints of its own, rejected by the
    profile's defaults, gets one of its own, ScheduleAnyway; None: not offered)."""
    out: list[dict[str, Any]] = []
    aff = spec.get("affinity") or {}
    if "NodeAffinity" in plugins:
        if spec.get("nodeSelector"):
            out.append({"constraint": "nodeSelector", "path": "spec.nodeSelector", "from": spec["nodeSelector"],
                        "to": None})
        req = (aff.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
        if req:
            out.append({"constraint": "nodeAffinity",
                        "path": "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
                        "from": req, "to": None})
    if "TaintToleration" in plugins:
        for t in (node.get("spec") or {}).get("taints") or []:
            if t.get("effect") in ("NoSchedule", "NoExecute"):
                tol = {"key": t.get("key"), "effect": t.get("effect")}
                tol.update({"operator": "Equal", "value": t["value"]} if t.get("value") else {"operator": "Exists"})
                out.append({"constraint": "toleration", "path": "spec.tolerations", "from": None, "to": tol,
                            "taint": dict(t)})
    if "InterPodAffinity" in plugins:
        for kind in ("podAntiAffinity", "podAffinity"):
            req = (aff.get(kind) or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
            if req:
                path = f"spec.affinity.{kind}.requiredDuringSchedulingIgnoredDuringExecution"
                out.append({"constraint": kind, "path": path, "from": req, "to": None})
    if "PodTopologySpread" in plugins:
        for i, c in enumerate(spec.get("topologySpreadConstraints") or []):
            if c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule":
                out.append({"constraint": "topologySpreadConstraint",
                            "path": f"spec.topologySpreadConstraints[{i}].whenUnsatisfiable",
                            "from": "DoNotSchedule", "to": "ScheduleAnyway"})
        if not spec.get("topologySpreadConstraints") and labels is not None:
            # The profile's defaultConstraints apply to a pod without constraints of its own: one
            # of its own (ScheduleAnyway: scoring only) replaces them.
            out.append({"constraint": "topologySpreadConstraint", "path": "spec.topologySpreadConstraints",
                        "from": DEFAULTS, "to": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                                  "whenUnsatisfiable": "ScheduleAnyway",
                                                  "labelSelector": {"matchLabels": dict(labels)}}]})
    return out


def pod_labels(pod: Mapping[str, Any]) -> dict[str, str]:
    return dict((pod.get("metadata") or {}).get("labels") or {})


def edit_term(spec: dict[str, Any], term: Mapping[str, Any]) -> None:
    c = term["constraint"]
    if c == "nodeSelector":
        spec.pop("nodeSelector", None)
    elif c == "nodeAffinity":
        spec["affinity"]["nodeAffinity"].pop("requiredDuringSchedulingIgnoredDuringExecution", None)
    elif c == "toleration":
        spec.setdefault("tolerations", []).append(dict(term["to"]))
    elif c in ("podAntiAffinity", "podAffinity"):
        spec["affinity"][c].pop("requiredDuringSchedulingIgnoredDuringExecution", None)
    elif c == "topologySpreadConstraint" and term["from"] == DEFAULTS:
        spec["topologySpreadConstraints"] = [dict(x) for x in term["to"]]
    elif c == "topologySpreadConstraint":
        i = int(term["path"].split("[", 1)[1].split("]", 1)[0])
        spec["topologySpreadConstraints"][i]["whenUnsatisfiable"] = "ScheduleAnyway"


def relax_for_node(rerun: Rerun, unit: Unit) -> list[dict[str, Any]]:
    """The first node whose constraints, all relaxed, place the unit (see the module's doc)."""
    pods = {object_key(o): o for o in rerun.objects if o.get("kind") == "Pod"}
    nodes = {str((o.get("metadata") or {}).get("name")): o for o in rerun.objects if o.get("kind") == "Node"}
    first = pods.get(unit.pods[0])
    if first is None:
        return []
    spec = first.get("spec") or {}
    tried: set[str] = set()
    ranked = sorted((n for n in unit.rejected if n in nodes), key=lambda n: (len(unit.rejected[n]), n))
    for name in ranked:
        if len(tried) >= MAX_NODES or rerun.left() <= 0:
            break
        if unit.rejected[name] & NODE_SIDE - {"NodeResourcesFit", "NodePorts"}:
            continue  # the node itself stands in the way
        terms = terms_for(spec, nodes[name], unit.rejected[name], pod_labels(first))
        if not terms:
            continue
        ident = repr(terms)
        if ident in tried:
            continue
        tried.add(ident)

        found = verify_change(rerun, unit, {"kind": "Relax", "terms": terms}, relax_edit(unit, terms))
        if found is not None:
            return [found]
    return []


def relax_edit(unit: Unit, terms: Sequence[Mapping[str, Any]]) -> Edit:
    """The edit relaxing `terms` on every pending pod of the unit (those an earlier edit added too)."""
    def edit(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
        targets = set(with_new_pods(unit, objects).pods)
        for o in objects:
            if o.get("kind") == "Pod" and object_key(o) in targets:
                for t in terms:
                    edit_term(o.setdefault("spec", {}), t)
        return objects
    return edit

