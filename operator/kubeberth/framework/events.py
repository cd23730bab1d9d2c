"""Cluster events that move unschedulable pods back into the queue (upstream's fwk.ClusterEvent).

A plugin's `events_to_register()` returns the `ClusterEvent`s that may make a pod it
rejected schedulable, e.g. NodeResourcesFit::

    from kubeberth.framework.events import ActionType, ClusterEvent, NODE, POD

    def events_to_register(self):
        return [ClusterEvent(POD, ActionType.DELETE),
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE)]

An empty list (the default) means "any event may help".

Matching is upstream's ClusterEvent.Match: the registered resource equals the incoming one
(or is `*`; a registered `Pod` also matches `AssignedPod` and `UnschedulablePod` events), and
the action bits intersect. The queue moves every (non-gated) pod on a wildcard incoming event
(`*`, All: UnschedulableTimeout, ForceActivate).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntFlag

from ..model import Node, Pod


class ActionType(IntFlag):
    """What happened to the object; the Update* bits say which part changed."""

    NONE = 0
    ADD = 1 << 0
    DELETE = 1 << 1
    UPDATE_NODE_ALLOCATABLE = 1 << 2
    UPDATE_NODE_LABEL = 1 << 3
    UPDATE_NODE_TAINT = 1 << 4
    UPDATE_NODE_CONDITION = 1 << 5
    UPDATE_NODE_ANNOTATION = 1 << 6
    UPDATE_POD_LABEL = 1 << 7
    UPDATE_POD_SCALE_DOWN = 1 << 8
    UPDATE_POD_TOLERATION = 1 << 9
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1 << 10
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 1 << 11
    # Any other update (upstream's catch-all "Update" bits of the other resources).
    UPDATE_OTHER = 1 << 12
    UPDATE_NODE_DECLARED_FEATURE = 1 << 13

    UPDATE = (UPDATE_NODE_ALLOCATABLE | UPDATE_NODE_LABEL | UPDATE_NODE_TAINT | UPDATE_NODE_CONDITION
              | UPDATE_NODE_ANNOTATION | UPDATE_NODE_DECLARED_FEATURE | UPDATE_POD_LABEL | UPDATE_POD_SCALE_DOWN
              | UPDATE_POD_TOLERATION | UPDATE_POD_SCHEDULING_GATES_ELIMINATED
              | UPDATE_POD_GENERATED_RESOURCE_CLAIM | UPDATE_OTHER)
    ALL = ADD | DELETE | UPDATE


# Resources (upstream's GVK strings).
WILDCARD = "*"
POD = "Pod"
ASSIGNED_POD = "AssignedPod"        # a pod bound to a node (upstream's internal assignedPod)
UNSCHEDULED_POD = "UnschedulablePod"  # a pod not bound yet (upstream's internal unschedulablePod)
NODE = "Node"
PERSISTENT_VOLUME = "PersistentVolume"
PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
STORAGE_CLASS = "StorageClass"
CSI_NODE = "CSINode"
CSI_DRIVER = "CSIDriver"
CSI_STORAGE_CAPACITY = "CSIStorageCapacity"
VOLUME_ATTACHMENT = "VolumeAttachment"
NAMESPACE = "Namespace"

_POD_RESOURCES = frozenset({POD, ASSIGNED_POD, UNSCHEDULED_POD})


class ClusterEvent:
    """An event (resource, action); `label` names special events (UnschedulableTimeout, ...)."""

    __slots__ = ("action", "label", "resource")

    def __init__(self, resource: str, action: ActionType, label: str = "") -> None:
        self.resource = resource
        self.action = ActionType(action)
        self.label = label or f"{resource}{_action_label(self.action)}"

    def is_wildcard(self) -> bool:
        return self.resource == WILDCARD and self.action == ActionType.ALL

    def match(self, incoming: ClusterEvent) -> bool:
        """Whether this (registered) event covers the incoming one. An incoming wildcard matches
        only a registered wildcard here; the queue moves every pod on a wildcard by itself."""
        if self.is_wildcard():
            return True
        if not (self.action & incoming.action):
            return False
        if self.resource == WILDCARD or self.resource == incoming.resource:
            return True
        return self.resource == POD and incoming.resource in _POD_RESOURCES

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ClusterEvent):
            return NotImplemented
        return (self.resource, self.action, self.label) == (other.resource, other.action, other.label)

    def __hash__(self) -> int:
        return hash((self.resource, int(self.action), self.label))

    def __repr__(self) -> str:
        return f"ClusterEvent({self.label})"


def _action_label(action: ActionType) -> str:
    if action == ActionType.ALL:
        return "All"
    if action == ActionType.UPDATE:
        return "Update"
    names = {
        ActionType.ADD: "Add", ActionType.DELETE: "Delete",
        ActionType.UPDATE_NODE_ALLOCATABLE: "UpdateNodeAllocatable", ActionType.UPDATE_NODE_LABEL: "UpdateNodeLabel",
        ActionType.UPDATE_NODE_TAINT: "UpdateNodeTaint", ActionType.UPDATE_NODE_CONDITION: "UpdateNodeCondition",
        ActionType.UPDATE_NODE_ANNOTATION: "UpdateNodeAnnotation", ActionType.UPDATE_POD_LABEL: "UpdatePodLabel",
        ActionType.UPDATE_POD_SCALE_DOWN: "UpdatePodScaleDown",
        ActionType.UPDATE_POD_TOLERATION: "UpdatePodToleration",
        ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED: "UpdatePodSchedulingGatesEliminated",
        ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM: "UpdatePodGeneratedResourceClaim",
        ActionType.UPDATE_OTHER: "Update",
    }
    parts = [label for bit, label in names.items() if action & bit]
    return "|".join(parts) if parts else "None"


def match_any(event: ClusterEvent, registered: Iterable[ClusterEvent]) -> bool:
    return any(r.match(event) for r in registered)


# Special event labels (upstream's framework/events.go).
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
FORCE_ACTIVATE = "ForceActivate"
UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"

EVENT_ASSIGNED_POD_ADD = ClusterEvent(ASSIGNED_POD, ActionType.ADD)
EVENT_ASSIGNED_POD_UPDATE = ClusterEvent(ASSIGNED_POD, ActionType.UPDATE)
EVENT_ASSIGNED_POD_DELETE = ClusterEvent(ASSIGNED_POD, ActionType.DELETE)
EVENT_UNSCHEDULED_POD_ADD = ClusterEvent(UNSCHEDULED_POD, ActionType.ADD)
EVENT_UNSCHEDULED_POD_UPDATE = ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE)
EVENT_UNSCHEDULED_POD_DELETE = ClusterEvent(UNSCHEDULED_POD, ActionType.DELETE)
EVENT_NODE_ADD = ClusterEvent(NODE, ActionType.ADD)
EVENT_NODE_DELETE = ClusterEvent(NODE, ActionType.DELETE)
EVENT_UNSCHEDULABLE_TIMEOUT = ClusterEvent(WILDCARD, ActionType.ALL, UNSCHEDULABLE_TIMEOUT)
EVENT_FORCE_ACTIVATE = ClusterEvent(WILDCARD, ActionType.ALL, FORCE_ACTIVATE)


def node_scheduling_properties_change(new: Node, old: Node) -> list[ClusterEvent]:
    """The Node/Update* events for a node update (upstream's NodeSchedulingPropertiesChange)."""
    events: list[ClusterEvent] = []
    # spec.unschedulable true -> false is reported as a taint change, as upstream does.
    if old.unschedulable and not new.unschedulable:
        events.append(ClusterEvent(NODE, ActionType.UPDATE_NODE_TAINT))
    if new.allocatable != old.allocatable:
        events.append(ClusterEvent(NODE, ActionType.UPDATE_NODE_ALLOCATABLE))
    if new.labels != old.labels:
        events.append(ClusterEvent(NODE, ActionType.UPDATE_NODE_LABEL))
    if new.taints != old.taints and not any(e.action == ActionType.UPDATE_NODE_TAINT for e in events):
        events.append(ClusterEvent(NODE, ActionType.UPDATE_NODE_TAINT))
    if new.conditions != old.conditions:
        events.append(ClusterEvent(NODE, ActionType.UPDATE_NODE_CONDITION))
    old_ann = (old.raw.get("metadata") or {}).get("annotations") or {}
    new_ann = (new.raw.get("metadata") or {}).get("annotations") or {}
    if old_ann != new_ann:
        events.append(ClusterEvent(NODE, ActionType.UPDATE_NODE_ANNOTATION))
    if (old.raw.get("status") or {}).get("declaredFeatures") != (new.raw.get("status") or {}).get("declaredFeatures"):
        events.append(ClusterEvent(NODE, ActionType.UPDATE_NODE_DECLARED_FEATURE))
    return events


def pod_scheduling_properties_change(new: Pod, old: Pod) -> list[ClusterEvent]:
    """The Pod/Update* events for a pod update (upstream's PodSchedulingPropertiesChange):
    AssignedPod for a bound pod, UnschedulablePod otherwise; plain Update when nothing specific."""
    resource = ASSIGNED_POD if new.node_name else UNSCHEDULED_POD
    actions: list[ActionType] = []
    if new.labels != old.labels:
        actions.append(ActionType.UPDATE_POD_LABEL)
    if _scaled_down(new, old):
        actions.append(ActionType.UPDATE_POD_SCALE_DOWN)
    if not new.scheduling_gates and old.scheduling_gates:
        actions.append(ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    if len(new.tolerations) != len(old.tolerations):
        actions.append(ActionType.UPDATE_POD_TOLERATION)
    if (new.raw.get("status") or {}).get("resourceClaimStatuses") != (old.raw.get("status") or {}).get(
            "resourceClaimStatuses"):
        actions.append(ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM)
    if not actions:
        actions.append(ActionType.UPDATE_OTHER)
    return [ClusterEvent(resource, a) for a in actions]


def _scaled_down(new: Pod, old: Pod) -> bool:
    o, n = old.requests, new.requests
    for name in o.names():
        if n.get(name) < o.get(name):
            return True
    return False
