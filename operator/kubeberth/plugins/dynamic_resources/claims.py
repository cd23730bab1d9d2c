"""ResourceClaims as the plugin reads them: which claims a pod names (resourceclaim.Name), whom
a claim is reserved for, what its allocation occupies, and the claim that the resourceclaim
controller creates from a template (used by simulate, where no controller runs)."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from typing import Any

from ...model import Pod
from ...model.errors import ModelError
from ...model.selectors import NodeSelector
from .devices import DeviceID

RESOURCE_CLAIM = "ResourceClaim"
RESOURCE_CLAIM_TEMPLATE = "ResourceClaimTemplate"
DEVICE_CLASS = "DeviceClass"
RESOURCE_SLICE = "ResourceSlice"
DEVICE_TAINT_RULE = "DeviceTaintRule"
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
FINALIZER = "resource.kubernetes.io/delete-protection"
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the API server's generateName suffix letters


class ClaimRefError(Exception):
    pass


def pod_claim_refs(pod: Pod) -> list[tuple[str, str | None, bool]]:
    """(pod claim name, ResourceClaim name or None, must check owner) for each spec.resourceClaims
    entry, as resourceclaim.Name resolves them."""
    out: list[tuple[str, str | None, bool]] = []
    statuses = (pod.raw.get("status") or {}).get("resourceClaimStatuses") or ()
    for pc in pod.spec.get("resourceClaims") or ():
        name = str(pc.get("name") or "")
        if pc.get("resourceClaimName"):
            out.append((name, str(pc["resourceClaimName"]), False))
        elif pc.get("resourceClaimTemplateName"):
            for st in statuses:
                if st.get("name") == name:
                    out.append((name, st.get("resourceClaimName") or None, True))
                    break
            else:
                raise ClaimRefError(f'pod "{pod.namespace}/{pod.name}": ResourceClaim not created yet')
        else:
            raise ClaimRefError(f'pod "{pod.namespace}/{pod.name}", spec.resourceClaim "{name}": '
                                "none of the supported fields are set")
    return out


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def claim_key(claim: Mapping[str, Any]) -> str:
    return f"{meta(claim).get('namespace')}/{meta(claim).get('name')}"


def claim_uid(claim: Mapping[str, Any]) -> str:
    return str(meta(claim).get("uid") or claim_key(claim))


def is_owned_by(claim: Mapping[str, Any], pod: Pod) -> bool:
    refs = meta(claim).get("ownerReferences") or ()
    return any(ref.get("controller") and str(ref.get("uid")) == pod.uid for ref in refs)


def check_for_pod(claim: Mapping[str, Any], pod: Pod) -> None:
    """resourceclaim.IsForPod."""
    ns, name = meta(claim).get("namespace"), meta(claim).get("name")
    if ns != pod.namespace:
        raise ClaimRefError(f"ResourceClaim {ns}/{name} is not in the same namespace as Pod {pod.namespace}/{pod.name}")
    if not is_owned_by(claim, pod):
        raise ClaimRefError(f"ResourceClaim {ns}/{name} was not created for Pod {pod.namespace}/{pod.name} "
                            "(Pod is not owner)")


def allocation(claim: Mapping[str, Any]) -> Mapping[str, Any] | None:
    a = (claim.get("status") or {}).get("allocation")
    return a if isinstance(a, Mapping) else None


def reserved_for(claim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((claim.get("status") or {}).get("reservedFor") or ())


def is_reserved_for_pod(claim: Mapping[str, Any], pod: Pod) -> bool:
    return any(str(r.get("uid")) == pod.uid and (r.get("resource") or "pods") == "pods" for r in reserved_for(claim))


def consumer_ref(pod: Pod) -> dict[str, str]:
    return {"resource": "pods", "name": pod.name, "uid": pod.uid}


def allocated_device_ids(alloc: Mapping[str, Any]) -> list[DeviceID]:
    """The devices an allocation holds exclusively (admin access and shared ones hold none)."""
    out = []
    for r in (alloc.get("devices") or {}).get("results") or ():
        if r.get("adminAccess") or r.get("shareID"):
            continue
        out.append((str(r.get("driver")), str(r.get("pool")), str(r.get("device"))))
    return out


def allocation_selector(alloc: Mapping[str, Any]) -> NodeSelector | None:
    raw = alloc.get("nodeSelector")
    if raw is None:
        return None
    try:
        return NodeSelector.from_dict(raw)
    except ModelError as exc:
        raise ClaimRefError(f"allocation has an invalid node selector: {exc}") from exc


def claim_from_template(pod_raw: Mapping[str, Any], pod_claim_name: str,
                        template: Mapping[str, Any]) -> dict[str, Any]:
    """The claim the resourceclaim controller creates for a pod from a template: named
    `<pod>-<claim>-<5 letters>` (a stable suffix here), owned by the pod, the template's spec."""
    pm = meta(pod_raw)
    ns = str(pm.get("namespace") or "default")
    pod_name = str(pm.get("name") or "")
    uid = str(pm.get("uid") or f"{ns}/{pod_name}")
    digest = hashlib.sha256(f"{uid}/{pod_claim_name}".encode()).digest()
    suffix = "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:5])
    prefix = f"{pod_name}-{pod_claim_name}"[:57]
    tspec = template.get("spec") or {}
    tmeta = tspec.get("metadata") or {}
    annotations = dict(tmeta.get("annotations") or {})
    annotations[POD_CLAIM_NAME_ANNOTATION] = pod_claim_name
    claim_meta: dict[str, Any] = {
        "name": f"{prefix}-{suffix}", "namespace": ns, "uid": f"{uid}/claim/{pod_claim_name}",
        "annotations": annotations,
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": uid,
                             "controller": True, "blockOwnerDeletion": True}],
    }
    if tmeta.get("labels"):
        claim_meta["labels"] = dict(tmeta["labels"])
    return {"apiVersion": "resource.k8s.io/v1", "kind": RESOURCE_CLAIM, "metadata": claim_meta,
            "spec": copy.deepcopy(dict(tspec.get("spec") or {}))}
