"""Kueue's API as this controller uses it (kueue.x-k8s.io/v1beta2, Kueue v0.17's CRDs)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

GROUP = "kueue.x-k8s.io"
VERSION = "v1beta2"
API_VERSION = f"{GROUP}/{VERSION}"
CONTROLLER_NAME = "kubeberth.io/dry-run"  # an AdmissionCheck's spec.controllerName that names us
FIELD_MANAGER = "kubeberth-kueue-admission-check"

# status.admissionChecks[].state (AdmissionCheckState)
PENDING = "Pending"
READY = "Ready"
RETRY = "Retry"
REJECTED = "Rejected"

# status.conditions types
QUOTA_RESERVED = "QuotaReserved"
ADMITTED = "Admitted"
FINISHED = "Finished"
EVICTED = "Evicted"
ACTIVE = "Active"  # an AdmissionCheck's condition: its controller runs

MAX_MESSAGE = 32768  # the CRD's maxLength of status.admissionChecks[].message


def path(plural: str, name: str, namespace: str | None = None, *, status: bool = False) -> str:
    """The API path of one Kueue object (its status subresource with `status`)."""
    where = f"namespaces/{namespace}/" if namespace else ""
    return f"/apis/{GROUP}/{VERSION}/{where}{plural}/{name}" + ("/status" if status else "")


def condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    """The object's status condition of type `kind`, or None."""
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == kind:
            return cond
    return None


def is_true(obj: Mapping[str, Any], kind: str) -> bool:
    cond = condition(obj, kind)
    return cond is not None and cond.get("status") == "True"


def key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))
