"""`AddNodes`: how many copies of which existing node's shape would place the unit.

A node group is what cluster-autoscaler scales: nodes of one shape (equal allocatable, equal
labels but the hostname, equal taints; a cordoned node is no template; a new node attaches the
volumes its template's CSINode allows). A group is tried only
when no node-static filter plugin (core.STATIC_PLUGINS) rejected the pod on its nodes (the
diagnosis; every group when the pod was never tried). Per group, the smallest count is found by
a doubling then a binary search, each step a re-simulation; the groups that place the unit are
then ranked as the expanders would choose: the fewest nodes first (cluster-autoscaler's
`most-pods` for one unit), then the least waste (`least-waste`: the share of the new nodes'
cpu and memory the unit leaves unused)."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ...model import ModelError, Node, Pod
from .core import STATIC_PLUGINS, Rerun, Unit, Verified, pods_by_key, result, smallest

HOSTNAME = "kubernetes.io/hostname"
EXPANDER = "fewest-nodes, then least-waste"
MAX_GROUPS = 6
MAX_COUNT = 16
SUFFIX = "suggested"


def shape(obj: Mapping[str, Any]) -> str:
    """The node group's identity: allocatable, labels but the hostname, taints."""
    meta = obj.get("metadata") or {}
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != HOSTNAME}
    taints = sorted(json.dumps(t, sort_keys=True) for t in (obj.get("spec") or {}).get("taints") or ())
    alloc = (obj.get("status") or {}).get("allocatable") or {}
    return json.dumps([alloc, labels, taints], sort_keys=True)


def node_groups(objects: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[str]]]:
    """(template node, the group's nodes), the groups in order of their first node; cordoned
    nodes are left out."""
    groups: dict[str, list[str]] = {}
    for obj in objects:
        if obj.get("kind") != "Node" or (obj.get("spec") or {}).get("unschedulable"):
            continue
        name = str((obj.get("metadata") or {}).get("name") or "")
        groups.setdefault(shape(obj), []).append(name)
    return [(names[0], names) for names in groups.values()]


def copies(template: Mapping[str, Any], count: int, taken: set[str]) -> list[dict[str, Any]]:
    """`count` new nodes of `template`'s shape, uniquely named, hostname label set to the name."""
    base = str((template.get("metadata") or {}).get("name"))
    out: list[dict[str, Any]] = []
    i = 0
    while len(out) < count:
        i += 1
        name = f"{base}-{SUFFIX}-{i}"
        if name in taken:
            continue
        labels: dict[str, str] = dict((template.get("metadata") or {}).get("labels") or {})
        if HOSTNAME in labels:
            labels[HOSTNAME] = name
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
                "spec": copy.deepcopy({k: v for k, v in (template.get("spec") or {}).items()
                                       if k in ("taints",)}),
                "status": copy.deepcopy({k: v for k, v in (template.get("status") or {}).items()
                                         if k in ("allocatable", "capacity", "conditions", "nodeInfo")})}
        out.append(node)
    return out


def csi_copies(objects: Sequence[Mapping[str, Any]], template: str, new: Sequence[Mapping[str, Any]]
               ) -> list[dict[str, Any]]:
    """The template's CSINode (its drivers and their volume limits) for each new node: a node of
    the group attaches what the template attaches."""
    csi = next((o for o in objects if o.get("kind") == "CSINode" and (o.get("metadata") or {}).get("name") == template),
               None)
    if csi is None:
        return []
    out = []
    for n in new:
        name = str(n["metadata"]["name"])
        drivers = [{**copy.deepcopy(d), "nodeID": name} for d in (csi.get("spec") or {}).get("drivers") or ()]
        out.append({"apiVersion": csi.get("apiVersion", "storage.k8s.io/v1"), "kind": "CSINode",
                    "metadata": {"name": name}, "spec": {"drivers": drivers}})
    return out


def _waste(template: Mapping[str, Any], count: int, pods: Sequence[Mapping[str, Any]]) -> float:
    """least-waste's score: the mean of the unused shares of cpu and memory on the new nodes."""
    try:
        alloc = Node(dict(template)).allocatable
        req_cpu = sum(Pod(dict(p)).requests.milli_cpu for p in pods)
        req_mem = sum(Pod(dict(p)).requests.memory for p in pods)
    except ModelError:
        return 1.0
    shares = []
    for have, want in ((alloc.milli_cpu * count, req_cpu), (alloc.memory * count, req_mem)):
        if have > 0:
            shares.append(max(0.0, (have - want) / have))
    return sum(shares) / len(shares) if shares else 1.0


def holds(template: Mapping[str, Any], pod: Mapping[str, Any] | None) -> bool:
    """Whether an empty node of `template`'s shape has the allocatable for one pod of the unit."""
    if pod is None:
        return True
    try:
        alloc = Node(dict(template)).allocatable
        want = Pod(dict(pod)).requests
    except ModelError:
        return False
    return all(want.get(n) <= alloc.get(n) for n in ("cpu", "memory", *want.scalar)) and alloc.allowed_pod_number > 0


def _candidate_groups(rerun: Rerun, unit: Unit, nodes: Mapping[str, Mapping[str, Any]]
                      ) -> list[tuple[str, list[str]]]:
    """The groups worth a try: an empty node of theirs holds the pod, and the diagnosis does not
    say a node-static plugin rejected it on all their nodes; the least waste first."""
    pod = pods_by_key(rerun.objects).get(unit.pods[0])
    groups = [(t, names) for t, names in node_groups(rerun.objects) if holds(nodes[t], pod)]
    if unit.rejected:
        groups = [(t, names) for t, names in groups
                  if any(not (unit.rejected.get(n, set()) & STATIC_PLUGINS) for n in names)]
    pods = [pod] if pod is not None else []
    groups.sort(key=lambda g: _waste(nodes[g[0]], 1, pods))
    return groups[:MAX_GROUPS]


def add_nodes(rerun: Rerun, unit: Unit) -> list[dict[str, Any]]:
    """The verified AddNodes suggestion (the group the expanders choose), or none."""
    nodes = {str((o.get("metadata") or {}).get("name")): o for o in rerun.objects if o.get("kind") == "Node"}
    found: list[tuple[int, float, str, Verified, list[str]]] = []
    cap = min(MAX_COUNT, len(unit.pods) + 2)
    for template, _members in _candidate_groups(rerun, unit, nodes):
        tried: dict[int, tuple[Verified | None, list[str]]] = {}

        def attempt(n: int, template: str = template, tried: dict[int, tuple[Verified | None, list[str]]] = tried
                    ) -> Verified | None:
            if n not in tried:
                new = copies(nodes[template], n, set(nodes))
                tried[n] = (rerun.verify(unit, [*rerun.objects, *new, *csi_copies(rerun.objects, template, new)]),
                            [str(x["metadata"]["name"]) for x in new])
            return tried[n][0]

        if found and min(f[0] for f in found) == 1 and rerun.left() < 4:
            break
        best = smallest(rerun, attempt, 1, cap)
        if best is None:
            continue
        v, names = tried[best]
        assert v is not None
        pods = [p for k, p in pods_by_key(rerun.objects).items() if k in unit.pods]
        found.append((best, _waste(nodes[template], best, pods), template, v, names))
    if not found:
        return []
    found.sort(key=lambda f: (f[0], f[1], f[2]))
    count, waste, template, v, names = found[0]
    t = nodes[template]
    change = {"nodeGroup": template, "count": count, "newNodes": names,
              "shape": {"allocatable": dict((t.get("status") or {}).get("allocatable") or {}),
                        "taints": list((t.get("spec") or {}).get("taints") or [])},
              "expander": EXPANDER, "waste": round(waste, 3), "groupsPlacing": len(found)}
    return [result("AddNodes", change, v, count)]
