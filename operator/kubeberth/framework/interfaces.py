"""Extension points, and the Handle. A plugin subclasses the base of each point it implements.

The framework finds a plugin's points with isinstance, so a plugin enabled at
a point whose base it does not subclass is a configuration error.
Filter and Score plugins may also override `filter_all` / `score_all` (and
`normalize_all`) to handle every node of a cycle at once over the snapshot's node
arrays; the runners use them when they return an array and fall back to the per-node
call when they return None (the default). Their contract, and the node views they take, are
`kubeberth.framework.vector`'s: decide exactly as the per-node methods do.

`Handle` is what a plugin may ask of its framework (upstream's framework.Handle). It lives here,
beside the bases, because the two refer to each other (every plugin is built with a Handle; the
Handle hands out the profile's plugins); `handle.ContextHandle` is the state behind it.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np
from pydantic import BaseModel

from ..cache.objects import ObjectStore
from ..cache.snapshot import Snapshot
from ..client import ClusterClient
from ..clock import Clock
from ..model import NodeInfo, Pod, PodGroup
from .cycle_state import CycleState
from .events import ClusterEvent, ClusterEventWithHint
from .extender import Extender
from .plugin_api import ObjectKind
from .pods_in_pre_bind import PodsInPreBind
from .status import Status
from .types import (
    NodeScore,
    Placement,
    PlacementScore,
    PodGroupAssignments,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfo,
)
from .vector import AllNodes, NodeView
from .waiting_pods import WaitingPods

if TYPE_CHECKING:
    from ..cache.node_arrays import NodeArrays
    from .context import MetricsRecorder, Nominator, VictimsRecorder
    from .types import NodeToStatus


class Plugin:
    """The base of every plugin. `name` is how profiles name it; `args_model` (a pydantic model,
    or None: the plugin takes no args) validates its `pluginConfig[].args` and is what its
    constructor receives; `reads` declares the kinds it reads besides pods and nodes (the
    operator lists and watches them); `requires_api` is a PEP 440 specifier of the
    `kubeberth.framework.API_VERSION`s it works with (None: any), `requires_vector_api` one of the
    `kubeberth.framework.vector.VECTOR_API_VERSION`s, for a plugin that uses that surface (None:
    any).

    The framework builds a plugin as `cls(args, handle)`. This base's constructor keeps them as
    `self.args` and `self.handle`, so a plugin that needs nothing else at construction writes
    no `__init__`; one that does writes `__init__(self, args, handle)` (a constructor that cannot
    be called so is refused when the plugin is loaded)."""

    name: ClassVar[str] = ""
    args_model: ClassVar[type[BaseModel] | None] = None
    reads: ClassVar[tuple[ObjectKind, ...]] = ()
    requires_api: ClassVar[str | None] = None
    requires_vector_api: ClassVar[str | None] = None

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        # Typed Any: a plugin's own __init__ narrows them (`self.handle: Handle`, its args model).
        self.args: Any = args
        self.handle: Any = handle

    def events_to_register(self) -> Sequence[ClusterEvent | ClusterEventWithHint]:
        """Cluster events that may make a pod this plugin rejected schedulable, each with an
        optional QueueingHint (framework/events.py); the default, no list, means any event may help."""
        return []

    def sample_metrics(self) -> Mapping[str, float]:
        """Numbers this plugin wants in a replay's time series (API 1.5), e.g. its own accounting
        of a resource: metric name -> value. `kubeberth replay` calls it on every plugin its
        profiles enable after each sample and records column `<PluginName>.<metric>` (a metric
        name it has never seen before starts a column, earlier rows empty). Called outside any
        cycle; keep it cheap and free of side effects. The default: no metric."""
        return {}


class QueueSortPlugin(Plugin):
    """Orders the scheduling queue: `less(a, b)` is whether `a` pops before `b`. A profile has
    exactly one (PrioritySort by default)."""

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        raise NotImplementedError


class PreEnqueuePlugin(Plugin):
    """`pre_enqueue_scope(pod)` says what `pre_enqueue`'s answer for the pod depends on, so that
    the queue asks again only when that answer may have changed (a pod group's entry asks for
    each of its pods on every pass, as upstream does; kubeberth keeps the answers it can):
    SCOPE_ANY (the default): anything, asked on every pass; SCOPE_POD: the pod object alone;
    SCOPE_POD_GROUP (for a pod that names a PodGroup): the same answer for every pod of that
    group, which may change at any time (asked once per pass, for one of them). The scope itself
    must follow from the pod object alone."""

    SCOPE_ANY: ClassVar[str] = "Any"
    SCOPE_POD: ClassVar[str] = "Pod"
    SCOPE_POD_GROUP: ClassVar[str] = "PodGroup"

    def pre_enqueue(self, pod: Pod) -> Status | None:
        raise NotImplementedError

    def pre_enqueue_scope(self, pod: Pod) -> str:
        return self.SCOPE_ANY


class PreFilterExtensions:
    """Incremental updates of PreFilter state when a pod is added/removed on a node."""

    def add_pod(self, state: CycleState, pod_to_schedule: Pod, pod_to_add: Pod,
                node_info: NodeInfo) -> Status | None:
        raise NotImplementedError

    def remove_pod(self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: Pod,
                   node_info: NodeInfo) -> Status | None:
        raise NotImplementedError


class PreFilterPlugin(Plugin):
    """Runs once per pod before Filter: `pre_filter(state, pod, nodes)` returns (PreFilterResult
    or None, Status or None). It computes what Filter reads (into the CycleState, under the
    plugin's name), may narrow the nodes to consider (`PreFilterResult(node_names)`), rejects
    the pod with an unschedulable Status, or returns `Status.skip()` when it has nothing to do
    for the pod (its Filter is then not called). `pre_filter_extensions()`: the
    PreFilterExtensions that keep that state right when preemption adds or removes pods."""

    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        raise NotImplementedError

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None


class FilterPlugin(Plugin):
    """Decides whether the pod fits a node: `filter(state, pod, node_info)` returns None (fits)
    or `Status.unschedulable(reason)` / `Status.unresolvable(reason)` (no preemption can help).
    `filter_all` and `filter_statuses` are the optional vectorised forms
    (kubeberth.framework.vector's contract)."""

    def filter_all(self, state: CycleState, pod: Pod, nodes: NodeView | AllNodes) -> np.ndarray | None:
        """True where `filter` would pass, for every node of `nodes` at once; None: per node."""
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        raise NotImplementedError

    def filter_statuses(self, state: CycleState, pod: Pod, arrays: NodeArrays,
                        rows: np.ndarray) -> list[Status] | None:
        """What `filter` returns for each of `rows` (rows of `arrays` that `filter_all` rejected),
        all at once; None: ask `filter` row by row. Rows with the same status may share one."""
        return None


class PostFilterPlugin(Plugin):
    """Runs when no node fits the pod (DefaultPreemption): `post_filter(state, pod, statuses)`, a
    coroutine given each node's Status, returns (PostFilterResult naming the node the pod is
    nominated to, or None; Status)."""

    async def post_filter(self, state: CycleState, pod: Pod,
                          statuses: NodeToStatus) -> tuple[PostFilterResult | None, Status | None]:
        raise NotImplementedError


class PreScorePlugin(Plugin):
    """Runs once per pod before Score, over the nodes that passed Filter: `pre_score(state, pod,
    nodes)` computes what Score reads into the CycleState; `Status.skip()` when the plugin has
    nothing to score for the pod (its Score is then not called)."""

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        raise NotImplementedError


def _normalizes(cls: type, base: type, flag: str, methods: tuple[str, ...]) -> bool:
    """Whether `cls` (a subclass of `base`) normalizes its scores: the nearest class of its MRO
    that sets `flag` or defines one of `methods` decides (its flag; True for a method)."""
    for klass in cls.__mro__:
        if klass is base:
            break
        found = vars(klass)
        if flag in found:
            return bool(found[flag])
        if any(m in found for m in methods):
            return True
    return False


class ScorePlugin(Plugin):
    """score() returns 0..MAX_NODE_SCORE after normalize; raise PluginError on failure.

    A plugin that defines `normalize_score` (or `normalize_all`) normalizes (upstream's
    ScoreExtensions): `has_normalize` is set to True for its class. Setting `has_normalize`
    in the class body (or on the instance) overrides that: `has_normalize = False` keeps the
    raw scores although the class defines `normalize_score`. The nearest class of the MRO that
    sets the flag or defines one of the methods decides."""

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        raise NotImplementedError

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        """Override to rescale the raw scores in place (overriding it is enough: see the class
        docstring about `has_normalize`). The default leaves them."""
        return None

    has_normalize: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.has_normalize = _normalizes(cls, ScorePlugin, "has_normalize", ("normalize_score", "normalize_all"))

    def score_all(self, state: CycleState, pod: Pod, nodes: NodeView) -> np.ndarray | None:
        """`score` of every node of `nodes` (int64) at once; None: per node."""
        return None

    def normalize_all(self, state: CycleState, pod: Pod, nodes: NodeView,
                      scores: np.ndarray) -> np.ndarray | None:
        """What `normalize_score` would make of `scores`; None: through `normalize_score`."""
        return None


class ReservePlugin(Plugin):
    """`reserve(state, pod, node_name)` when the pod is assumed on its chosen node;
    `unreserve(state, pod, node_name)` when a later step fails (called for every Reserve plugin,
    in reverse order, even those whose reserve did not run: it must be idempotent)."""

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        raise NotImplementedError

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        raise NotImplementedError


class PermitPlugin(Plugin):
    """The last step of the scheduling cycle: `permit(state, pod, node_name)` returns (Status,
    timeout seconds); a Wait status holds the pod (a WaitingPod in `handle.waiting_pods`) until
    the plugin allows or rejects it, or the timeout rejects it."""

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        """Returns (status, timeout seconds). A Wait status parks the pod until allowed."""
        raise NotImplementedError


class PreBindPlugin(Plugin):
    """Runs in the binding cycle before Bind: `pre_bind(state, pod, node_name)` (a coroutine)
    does what the binding needs first (volumes, claims); `pre_bind_pre_flight` says beforehand
    whether it will do anything."""

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Whether PreBind will do anything for the pod: Skip if not (its PreBind is then not
        called), success if it will (the scheduler then sets the pod's nominatedNodeName first,
        and preemption may cancel the binding while it runs), or an error."""
        return None

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        raise NotImplementedError


class BindPlugin(Plugin):
    """Binds the pod to its node: `bind(state, pod, node_name)` (a coroutine); `Status.skip()`
    leaves it to the next Bind plugin (DefaultBinder by default)."""

    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        raise NotImplementedError


class PostBindPlugin(Plugin):
    """`post_bind(state, pod, node_name)` after the pod was bound (informational: nothing it
    returns changes the outcome)."""

    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        raise NotImplementedError


class PlacementGeneratePlugin(Plugin):
    """The pod-group cycle's PlacementGenerate (TopologyAwareWorkloadScheduling): cut `parent`
    (every node) into the candidate placements of `pod_group`. Returns (placements, status); a
    status that is not success fails the group's attempt. Only the profile's first
    PlacementGenerate plugin runs, as upstream."""

    def generate_placements(self, state: CycleState, pod_group: PodGroup, parent: Placement
                            ) -> tuple[list[Placement], Status | None]:
        raise NotImplementedError


class PlacementScorePlugin(Plugin):
    """The pod-group cycle's PlacementScore: score a feasible placement of `pod_group` with the
    pods its attempt placed; 0..MAX_NODE_SCORE after `normalize_placement_scores`, then times the
    plugin's weight. Raise PluginError on failure.

    A plugin that defines `normalize_placement_scores` normalizes: `has_normalize_placement_score`
    is set to True for its class, unless the class body (or the instance) sets it explicitly
    (False keeps the raw scores); the nearest class of the MRO that does either decides."""

    has_normalize_placement_score: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.has_normalize_placement_score = _normalizes(
            cls, PlacementScorePlugin, "has_normalize_placement_score", ("normalize_placement_scores",))

    def score_placement(self, state: CycleState, pod_group: PodGroup, assignments: PodGroupAssignments) -> int:
        raise NotImplementedError

    def normalize_placement_scores(self, state: CycleState, pod_group: PodGroup,
                                   scores: list[PlacementScore]) -> Status | None:
        return None


# Config names of the extension points, in upstream order, with their bases.
EXTENSION_POINTS: dict[str, type[Plugin]] = {
    "preEnqueue": PreEnqueuePlugin,
    "queueSort": QueueSortPlugin,
    "preFilter": PreFilterPlugin,
    "filter": FilterPlugin,
    "postFilter": PostFilterPlugin,
    "preScore": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "permit": PermitPlugin,
    "preBind": PreBindPlugin,
    "bind": BindPlugin,
    "postBind": PostBindPlugin,
    "placementGenerate": PlacementGeneratePlugin,
    "placementScore": PlacementScorePlugin,
}


# upstream's framework.Handle
class Handle(Protocol):
    """What a plugin may ask of its framework, handed to `__init__(self, args, handle)`:
    the cycle's `snapshot` of NodeInfos, the `objects` store (other kinds), the `client`,
    `waiting_pods`, `nominator`, `clock`, `rng`, `metrics`, `shared_indexes`, `plugin(name)`,
    `lookup_pod` / `list_pods` / `activate`, the extenders, whether the cycle `vectorise`s, and
    the runners preemption uses (`run_filter`, ...)."""

    @property
    def scheduler_name(self) -> str: ...

    @property
    def profile_name(self) -> str: ...

    @property
    def snapshot(self) -> Snapshot: ...

    @property
    def objects(self) -> ObjectStore: ...

    @property
    def client(self) -> ClusterClient | None: ...

    @property
    def nominator(self) -> Nominator | None: ...

    @property
    def rng(self) -> random.Random: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def waiting_pods(self) -> WaitingPods: ...

    @property
    def pods_in_pre_bind(self) -> PodsInPreBind: ...

    @property
    def preemption_tasks(self) -> set[asyncio.Task[None]]: ...

    def lookup_pod(self, uid: str) -> Pod | None: ...

    def list_pods(self, namespace: str | None = None) -> list[Pod]:
        """Every non-terminal pod the scheduler knows (bound, assumed or pending; of `namespace`
        if given), as upstream's pod lister gives them."""
        ...

    def activate(self, pods: Iterable[Pod]) -> None: ...

    @property
    def extenders(self) -> Sequence[Extender]: ...

    @property
    def metrics(self) -> MetricsRecorder: ...

    @property
    def record_victims(self) -> VictimsRecorder | None: ...

    @property
    def shared_indexes(self) -> dict[str, Any]: ...

    @property
    def vectorise(self) -> bool: ...

    @property
    def vector_min_nodes(self) -> int: ...

    @property
    def percentage_of_nodes_to_score(self) -> int: ...

    def plugin(self, name: str) -> Plugin | None: ...

    # The profile's plugins at the points preemption's shortcuts inspect (upstream's ListPlugins).
    @property
    def pre_filter_plugins(self) -> Sequence[PreFilterPlugin]: ...

    @property
    def filter_plugins(self) -> Sequence[FilterPlugin]: ...

    # The runners preemption's dry runs use (upstream's PluginsRunner).
    def run_filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None: ...

    def run_filter_with_nominated_pods(self, state: CycleState, pod: Pod,
                                       node_info: NodeInfo) -> Status | None: ...

    def run_pre_filter_add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod,
                               node_info: NodeInfo) -> Status | None: ...

    def run_pre_filter_remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: Pod,
                                  node_info: NodeInfo) -> Status | None: ...
