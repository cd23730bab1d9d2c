"""The in-memory cluster of a what-if run: `InMemoryClient`, the `ClusterClient` (client.py) the
scheduler writes through, each write fed back to the scheduler as the watch event the API server
would send; the volume controllers' part is volumes.py."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ..client import BindConflict, UpdateRefused
from ..model import Pod, PodGroup
from ..plugins._volume_util import ANN_SELECTED_NODE, PV, PVC, annotations_of
from ..scheduler import Scheduler
from .inputs import object_key
from .volumes import bind_claimed_volume, provision_claim


class InMemoryClient:
    """The ClusterClient of the simulation: each call changes the in-memory objects and is fed
    back to the scheduler as the watch event the API server would send (a binding comes back as
    the pod's update with its nodeName; a bind of a pod no longer pending raises BindConflict).

    Give it to a Scheduler as its cluster client: `sched.ctx.client = InMemoryClient(sched)`;
    `events` lists the events recorded, as (pod key, type, reason, message);
    `annotations_written` what `annotate_pod` wrote, per pod key."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self.events: list[tuple[str, str, str, str]] = []
        # pod key -> the annotations written on it through annotate_pod (simulate's outcomes show them)
        self.annotations_written: dict[str, dict[str, str]] = {}
        self._created = 0

    def _latest_raw(self, pod: Pod, section: str) -> dict[str, Any]:
        """The pod's latest raw object with its own copy of `section` to change. Raw objects are
        never changed in place (a change copies what it changes), so the rest can be shared."""
        raw = dict((self.scheduler.pending_pod(pod.uid) or pod).raw)
        raw[section] = dict(raw.get(section) or {})
        return raw

    async def bind(self, pod: Pod, node_name: str) -> None:
        if self.scheduler.pending_pod(pod.uid) is None:
            raise BindConflict(f"pod {pod.key} is gone or already bound")
        raw = self._latest_raw(pod, "spec")
        raw["spec"]["nodeName"] = node_name
        self.scheduler.on_pod_update(raw)

    async def set_nominated_node(self, pod: Pod, node_name: str) -> None:
        if self.scheduler.pending_pod(pod.uid) is None:
            return
        raw = self._latest_raw(pod, "status")
        status = raw["status"]
        if node_name:
            status["nominatedNodeName"] = node_name
        else:
            status.pop("nominatedNodeName", None)
        self.scheduler.on_pod_update(raw)

    async def write_resource_claim(self, claim: Mapping[str, Any], *, update_metadata: bool = False) -> dict[str, Any]:
        """A ResourceClaim's metadata and status (DynamicResources' PreBind and PostFilter)."""
        written = copy.deepcopy(dict(claim))
        self.scheduler.on_object("ResourceClaim", written)
        return written

    async def create_resource_claim(self, claim: Mapping[str, Any]) -> dict[str, Any]:
        """A claim DynamicResources makes (for extended resources), named as generateName would."""
        created = copy.deepcopy(dict(claim))
        meta = created.setdefault("metadata", {})
        self._created += 1
        meta["name"] = f"{meta.pop('generateName', 'claim-')}{self._created:05d}"
        meta["uid"] = f"{meta.get('namespace')}/{meta['name']}"
        self.scheduler.on_object("ResourceClaim", created)
        return created

    async def set_extended_resource_claim_status(self, pod: Pod, status: Mapping[str, Any]) -> None:
        if self.scheduler.pending_pod(pod.uid) is None:
            return
        raw = self._latest_raw(pod, "status")
        raw["status"]["extendedResourceClaimStatus"] = copy.deepcopy(status)
        self.scheduler.on_pod_update(raw)

    async def set_unschedulable(self, pod: Pod, message: str, reason: str = "Unschedulable") -> None:
        pass

    async def annotate_pod(self, pod: Pod, annotations: Mapping[str, str]) -> None:
        """The annotations merged into the pod's latest object (pending, assumed or bound), fed
        back as the watch's update: a pod being bound carries them into its binding, a bound
        pod's cached copy is replaced. A pod that is gone is left alone."""
        latest = self.scheduler.pending_pod(pod.uid) or self.scheduler.cache.get_pod(pod.uid)
        if latest is None:
            return
        raw = dict(latest.raw)
        meta = raw["metadata"] = dict(raw.get("metadata") or {})
        added = {str(k): str(v) for k, v in annotations.items()}
        meta["annotations"] = {**(meta.get("annotations") or {}), **added}
        self.annotations_written.setdefault(latest.key, {}).update(added)
        self.scheduler.on_pod_update(raw)

    async def set_pod_group_condition(self, pod_group: PodGroup, condition: Mapping[str, Any]) -> None:
        """The condition merged (by type) into the PodGroup, fed back as the watch's update."""
        current = self.scheduler.ctx.objects.get("PodGroup", pod_group.key) or pod_group.raw
        written = copy.deepcopy(dict(current))
        status = written.setdefault("status", {})
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != condition.get("type")]
        status["conditions"] = [*conditions, dict(condition)]
        self.scheduler.on_object("PodGroup", written)

    async def delete_pod(self, pod: Pod, disruption_message: str) -> None:
        # Gone at once (no kubelet to end it gracefully): its DisruptionTarget condition would
        # never be read.
        self.scheduler.on_pod_delete(pod)

    async def record_event(self, pod: Pod, event_type: str, reason: str, message: str, *,
                           reporter: str | None = None) -> None:
        # The simulation's record of events is what happened to which pod; there is one reporter.
        self.events.append((pod.key, event_type, reason, message))

    async def update_persistent_volume(self, pv: Mapping[str, Any]) -> dict[str, Any]:
        written = self._replace(PV, pv)
        for kind, obj in bind_claimed_volume(self.scheduler.ctx.objects, written):
            self.scheduler.on_object(kind, obj)
        return written

    async def update_persistent_volume_claim(self, pvc: Mapping[str, Any]) -> dict[str, Any]:
        written = self._replace(PVC, pvc)
        node = self.scheduler.cache.get_node(str(annotations_of(written).get(ANN_SELECTED_NODE) or ""))
        labels = node.node.labels if node is not None and node.node is not None else None
        for kind, obj in provision_claim(self.scheduler.ctx.objects, written, labels):
            self.scheduler.on_object(kind, obj)
        return written

    def _replace(self, kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
        key = object_key(obj) if kind == PVC else str((obj.get("metadata") or {}).get("name"))
        if self.scheduler.ctx.objects.get(kind, key) is None:
            raise UpdateRefused(f'{kind.lower()}s "{key}" not found')
        written = copy.deepcopy(dict(obj))
        self.scheduler.on_object(kind, written)
        return written
