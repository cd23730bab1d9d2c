"""Helpers the volume plugins share: reading PVCs, PVs, StorageClasses and CSINodes
from the ObjectStore, as upstream's storage helpers and listers do.

Objects are raw Kubernetes dicts; parses that matter on the hot path (a PV's
node affinity) are memoised per object identity.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from ..framework import ModelError, NodeSelector, Pod, parse_quantity, quantity_value

PVC = "PersistentVolumeClaim"
PV = "PersistentVolume"
STORAGE_CLASS = "StorageClass"
CSI_NODE = "CSINode"

ANN_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"

# Topology labels, GA and the deprecated beta (failure-domain) ones.
LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_REGION = "topology.kubernetes.io/region"
LABEL_ZONE_BETA = "failure-domain.beta.kubernetes.io/zone"
LABEL_REGION_BETA = "failure-domain.beta.kubernetes.io/region"
LABEL_HOSTNAME = "kubernetes.io/hostname"

Obj = Mapping[str, Any]


def meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def spec(obj: Obj) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def name_of(obj: Obj) -> str:
    return str(meta(obj).get("name") or "")


def annotations_of(obj: Obj) -> Mapping[str, Any]:
    return meta(obj).get("annotations") or {}


def pvc_not_found(name: str) -> str:
    """The API server's NotFound message, which upstream passes through as the reason."""
    return f'persistentvolumeclaim "{name}" not found'


def claim_class(pvc: Obj) -> str:
    """storagehelpers.GetPersistentVolumeClaimClass: the beta annotation wins."""
    ann = annotations_of(pvc)
    if ANN_STORAGE_CLASS in ann:
        return str(ann[ANN_STORAGE_CLASS] or "")
    return str(spec(pvc).get("storageClassName") or "")


def volume_class(pv: Obj) -> str:
    """storagehelpers.GetPersistentVolumeClass."""
    ann = annotations_of(pv)
    if ANN_STORAGE_CLASS in ann:
        return str(ann[ANN_STORAGE_CLASS] or "")
    return str(spec(pv).get("storageClassName") or "")


def ephemeral_claim_name(pod: Pod, volume: Mapping[str, Any]) -> str:
    """ephemeral.VolumeClaimName: <pod name>-<volume name>."""
    return f"{pod.name}-{volume.get('name', '')}"


def pod_claims(pod: Pod) -> list[tuple[str, bool]]:
    """(claim name, is generic ephemeral) for each volume of the pod that uses a PVC."""
    out: list[tuple[str, bool]] = []
    for v in pod.spec.get("volumes") or []:
        if not isinstance(v, Mapping):
            continue
        if v.get("persistentVolumeClaim") is not None:
            out.append((str((v.get("persistentVolumeClaim") or {}).get("claimName") or ""), False))
        elif v.get("ephemeral") is not None:
            out.append((ephemeral_claim_name(pod, v), True))
    return out


def volume_is_for_pod(pod: Pod, pvc: Obj) -> str | None:
    """ephemeral.VolumeIsForPod: the error message, or None when the pod owns the claim."""
    ns = str(meta(pvc).get("namespace") or "default")
    name = name_of(pvc)
    if ns != pod.namespace:
        return f"PVC {ns}/{name} was not created for pod {pod.namespace}/{pod.name} (different namespace)"
    for ref in meta(pvc).get("ownerReferences") or []:
        if not ref.get("controller"):
            continue
        uid = ref.get("uid")
        if (uid and uid == pod.uid) or (not uid and ref.get("kind") == "Pod" and ref.get("name") == pod.name):
            return None
    return f"PVC {ns}/{name} was not created for pod {pod.namespace}/{pod.name} (pod is not owner)"


def _storage(resources: Any) -> int:
    """The `storage` quantity of a resource list in bytes; 0 when absent or unreadable."""
    raw = (resources or {}).get("storage")
    if raw is None:
        return 0
    try:
        return quantity_value(raw)
    except ModelError:
        return 0


def storage_request(pvc: Obj) -> int:
    return _storage((spec(pvc).get("resources") or {}).get("requests"))


def pv_capacity(pv: Obj) -> int:
    return _storage(spec(pv).get("capacity"))


def access_modes(obj: Obj) -> list[str]:
    return [str(m) for m in spec(obj).get("accessModes") or []]


def volume_mode(obj: Obj) -> str:
    return str(spec(obj).get("volumeMode") or "Filesystem")


def pv_phase(pv: Obj) -> str:
    """status.phase; an object written by hand without status counts as the PV
    controller would set it: Bound when it has a claimRef, else Available."""
    phase = (pv.get("status") or {}).get("phase")
    if phase:
        return str(phase)
    return "Bound" if spec(pv).get("claimRef") else "Available"


def is_bound_to_claim(pv: Obj, pvc: Obj) -> bool:
    """IsVolumeBoundToClaim: claimRef names the claim (and its uid, when both are set)."""
    ref = spec(pv).get("claimRef")
    if not ref:
        return False
    pm = meta(pvc)
    if ref.get("name") != pm.get("name") or (ref.get("namespace") or "default") != (
            pm.get("namespace") or "default"):
        return False
    uid = ref.get("uid")
    return not uid or not pm.get("uid") or uid == pm.get("uid")


_AFFINITY_CACHE: dict[int, tuple[Obj, NodeSelector | None, str]] = {}


def pv_node_selector(pv: Obj) -> tuple[NodeSelector | None, str]:
    """The PV's spec.nodeAffinity.required parsed (None when absent), and a parse error."""
    key = id(pv)
    hit = _AFFINITY_CACHE.get(key)
    if hit is not None and hit[0] is pv:
        return hit[1], hit[2]
    required = (spec(pv).get("nodeAffinity") or {}).get("required")
    sel: NodeSelector | None = None
    err = ""
    if required is not None:
        try:
            sel = NodeSelector.from_dict(required)
        except ModelError as exc:
            err = str(exc)
    if len(_AFFINITY_CACHE) > 100_000:
        _AFFINITY_CACHE.clear()
    _AFFINITY_CACHE[key] = (pv, sel, err)
    return sel, err


def check_node_affinity(pv: Obj, node_labels: Mapping[str, str]) -> bool:
    """volume.CheckNodeAffinity: upstream matches the terms against the node's labels
    only (a node object with just labels), so matchFields never match there."""
    sel, err = pv_node_selector(pv)
    if err:
        return False
    if sel is None:
        return True
    return sel.matches("", node_labels)


def label_zones_to_set(value: str) -> set[str]:
    """volumehelpers.LabelZonesToSet: a multi-zone label value joins zones with '__'."""
    return {z.strip() for z in value.split("__") if z.strip()} if value else set()


def translate_to_ga_label(key: str) -> str:
    if key == LABEL_ZONE_BETA:
        return LABEL_ZONE
    if key == LABEL_REGION_BETA:
        return LABEL_REGION
    return key


def csi_attach_limit_key(driver: str) -> str:
    """volumeutil.GetCSIAttachLimitKey."""
    prefix = "attachable-volumes-csi-"
    if len(prefix) + len(driver) >= 63:
        hashed = hashlib.sha1(driver.encode()).hexdigest()[:16]
        return prefix + driver[:23] + hashed
    return prefix + driver


def is_best_effort(pod: Pod) -> bool:
    """v1qos.GetPodQOS(pod) == BestEffort: no container has a non-zero request or
    limit for cpu or memory (status.qosClass, when set, is taken as is)."""
    qos = (pod.raw.get("status") or {}).get("qosClass")
    if qos:
        return qos == "BestEffort"
    spec_ = pod.spec
    for c in [*(spec_.get("initContainers") or []), *(spec_.get("containers") or [])]:
        res = c.get("resources") or {}
        for section in ("requests", "limits"):
            for name, q in (res.get(section) or {}).items():
                if name not in ("cpu", "memory"):
                    continue
                try:
                    if parse_quantity(q) != 0:
                        return False
                except ModelError:
                    return False
    return True
