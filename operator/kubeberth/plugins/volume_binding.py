"""VolumeBinding: a pod's PersistentVolumeClaims must be (or become) bound to
volumes its node can reach.

As upstream's volumebinding plugin:

- PreFilter: a pod without claims (PVC or generic ephemeral volumes) skips the
  plugin. A missing claim, a claim being deleted or lost, or an ephemeral claim
  the pod does not own rejects the pod (UnschedulableAndUnresolvable). Unbound
  claims of an Immediate class (and claims pre-bound by `spec.volumeName` whose
  PV is missing) reject it with "pod has unbound immediate
  PersistentVolumeClaims". No node subset (since v1.33 local PVs do not narrow
  the nodes at PreFilter).
- Filter, per node: every bound claim's PV node affinity must match ("node(s)
  didn't match PersistentVolume's node affinity"; a PV that no longer exists gives "node(s)
  unavailable due to one or more pvc(s) bound to non-existent pv(s)"); every
  unbound WaitForFirstConsumer claim needs an Available PV of its class that
  fits (size, access modes, volume mode, selector, node affinity; the smallest
  wins; claims are matched smallest request first, one PV each), or a class
  that provisions dynamically on this node (provisioner set and not
  `kubernetes.io/no-provisioner`, `allowedTopologies` matching); otherwise
  "node(s) didn't find available persistent volumes to bind". A claim already
  given a node (`volume.kubernetes.io/selected-node`) fits only that node.
- Reserve assumes the chosen PVs (so the next pods do not pick them) and the
  selected node of claims to provision; Unreserve forgets them.
- PreBind records the binding: the PV gets `spec.claimRef` and the claim
  `spec.volumeName` with the bind-completed annotations, both phase Bound;
  claims to provision get the selected-node annotation. The objects are
  written to the ObjectStore (in `simulate` that is the binding); a cluster
  client exposing `async apply_object(kind, obj)` also gets them written back.

Documented gaps:
- Dynamic provisioning is decided (node choice, `allowedTopologies`) but not
  carried out: no PV is created, no CSIStorageCapacity is read (so "node(s) did
  not have enough free storage" never occurs), and PreBind does not wait for a
  provisioner. The claim keeps its selected-node annotation, which pins later
  pods that share it to the same node, as upstream.
- The PV controller does not run. A claim pre-bound by `spec.volumeName` to an
  existing PV that is free or already points at the claim is taken as bound
  (the controller would finish that binding at once); `bind_immediate_claims`
  plays the controller for Immediate claims when a caller (simulate) asks.
- In-tree PVs are not translated to CSI topology; the VolumeCapacityPriority
  scoring (alpha upstream) is not implemented, its `shape` arg is accepted.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..framework.cycle_state import CycleState
from ..framework.interfaces import FilterPlugin, PreBindPlugin, PreFilterPlugin, ReservePlugin
from ..framework.status import Code, Status
from ..framework.types import PreFilterResult
from ..model import LabelSelector, ModelError, NodeInfo, Pod
from ._volume_util import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    PV,
    PVC,
    STORAGE_CLASS,
    Obj,
    access_modes,
    annotations_of,
    check_node_affinity,
    claim_class,
    is_bound_to_claim,
    meta,
    name_of,
    pod_claims,
    pv_capacity,
    pv_phase,
    spec,
    storage_request,
    volume_class,
    volume_is_for_pod,
    volume_mode,
)

NAME = "VolumeBinding"
STATE_KEY = NAME

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ERR_REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


class UtilizationShapePoint(BaseModel):
    model_config = ConfigDict(extra="forbid")
    utilization: int = Field(ge=0, le=100)
    score: int = Field(ge=0, le=10)


class VolumeBindingArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    bindTimeoutSeconds: int = Field(default=600, ge=0)
    shape: list[UtilizationShapePoint] = Field(default_factory=list)


def pvc_key(pvc: Obj) -> str:
    m = meta(pvc)
    return f"{m.get('namespace') or 'default'}/{m.get('name')}"


def _is_fully_bound(pvc: Obj) -> bool:
    """upstream isPVCFullyBound, plus status.phase Bound for objects written by hand."""
    if not spec(pvc).get("volumeName"):
        return False
    return ANN_BIND_COMPLETED in annotations_of(pvc) or (pvc.get("status") or {}).get("phase") == "Bound"


def _check_access_modes(pvc: Obj, pv: Obj) -> bool:
    have = set(access_modes(pv))
    return all(m in have for m in access_modes(pvc))


def _claim_selector(pvc: Obj) -> LabelSelector | None:
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


class _Binding:
    __slots__ = ("pv", "pvc")

    def __init__(self, pv: Obj, pvc: Obj) -> None:
        self.pv = pv
        self.pvc = pvc


class PodVolumes:
    """What one node needs for the pod: PVs to bind statically, claims to provision."""

    __slots__ = ("dynamic_provisions", "static_bindings")

    def __init__(self) -> None:
        self.static_bindings: list[_Binding] = []
        self.dynamic_provisions: list[Obj] = []


class _State:
    __slots__ = ("all_bound", "bound_claims", "pod_volumes_by_node", "unbound_delay", "volumes_by_class")

    def __init__(self, bound: list[Obj], unbound_delay: list[Obj],
                 volumes_by_class: dict[str, list[Obj]]) -> None:
        self.bound_claims = bound
        self.unbound_delay = unbound_delay
        self.volumes_by_class = volumes_by_class
        self.pod_volumes_by_node: dict[str, PodVolumes] = {}
        self.all_bound = False

    def clone(self) -> _State:
        return self


class VolumeBinding(PreFilterPlugin, FilterPlugin, ReservePlugin, PreBindPlugin):
    name = NAME
    args_model = VolumeBindingArgs

    def __init__(self, args: VolumeBindingArgs | None = None, handle: Any = None) -> None:
        self.handle = handle
        self.args = args or VolumeBindingArgs()
        # The assume cache: PV name -> claim key it is assumed bound to; claim key -> node
        # selected for provisioning. Entries live from Reserve to PreBind (or Unreserve).
        self.assumed_pvs: dict[str, tuple[str, str]] = {}
        self.assumed_selected_node: dict[str, str] = {}

    # ---- reading claims and volumes -----------------------------------------------
    @property
    def objects(self) -> Any:
        return self.handle.objects

    def _selected_node(self, pvc: Obj) -> str | None:
        key = pvc_key(pvc)
        if key in self.assumed_selected_node:
            return self.assumed_selected_node[key]
        ann = annotations_of(pvc)
        return str(ann[ANN_SELECTED_NODE]) if ANN_SELECTED_NODE in ann else None

    def _claim_ref_matches(self, pv: Obj, pvc: Obj) -> bool | None:
        """True: the PV is (assumed) bound to this claim; False: to another; None: free."""
        assumed = self.assumed_pvs.get(name_of(pv))
        if assumed is not None:
            key, uid = assumed
            return key == pvc_key(pvc) and (not uid or not meta(pvc).get("uid") or uid == meta(pvc).get("uid"))
        if not spec(pv).get("claimRef"):
            return None
        return is_bound_to_claim(pv, pvc)

    def _is_bound(self, pvc: Obj) -> bool:
        if _is_fully_bound(pvc):
            return True
        pv_name = spec(pvc).get("volumeName")
        if not pv_name:
            return False
        # Pre-bound by the user: the PV controller binds it at once when the PV is free
        # or already points at this claim.
        pv = self.objects.get(PV, str(pv_name))
        return pv is not None and self._claim_ref_matches(pv, pvc) is not False

    def _delay_binding(self, pvc: Obj) -> bool:
        """volume.IsDelayBindingMode: a class that does not exist (yet) binds immediately."""
        class_name = claim_class(pvc)
        if not class_name:
            return False
        sc = self.objects.get(STORAGE_CLASS, class_name)
        return sc is not None and sc.get("volumeBindingMode") == "WaitForFirstConsumer"

    # ---- PreFilter ------------------------------------------------------------------
    def _pod_claims(self, pod: Pod) -> tuple[list[Obj], Status | None]:
        out: list[Obj] = []
        for claim, ephemeral in pod_claims(pod):
            pvc = self.objects.get(PVC, f"{pod.namespace}/{claim}")
            if pvc is None:
                if ephemeral:
                    return [], Status.unresolvable(
                        f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{claim}"')
                return [], Status.unresolvable(f'persistentvolumeclaim "{claim}" not found')
            if (pvc.get("status") or {}).get("phase") == "Lost":
                return [], Status.unresolvable(
                    f'persistentvolumeclaim "{claim}" bound to non-existent persistentvolume '
                    f'"{spec(pvc).get("volumeName") or ""}"')
            if meta(pvc).get("deletionTimestamp"):
                return [], Status.unresolvable(f'persistentvolumeclaim "{claim}" is being deleted')
            if ephemeral:
                err = volume_is_for_pod(pod, pvc)
                if err:
                    return [], Status.unresolvable(err)
            if all(pvc_key(o) != pvc_key(pvc) for o in out):  # a claim mounted twice counts once
                out.append(pvc)
        return out, None

    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        claims, status = self._pod_claims(pod)
        if status is not None:
            return None, status
        if not claims:
            skipped = _State([], [], {})
            skipped.all_bound = True
            state.write(STATE_KEY, skipped)
            return None, Status.skip()
        bound: list[Obj] = []
        delay: list[Obj] = []
        immediate: list[Obj] = []
        for pvc in claims:
            if self._is_bound(pvc):
                bound.append(pvc)
                continue
            if self._delay_binding(pvc) and not spec(pvc).get("volumeName"):
                delay.append(pvc)
            else:
                immediate.append(pvc)
        if immediate:
            return None, Status.unresolvable(ERR_REASON_UNBOUND_IMMEDIATE)
        by_class: dict[str, list[Obj]] = {}
        if delay:
            wanted = {claim_class(p) for p in delay}
            # A PV another claim names in spec.volumeName is that claim's (the PV controller
            # binds pre-bound pairs first), even before it carries a claimRef.
            mine = {pvc_key(p) for p in claims}
            promised = {str(spec(p)["volumeName"]) for p in self.objects.list(PVC)
                        if spec(p).get("volumeName") and pvc_key(p) not in mine}
            for pv in self.objects.list(PV):
                c = volume_class(pv)
                if c in wanted and name_of(pv) not in promised:
                    by_class.setdefault(c, []).append(pv)
        # Since v1.33 no node subset from bound local PVs: the Filter's "didn't match
        # PersistentVolume's node affinity" is what a user reads, node by node.
        state.write(STATE_KEY, _State(bound, delay, by_class))
        return None, None

    # ---- Filter ---------------------------------------------------------------------
    def find_matching_volume(self, pvc: Obj, volumes: Sequence[Obj], node_labels: Mapping[str, str],
                             excluded: set[str]) -> Obj | None:
        """volume.FindMatchingVolume on the scheduler path (node given, delay binding)."""
        requested = storage_request(pvc)
        requested_class = claim_class(pvc)
        selector = _claim_selector(pvc)
        claim_mode = volume_mode(pvc)
        smallest: Obj | None = None
        smallest_qty = 0
        for pv in volumes:
            if name_of(pv) in excluded:
                continue
            bound_to = self._claim_ref_matches(pv, pvc)
            if bound_to is False:
                continue
            qty = pv_capacity(pv)
            if qty < requested:
                continue
            if volume_mode(pv) != claim_mode:
                continue
            if meta(pv).get("deletionTimestamp"):
                continue
            affinity_ok = check_node_affinity(pv, node_labels)
            if bound_to:
                # Pre-bound to this claim: it or nothing.
                return pv if affinity_ok else None
            if pv_phase(pv) != "Available":
                continue
            if selector is not None and not selector.matches(meta(pv).get("labels") or {}):
                continue
            if volume_class(pv) != requested_class:
                continue
            if not affinity_ok:
                continue
            if not _check_access_modes(pvc, pv):
                continue
            if smallest is None or qty < smallest_qty:
                smallest, smallest_qty = pv, qty
        return smallest

    def find_pod_volumes(self, pod: Pod, s: _State, node_name: str,
                         node_labels: Mapping[str, str]) -> tuple[PodVolumes, list[str], str]:
        """(volumes for this node, conflict reasons, error) as upstream FindPodVolumes."""
        pv_found = True
        bound_ok = True
        unbound_ok = True
        sufficient = True
        result = PodVolumes()
        for pvc in s.bound_claims:
            pv = self.objects.get(PV, str(spec(pvc).get("volumeName")))
            if pv is None:
                pv_found = False
                break
            if not check_node_affinity(pv, node_labels):
                bound_ok = False
                break
        to_provision: list[Obj] = []
        to_match: list[Obj] = []
        if s.unbound_delay:
            for pvc in s.unbound_delay:
                selected = self._selected_node(pvc)
                if selected is not None:
                    if selected != node_name:
                        unbound_ok = False
                        break
                    to_provision.append(pvc)
                else:
                    to_match.append(pvc)
            else:
                if to_match:
                    chosen: set[str] = set()
                    for pvc in sorted(to_match, key=storage_request):
                        pv = self.find_matching_volume(pvc, s.volumes_by_class.get(claim_class(pvc), ()),
                                                       node_labels, chosen)
                        if pv is None:
                            unbound_ok = False
                            to_provision.append(pvc)
                            continue
                        chosen.add(name_of(pv))
                        result.static_bindings.append(_Binding(pv, pvc))
                if to_provision:
                    unbound_ok, sufficient, err = self._check_provisions(to_provision, node_labels, result)
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

    def _check_provisions(self, claims: Sequence[Obj], node_labels: Mapping[str, str],
                          result: PodVolumes) -> tuple[bool, bool, str]:
        """checkVolumeProvisions: (provisioning satisfied, sufficient storage, error)."""
        provisions: list[Obj] = []
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
            provisions.append(pvc)
        result.dynamic_provisions = provisions
        return True, True, ""

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status.error("node not found")
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            return Status.error(f"reading {STATE_KEY!r} from cycleState: not found")
        try:
            volumes, reasons, err = self.find_pod_volumes(pod, s, node.name, node.labels)
        except ModelError as exc:
            return Status.error(str(exc))
        if err:
            return Status.error(err)
        if reasons:
            return Status.unresolvable(*reasons)
        s.pod_volumes_by_node[node.name] = volumes
        return None

    # ---- Reserve / Unreserve ----------------------------------------------------------
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            # PreFilter did not run (VolumeBinding enabled at Reserve only): nothing to bind.
            return None
        volumes = s.pod_volumes_by_node.get(node_name)
        if volumes is None or not (volumes.static_bindings or volumes.dynamic_provisions):
            s.all_bound = True
            return None
        for b in volumes.static_bindings:
            self.assumed_pvs[name_of(b.pv)] = (pvc_key(b.pvc), str(meta(b.pvc).get("uid") or ""))
        for pvc in volumes.dynamic_provisions:
            self.assumed_selected_node[pvc_key(pvc)] = node_name
        s.all_bound = False
        return None

    def _forget(self, volumes: PodVolumes) -> None:
        for b in volumes.static_bindings:
            self.assumed_pvs.pop(name_of(b.pv), None)
        for pvc in volumes.dynamic_provisions:
            self.assumed_selected_node.pop(pvc_key(pvc), None)

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            return
        volumes = s.pod_volumes_by_node.get(node_name)
        if volumes is not None:
            self._forget(volumes)

    # ---- PreBind ------------------------------------------------------------------------
    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        s = state.get(STATE_KEY)
        if not isinstance(s, _State) or s.all_bound:
            return None
        volumes = s.pod_volumes_by_node.get(node_name)
        if volumes is None:
            return Status.error(f'no pod volumes found for node "{node_name}"')
        writes: list[tuple[str, dict[str, Any]]] = []
        for b in volumes.static_bindings:
            pv, pvc = bind_volume_to_claim(b.pv, b.pvc)
            writes += [(PV, pv), (PVC, pvc)]
        for claim in volumes.dynamic_provisions:
            pvc = copy.deepcopy(dict(claim))
            pvc.setdefault("metadata", {}).setdefault("annotations", {})[ANN_SELECTED_NODE] = node_name
            writes.append((PVC, pvc))
        apply = getattr(self.handle.client, "apply_object", None)
        try:
            for kind, obj in writes:
                if apply is not None:
                    await apply(kind, obj)
                self.objects.put(kind, obj)
        except Exception as exc:  # an API failure: the pod goes back through scheduling
            self._forget(volumes)
            return Status(Code.ERROR, f"binding volumes: {exc}")
        self._forget(volumes)
        return None


def bind_volume_to_claim(pv: Obj, pvc: Obj) -> tuple[dict[str, Any], dict[str, Any]]:
    """The PV and claim as the PV controller leaves them after binding one to the other."""
    new_pv = copy.deepcopy(dict(pv))
    new_pvc = copy.deepcopy(dict(pvc))
    pm = meta(pvc)
    ref: dict[str, Any] = {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                           "namespace": pm.get("namespace") or "default", "name": pm.get("name")}
    if pm.get("uid"):
        ref["uid"] = pm["uid"]
    new_pv.setdefault("spec", {})["claimRef"] = ref
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
        if _is_fully_bound(pvc):
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
        new_pv, new_pvc = bind_volume_to_claim(pv, pvc)
        objects.put(PV, new_pv)
        objects.put(PVC, new_pvc)
        bound.append(pvc_key(pvc))
    return bound


def _controller_match(pvc: Obj, objects: Any, taken: set[str]) -> Obj | None:
    requested = storage_request(pvc)
    cls = claim_class(pvc)
    try:
        selector = _claim_selector(pvc)
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
                or volume_class(pv) != cls or not _check_access_modes(pvc, pv)
                or (selector is not None and not selector.matches(meta(pv).get("labels") or {}))):
            continue
        if best is None or qty < best_qty:
            best, best_qty = pv, qty
    return best


PLUGINS = [VolumeBinding]
