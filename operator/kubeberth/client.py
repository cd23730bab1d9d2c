"""What the scheduler asks of the cluster. The operator implements it against the
API server; simulate implements it on in-memory objects."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from .model import Pod, PodGroup

# The reasons of the PodScheduled=False condition (upstream's v1.PodReasonUnschedulable and
# v1.PodReasonSchedulerError): no node fits, or an error (a bind failed, the pod is malformed).
UNSCHEDULABLE_REASON = "Unschedulable"
SCHEDULER_ERROR = "SchedulerError"


def preemption_message(scheduler_name: str, preemptor_type: str = "pod") -> str:
    """The DisruptionTarget message of a victim: the preemptor's profile names itself (upstream's
    "<schedulerName>: preempting to accommodate a higher priority pod"), not the victim's;
    `preemptor_type` is "podgroup" when a pod group preempts."""
    return f"{scheduler_name}: preempting to accommodate a higher priority {preemptor_type}"


class BindConflict(Exception):
    """The binding was refused (HTTP 409/404). `settled`: the pod is bound already (by another
    scheduler), being deleted, replaced or gone: the scheduler drops it quietly and lets the watch
    tell the rest. Otherwise it is forgotten and requeued as after any failed binding."""

    def __init__(self, message: str, *, settled: bool = False) -> None:
        super().__init__(message)
        self.settled = settled


class UpdateRefused(Exception):
    """The API server refused to replace an object (conflict, gone, invalid): its message."""


class ClusterClient(Protocol):
    """What the scheduler asks of the cluster (`handle.client`; None where there is none): bind
    a pod (raising BindConflict), patch its nominatedNodeName and PodScheduled condition, delete
    a victim, record an Event, write volumes' and DRA claims' changes, a PodGroup's condition,
    a pod's annotations (`annotate_pod`, API 1.5).
    The operator implements it against the API server, simulate in memory."""

    async def bind(self, pod: Pod, node_name: str) -> None: ...

    async def set_nominated_node(self, pod: Pod, node_name: str) -> None:
        """Patch status.nominatedNodeName ('' clears it)."""

    async def set_unschedulable(self, pod: Pod, message: str, reason: str = UNSCHEDULABLE_REASON) -> None:
        """Patch the PodScheduled=False condition (reason Unschedulable or SchedulerError), its
        observedGeneration the pod's metadata.generation as the scheduler saw it."""

    async def delete_pod(self, pod: Pod, disruption_message: str) -> None:
        """Delete a preemption victim (with a UID precondition), first setting its DisruptionTarget
        condition (reason PreemptionByScheduler) with `disruption_message`, which names the
        preempting profile (`preemption_message`)."""

    async def record_event(self, pod: Pod, event_type: str, reason: str, message: str, *,
                           reporter: str | None = None) -> None:
        """An event about `pod`, reported by the profile (schedulerName) `reporter`, by default
        the pod's own (a Preempted event is reported by the preemptor's profile)."""

    async def update_persistent_volume(self, pv: Mapping[str, Any]) -> dict[str, Any]:
        """Replace a PersistentVolume (the volume binder sets its claimRef); returns the object as
        stored. Raises `UpdateRefused` when the API server refuses it (a conflict: it changed)."""
        ...

    async def update_persistent_volume_claim(self, pvc: Mapping[str, Any]) -> dict[str, Any]:
        """Replace a PersistentVolumeClaim (the volume binder sets its selected-node annotation)."""
        ...

    async def write_resource_claim(self, claim: Mapping[str, Any], *, update_metadata: bool = False) -> Any:
        """Write a ResourceClaim's status (allocation, reservedFor), or first its metadata (the
        finalizer) with `update_metadata`; returns the object as stored."""
        ...

    async def create_resource_claim(self, claim: Mapping[str, Any]) -> Any:
        """Create the claim of a pod's extended resources that a DeviceClass serves."""
        ...

    async def set_extended_resource_claim_status(self, pod: Pod, status: Mapping[str, Any]) -> None:
        """Name that claim in the pod's status.extendedResourceClaimStatus."""
        ...

    async def annotate_pod(self, pod: Pod, annotations: Mapping[str, str]) -> None:
        """Merge `annotations` into the pod's metadata.annotations (a JSON merge patch of the pod;
        API 1.5): a plugin records what it decided on the pod itself (say, at PreBind, the
        devices it chose). A pod that is gone is left alone."""
        ...

    async def set_pod_group_condition(self, pod_group: PodGroup, condition: Mapping[str, Any]) -> None:
        """Patch one condition (merged by type) into a scheduling.k8s.io/v1beta1 PodGroup's status
        (podgroups/status), as upstream's PatchPodGroupStatus."""
        ...
