"""Cluster objects other than nodes and pods, as plugins read them (listers)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..priority import PriorityResolver

LOG_MAX = 8192


def object_key(obj: Mapping[str, Any]) -> str:
    """An object's key in the ObjectStore: "namespace/name", or "name" for a cluster-scoped one."""
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
        # Per kind someone follows (`changes`): the keys put (with the new version) and deleted
        # (None) since position `_log_base[kind]`, so that a reader keeps its view current
        # without a rescan.
        self._logs: dict[str, list[tuple[str, Mapping[str, Any] | None]]] = {}
        self._log_base: dict[str, int] = {}

    def put(self, kind: str, obj: Mapping[str, Any]) -> None:
        objs = self._by_kind.setdefault(kind, {})
        key = object_key(obj)
        if self._logs and kind in self._logs:
            self._record(kind, key, obj)
        objs[key] = obj
        if kind == "PriorityClass":
            self.priorities.put(obj)
        self.generation += 1

    def delete(self, kind: str, key: str) -> None:
        old = self._by_kind.get(kind, {}).pop(key, None)
        if old is not None and self._logs and kind in self._logs:
            self._record(kind, key, None)
        if kind == "PriorityClass":
            self.priorities.delete(key)
        self.generation += 1

    def _record(self, kind: str, key: str, new: Mapping[str, Any] | None) -> None:
        log = self._logs[kind]
        log.append((key, new))
        if len(log) > LOG_MAX:  # readers this far behind rescan
            self._log_base[kind] += len(log)
            log.clear()

    def changes(self, kind: str, since: int | None
                ) -> tuple[int, Sequence[tuple[str, Mapping[str, Any] | None]] | None]:
        """The position now and the (key, new version) of each object of `kind` put (deleted:
        None) since position `since`, in order; None instead of them when they are not known
        (the first call for a kind starts following it, `since` None, or too far behind):
        rescan."""
        log = self._logs.get(kind)
        if log is None:
            self._logs[kind] = []
            self._log_base[kind] = 0
            return 0, None
        base = self._log_base[kind]
        end = base + len(log)
        if since is None or since < base or since > end:
            return end, None
        return end, log[since - base:]

    def get(self, kind: str, key: str) -> Mapping[str, Any] | None:
        return self._by_kind.get(kind, {}).get(key)

    def list(self, kind: str, namespace: str | None = None) -> Iterator[Mapping[str, Any]]:
        for obj in self._by_kind.get(kind, {}).values():
            if namespace is None or (obj.get("metadata") or {}).get("namespace") == namespace:
                yield obj

    def kinds(self) -> tuple[str, ...]:
        """The kinds the store holds objects of."""
        return tuple(k for k, objs in self._by_kind.items() if objs)

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        ns = self.get("Namespace", namespace)
        if ns is None:
            return {"kubernetes.io/metadata.name": namespace}
        labels = dict((ns.get("metadata") or {}).get("labels") or {})
        labels.setdefault("kubernetes.io/metadata.name", namespace)
        return labels
