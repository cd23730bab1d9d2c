"""Builders for storage objects (the plugin's handle comes from tests.doubles.handle)."""

from __future__ import annotations

from typing import Any

from kubeberth.framework import CycleState, Status
from kubeberth.model import NodeInfo, Pod


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
