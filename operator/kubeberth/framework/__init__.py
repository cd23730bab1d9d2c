"""The scheduling framework, and the public plugin API.

Everything in `__all__` is the contract a plugin is written against (`API_VERSION`; see
README "Write your own plugin" and HACKING.md "Plugins"): the bases of every extension point,
Status and its codes, CycleState, the Handle protocol and what it hands out (the snapshot of
NodeInfos, the object store, the cluster client, waiting pods, the clock, metrics), the Pod and
Node views, cluster events and QueueingHints, the label-selector and resource helpers of the
model, ObjectKind for the kinds a plugin reads, and the Registry. A plugin needs no other
kubeberth module but `kubeberth.framework.vector`, the vectorised hooks' provisional surface
(node views, the snapshot's arrays and columns, masks, keys, caches, score helpers), versioned
apart (`VECTOR_API_VERSION`, with its own rule: that package's docstring). Nothing here changes
meaning or goes without the major number of API_VERSION changing. Every class and function
exported carries its own docstring (`help(kubeberth.framework.Pod)`); the constants are
described below.

API 1.1 added what the in-tree plugins still took from private modules (they now import only
this package too): the model's helpers (node selector terms, pod affinity terms, taint
toleration, resource names, quantities, label validation), upstream's score normalisation,
the remaining event resources, and the vectorised path's caches, keys, masks and columns (in
`kubeberth.framework.vector` since 1.4).

API 1.2 added `PreEnqueuePlugin.pre_enqueue_scope` (a method; no name was added).

API 1.3 added the whole Node and Pod: `Node.annotations` and `Pod.annotations` (str -> str, as
`labels`; read on first use) and `raw` documented as the read-only escape hatch (with `cache`
for what a plugin parses of it); for the vectorised hooks, the nodes' annotations as columns
(`NodeArrays.annotation_codes` / `annotation_values` / `annotation_code_of`, `annotation_version`)
and masks (`annotations_mask`, `annotation_requirement_mask`), and `node_column(nodes, key, fn)`,
a plugin's own per-node column computed once per Node object and kept with the snapshot
(`MaskCache` now also follows annotation changes). Nothing changed meaning or went.

API 1.4 split the fast path's names off: the vectorised path's views, arrays, columns, masks,
keys, caches and score helpers (`NodeView`, `AllNodes`, `NodeArrays`, `COL_CPU`, ...,
`labels_mask`, ..., `node_column`, `zero_scores`, `arrays_for`, `snapshot_arrays`) left this
`__all__` for `kubeberth.framework.vector` (vector API 1.0, the same names unchanged), and
`Plugin.requires_vector_api` pins that surface. Under 1.x they stay importable from here as
deprecated aliases (a DeprecationWarning names their new place; type checkers no longer see them
here), so a plugin written against 1.3 loads and runs unchanged; they go in 2.0. Nothing else
changed meaning or went; the model's `OBJECT_NAME_FIELD` stays here. `Handle` now lives beside
the extension points (`framework/interfaces.py`), the same protocol.

API 1.5 added `ClusterClient.annotate_pod(pod, annotations)`: a plugin merges annotations into a
pod (a JSON merge patch; simulate's and replay's in-memory client changes the pod's object and
the scheduler's copy), say at PreBind to record the devices it chose; and `Plugin.sample_metrics()`
(a method; no name was added): a plugin's own numbers (name -> float, default none), which
`kubeberth replay` records after each sample as the time series' `<PluginName>.<metric>` columns.

Constants (names without a docstring of their own):

- `API_VERSION`: this API's version, "major.minor" (a plugin pins it with `requires_api`).
- `EXTENSION_POINTS`: the profile's extension point name (`filter`, `score`, ...) -> the base
  class a plugin subclasses to be enabled there.
- `MIN_NODE_SCORE`, `MAX_NODE_SCORE`: the range of a normalised score (0 and 100).
- Event resources, the `resource` of a `ClusterEvent`: `POD` (any pod), `ASSIGNED_POD` (a pod
  bound to a node), `UNSCHEDULED_POD` (a pod not bound yet, other than the one concerned),
  `TARGET_POD` (the pending pod itself, when it is updated), `NODE`, `NAMESPACE`,
  `PERSISTENT_VOLUME`, `PERSISTENT_VOLUME_CLAIM`, `STORAGE_CLASS`, `CSI_NODE`, `CSI_DRIVER`,
  `CSI_STORAGE_CAPACITY`, `VOLUME_ATTACHMENT`, `RESOURCE_CLAIM`, `RESOURCE_SLICE`, `DEVICE_CLASS`,
  `POD_GROUP` (upstream's resource strings), and `WILDCARD` ("*", every resource).
- `NsLabels`: the type of a function giving a namespace's labels by its name
  (`Callable[[str], Mapping[str, str]]`, for `AffinityTerm.matches`).
- `POD_GROUP_STATES`: the key of the scheduler's `PodGroupStates` in the handle's shared indexes.
- Resource names: `CPU`, `MEMORY`, `EPHEMERAL_STORAGE` ("cpu", "memory", "ephemeral-storage").
- Taint effects: `NO_SCHEDULE`, `PREFER_NO_SCHEDULE`, `NO_EXECUTE`.
- `OBJECT_NAME_FIELD`: "metadata.name", the one field a node selector term's matchFields names.
"""
import warnings
from typing import TYPE_CHECKING, Any

from ..cache.objects import ObjectStore, object_key
from ..cache.pod_groups import POD_GROUP_STATES, PodGroupStates
from ..cache.snapshot import Snapshot
from ..client import BindConflict, ClusterClient
from ..clock import Clock
from ..model import (
    AffinityTerm,
    HostPort,
    LabelSelector,
    ModelError,
    Node,
    NodeInfo,
    NodeSelector,
    NodeSelectorTerm,
    Pod,
    PodAffinityTerms,
    PodGroup,
    PreferredTerm,
    QuantityError,
    Requirement,
    Resource,
    Taint,
    Toleration,
    find_untolerated,
    milli_value,
    parse_quantity,
    pod_affinity_terms,
    pod_requests,
)
from ..model import value as quantity_value
from ..model.affinity_terms import NsLabels
from ..model.label_validation import label_value_errors, qualified_name_errors, validate_selector
from ..model.resources import CPU, EPHEMERAL_STORAGE, MEMORY, is_extended_resource_name, is_scalar_resource
from ..model.selectors import OBJECT_NAME_FIELD
from ..model.taints import NO_EXECUTE, NO_SCHEDULE, PREFER_NO_SCHEDULE, tolerated
from . import vector as _vector
from .context import MetricsRecorder, SchedulerContext
from .cycle_state import CycleState, StateData
from .events import (
    ASSIGNED_POD,
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    DEVICE_CLASS,
    NAMESPACE,
    NODE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    POD,
    POD_GROUP,
    RESOURCE_CLAIM,
    RESOURCE_SLICE,
    STORAGE_CLASS,
    TARGET_POD,
    UNSCHEDULED_POD,
    VOLUME_ATTACHMENT,
    WILDCARD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from .interfaces import (
    EXTENSION_POINTS,
    BindPlugin,
    FilterPlugin,
    Handle,
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
from .scoring import default_normalize_score
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
from .waiting_pods import WaitingPod, WaitingPods

__all__ = [
    "API_VERSION", "ASSIGNED_POD", "EXTENSION_POINTS", "MAX_NODE_SCORE", "MIN_NODE_SCORE", "NODE", "POD",
    "TARGET_POD", "UNSCHEDULED_POD", "WILDCARD", "ActionType", "Alias", "BindConflict", "BindPlugin", "Clock",
    "ClusterClient", "ClusterEvent", "ClusterEventWithHint", "Code", "CycleState", "Diagnosis", "FilterPlugin",
    "FitError", "Framework", "Handle", "HostPort", "LabelSelector", "MetricsRecorder", "ModelError", "Node",
    "NodeInfo", "NodePluginScores", "NodeScore", "NodeSelector", "NodeToStatus", "ObjectKind", "ObjectStore",
    "PermitPlugin", "Plugin", "PluginError", "PluginSpec", "Pod", "PostBindPlugin", "PostFilterPlugin",
    "PostFilterResult", "PreBindPlugin", "PreEnqueuePlugin", "PreFilterExtensions", "PreFilterPlugin",
    "PreFilterResult", "PreScorePlugin", "QueueSortPlugin", "QueuedPodInfo", "QueueingHint", "Registry",
    "RegistryError", "ReservePlugin", "Resource", "SchedulerContext", "ScorePlugin", "Snapshot", "StateData",
    "Status", "Taint", "Toleration", "WaitingPod", "WaitingPods", "find_untolerated", "is_success", "object_key",
    "parse_quantity", "pod_requests",
]

# Added in API 1.1 (what the in-tree plugins took from private modules until then).
__all__ += [
    "CPU", "CSI_DRIVER", "CSI_NODE", "CSI_STORAGE_CAPACITY", "DEVICE_CLASS", "EPHEMERAL_STORAGE", "MEMORY",
    "NAMESPACE", "NO_EXECUTE", "NO_SCHEDULE", "OBJECT_NAME_FIELD", "PERSISTENT_VOLUME", "PERSISTENT_VOLUME_CLAIM",
    "PREFER_NO_SCHEDULE", "RESOURCE_CLAIM", "RESOURCE_SLICE", "STORAGE_CLASS", "VOLUME_ATTACHMENT", "AffinityTerm",
    "NodeSelectorTerm", "NsLabels", "PodAffinityTerms", "PreferredTerm", "QuantityError", "Requirement",
    "default_normalize_score", "is_extended_resource_name", "is_scalar_resource", "label_value_errors",
    "milli_value", "pod_affinity_terms", "qualified_name_errors", "quantity_value", "tolerated", "validate_selector",
]
# Workloads (GenericWorkload): the scheduling.k8s.io PodGroup and the scheduler's state of each.
__all__ += ["POD_GROUP", "POD_GROUP_STATES", "PodGroup", "PodGroupStates"]
# The pod-group cycle's placements (TopologyAwareWorkloadScheduling), API 1.1.
__all__ += ["Placement", "PlacementGeneratePlugin", "PlacementScore", "PlacementScorePlugin", "PodGroupAssignments",
            "ProposedAssignment"]

# API 1.4: the vectorised path's names left `__all__` for kubeberth.framework.vector (its own,
# provisional surface). Under 1.x they stay importable from here, each warning where it now lives.
_MOVED_TO_VECTOR = frozenset(_vector.__all__) - {"VECTOR_API_VERSION"}

if not TYPE_CHECKING:  # type checkers see only the names above: a plugin checked against 1.4 imports them from .vector
    def __getattr__(name: str) -> Any:
        if name in _MOVED_TO_VECTOR:
            warnings.warn(f"kubeberth.framework.{name} is deprecated since plugin API 1.4 (it goes in 2.0): "
                          f"import it from kubeberth.framework.vector", DeprecationWarning, stacklevel=2)
            return getattr(_vector, name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
