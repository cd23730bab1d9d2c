"""The kinds the scheduler reads, in one table: the operator lists and watches them, simulate
loads them from a cluster dump, and the event handlers know which of them move pods."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .. import features
from ..framework import events as ev
from ..framework.registry import Registry

log = logging.getLogger(__name__)

POD = "Pod"
NODE = "Node"
SCHEDULING_PROFILE = "SchedulingProfile"
POD_GROUP = "PodGroup"


@dataclass(frozen=True)
class WatchedKind:
    group: str
    version: str
    plural: str
    kind: str
    order: int  # initial-sync order: lower first (classes before the pods that name them...)
    event_resource: str | None = None  # a change is this ClusterEvent resource: it may move pods
    gate: str = ""  # read only while this feature gate is on (kube-scheduler does not watch it otherwise)
    declared: bool = False  # a kind a plugin of one's own reads (Plugin.reads), not one of the table's
    store_as: str = ""  # the key of its objects and events when not `kind` (a declared kind's Kind.group)

    @property
    def store_key(self) -> str:
        return self.store_as or self.kind

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def path(self) -> str:
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        return f"{prefix}/{self.plural}"


WATCHED: tuple[WatchedKind, ...] = (
    WatchedKind("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", 0),
    WatchedKind("", "v1", "namespaces", "Namespace", 0),
    WatchedKind("kubeberth.io", "v1alpha1", "schedulingprofiles", SCHEDULING_PROFILE, 1),
    WatchedKind("scheduling.k8s.io", "v1beta1", "podgroups", POD_GROUP, 1, ev.POD_GROUP,
                gate=features.GENERIC_WORKLOAD),
    WatchedKind("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", 2),
    WatchedKind("", "v1", "persistentvolumes", "PersistentVolume", 2, ev.PERSISTENT_VOLUME),
    WatchedKind("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", 2, ev.PERSISTENT_VOLUME_CLAIM),
    WatchedKind("storage.k8s.io", "v1", "storageclasses", "StorageClass", 2, ev.STORAGE_CLASS),
    WatchedKind("storage.k8s.io", "v1", "csinodes", "CSINode", 2, ev.CSI_NODE),
    WatchedKind("storage.k8s.io", "v1", "csidrivers", "CSIDriver", 2, ev.CSI_DRIVER),
    WatchedKind("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity", 2, ev.CSI_STORAGE_CAPACITY),
    WatchedKind("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", 2, ev.DEVICE_CLASS),
    WatchedKind("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", 2, ev.RESOURCE_SLICE),
    WatchedKind("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", 2, ev.RESOURCE_CLAIM),
    WatchedKind("resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", 2),
    WatchedKind("resource.k8s.io", "v1", "devicetaintrules", "DeviceTaintRule", 2, ev.RESOURCE_SLICE),
    WatchedKind("", "v1", "services", "Service", 2),
    WatchedKind("", "v1", "replicationcontrollers", "ReplicationController", 2),
    WatchedKind("apps", "v1", "replicasets", "ReplicaSet", 2),
    WatchedKind("apps", "v1", "statefulsets", "StatefulSet", 2),
    WatchedKind("", "v1", "nodes", NODE, 3),
    WatchedKind("", "v1", "pods", POD, 4),
)



def watched_kinds(gates: features.FeatureGates | None = None) -> tuple[WatchedKind, ...]:
    """The kinds read under `gates` (default: the process's): those of a gate that is off are left out."""
    gates = gates if gates is not None else features.current()
    return tuple(k for k in WATCHED if not k.gate or gates.enabled(k.gate))


# Kinds kept as plain objects for the plugins (everything but pods, nodes and profiles).
OBJECT_KINDS = frozenset(k.kind for k in WATCHED if k.kind not in (POD, NODE, SCHEDULING_PROFILE))
_TABLE_GROUPS = {k.kind: k.group for k in WATCHED}


def table_kind(obj: Mapping[str, Any]) -> str | None:
    """The table's kind a document is: its kind, unless its apiVersion names another group (a
    PodGroup of scheduling.x-k8s.io is not scheduling.k8s.io's); None for a kind not in the table."""
    kind = obj.get("kind")
    if not isinstance(kind, str) or kind not in _TABLE_GROUPS:
        return None
    api_version = obj.get("apiVersion")
    if api_version and str(api_version).rpartition("/")[0] != _TABLE_GROUPS[kind]:
        return None
    return kind


# Kinds whose changes may make pods schedulable, as the ClusterEvent resource they are.
EVENT_RESOURCES = {k.kind: k.event_resource for k in WATCHED if k.event_resource is not None}


def declared_kinds(registry: Registry, names: Iterable[str] | None = None) -> list[WatchedKind]:
    """The kinds the registry's plugins (or those of `names`) declare they read, beyond the table's:
    listed and watched like the others (after the classes, before the nodes), stored for plugins
    under their `group_kind` (`Kind.group`), a change being a ClusterEvent of that resource. A kind
    two plugins declare differently is taken once (the first); one the table reads (same group and
    kind: kubeberth reads it itself) is not watched twice."""
    table = {(k.group, k.kind) for k in WATCHED}
    taken: dict[str, WatchedKind] = {}
    out: list[WatchedKind] = []
    wanted = None if names is None else set(names)
    for spec in registry.specs():
        if wanted is not None and spec.name not in wanted:
            continue
        for k in spec.cls.reads:
            if (k.group, k.kind) in table:
                continue
            key = k.group_kind
            kind = WatchedKind(k.group, k.version, k.resource, k.kind, 2, key, declared=True, store_as=key)
            seen = taken.get(key)
            if seen is None:
                taken[key] = kind
                out.append(kind)
            elif (seen.version, seen.plural) != (k.version, k.resource):
                log.warning("Plugin %s reads %s as %s; it is already read as %s", spec.name, key, kind.path,
                            seen.path)
    return out

