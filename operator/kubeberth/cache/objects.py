"""Cluster objects other than nodes and pods, as plugins read them (listers)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..priority import PriorityResolver


def object_key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


class ObjectStore:
    """Latest version of each object, by kind and key (namespace/name or name).

    Kinds used: PriorityClass, PodDisruptionBudget, Namespace, PersistentVolume,
    PersistentVolumeClaim, StorageClass, CSINode, Service, ReplicaSet,
    ReplicationController, StatefulSet.
    """

    def __init__(self) -> None:
        self._by_kind: dict[str, dict[str, Mapping[str, Any]]] = {}
        self.priorities = PriorityResolver()
        self.generation = 0

    def put(self, kind: str, obj: Mapping[str, Any]) -> None:
        self._by_kind.setdefault(kind, {})[object_key(obj)] = obj
        if kind == "PriorityClass":
            self.priorities.put(obj)
        self.generation += 1

    def delete(self, kind: str, key: str) -> None:
        self._by_kind.get(kind, {}).pop(key, None)
        if kind == "PriorityClass":
            self.priorities.delete(key)
        self.generation += 1

    def get(self, kind: str, key: str) -> Mapping[str, Any] | None:
        return self._by_kind.get(kind, {}).get(key)

    def list(self, kind: str, namespace: str | None = None) -> Iterator[Mapping[str, Any]]:
        for obj in self._by_kind.get(kind, {}).values():
            if namespace is None or (obj.get("metadata") or {}).get("namespace") == namespace:
                yield obj

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        ns = self.get("Namespace", namespace)
        if ns is None:
            return {"kubernetes.io/metadata.name": namespace}
        labels = dict((ns.get("metadata") or {}).get("labels") or {})
        labels.setdefault("kubernetes.io/metadata.name", namespace)
        return labels
