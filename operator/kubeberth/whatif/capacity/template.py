"""The pod template of `kubeberth capacity` (POD.yaml): a Pod, the `spec.template` of a workload
(Deployment, ReplicaSet, StatefulSet, Job, CronJob's `spec.jobTemplate`), or a gang: a PodGroup
(scheduling.k8s.io/v1beta1) with the Pods naming it in `spec.schedulingGroup.podGroupName`, given as
Pod documents beside it (its members as written; a copy is the group and all of them). A
StatefulSet's volumeClaimTemplates give each copy its claims, as its controller does. Anything
else, two templates, or a template the API server would refuse is an InputError naming the file,
the document and the field."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..inputs import InputError, Origins, load_files

POD_GROUP_API = "scheduling.k8s.io/v1beta1"
WORKLOAD_KINDS = {"Deployment": ("spec", "template"), "ReplicaSet": ("spec", "template"),
                  "StatefulSet": ("spec", "template"), "Job": ("spec", "template"),
                  "CronJob": ("spec", "jobTemplate", "spec", "template")}


@dataclass
class Member:
    """One pod of a copy: its metadata and spec as the template gives them, where it was read
    (`where`: FILE, document N) and the path of the template inside that document (`path`)."""

    name: str
    namespace: str
    metadata: dict[str, Any]
    spec: dict[str, Any]
    where: str
    path: str = ""
    claim_templates: list[dict[str, Any]] = field(default_factory=list)  # a StatefulSet's volumeClaimTemplates


@dataclass
class Template:
    """What one copy is made of: its pods (one, or a gang's members) and, for a gang, the PodGroup."""

    members: list[Member]
    group: dict[str, Any] | None = None
    group_where: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The name copies are named after: the group's, else the pod's (or workload's)."""
        if self.group is not None:
            return str(self.group["metadata"]["name"])
        return self.members[0].name

    @property
    def namespace(self) -> str:
        return self.members[0].namespace


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _dig(obj: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    cur: Any = obj
    for key in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(key)
    return cur


def _check_spec(spec: Any, where: str, prefix: str) -> dict[str, Any]:
    """The checks of the API server's pod validation that matter before the model reads it."""
    if not isinstance(spec, Mapping):
        raise InputError(f"{where}: {prefix}spec: must be a mapping (a pod spec)")
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        raise InputError(f"{where}: {prefix}spec.containers: Required value (a pod needs at least one container)")
    for i, c in enumerate(containers):
        if not isinstance(c, Mapping):
            raise InputError(f"{where}: {prefix}spec.containers[{i}]: must be a mapping")
        for key in ("name", "image"):
            if not isinstance(c.get(key), str) or not c.get(key):
                raise InputError(f"{where}: {prefix}spec.containers[{i}].{key}: Required value")
    if spec.get("nodeName"):
        raise InputError(f"{where}: {prefix}spec.nodeName: set: copies of it would not be scheduled "
                         "(remove it to ask where the scheduler would place them)")
    return copy.deepcopy(dict(spec))


def _member(obj: Mapping[str, Any], where: str) -> Member:
    kind = str(obj.get("kind"))
    meta = _meta(obj)
    name = meta.get("name") or str(meta.get("generateName") or "").rstrip("-")
    if not isinstance(name, str) or not name:
        raise InputError(f"{where}: metadata.name: Required value (or metadata.generateName)")
    namespace = str(meta.get("namespace") or "default")
    if kind == "Pod":
        return Member(name, namespace, copy.deepcopy(dict(meta)), _check_spec(obj.get("spec"), where, ""), where)
    path = WORKLOAD_KINDS[kind]
    template = _dig(obj, path)
    dotted = ".".join(path)
    if not isinstance(template, Mapping):
        raise InputError(f"{where}: {kind} {name}: {dotted}: Required value (the pod template)")
    spec = _check_spec(template.get("spec"), where, f"{dotted}.")
    tmeta = copy.deepcopy(dict(_meta(template)))
    tmeta["namespace"] = namespace  # the pods of a workload are in its namespace
    claims = _dig(obj, ("spec", "volumeClaimTemplates")) if kind == "StatefulSet" else None
    if claims is not None and (not isinstance(claims, list) or not all(
            isinstance(c, Mapping) and isinstance(_dig(c, ("metadata", "name")), str) for c in claims)):
        raise InputError(f"{where}: {kind} {name}: spec.volumeClaimTemplates: each needs metadata.name")
    return Member(name, namespace, tmeta, spec, where, dotted, copy.deepcopy(list(claims or [])))


def read_template(path: str | Path) -> Template:
    """POD.yaml's template (module docstring); InputError naming the file, document and field."""
    origins = Origins()
    objects = load_files([path], origins)
    where = {id(o): origins.of(o) or str(path) for o in objects}
    groups = [o for o in objects if o.get("kind") == "PodGroup"]
    pods: list[tuple[dict[str, Any], str]] = []
    for obj in objects:
        kind = obj.get("kind")
        if kind == "PodGroup":
            if obj.get("apiVersion") != POD_GROUP_API:
                raise InputError(f"{where[id(obj)]}: apiVersion: PodGroup must be {POD_GROUP_API}")
            continue
        if kind != "Pod" and kind not in WORKLOAD_KINDS:
            raise InputError(f"{where[id(obj)]}: kind {kind}: not a pod template (give a Pod, a "
                             f"{', '.join(WORKLOAD_KINDS)}, or a PodGroup with its Pods)")
        pods.append((obj, where[id(obj)]))
    if not pods:
        raise InputError(f"{path}: no pod template (give a Pod, a {', '.join(WORKLOAD_KINDS)}, or a PodGroup "
                         "with the Pods naming it in spec.schedulingGroup.podGroupName)")
    if len(groups) > 1:
        raise InputError(f"{where[id(groups[1])]}: a second PodGroup: give one template")
    if not groups:
        if len(pods) > 1:
            first, second = pods[0][1], pods[1][1]
            raise InputError(f"{second}: a second pod template (the first is {first}): give one, or a "
                             "PodGroup with its Pods for a gang")
        obj, at = pods[0]
        return Template([_member(obj, at)])
    group = groups[0]
    gwhere = where[id(group)]
    gname = _meta(group).get("name")
    if not isinstance(gname, str) or not gname:
        raise InputError(f"{gwhere}: metadata.name: Required value")
    gns = str(_meta(group).get("namespace") or "default")
    members = []
    for obj, at in pods:
        m = _member(obj, at)
        named = _dig(m.spec, ("schedulingGroup", "podGroupName"))
        if named != gname or m.namespace != gns:
            raise InputError(f"{at}: {m.path + '.' if m.path else ''}spec.schedulingGroup.podGroupName: must "
                             f"name the PodGroup {gns}/{gname} (a gang's template is the PodGroup and its Pods)")
        members.append(m)
    names = [m.name for m in members]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise InputError(f"{path}: two members named {dup}")
    return Template(members, copy.deepcopy(dict(group)), gwhere)
