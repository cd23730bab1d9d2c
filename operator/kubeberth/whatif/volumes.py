"""The volume controllers of a simulated cluster: what the PV controller and a provisioner do
once the scheduler's volume binder has written its part, so that simulate's PreBind sees its
claims bound at once (as a cluster would show them a moment later)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..plugins._volume_util import (
    ANN_SELECTED_NODE,
    CSI_NODE,
    NOT_SUPPORTED_PROVISIONER,
    PV,
    PVC,
    STORAGE_CLASS,
    annotations_of,
    claim_class,
    meta,
    spec,
)
from ..plugins.volume_binding import complete_binding, pvc_key

# The in-tree provisioners and the volume source their PVs carry.
_IN_TREE_SOURCES = {"kubernetes.io/aws-ebs": ("awsElasticBlockStore", "volumeID"),
                    "kubernetes.io/gce-pd": ("gcePersistentDisk", "pdName")}


def bind_claimed_volume(objects: Any, pv: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The PV controller after the binder set a PV's claimRef: bind the claim to it."""
    ref = spec(pv).get("claimRef") or {}
    pvc = objects.get(PVC, f"{ref.get('namespace') or 'default'}/{ref.get('name')}")
    if pvc is None or (ref.get("uid") and meta(pvc).get("uid") and ref["uid"] != meta(pvc)["uid"]):
        return []
    if spec(pvc).get("volumeName") not in (None, "", meta(pv).get("name")):
        return []
    new_pv, new_pvc = complete_binding(pv, pvc)
    return [(PV, new_pv), (PVC, new_pvc)]


def provision_claim(objects: Any, pvc: Mapping[str, Any],
                    node_labels: Mapping[str, str] | None) -> list[tuple[str, dict[str, Any]]]:
    """A provisioner after the binder chose a node for a claim: a PV of the requested size,
    reachable where the driver's CSINode topology keys say (none: everywhere), bound to it."""
    node_name = annotations_of(pvc).get(ANN_SELECTED_NODE)
    if not node_name or spec(pvc).get("volumeName"):
        return []
    sc = objects.get(STORAGE_CLASS, claim_class(pvc))
    provisioner = str((sc or {}).get("provisioner") or "")
    if sc is None or not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
        return []
    m = meta(pvc)
    name = f"pvc-{m.get('uid') or pvc_key(pvc).replace('/', '-')}"
    size = ((spec(pvc).get("resources") or {}).get("requests") or {}).get("storage", "0")
    pv_spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": list(spec(pvc).get("accessModes") or ["ReadWriteOnce"]),
        "volumeMode": spec(pvc).get("volumeMode") or "Filesystem",
        "storageClassName": claim_class(pvc),
        "persistentVolumeReclaimPolicy": sc.get("reclaimPolicy") or "Delete",
    }
    if provisioner in _IN_TREE_SOURCES:
        field, id_key = _IN_TREE_SOURCES[provisioner]
        pv_spec[field] = {id_key: name}
    else:
        pv_spec["csi"] = {"driver": provisioner, "volumeHandle": name}
        terms = _topology(objects, provisioner, str(node_name), node_labels or {})
        if terms:
            pv_spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": terms}]}}
    pv = {"apiVersion": "v1", "kind": "PersistentVolume",
          "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": provisioner}},
          "spec": pv_spec, "status": {"phase": "Available"}}
    new_pv, new_pvc = complete_binding(pv, pvc)
    return [(PV, new_pv), (PVC, new_pvc)]


def _topology(objects: Any, driver: str, node_name: str, labels: Mapping[str, str]) -> list[dict[str, Any]]:
    csi_node = objects.get(CSI_NODE, node_name)
    for d in spec(csi_node or {}).get("drivers") or []:
        if d.get("name") == driver:
            return [{"key": k, "operator": "In", "values": [labels[k]]}
                    for k in d.get("topologyKeys") or [] if k in labels]
    return []


