"""DynamicResources' writes of the claims: PreBind allocates and reserves them (creating the claim
of the pod's DRA-backed extended resources), Unreserve takes the pod out of a claim's reservedFor,
and PostFilter (PodGroupPostFilter for a pod group) deallocates a claim that keeps the pod off
every node. The base of the plugin class (plugin.py), which does the scheduling cycle's part."""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any

from ... import features
from ...framework.cycle_state import CycleState
from ...framework.interfaces import Handle, PostFilterPlugin, PreBindPlugin
from ...framework.status import Code, PluginError, Status
from ...framework.types import NodeToStatus, PostFilterResult
from ...model import Pod, PodGroup
from .allocator import kobj
from .claims import FINALIZER, RESOURCE_CLAIM, claim_key, claim_uid, consumer_ref, is_reserved_for_pod, reserved_for
from .state import STATE_KEY, STATE_NOT_FOUND, State

log = logging.getLogger("kubeberth.plugins.dynamic_resources")
POD_GROUP_POST_FILTER_DONE = "deallocation and deletion of ResourceClaims completed"


class ClaimBinding(PostFilterPlugin, PreBindPlugin):
    """PostFilter, PodGroupPostFilter and PreBind of DynamicResources, and the claims' writes."""

    handle: Handle | None
    # Claims allocated in Reserve whose allocation is not in the API yet (upstream's
    # inFlightAllocations), by claim UID.
    in_flight: dict[str, dict[str, Any]]
    _tasks: set[asyncio.Task[None]]

    def _handle(self) -> Handle:
        if self.handle is None:
            raise PluginError(f"{self.name} needs the framework's handle (objects, client)")
        return self.handle

    def _objects(self) -> Any:
        return self._handle().objects

    # ---- PostFilter -----------------------------------------------------------------------------
    async def post_filter(self, state: CycleState, pod: Pod,
                          statuses: NodeToStatus) -> tuple[PostFilterResult | None, Status | None]:
        s = state.get(STATE_KEY)
        if not isinstance(s, State):
            return None, Status.error(STATE_NOT_FOUND)
        if not s.claims:
            return None, Status(Code.UNSCHEDULABLE)
        _, status = await self._deallocate_pod_claims(pod, s)
        return None, status

    async def _deallocate_pod_claims(self, pod: Pod, s: State) -> tuple[bool, Status]:
        """upstream's deallocateOrDeletePodClaims: the first claim Filter found allocated but not
        available on some node, reserved for nobody or only for this pod, is deallocated (its
        status' reservedFor, allocation and devices dropped, written with the resourceVersion it
        was read with). (whether a claim was found, status). The deletion of an extended-resource
        claim left from an earlier attempt is not done (README, DynamicResources)."""
        for index in sorted(s.unavailable):
            claim = s.claims[index]
            holders = reserved_for(claim)
            if not holders or (len(holders) == 1 and str(holders[0].get("uid")) == pod.uid):
                new = copy.deepcopy(dict(claim))
                status = new.setdefault("status", {})
                for field in ("reservedFor", "allocation", "devices"):
                    status.pop(field, None)
                try:
                    await self._write(new)
                except Exception as exc:  # an API failure: report it as upstream's statusError
                    return True, Status.error(str(exc))
                return True, Status(Code.UNSCHEDULABLE, "deallocation of ResourceClaim completed")
        return False, Status(Code.UNSCHEDULABLE)

    async def pod_group_post_filter(self, pg: PodGroup, tried: Sequence[tuple[Pod, CycleState]]) -> Status:
        """upstream's PodGroupPostFilter, GenericWorkload on (DRAWorkloadResourceClaims off, its
        v1.37 default, which kubeberth keeps; CompositePodGroup off). `tried`: the group's
        unscheduled pods, in the attempt's order, with the CycleStates of their last try in the
        group's algorithm (a pod the attempt stopped before has no DynamicResources state and is
        passed over). Each is given what PostFilter does for a pod: at most one of its unavailable
        claims deallocated. Whatever was done, the status is Unschedulable with upstream's one
        message; a failed write is the status (an Error) and ends it. A group with
        spec.schedulingConstraints under TopologyAwareWorkloadScheduling is left alone (no
        message), as upstream's."""
        if features.current().topology_aware_workload_scheduling and pg.has_constraints:
            return Status(Code.UNSCHEDULABLE)
        for pod, state in tried:
            s = state.get(STATE_KEY)
            if not isinstance(s, State):
                continue
            _, status = await self._deallocate_pod_claims(pod, s)
            if status.code == Code.ERROR:
                return status
        return Status(Code.UNSCHEDULABLE, POD_GROUP_POST_FILTER_DONE)

    def _background(self, work: Coroutine[Any, Any, None]) -> None:
        try:
            task = asyncio.get_running_loop().create_task(work)
        except RuntimeError:  # no loop (a direct call in a test): nothing can be written
            work.close()
            return
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _unreserve_claim(self, claim: Mapping[str, Any], pod: Pod) -> None:
        """The pod's entry out of the claim's reservedFor (PreBind wrote it, the binding failed)."""
        latest = self._objects().get(RESOURCE_CLAIM, claim_key(claim))
        if latest is None or not is_reserved_for_pod(latest, pod):
            return
        new = copy.deepcopy(dict(latest))
        new["status"]["reservedFor"] = [r for r in reserved_for(latest) if str(r.get("uid")) != pod.uid]
        try:
            await self._write(new)
        except Exception as exc:  # retried when the pod is scheduled again, as upstream
            log.warning("unreserving %s for %s: %s", kobj(claim), pod.key, exc)

    # ---- PreBind --------------------------------------------------------------------------------
    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        s = state.get(STATE_KEY)
        return None if isinstance(s, State) and s.claims else Status.skip()

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        s = state.get(STATE_KEY)
        if not isinstance(s, State) or not s.claims:
            return None
        for index, claim in enumerate(s.claims):
            if is_reserved_for_pod(claim, pod):
                continue
            try:
                if index == s.extended_index:
                    if index not in s.pending:
                        continue  # served by the node's device plugins
                    s.claims[index] = await self._create_extended(s, index, pod, node_name)
                    continue
                s.claims[index] = await self._bind_claim(s, index, pod)
            except Exception as exc:  # the claim changed or the API failed: the pod is retried
                return Status.error(str(exc))
        return None

    async def _create_extended(self, s: State, index: int, pod: Pod, node_name: str) -> Mapping[str, Any]:
        """The claim for the pod's extended resources: created (upstream creates it in PreBind),
        allocated and reserved, then named in the pod's status with the container mappings."""
        made, mappings = s.node_extended[node_name]
        body = copy.deepcopy(dict(made))
        body["metadata"] = {k: v for k, v in body["metadata"].items() if k not in ("name", "uid")}
        body.pop("status", None)
        client = self._handle().client
        if client is None:
            raise PluginError("no cluster client to create the extended resources' claim with")
        created: Mapping[str, Any] = await client.create_resource_claim(body)
        self._objects().put(RESOURCE_CLAIM, created)
        s.claims[index] = created
        self.in_flight.pop(claim_uid(made), None)
        written = await self._bind_claim(s, index, pod)
        await client.set_extended_resource_claim_status(pod, {
            "requestMappings": mappings, "resourceClaimName": (written.get("metadata") or {}).get("name")})
        return written

    async def _bind_claim(self, s: State, index: int, pod: Pod) -> Mapping[str, Any]:
        claim = s.claims[index]
        latest = self._objects().get(RESOURCE_CLAIM, claim_key(claim))
        if latest is None:
            raise RuntimeError(f"claim {kobj(claim)} got deleted in the meantime")
        new = copy.deepcopy(dict(latest))
        status = new.setdefault("status", {})
        pending = s.pending.get(index)
        if pending is not None:
            if status.get("allocation") is not None:
                raise RuntimeError(f"claim {kobj(claim)} got allocated elsewhere in the meantime")
            finalizers = new.setdefault("metadata", {}).setdefault("finalizers", [])
            if FINALIZER not in finalizers:
                finalizers.append(FINALIZER)
            status["allocation"] = pending
        elif status.get("allocation") is None:
            raise RuntimeError(f"claim {kobj(claim)} got deallocated elsewhere in the meantime")
        status["reservedFor"] = [*(status.get("reservedFor") or ()), consumer_ref(pod)]
        try:
            written = await self._write(new, update_metadata=pending is not None)
        finally:
            if pending is not None:
                self.in_flight.pop(claim_uid(claim), None)
        return written

    async def _write(self, claim: dict[str, Any], update_metadata: bool = False) -> Mapping[str, Any]:
        """The claim (metadata and status) through the client; kept as written until the watch
        brings a newer version (upstream's assume cache)."""
        write = getattr(self._handle().client, "write_resource_claim", None)
        written: Mapping[str, Any] = claim
        if write is not None:
            written = await write(claim, update_metadata=update_metadata)
        self._objects().put(RESOURCE_CLAIM, written)
        return written
