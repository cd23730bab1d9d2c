"""Builders for storage objects and a plugin handle over an ObjectStore."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from types import SimpleNamespace
from typing import Any

from kubeberth.cache.objects import ObjectStore
from kubeberth.cache.snapshot import Snapshot
from kubeberth.framework import CycleState, Status
from kubeberth.model import NodeInfo, Pod


def store_of(*objs: dict[str, Any]) -> ObjectStore:
    store = ObjectStore()
    for o in objs:
        store.put(o["kind"], o)
    return store


def handle(objects: ObjectStore | None = None, node_infos: Iterable[NodeInfo] = (),
           client: Any = None) -> SimpleNamespace:
    return SimpleNamespace(objects=objects or ObjectStore(), snapshot=Snapshot(list(node_infos)),
                           client=client)


def pvc(name: str, *, namespace: str = "default", volume_name: str = "", storage_class: str | None = None,
        request: str = "", access_modes: list[str] | None = None, bound: bool | None = None,
        annotations: dict[str, str] | None = None, selector: dict[str, Any] | None = None,
        volume_mode: str | None = None, uid: str | None = None, phase: str | None = None,
        owner: dict[str, Any] | None = None, deleting: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": access_modes or ["ReadWriteOnce"]}
    if volume_name:
        spec["volumeName"] = volume_name
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if request:
        spec["resources"] = {"requests": {"storage": request}}
    if selector is not None:
        spec["selector"] = selector
    if volume_mode:
        spec["volumeMode"] = volume_mode
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid or f"uid-pvc-{name}"}
    anns = dict(annotations or {})
    if bound is None:
        bound = bool(volume_name)
    if bound:
        anns["pv.kubernetes.io/bind-completed"] = "yes"
    if anns:
        meta["annotations"] = anns
    if owner:
        meta["ownerReferences"] = [owner]
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}
    if phase or bound:
        obj["status"] = {"phase": phase or "Bound"}
    return obj


def pv(name: str, *, capacity: str = "10Gi", storage_class: str = "", labels: dict[str, str] | None = None,
       claim: tuple[str, str] | None = None, claim_uid: str = "", access_modes: list[str] | None = None,
       hosts: list[str] | None = None, node_affinity: dict[str, Any] | None = None,
       source: dict[str, Any] | None = None, phase: str | None = None,
       volume_mode: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"capacity": {"storage": capacity},
                            "accessModes": access_modes or ["ReadWriteOnce"]}
    if storage_class:
        spec["storageClassName"] = storage_class
    if claim:
        ref = {"namespace": claim[0], "name": claim[1]}
        if claim_uid:
            ref["uid"] = claim_uid
        spec["claimRef"] = ref
    if hosts is not None:
        node_affinity = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": hosts}]}]}}
    if node_affinity is not None:
        spec["nodeAffinity"] = node_affinity
    if volume_mode:
        spec["volumeMode"] = volume_mode
    spec.update(source or {"hostPath": {"path": f"/tmp/{name}"}})
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec}
    if phase:
        obj["status"] = {"phase": phase}
    return obj


def storage_class(name: str, *, wait: bool = False, provisioner: str = "kubernetes.io/no-provisioner",
                  allowed_topologies: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
                           "provisioner": provisioner,
                           "volumeBindingMode": "WaitForFirstConsumer" if wait else "Immediate"}
    if allowed_topologies is not None:
        obj["allowedTopologies"] = allowed_topologies
    return obj


def csi_node(name: str, drivers: dict[str, int | None]) -> dict[str, Any]:
    ds = []
    for d, count in drivers.items():
        entry: dict[str, Any] = {"name": d, "nodeID": name}
        if count is not None:
            entry["allocatable"] = {"count": count}
        ds.append(entry)
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
            "spec": {"drivers": ds}}


def claim_volume(claim: str, name: str = "") -> dict[str, Any]:
    return {"name": name or f"v-{claim}", "persistentVolumeClaim": {"claimName": claim}}


def run_filter(plugin: Any, pod: Pod, node_info: NodeInfo, state: CycleState | None = None) -> Status | None:
    """PreFilter then Filter, as the framework runs them; a PreFilter rejection or skip decides."""
    state = state or CycleState()
    _, status = plugin.pre_filter(state, pod, [node_info])
    if status is not None and status.is_skip():
        return None
    if status is not None and not status.is_success():
        return status
    return plugin.filter(state, pod, node_info)


class VolumeClient:
    """The volume writes of a ClusterClient over an ObjectStore. `controller`: play the PV
    controller and a provisioner afterwards, as simulate does; otherwise the claims stay
    as the scheduler left them (a cluster without kube-controller-manager)."""

    def __init__(self, store: ObjectStore, *, controller: bool = True, refuse: str = "") -> None:
        self.store = store
        self.controller = controller
        self.refuse = refuse
        self.written: list[tuple[str, dict[str, Any]]] = []
        self._rv = 100

    def _write(self, kind: str, obj: Any) -> dict[str, Any]:
        if self.refuse:
            from kubeberth.client import UpdateRefused

            raise UpdateRefused(self.refuse)
        self._rv += 1
        written = copy.deepcopy(dict(obj))
        written["metadata"]["resourceVersion"] = str(self._rv)
        self.written.append((kind, written))
        self.store.put(kind, written)
        return written

    async def update_persistent_volume(self, pv: Any) -> dict[str, Any]:
        written = self._write("PersistentVolume", pv)
        if self.controller:
            from kubeberth.sim_volumes import bind_claimed_volume

            for kind, obj in bind_claimed_volume(self.store, written):
                self.store.put(kind, obj)
        return written

    async def update_persistent_volume_claim(self, pvc: Any) -> dict[str, Any]:
        written = self._write("PersistentVolumeClaim", pvc)
        if self.controller:
            from kubeberth.sim_volumes import provision_claim

            for kind, obj in provision_claim(self.store, written, {}):
                self.store.put(kind, obj)
        return written
