"""The copies `kubeberth capacity` adds, named and timed so that `simulate` can be given the same:
copy i (from 1) of a pod or workload `web` is the Pod `web-capacity-<i>` (in the template's
namespace), created `i` seconds after the latest creationTimestamp of the cluster's pods and
PodGroups (so they queue after them and in order); a gang's copy i is its PodGroup
`<group>-capacity-<i>` and each member `<member>-capacity-<i>` naming it. Without
--allow-preemption each pod of a copy says `preemptionPolicy: Never`: a copy evicts nothing."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import yaml

from ...model import ModelError
from ...model.pod import parse_time
from .template import Template

DEFAULT_BASE = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
NEVER = "Never"


def copy_name(name: str, i: int) -> str:
    """The name of copy `i` (from 1) of the pod, workload or group `name`."""
    return f"{name}-capacity-{i}"


def base_time(objects: Iterable[Mapping[str, Any]]) -> float:
    """The latest creationTimestamp of the cluster's pods and PodGroups (a fixed day when none has one)."""
    latest: float | None = None
    for obj in objects:
        if obj.get("kind") not in ("Pod", "PodGroup"):
            continue
        try:
            ts = parse_time((obj.get("metadata") or {}).get("creationTimestamp"))
        except ModelError:
            ts = None
        if ts is not None and (latest is None or ts > latest):
            latest = ts
    return latest if latest is not None else DEFAULT_BASE


def _stamp(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class CopyMaker:
    """Makes copy i of a template (module docstring)."""

    def __init__(self, template: Template, base: float, *, allow_preemption: bool = False) -> None:
        self.template = template
        self.base = int(base)
        self.allow_preemption = allow_preemption

    def group_name(self, i: int) -> str | None:
        g = self.template.group
        return None if g is None else copy_name(str(g["metadata"]["name"]), i)

    def first_pod(self, i: int) -> dict[str, Any]:
        """The first Pod of copy i."""
        return next(o for o in self.make(i) if o.get("kind") == "Pod")

    def pod_keys(self, i: int) -> list[str]:
        """NAMESPACE/NAME of the pods of copy i."""
        return [f"{m.namespace}/{copy_name(m.name, i)}" for m in self.template.members]

    def make(self, i: int) -> list[dict[str, Any]]:
        """Copy i: its PodGroup (a gang's) then its pods, each after its claims (a StatefulSet's)."""
        stamp = _stamp(self.base + i)
        out: list[dict[str, Any]] = []
        group = self.group_name(i)
        if self.template.group is not None and group is not None:
            g = copy.deepcopy(self.template.group)
            meta = g.setdefault("metadata", {})
            for key in ("uid", "resourceVersion", "managedFields"):
                meta.pop(key, None)
            meta["name"], meta["creationTimestamp"] = group, stamp
            g.pop("status", None)
            out.append(g)
        for m in self.template.members:
            meta = {k: copy.deepcopy(v) for k, v in m.metadata.items()
                    if k in ("labels", "annotations", "ownerReferences")}
            meta.update(name=copy_name(m.name, i), namespace=m.namespace, creationTimestamp=stamp)
            spec = copy.deepcopy(m.spec)
            if group is not None:
                spec["schedulingGroup"] = dict(spec.get("schedulingGroup") or {}, podGroupName=group)
            if not self.allow_preemption:
                spec["preemptionPolicy"] = NEVER
            out += self._claims(m.claim_templates, str(meta["name"]), m.namespace, spec)
            out.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
        return out


    @staticmethod
    def _claims(templates: list[dict[str, Any]], pod_name: str, namespace: str,
                spec: dict[str, Any]) -> list[dict[str, Any]]:
        """A StatefulSet's claims for one copy, `<template>-<pod>` as its controller names them, each
        mounted as the volume of the template's name (unbound: the scheduler's VolumeBinding binds them)."""
        out = []
        names = {t["metadata"]["name"] for t in templates}
        volumes = [v for v in spec.get("volumes") or () if v.get("name") not in names]
        for t in templates:
            vct = str(t["metadata"]["name"])
            claim = f"{vct}-{pod_name}"
            meta = {"name": claim, "namespace": namespace, "labels": dict(t["metadata"].get("labels") or {})}
            out.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta,
                        "spec": copy.deepcopy(t.get("spec") or {}), "status": {"phase": "Pending"}})
            volumes.append({"name": vct, "persistentVolumeClaim": {"claimName": claim}})
        if templates:
            spec["volumes"] = volumes
        return out


def emit_copies(maker: CopyMaker, count: int, before: Iterable[Mapping[str, Any]] = ()) -> str:
    """Copies 1..count as a YAML stream (to give `simulate` beside the cluster), after the
    objects `before` (the cluster, for a stream simulate reproduces the answer from alone)."""
    docs = [dict(o) for o in before] + [obj for i in range(1, count + 1) for obj in maker.make(i)]
    return yaml.safe_dump_all(docs, sort_keys=False)
