"""Changes to an existing node (no new shape invented), for a pod whose volume pins it to nodes
that cannot hold it as they are; on_node.py makes them with its other answers on such a node:

- `RaiseVolumeLimit`: the node's CSINode allows fewer volumes of a CSI driver than the pod
  itself uses (a PersistentVolume pinned there, plus its other claims): the driver's
  `allocatable.count` raised to the volumes the node must then attach (those of the pods placed
  there and the pod's own). The count is what the CSI driver's node plugin reports (its
  NodeGetInfo max_volumes_per_node): raised in the driver's settings on that node (many drivers
  have a volume-attach-limit option), or by a machine type that attaches more.
- `AddNodeResource`: the node lacks an extended resource the pod requests, and every node that
  offers it is ruled out by what no change of the search answers (a volume pinned elsewhere, a
  profile's addedAffinity): the node's allocatable of it set to what the pod needs there (the
  device installed, its device plugin then reporting it)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from ...model import ModelError, Node, Pod
from .core import PLACED, Edit, Rerun, Unit, pods_by_key

VOLUME_NOTE = ("the count is what the CSI driver's node plugin reports (CSINode allocatable): raise the "
               "driver's volume attach limit on that node, or give it a machine type that attaches more")
RESOURCE_NOTE = ("the nodes that offer {r} are ruled out by what the pod cannot change (its volume's node "
                 "affinity, the profile): install the device on this node (its device plugin then reports "
                 "{r} in status.allocatable)")


def _claims(pod: Mapping[str, Any]) -> list[str]:
    ns = str((pod.get("metadata") or {}).get("namespace") or "default")
    return [f"{ns}/{c}" for v in (pod.get("spec") or {}).get("volumes") or ()
            if (c := ((v or {}).get("persistentVolumeClaim") or {}).get("claimName"))]


def csi_volumes(objects: Sequence[Mapping[str, Any]], pod: Mapping[str, Any]) -> dict[str, set[str]]:
    """The CSI volumes a pod's claims are bound to: driver -> volume handles."""
    volume_of = {f"{(o.get('metadata') or {}).get('namespace') or 'default'}/{(o.get('metadata') or {}).get('name')}":
                 str((o.get("spec") or {}).get("volumeName") or "")
                 for o in objects if o.get("kind") == "PersistentVolumeClaim"}
    csi_of = {str((o.get("metadata") or {}).get("name")): (o.get("spec") or {}).get("csi") or {}
              for o in objects if o.get("kind") == "PersistentVolume"}
    out: dict[str, set[str]] = {}
    for c in _claims(pod):
        csi = csi_of.get(volume_of.get(c, "")) or {}
        if csi.get("driver"):
            out.setdefault(str(csi["driver"]), set()).add(str(csi.get("volumeHandle") or c))
    return out


def limits_of(objects: Sequence[Mapping[str, Any]], node: str) -> dict[str, int]:
    """The node's CSINode attach limits: driver -> count."""
    for o in objects:
        if o.get("kind") == "CSINode" and (o.get("metadata") or {}).get("name") == node:
            drivers = (o.get("spec") or {}).get("drivers") or ()
            return {str(d.get("name")): int(d["allocatable"]["count"]) for d in drivers
                    if isinstance(((d or {}).get("allocatable") or {}).get("count"), int)}
    return {}


def volume_raises(rerun: Rerun, unit: Unit, node: str) -> list[tuple[str, int, int]]:
    """(driver, count, the count needed) for each driver whose limit on `node` is below the
    volumes the unit's pod uses itself; the count needed adds those of the pods placed there."""
    pods = pods_by_key(rerun.objects)
    pod = pods.get(unit.pods[0])
    if pod is None:
        return []
    own = csi_volumes(rerun.objects, pod)
    limits = limits_of(rerun.objects, node)
    out = []
    for driver, handles in sorted(own.items()):
        have = limits.get(driver)
        if have is None or len(handles) <= have:
            continue
        there = set(handles)
        for key, b in rerun.baseline.items():
            if b.status in PLACED and b.node == node and key in pods and key not in unit.pods:
                there |= csi_volumes(rerun.objects, pods[key]).get(driver, set())
        out.append((driver, have, len(there)))
    return out


def volume_change(node: str, driver: str, have: int, to: int) -> dict[str, Any]:
    return {"kind": "RaiseVolumeLimit", "node": node, "driver": driver,
            "path": "CSINode spec.drivers[].allocatable.count", "from": have, "to": to, "note": VOLUME_NOTE}


def volume_edit(node: str, driver: str, to: int) -> Edit:
    """The edit setting `driver`'s count in `node`'s CSINode to `to`."""
    def edit(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for o in objects:
            if o.get("kind") == "CSINode" and (o.get("metadata") or {}).get("name") == node:
                for d in (o.get("spec") or {}).get("drivers") or ():
                    if d.get("name") == driver:
                        d.setdefault("allocatable", {})["count"] = to
        return objects
    return edit


def resource_grants(rerun: Rerun, unit: Unit, node: str, share: int = 1) -> list[tuple[str, int]]:
    """(resource, amount) for each extended resource the unit's pod requests that `node` has none
    of and another node offers: the pod's request times `share` (the pods of a gang it is to hold)."""
    pod = pods_by_key(rerun.objects).get(unit.pods[0])
    if pod is None:
        return []
    try:
        want = Pod(dict(pod)).requests
        allocs = {str((o.get("metadata") or {}).get("name")): Node(dict(o)).allocatable
                  for o in rerun.objects if o.get("kind") == "Node"}
    except ModelError:
        return []
    if node not in allocs:
        return []
    return [(r, want.get(r) * max(1, share)) for r in sorted(want.scalar)
            if want.get(r) > 0 >= allocs[node].get(r) and any(a.get(r) > 0 for a in allocs.values())]


def resource_change(node: str, resource: str, amount: int) -> dict[str, Any]:
    return {"kind": "AddNodeResource", "node": node, "resource": resource,
            "path": f"status.allocatable[{resource}]", "from": "0", "to": str(amount),
            "note": RESOURCE_NOTE.format(r=resource)}


def resource_edit(node: str, resource: str, amount: int) -> Edit:
    """The edit giving `node` `amount` of `resource` (allocatable and capacity)."""
    def edit(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for o in objects:
            if o.get("kind") == "Node" and (o.get("metadata") or {}).get("name") == node:
                status = o.setdefault("status", {})
                for part in ("allocatable", "capacity"):
                    if part in status or part == "allocatable":
                        status[part] = {**copy.deepcopy(status.get(part) or {}), resource: str(amount)}
        return objects
    return edit
