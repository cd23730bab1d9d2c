"""The scheduling framework, and the public plugin API.

Everything in `__all__` is the contract a plugin is written against (`API_VERSION`; see
README "Write your own plugin" and HACKING.md "Plugins"): the bases of every extension point,
Status and its codes, CycleState, the Handle protocol and what it hands out (the snapshot of
NodeInfos, the object store, the cluster client, waiting pods, the clock, metrics), the Pod and
Node views, cluster events and QueueingHints, the vectorised hooks' node views and helpers,
the label-selector and resource helpers of the model, ObjectKind for the kinds a plugin reads,
and the Registry. A plugin needs no other kubeberth module; nothing here changes meaning
without the major number of API_VERSION changing.
"""

from ..cache.node_arrays import NodeArrays
from ..cache.objects import ObjectStore, object_key
from ..cache.snapshot import Snapshot
from ..client import BindConflict, ClusterClient
from ..clock import Clock
from ..model import (
    HostPort,
    LabelSelector,
    ModelError,
    Node,
    NodeInfo,
    NodeSelector,
    Pod,
    PodGroup,
    Resource,
    Taint,
    Toleration,
    find_untolerated,
    parse_quantity,
    pod_requests,
)
from .context import MetricsRecorder, SchedulerContext
from .cycle_state import CycleState, StateData
from .events import (
    ASSIGNED_POD,
    NODE,
    POD,
    TARGET_POD,
    UNSCHEDULED_POD,
    WILDCARD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from .handle import Handle
from .interfaces import (
    EXTENSION_POINTS,
    BindPlugin,
    FilterPlugin,
    PermitPlugin,
    PlacementGeneratePlugin,
    PlacementScorePlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from .plugin_api import API_VERSION, ObjectKind
from .registry import Alias, PluginSpec, Registry, RegistryError
from .runtime import Framework
from .status import Code, PluginError, Status, is_success
from .types import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    Diagnosis,
    FitError,
    NodePluginScores,
    NodeScore,
    NodeToStatus,
    Placement,
    PlacementScore,
    PodGroupAssignments,
    PostFilterResult,
    PreFilterResult,
    ProposedAssignment,
    QueuedPodInfo,
)
from .vector import (
    AllNodes,
    NodeView,
    default_normalize_all,
    labels_mask,
    requirement_mask,
    selector_mask,
    untolerated_free_mask,
    zero_scores,
)
from .waiting_pods import WaitingPod, WaitingPods

__all__ = [
    "API_VERSION", "ASSIGNED_POD", "EXTENSION_POINTS", "MAX_NODE_SCORE", "MIN_NODE_SCORE", "NODE", "POD",
    "TARGET_POD", "UNSCHEDULED_POD", "WILDCARD", "ActionType", "Alias", "AllNodes", "BindConflict", "BindPlugin",
    "Clock", "ClusterClient", "ClusterEvent", "ClusterEventWithHint", "Code", "CycleState", "Diagnosis",
    "FilterPlugin", "FitError", "Framework", "Handle", "HostPort", "LabelSelector", "MetricsRecorder", "ModelError",
    "Node",
    "NodeArrays", "NodeInfo", "NodePluginScores", "NodeScore", "NodeSelector", "NodeToStatus", "NodeView",
    "ObjectKind", "ObjectStore", "PermitPlugin", "Plugin", "PluginError", "PluginSpec", "Pod", "PostBindPlugin",
    "PostFilterPlugin", "PostFilterResult", "PreBindPlugin", "PreEnqueuePlugin", "PreFilterExtensions",
    "PreFilterPlugin", "PreFilterResult", "PreScorePlugin", "QueueSortPlugin", "QueuedPodInfo", "QueueingHint",
    "Registry", "RegistryError", "ReservePlugin", "Resource", "SchedulerContext", "ScorePlugin", "Snapshot",
    "StateData", "Status", "Taint", "Toleration", "WaitingPod", "WaitingPods", "default_normalize_all",
    "find_untolerated", "is_success", "labels_mask", "object_key", "parse_quantity", "pod_requests",
    "requirement_mask", "selector_mask", "untolerated_free_mask", "zero_scores",
]
# The pod-group cycle's placements (TopologyAwareWorkloadScheduling), API 1.1.
__all__ += ["Placement", "PlacementGeneratePlugin", "PlacementScore", "PlacementScorePlugin", "PodGroup",
            "PodGroupAssignments", "ProposedAssignment"]
