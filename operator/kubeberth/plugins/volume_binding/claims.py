"""Claims and volumes as the volume binder reads them: keys, binding state, matching a
claim to a PV, and the objects the binder writes (the PV's claimRef) or the PV controller
writes (the claim's volumeName and bind-completed), the latter for simulate."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from ...framework import LabelSelector, ModelError
from .._volume_util import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    PV,
    PVC,
    STORAGE_CLASS,
    Obj,
    access_modes,
    annotations_of,
    claim_class,
    is_bound_to_claim,
    meta,
    name_of,
    pv_capacity,
    pv_phase,
    spec,
    storage_request,
    volume_class,
    volume_mode,
)

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ERR_REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


def pvc_key(pvc: Obj) -> str:
    m = meta(pvc)
    return f"{m.get('namespace') or 'default'}/{m.get('name')}"


def is_fully_bound(pvc: Obj) -> bool:
    """upstream isPVCFullyBound, plus status.phase Bound for objects written by hand."""
    if not spec(pvc).get("volumeName"):
        return False
    return ANN_BIND_COMPLETED in annotations_of(pvc) or (pvc.get("status") or {}).get("phase") == "Bound"


def check_access_modes(pvc: Obj, pv: Obj) -> bool:
    have = set(access_modes(pv))
    return all(m in have for m in access_modes(pvc))


def claim_selector(pvc: Obj) -> LabelSelector | None:
    raw = spec(pvc).get("selector")
    if raw is None:
        return None
    return LabelSelector.from_dict(raw)


def match_topology_selector_terms(terms: Sequence[Mapping[str, Any]] | None, labels: Mapping[str, str]) -> bool:
    """v1helper.MatchTopologySelectorTerms: no terms match everything; terms are ORed,
    a term's expressions ANDed, each `key In values`."""
    if not terms:
        return True
    for term in terms:
        exprs = term.get("matchLabelExpressions") or []
        if all(e.get("key") in labels and labels[e.get("key")] in {str(v) for v in e.get("values") or []}
               for e in exprs):
            return True
    return False


def resource_version(obj: Obj) -> int | None:
    raw = meta(obj).get("resourceVersion")
    try:
        return int(raw) if raw not in (None, "") else None
    except (TypeError, ValueError):
        return None


def is_older(seen: Obj, written: Obj) -> bool:
    """The watched copy predates what we wrote (upstream's CompareResourceVersion > 0)."""
    a, b = resource_version(seen), resource_version(written)
    return a is not None and b is not None and a < b


def claim_reference(pvc: Obj) -> dict[str, Any]:
    """reference.GetReference of a claim, as the binder puts it in the PV's claimRef."""
    pm = meta(pvc)
    ref: dict[str, Any] = {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                           "namespace": pm.get("namespace") or "default", "name": pm.get("name")}
    if pm.get("uid"):
        ref["uid"] = pm["uid"]
    if pm.get("resourceVersion"):
        ref["resourceVersion"] = pm["resourceVersion"]
    return ref


def bind_volume_to_claim_ref(pv: Obj, pvc: Obj) -> dict[str, Any]:
    """volume.GetBindVolumeToClaim: the PV with its claimRef pointing at the claim and, when
    the binding is the scheduler's (not the user's pre-binding), bound-by-controller set."""
    new_pv = copy.deepcopy(dict(pv))
    ref = spec(pv).get("claimRef") or {}
    pm = meta(pvc)
    by_controller = not is_bound_to_claim(pv, pvc)
    if (ref.get("name") != pm.get("name") or (ref.get("namespace") or "default") != (pm.get("namespace") or "default")
            or ref.get("uid") != pm.get("uid")):
        new_pv.setdefault("spec", {})["claimRef"] = claim_reference(pvc)
    anns = new_pv.setdefault("metadata", {}).setdefault("annotations", {})
    if by_controller and ANN_BOUND_BY_CONTROLLER not in anns:
        anns[ANN_BOUND_BY_CONTROLLER] = "yes"
    if not anns:
        del new_pv["metadata"]["annotations"]
    return new_pv


def complete_binding(pv: Obj, pvc: Obj) -> tuple[dict[str, Any], dict[str, Any]]:
    """The PV and claim as the PV controller leaves them after binding one to the other."""
    new_pv = copy.deepcopy(dict(pv))
    new_pvc = copy.deepcopy(dict(pvc))
    new_pv.setdefault("spec", {})["claimRef"] = {k: v for k, v in claim_reference(pvc).items()
                                                 if k != "resourceVersion"}
    new_pv.setdefault("metadata", {}).setdefault("annotations", {})[ANN_BOUND_BY_CONTROLLER] = "yes"
    new_pv["status"] = {**(new_pv.get("status") or {}), "phase": "Bound"}
    new_pvc.setdefault("spec", {})["volumeName"] = name_of(pv)
    anns = new_pvc.setdefault("metadata", {}).setdefault("annotations", {})
    anns[ANN_BIND_COMPLETED] = "yes"
    anns[ANN_BOUND_BY_CONTROLLER] = "yes"
    status = dict(new_pvc.get("status") or {})
    status["phase"] = "Bound"
    if spec(pv).get("capacity"):
        status["capacity"] = dict(spec(pv)["capacity"])
    if access_modes(pv):
        status["accessModes"] = access_modes(pv)
    new_pvc["status"] = status
    return new_pv, new_pvc


def bind_immediate_claims(objects: Any) -> list[str]:
    """Play the PV controller once over an ObjectStore, for a simulation: bind every
    unbound claim of an Immediate class (or none) to the smallest Available PV that
    fits it (or to the PV that already points at it), and finish pre-bound claims.
    Returns the keys of the claims bound."""
    bound: list[str] = []
    taken: set[str] = set()
    claims = sorted(objects.list(PVC), key=storage_request)
    for pvc in claims:
        if is_fully_bound(pvc):
            continue
        sc_name = claim_class(pvc)
        sc = objects.get(STORAGE_CLASS, sc_name) if sc_name else None
        pv_name = spec(pvc).get("volumeName")
        if pv_name:
            pv = objects.get(PV, str(pv_name))
            if pv is None or (spec(pv).get("claimRef") and not is_bound_to_claim(pv, pvc)):
                continue
        else:
            if sc is not None and sc.get("volumeBindingMode") == "WaitForFirstConsumer":
                continue
            pv = _controller_match(pvc, objects, taken)
            if pv is None:
                continue
        taken.add(name_of(pv))
        new_pv, new_pvc = complete_binding(pv, pvc)
        objects.put(PV, new_pv)
        objects.put(PVC, new_pvc)
        bound.append(pvc_key(pvc))
    return bound


def _controller_match(pvc: Obj, objects: Any, taken: set[str]) -> Obj | None:
    requested = storage_request(pvc)
    cls = claim_class(pvc)
    try:
        selector = claim_selector(pvc)
    except ModelError:
        return None
    best: Obj | None = None
    best_qty = 0
    for pv in objects.list(PV):
        if name_of(pv) in taken:
            continue
        if spec(pv).get("claimRef"):
            if is_bound_to_claim(pv, pvc):
                return pv
            continue
        qty = pv_capacity(pv)
        if (qty < requested or volume_mode(pv) != volume_mode(pvc) or pv_phase(pv) != "Available"
                or volume_class(pv) != cls or not check_access_modes(pvc, pv)
                or (selector is not None and not selector.matches(meta(pv).get("labels") or {}))):
            continue
        if best is None or qty < best_qty:
            best, best_qty = pv, qty
    return best
