"""A Workload's pod sets as the pods Kueue would let the scheduler place once it is admitted.

Per pod set of `spec.podSets`, `count` copies of its `template` (the admitted count of
`status.admission.podSetAssignments[]` when Kueue admitted fewer: partial admission), named
`<workload>-<podset>-<i>` in the Workload's namespace, with what Kueue applies at admission
(pkg/podset's FromAssignment and Merge): the node labels of every ResourceFlavor assigned to the
pod set become node selectors (a key the template sets already keeps its value) and the flavours'
tolerations are added. With Topology Aware Scheduling (`topologyAssignment`), each pod gets the
node selector of the domain it was assigned (as Kueue's topology ungater sets it): the domains
in the order of the assignment's slices, as many pods in each as its pod count.

The Workload is one gang: its pods are tried together, and it fits when they all do. A template
naming a PodGroup (`spec.schedulingGroup`) loses it: the PodGroup does not exist before the job's
pods do, and the Workload already is the group.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

PODSET_LABEL = "kueue.x-k8s.io/podset"


class WorkloadError(ValueError):
    """A Workload whose pod sets cannot be made into pods: the message names the field."""


def flavor_names(assignment: Mapping[str, Any]) -> list[str]:
    """The ResourceFlavors of one podSetAssignment (its `flavors`: resource -> flavour), sorted, once each."""
    return sorted({str(f) for f in (assignment.get("flavors") or {}).values() if f})


def _domains(topology: Mapping[str, Any], where: str) -> Iterator[tuple[dict[str, str], int]]:
    """(node selector, pod count) per domain of a TopologyAssignment, in its order."""
    levels = [str(level) for level in topology.get("levels") or ()]
    for s, piece in enumerate(topology.get("slices") or ()):
        n = int(piece.get("domainCount") or 0)
        counts = piece.get("podCounts") or {}
        per = ([int(c) for c in counts["individual"]] if counts.get("individual") is not None
               else [int(counts.get("universal") or 0)] * n)
        values = piece.get("valuesPerLevel") or []
        if len(values) != len(levels) or len(per) != n:
            raise WorkloadError(f"{where}.topologyAssignment.slices[{s}]: its levels or counts do not match")
        for d in range(n):
            selector = {}
            for level, value in zip(levels, values, strict=True):
                if value.get("universal") is not None:
                    selector[level] = str(value["universal"])
                else:
                    ind = value.get("individual") or {}
                    roots = ind.get("roots") or []
                    if d >= len(roots):
                        raise WorkloadError(f"{where}.topologyAssignment.slices[{s}]: {len(roots)} roots for "
                                            f"{n} domains")
                    selector[level] = f"{ind.get('prefix') or ''}{roots[d]}{ind.get('suffix') or ''}"
            yield selector, per[d]


def _apply_flavors(spec: dict[str, Any], flavors: Sequence[Mapping[str, Any]]) -> None:
    selector = dict(spec.get("nodeSelector") or {})
    tolerations = list(spec.get("tolerations") or [])
    for flavor in flavors:
        fspec = flavor.get("spec") or {}
        for k, v in (fspec.get("nodeLabels") or {}).items():
            selector.setdefault(k, v)
        for t in fspec.get("tolerations") or ():
            if t not in tolerations:
                tolerations.append(dict(t))
    if selector:
        spec["nodeSelector"] = selector
    if tolerations:
        spec["tolerations"] = tolerations


def expand(workload: Mapping[str, Any], flavors: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The pods of `workload` as admitted (`flavors`: ResourceFlavor objects by name; a missing one
    is a WorkloadError)."""
    meta = workload.get("metadata") or {}
    name, namespace = str(meta.get("name") or "workload"), str(meta.get("namespace") or "default")
    uid = str(meta.get("uid") or f"{namespace}-{name}")
    assignments = {str(a.get("name") or "main"): a
                   for a in ((workload.get("status") or {}).get("admission") or {}).get("podSetAssignments") or ()}
    pods: list[dict[str, Any]] = []
    for i, podset in enumerate((workload.get("spec") or {}).get("podSets") or ()):
        ps_name = str(podset.get("name") or "main")
        where = f"spec.podSets[{i}]"
        assignment = assignments.get(ps_name, {})
        count = int(assignment.get("count", podset.get("count", 1)) or 0)
        used = []
        for fname in flavor_names(assignment):
            if fname not in flavors:
                raise WorkloadError(f"{where}: ResourceFlavor {fname!r} of its assignment does not exist")
            used.append(flavors[fname])
        template = podset.get("template") or {}
        if not isinstance(template, Mapping) or not isinstance(template.get("spec"), Mapping):
            raise WorkloadError(f"{where}.template.spec: missing")
        topology = assignment.get("topologyAssignment")
        selectors: list[dict[str, str]] = []
        if topology:
            for selector, n in _domains(topology, f"status.admission.podSetAssignments[{ps_name}]"):
                selectors.extend([selector] * n)
        for j in range(count):
            pod_meta = copy.deepcopy(dict(template.get("metadata") or {}))
            pod_meta.pop("generateName", None)
            pod_meta.update(name=f"{name}-{ps_name}-{j}", namespace=namespace, uid=f"kueue-{uid}-{ps_name}-{j}")
            pod_meta["labels"] = {**(pod_meta.get("labels") or {}), PODSET_LABEL: ps_name}
            spec = copy.deepcopy(dict(template["spec"]))
            for gone in ("nodeName", "schedulingGroup", "schedulingGates"):
                spec.pop(gone, None)
            _apply_flavors(spec, used)
            if j < len(selectors):
                spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **selectors[j]}
            pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec})
    if not pods:
        raise WorkloadError("spec.podSets: no pod to place")
    return pods
