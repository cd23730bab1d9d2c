"""The volume binder (upstream's SchedulerVolumeBinder): find the volumes a pod needs on a
node, assume them at Reserve, and at PreBind write what kube-scheduler writes (the PV's
claimRef for a static binding, the claim's selected-node annotation for provisioning) through
the ClusterClient, then wait, polling the watched objects, until the claims are bound."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from ...framework import Pod
from .._volume_util import (
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    PV,
    PVC,
    STORAGE_CLASS,
    Obj,
    annotations_of,
    check_node_affinity,
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
from .capacity import StorageResource, has_enough_capacity
from .claims import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    bind_volume_to_claim_ref,
    check_access_modes,
    claim_selector,
    is_fully_bound,
    is_older,
    match_topology_selector_terms,
    pvc_key,
)

POLL_SECONDS = 1.0  # upstream polls the binding once a second


class Binding:
    """A static binding: this PV for this claim."""

    __slots__ = ("pv", "pvc")

    def __init__(self, pv: Obj, pvc: Obj) -> None:
        self.pv = pv
        self.pvc = pvc

    def storage_class_name(self) -> str:
        return volume_class(self.pv)

    def storage_resource(self) -> StorageResource:
        return StorageResource(requested=storage_request(self.pvc), capacity=pv_capacity(self.pv))


class DynamicProvision:
    """A claim to provision, with the CSIStorageCapacity that showed room for it (if checked)."""

    __slots__ = ("node_capacity", "pvc")

    def __init__(self, pvc: Obj, node_capacity: Obj | None = None) -> None:
        self.pvc = pvc
        self.node_capacity = node_capacity


class PodVolumes:
    """What one node needs for the pod: PVs to bind statically, claims to provision."""

    __slots__ = ("dynamic_provisions", "static_bindings")

    def __init__(self) -> None:
        self.static_bindings: list[Binding] = []
        self.dynamic_provisions: list[DynamicProvision] = []


class PodVolumeClaims:
    """The pod's claims sorted at PreFilter, and the PVs its delayed claims may take."""

    __slots__ = ("bound_claims", "unbound_delay", "volumes_by_class")

    def __init__(self, bound: list[Obj], unbound_delay: list[Obj], volumes_by_class: dict[str, list[Obj]]) -> None:
        self.bound_claims = bound
        self.unbound_delay = unbound_delay
        self.volumes_by_class = volumes_by_class


class VolumeBinder:
    def __init__(self, handle: Any, bind_timeout: float,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep) -> None:
        self.handle = handle
        self.bind_timeout = bind_timeout
        self.sleep = sleep
        # The assume cache: PV name -> (claim key, claim uid) it is assumed bound to; claim key ->
        # node selected for provisioning. Entries live from Reserve to the end of PreBind (or Unreserve).
        self.assumed_pvs: dict[str, tuple[str, str]] = {}
        self.assumed_selected_node: dict[str, str] = {}

    @property
    def objects(self) -> Any:
        return self.handle.objects

    # ---- reading claims and volumes, through the assumptions ----------------------------
    def selected_node(self, pvc: Obj) -> str | None:
        key = pvc_key(pvc)
        if key in self.assumed_selected_node:
            return self.assumed_selected_node[key]
        ann = annotations_of(pvc)
        return str(ann[ANN_SELECTED_NODE]) if ANN_SELECTED_NODE in ann else None

    def claim_ref_matches(self, pv: Obj, pvc: Obj) -> bool | None:
        """True: the PV is (assumed) bound to this claim; False: to another; None: free."""
        assumed = self.assumed_pvs.get(name_of(pv))
        if assumed is not None:
            key, uid = assumed
            return key == pvc_key(pvc) and (not uid or not meta(pvc).get("uid") or uid == meta(pvc).get("uid"))
        if not spec(pv).get("claimRef"):
            return None
        return is_bound_to_claim(pv, pvc)

    def is_bound(self, pvc: Obj) -> bool:
        if is_fully_bound(pvc):
            return True
        pv_name = spec(pvc).get("volumeName")
        if not pv_name:
            return False
        # Pre-bound by the user: the PV controller binds it at once when the PV is free
        # or already points at this claim.
        pv = self.objects.get(PV, str(pv_name))
        return pv is not None and self.claim_ref_matches(pv, pvc) is not False

    def delay_binding(self, pvc: Obj) -> bool:
        """volume.IsDelayBindingMode: a class that does not exist (yet) binds immediately."""
        class_name = claim_class(pvc)
        if not class_name:
            return False
        sc = self.objects.get(STORAGE_CLASS, class_name)
        return sc is not None and sc.get("volumeBindingMode") == "WaitForFirstConsumer"

    # ---- FindPodVolumes ------------------------------------------------------------------
    def find_matching_volume(self, pvc: Obj, volumes: Sequence[Obj], node_labels: Mapping[str, str],
                             excluded: set[str]) -> Obj | None:
        """volume.FindMatchingVolume on the scheduler path (node given, delay binding)."""
        requested = storage_request(pvc)
        requested_class = claim_class(pvc)
        selector = claim_selector(pvc)
        claim_mode = volume_mode(pvc)
        smallest: Obj | None = None
        smallest_qty = 0
        for pv in volumes:
            if name_of(pv) in excluded:
                continue
            bound_to = self.claim_ref_matches(pv, pvc)
            if bound_to is False:
                continue
            qty = pv_capacity(pv)
            if qty < requested or volume_mode(pv) != claim_mode or meta(pv).get("deletionTimestamp"):
                continue
            affinity_ok = check_node_affinity(pv, node_labels)
            if bound_to:
                return pv if affinity_ok else None  # pre-bound to this claim: it or nothing
            if pv_phase(pv) != "Available":
                continue
            if selector is not None and not selector.matches(meta(pv).get("labels") or {}):
                continue
            if volume_class(pv) != requested_class or not affinity_ok or not check_access_modes(pvc, pv):
                continue
            if smallest is None or qty < smallest_qty:
                smallest, smallest_qty = pv, qty
        return smallest

    def find_pod_volumes(self, claims: PodVolumeClaims, node_name: str,
                         node_labels: Mapping[str, str]) -> tuple[PodVolumes, list[str], str]:
        """(volumes for this node, conflict reasons, error) as upstream FindPodVolumes."""
        pv_found = bound_ok = unbound_ok = sufficient = True
        result = PodVolumes()
        for pvc in claims.bound_claims:
            pv = self.objects.get(PV, str(spec(pvc).get("volumeName")))
            if pv is None:
                pv_found = False
                break
            if not check_node_affinity(pv, node_labels):
                bound_ok = False
                break
        to_provision: list[Obj] = []
        to_match: list[Obj] = []
        for pvc in claims.unbound_delay:
            selected = self.selected_node(pvc)
            if selected is None:
                to_match.append(pvc)
            elif selected != node_name:
                unbound_ok = False
                break
            else:
                to_provision.append(pvc)
        else:
            chosen: set[str] = set()
            for pvc in sorted(to_match, key=storage_request):
                pv = self.find_matching_volume(pvc, claims.volumes_by_class.get(claim_class(pvc), ()),
                                               node_labels, chosen)
                if pv is None:
                    unbound_ok = False
                    to_provision.append(pvc)
                    continue
                chosen.add(name_of(pv))
                result.static_bindings.append(Binding(pv, pvc))
            if to_provision:
                unbound_ok, sufficient, err = self.check_provisions(to_provision, node_labels, result)
                if err:
                    return result, [], err
        reasons = []
        if not bound_ok:
            reasons.append(ERR_REASON_NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(ERR_REASON_BIND_CONFLICT)
        if not sufficient:
            reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        if not pv_found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        return result, reasons, ""

    def check_provisions(self, claims: Sequence[Obj], node_labels: Mapping[str, str],
                         result: PodVolumes) -> tuple[bool, bool, str]:
        """checkVolumeProvisions: (provisioning satisfied, sufficient storage, error)."""
        provisions: list[DynamicProvision] = []
        for pvc in claims:
            class_name = claim_class(pvc)
            if not class_name:
                return False, False, f'no class for claim "{pvc_key(pvc)}"'
            sc = self.objects.get(STORAGE_CLASS, class_name)
            if sc is None:
                return False, False, f'failed to find storage class "{class_name}"'
            provisioner = str(sc.get("provisioner") or "")
            if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
                return False, True, ""
            if not match_topology_selector_terms(sc.get("allowedTopologies"), node_labels):
                return False, True, ""
            enough, capacity = has_enough_capacity(self.objects, provisioner, pvc, class_name, node_labels)
            if not enough:
                return True, False, ""
            provisions.append(DynamicProvision(pvc, capacity))
        result.dynamic_provisions = provisions
        return True, True, ""

    # ---- Assume / Revert -------------------------------------------------------------------
    def assume(self, volumes: PodVolumes, node_name: str) -> None:
        for b in volumes.static_bindings:
            self.assumed_pvs[name_of(b.pv)] = (pvc_key(b.pvc), str(meta(b.pvc).get("uid") or ""))
        for p in volumes.dynamic_provisions:
            self.assumed_selected_node[pvc_key(p.pvc)] = node_name

    def revert(self, volumes: PodVolumes) -> None:
        for b in volumes.static_bindings:
            self.assumed_pvs.pop(name_of(b.pv), None)
        for p in volumes.dynamic_provisions:
            self.assumed_selected_node.pop(pvc_key(p.pvc), None)

    # ---- BindPodVolumes ----------------------------------------------------------------------
    async def bind_pod_volumes(self, pod: Pod, node_name: str, volumes: PodVolumes) -> str:
        """Write the bindings, then wait for them to complete; '' on success, else the error."""
        client = self.handle.client
        if client is None:
            return "binding volumes: no cluster client to write them through"
        written_pvs: list[tuple[Obj, Obj]] = []
        written_claims: list[Obj] = []
        try:
            for b in volumes.static_bindings:
                written_pvs.append((await client.update_persistent_volume(bind_volume_to_claim_ref(b.pv, b.pvc)),
                                    b.pvc))
            for p in volumes.dynamic_provisions:
                claim = copy.deepcopy(dict(p.pvc))
                claim.setdefault("metadata", {}).setdefault("annotations", {})[ANN_SELECTED_NODE] = node_name
                written_claims.append(await client.update_persistent_volume_claim(claim))
        except Exception as exc:  # an API refusal: the pod goes back through scheduling
            return str(exc) or type(exc).__name__
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.bind_timeout
        while True:
            done, err = self.check_bindings(node_name, written_pvs, written_claims)
            if err:
                return f"binding volumes: {err}"
            if done:
                return ""
            remaining = deadline - loop.time()
            if remaining <= 0:
                return "binding volumes: context deadline exceeded"
            await self.sleep(min(POLL_SECONDS, remaining))

    def _node_labels(self, node_name: str) -> Mapping[str, str] | None:
        info = self.handle.snapshot.get(node_name)
        return info.node.labels if info is not None and info.node is not None else None

    def check_bindings(self, node_name: str, pvs: Sequence[tuple[Obj, Obj]],
                       claims: Sequence[Obj]) -> tuple[bool, str]:
        """checkBindings on the watched objects: (all bound, error that calls for a retry)."""
        labels = self._node_labels(node_name)
        if labels is None:
            return False, f'failed to get node "{node_name}": node "{node_name}" not found'
        for written, claim in pvs:
            name = name_of(written)
            pv = self.objects.get(PV, name)
            if pv is None:
                return False, f'failed to check binding: persistentvolumes "{name}" not found'
            pvc = self.objects.get(PVC, pvc_key(claim))
            if pvc is None:
                return False, f'failed to check binding: persistentvolumeclaims "{pvc_key(claim)}" not found'
            if is_older(pv, written):
                return False, ""
            if not check_node_affinity(pv, labels):
                return False, (f'pv "{name}" node affinity doesn\'t match node "{node_name}": '
                               "no matching NodeSelectorTerms")
            ref = spec(pv).get("claimRef")
            # An object without a uid only comes from a hand-written dump (simulate).
            if not ref or (not ref.get("uid") and meta(claim).get("uid")):
                return False, f'ClaimRef got reset for pv "{name}"'
            if not is_fully_bound(pvc):
                return False, ""
        for written in claims:
            key = pvc_key(written)
            pvc = self.objects.get(PVC, key)
            if pvc is None:
                return False, f'failed to check provisioning pvc: persistentvolumeclaims "{key}" not found'
            if is_older(pvc, written):
                return False, ""
            if not meta(pvc).get("annotations"):
                return False, f'selectedNode annotation reset for PVC "{name_of(pvc)}"'
            if annotations_of(pvc).get(ANN_SELECTED_NODE) != node_name:
                return False, f'provisioning failed for PVC "{name_of(pvc)}"'
            volume_name = spec(pvc).get("volumeName")
            if volume_name:
                pv = self.objects.get(PV, str(volume_name))
                if pv is None:
                    return False, ""
                if not check_node_affinity(pv, labels):
                    return False, (f'pv "{volume_name}" node affinity doesn\'t match node "{node_name}": '
                                   "no matching NodeSelectorTerms")
            if not is_fully_bound(pvc):
                return False, ""
        return True, ""
