"""Cluster events that move unschedulable pods back into the queue (upstream's fwk.ClusterEvent
and QueueingHints).

A plugin's `events_to_register()` returns the events that may make a pod it rejected
schedulable, each with an optional QueueingHint function that looks at the change and says
whether it may really help this pod, e.g. NodeResourcesFit::

    def events_to_register(self):
        return [ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.DELETE), self._after_pod_delete),
                ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
                                     self._after_node_change)]

A hint is called as `hint(pod, old, new)` (the pending pod; the changed object before and
after, None where it did not exist) and returns QueueingHint.QUEUE or QUEUE_SKIP; an exception
counts as QUEUE. No hint means QUEUE. A bare ClusterEvent is accepted as an event without hint.
An empty list (the default) means "any event may help".

Matching is upstream's MatchClusterEvents: the registered resource equals the incoming one (or
is `*`; a registered `Pod` also matches `AssignedPod`, `UnscheduledPod` and `TargetPod`), and
the action bits intersect. The queue moves every (non-gated) pod on a wildcard incoming event
(`*`, All: UnschedulableTimeout, ForceActivate).

A SchedulingProfile put in force in place of another version for the same schedulerName is an
event too, `kubeberth.io/SchedulingProfileUpdate` (EVENT_SCHEDULING_PROFILE_UPDATE; kube-scheduler
has no live profiles, so no upstream counterpart): the verdicts of the pods that version rejected
came from a framework no longer in force, so for that profile's pods it acts as a wildcard does
(every rejected pod is requeued after its backoff, gated pods are asked PreEnqueue again) without
asking any hint, and the pods of other profiles do not see it (`profile_event_concerns`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import IntEnum, IntFlag
from typing import Any

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
    UPDATE_POD_SCALE_UP = 1 << 14

    UPDATE = (UPDATE_NODE_ALLOCATABLE | UPDATE_NODE_LABEL | UPDATE_NODE_TAINT | UPDATE_NODE_CONDITION
              | UPDATE_NODE_ANNOTATION | UPDATE_NODE_DECLARED_FEATURE | UPDATE_POD_LABEL | UPDATE_POD_SCALE_DOWN
              | UPDATE_POD_SCALE_UP | UPDATE_POD_TOLERATION | UPDATE_POD_SCHEDULING_GATES_ELIMINATED
              | UPDATE_POD_GENERATED_RESOURCE_CLAIM | UPDATE_OTHER)
    ALL = ADD | DELETE | UPDATE


# Resources (upstream's GVK strings).
WILDCARD = "*"
POD = "Pod"
ASSIGNED_POD = "AssignedPod"      # a pod bound to a node
UNSCHEDULED_POD = "UnscheduledPod"  # a pod not bound yet, other than the one the event is about
TARGET_POD = "TargetPod"          # the pending pod itself, when it is updated
NODE = "Node"
PERSISTENT_VOLUME = "PersistentVolume"
PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
STORAGE_CLASS = "storage.k8s.io/StorageClass"
CSI_NODE = "storage.k8s.io/CSINode"
CSI_DRIVER = "storage.k8s.io/CSIDriver"
CSI_STORAGE_CAPACITY = "storage.k8s.io/CSIStorageCapacity"
VOLUME_ATTACHMENT = "storage.k8s.io/VolumeAttachment"
RESOURCE_CLAIM = "resource.k8s.io/ResourceClaim"
RESOURCE_SLICE = "resource.k8s.io/ResourceSlice"
DEVICE_CLASS = "resource.k8s.io/DeviceClass"
NAMESPACE = "Namespace"
POD_GROUP = "scheduling.k8s.io/PodGroup"
SCHEDULING_PROFILE = "kubeberth.io/SchedulingProfile"

_POD_RESOURCES = frozenset({POD, ASSIGNED_POD, UNSCHEDULED_POD, TARGET_POD})


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


class QueueingHint(IntEnum):
    """A plugin's verdict on one event for one pending pod (upstream's fwk.QueueingHint)."""

    QUEUE_SKIP = 0
    QUEUE = 1


# hint(pending pod, old object, new object) -> QueueingHint
QueueingHintFn = Callable[[Pod, Any, Any], QueueingHint]


class ClusterEventWithHint:
    """A registered event and the plugin's hint for it (None: always QUEUE)."""

    __slots__ = ("event", "hint")

    def __init__(self, event: ClusterEvent, hint: QueueingHintFn | None = None) -> None:
        self.event = event
        self.hint = hint

    def __repr__(self) -> str:
        return f"ClusterEventWithHint({self.event.label}, {getattr(self.hint, '__name__', None)})"


def with_hint(registered: ClusterEvent | ClusterEventWithHint) -> ClusterEventWithHint:
    return registered if isinstance(registered, ClusterEventWithHint) else ClusterEventWithHint(registered)


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
        ActionType.UPDATE_POD_SCALE_DOWN: "UpdatePodScaleDown", ActionType.UPDATE_POD_SCALE_UP: "UpdatePodScaleUp",
        ActionType.UPDATE_NODE_DECLARED_FEATURE: "UpdateNodeDeclaredFeature",
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
POP_FROM_BACKOFF_Q = "PopFromBackoffQ"
FORCE_ACTIVATE = "ForceActivate"
UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"

EVENT_ASSIGNED_POD_ADD = ClusterEvent(ASSIGNED_POD, ActionType.ADD)
EVENT_ASSIGNED_POD_UPDATE = ClusterEvent(ASSIGNED_POD, ActionType.UPDATE)
EVENT_ASSIGNED_POD_DELETE = ClusterEvent(ASSIGNED_POD, ActionType.DELETE)
EVENT_UNSCHEDULED_POD_ADD = ClusterEvent(UNSCHEDULED_POD, ActionType.ADD)
EVENT_UNSCHEDULED_POD_UPDATE = ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE)
EVENT_UNSCHEDULED_POD_DELETE = ClusterEvent(UNSCHEDULED_POD, ActionType.DELETE)
EVENT_TARGET_POD_UPDATE = ClusterEvent(TARGET_POD, ActionType.UPDATE)
EVENT_NODE_ADD = ClusterEvent(NODE, ActionType.ADD)
EVENT_NODE_DELETE = ClusterEvent(NODE, ActionType.DELETE)
EVENT_UNSCHEDULABLE_TIMEOUT = ClusterEvent(WILDCARD, ActionType.ALL, UNSCHEDULABLE_TIMEOUT)
EVENT_FORCE_ACTIVATE = ClusterEvent(WILDCARD, ActionType.ALL, FORCE_ACTIVATE)
# A new version of a profile put in force: the event's `new` object is the profile (anything
# with the `scheduler_name` it serves), which says whose pods it concerns.
EVENT_SCHEDULING_PROFILE_UPDATE = ClusterEvent(SCHEDULING_PROFILE, ActionType.UPDATE)


def profile_event_concerns(event: ClusterEvent, new: Any, pod: Pod) -> bool | None:
    """For a SchedulingProfile event, whether it concerns `pod` (the pod's schedulerName is the
    profile's); None for any other event."""
    if event.resource != SCHEDULING_PROFILE:
        return None
    return getattr(new, "scheduler_name", None) == pod.scheduler_name


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


def pod_scheduling_properties_change(new: Pod, old: Pod, *, target: bool = False) -> list[ClusterEvent]:
    """The Pod/Update* events for a pod update (upstream's PodSchedulingPropertiesChange):
    AssignedPod for a bound pod, TargetPod for the pending pod itself (`target`), UnscheduledPod
    for another pending pod; plain Update when nothing specific changed."""
    resource = ASSIGNED_POD if new.node_name else TARGET_POD if target else UNSCHEDULED_POD
    actions: list[ActionType] = []
    if new.labels != old.labels:
        actions.append(ActionType.UPDATE_POD_LABEL)
    if _scaled(new, old, down=True):
        actions.append(ActionType.UPDATE_POD_SCALE_DOWN)
    if _scaled(new, old, down=False):
        actions.append(ActionType.UPDATE_POD_SCALE_UP)
    if not new.scheduling_gates and old.scheduling_gates:
        actions.append(ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    if len(new.tolerations) != len(old.tolerations):
        actions.append(ActionType.UPDATE_POD_TOLERATION)
    if _claim_statuses(new) != _claim_statuses(old):
        actions.append(ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM)
    if not actions:
        actions.append(ActionType.UPDATE_OTHER)
    return [ClusterEvent(resource, a) for a in actions]


def _claim_statuses(pod: Pod) -> tuple[Any, Any]:
    status = pod.raw.get("status") or {}
    return status.get("resourceClaimStatuses") or None, status.get("extendedResourceClaimStatus") or None


def _scaled(new: Pod, old: Pod, *, down: bool) -> bool:
    """Whether some resource request went down (or up) between old and new."""
    o, n = old.requests, new.requests
    for name in set(o.names()) | set(n.names()):
        if (n.get(name) < o.get(name)) if down else (n.get(name) > o.get(name)):
            return True
    return False
