"""The VolumeBinding plugin: PreFilter, Filter, PreScore/Score (StorageCapacityScoring),
Reserve/Unreserve, PreBind, over the binder."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...framework import (
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    FilterPlugin,
    Handle,
    ModelError,
    NodeInfo,
    PluginError,
    Pod,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
    Status,
)
from .._volume_util import (
    PV,
    PVC,
    Obj,
    claim_class,
    meta,
    name_of,
    pod_claims,
    spec,
    storage_request,
    volume_class,
    volume_is_for_pod,
)
from .args import VolumeBindingArgs
from .binder import PodVolumeClaims, PodVolumes, VolumeBinder
from .capacity import StorageResource, build_scorer, capacity_bytes
from .claims import ERR_REASON_UNBOUND_IMMEDIATE, pvc_key
from .queueing_hints import registrations

NAME = "VolumeBinding"
STATE_KEY = NAME


class _State:
    __slots__ = ("all_bound", "claims", "has_static_bindings", "pod_volumes_by_node")

    def __init__(self, claims: PodVolumeClaims | None) -> None:
        self.claims = claims  # None: the pod has no claims (PreFilter skipped the plugin)
        self.pod_volumes_by_node: dict[str, PodVolumes] = {}
        self.all_bound = claims is None
        self.has_static_bindings = False

    @property
    def bound_claims(self) -> list[Obj]:
        return self.claims.bound_claims if self.claims is not None else []

    def clone(self) -> _State:
        return self


class VolumeBinding(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, ReservePlugin, PreBindPlugin):
    name = NAME
    args_model = VolumeBindingArgs

    def __init__(self, args: VolumeBindingArgs | None = None, handle: Handle | None = None) -> None:
        self.handle = handle
        self.args = args or VolumeBindingArgs()
        self.binder = VolumeBinder(handle, float(self.args.bindTimeoutSeconds))
        self.scorer = build_scorer(self.args.shape_points())


    def _handle(self) -> Handle:
        if self.handle is None:
            raise PluginError(f"{self.name} needs the framework's handle (objects, client)")
        return self.handle
    def events_to_register(self) -> list[ClusterEvent | ClusterEventWithHint]:
        return registrations()

    @property
    def objects(self) -> Any:
        return self._handle().objects

    @property
    def assumed_pvs(self) -> dict[str, tuple[str, str]]:
        return self.binder.assumed_pvs

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
            state.write(STATE_KEY, _State(None))
            return None, Status.skip()
        bound: list[Obj] = []
        delay: list[Obj] = []
        immediate: list[Obj] = []
        for pvc in claims:
            if self.binder.is_bound(pvc):
                bound.append(pvc)
            elif self.binder.delay_binding(pvc) and not spec(pvc).get("volumeName"):
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
        state.write(STATE_KEY, _State(PodVolumeClaims(bound, delay, by_class)))
        return None, None

    # ---- Filter ---------------------------------------------------------------------
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status.error("node not found")
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            return Status.error(f"reading {STATE_KEY!r} from cycleState: not found")
        if s.claims is None:
            return None
        try:
            volumes, reasons, err = self.binder.find_pod_volumes(s.claims, node.name, node.labels)
        except ModelError as exc:
            return Status.error(str(exc))
        if err:
            return Status.error(err)
        if reasons:
            return Status.unresolvable(*reasons)
        s.pod_volumes_by_node[node.name] = volumes
        s.has_static_bindings = s.has_static_bindings or bool(volumes.static_bindings)
        return None

    # ---- PreScore / Score (StorageCapacityScoring) ----------------------------------------
    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            # PreFilter did not run (VolumeBinding disabled there): no volumes were found to score.
            return Status.skip()
        # Upstream scores every pod with the gate on; a node without volumes to weigh scores 0,
        # so when no node has any the plugin is skipped: the same ranking, less work.
        if not s.pod_volumes_by_node or not any(
                v.static_bindings or any(p.node_capacity is not None for p in v.dynamic_provisions)
                for v in s.pod_volumes_by_node.values()):
            return Status.skip()
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        s = state.get(STATE_KEY)
        node = node_info.node
        if not isinstance(s, _State) or node is None:
            return 0
        volumes = s.pod_volumes_by_node.get(node.name)
        if volumes is None:
            return 0
        classes: dict[str, StorageResource] = {}
        if volumes.static_bindings:
            for b in volumes.static_bindings:
                r = classes.setdefault(b.storage_class_name(), StorageResource())
                got = b.storage_resource()
                r.requested += got.requested
                r.capacity += got.capacity
        else:
            for p in volumes.dynamic_provisions:
                if p.node_capacity is None:
                    continue
                r = classes.setdefault(claim_class(p.pvc), StorageResource())
                # One pool per class on a node: its capacity is set, not summed per claim.
                r.capacity = capacity_bytes(p.node_capacity)
                r.requested += storage_request(p.pvc)
        return self.scorer(classes)

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
        self.binder.assume(volumes, node_name)
        s.all_bound = False
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            return
        volumes = s.pod_volumes_by_node.get(node_name)
        if volumes is not None:
            self.binder.revert(volumes)

    # ---- PreBind ------------------------------------------------------------------------
    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        s = state.get(STATE_KEY)
        if not isinstance(s, _State) or s.all_bound:
            return Status.skip()
        if node_name not in s.pod_volumes_by_node:
            return Status.error(f'no pod volume found for node "{node_name}"')
        return None

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        s = state.get(STATE_KEY)
        if not isinstance(s, _State) or s.all_bound:
            return None
        volumes = s.pod_volumes_by_node.get(node_name)
        if volumes is None:
            return Status.error(f'no pod volume found for node "{node_name}"')
        try:
            err = await self.binder.bind_pod_volumes(pod, node_name, volumes)
        finally:
            # Bound (the watched objects say so now) or failed: either way nothing stays assumed.
            self.binder.revert(volumes)
        return Status.error(err) if err else None
