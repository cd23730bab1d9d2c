"""NodeDeclaredFeatures (GA in v1.37, in the default profile): a pod that needs a node feature
fits only nodes that declare it in `status.declaredFeatures`.

Which features a pod needs is inferred from its spec as upstream's nodedeclaredfeatures
registry does for scheduling (k8s.io/component-helpers v0.37): a container rule restarting
all containers, a host-network pod in a user namespace, a volume mount with bind-mount
options. Names a node declares that the registry does not know are ignored, as upstream maps
only the known ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..framework import (
    NODE,
    TARGET_POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    FilterPlugin,
    Handle,
    Node,
    NodeInfo,
    Pod,
    PreFilterPlugin,
    PreFilterResult,
    QueueingHint,
    Status,
)

NAME = "NodeDeclaredFeatures"
PRE_FILTER_KEY = "PreFilter" + NAME
ERR_REASON = "node(s) didn't match Pod's required features"

RESTART_ALL_CONTAINERS = "RestartAllContainersOnContainerExits"
USER_NAMESPACES_HOST_NETWORK = "UserNamespacesHostNetworkSupport"
VOLUME_BIND_MOUNT_OPTIONS = "VolumeBindMountOptions"


def _containers(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]
            if isinstance(c, Mapping)]


def _restarts_all_containers(spec: Mapping[str, Any]) -> bool:
    return any(isinstance(rule, Mapping) and rule.get("action") == "RestartAllContainers"
               for c in _containers(spec) for rule in (c.get("restartPolicyRules") or ()))


def _host_network_in_user_namespace(spec: Mapping[str, Any]) -> bool:
    return bool(spec.get("hostNetwork")) and spec.get("hostUsers") is False


def _bind_mount_options(spec: Mapping[str, Any]) -> bool:
    return any(isinstance(m, Mapping) and m.get("bindMountOptions")
               for c in _containers(spec) for m in (c.get("volumeMounts") or ()))


# The registry's features, each with what makes a pod need it (upstream's InferForScheduling;
# the features inferred only for updates or never for scheduling are left out).
FEATURES: dict[str, Callable[[Mapping[str, Any]], bool]] = {
    RESTART_ALL_CONTAINERS: _restarts_all_containers,
    USER_NAMESPACES_HOST_NETWORK: _host_network_in_user_namespace,
    VOLUME_BIND_MOUNT_OPTIONS: _bind_mount_options,
}
KNOWN_FEATURES = frozenset({
    *FEATURES, "InPlacePodLevelResourcesVerticalScaling", "ExtendWebSocketsToKubelet",
    "InPlacePodVerticalScalingNonSidecarInitContainers", "InPlacePodVerticalScalingMemoryBackedVolumes",
    "DRANodeAllocatableResources", "DRAOptionalNodeOperations",
})


def required_features(pod: Pod) -> frozenset[str]:
    """The node features `pod` needs to be scheduled (memoised on the pod)."""
    cached = pod.cache.get(NAME)
    if cached is None:
        cached = pod.cache[NAME] = frozenset(name for name, needs in FEATURES.items() if needs(pod.spec))
    return frozenset(cached)


def declared_features(node: Node) -> frozenset[str]:
    """The features a node declares that the registry knows (memoised on the node)."""
    cached = node.cache.get(NAME)
    if cached is None:
        raw = (node.raw.get("status") or {}).get("declaredFeatures") or ()
        cached = node.cache[NAME] = frozenset(f for f in raw if isinstance(f, str) and f in KNOWN_FEATURES)
    return frozenset(cached)


class NodeDeclaredFeatures(PreFilterPlugin, FilterPlugin):
    name = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self.handle = handle

    def events_to_register(self) -> list[ClusterEvent | ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE),
                                     self._after_node_change),
                ClusterEventWithHint(ClusterEvent(TARGET_POD, ActionType.UPDATE), self._after_pod_update)]

    def _after_node_change(self, pod: Pod, old: Node | None, new: Node) -> QueueingHint:
        if old is not None and declared_features(old) == declared_features(new):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def _after_pod_update(self, pod: Pod, old: Pod, new: Pod) -> QueueingHint:
        return QueueingHint.QUEUE_SKIP if required_features(old) == required_features(new) else QueueingHint.QUEUE

    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        needed = required_features(pod)
        if not needed:
            return None, Status.skip()
        state.write(PRE_FILTER_KEY, needed)
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        needed = state.get(PRE_FILTER_KEY)
        if not isinstance(needed, frozenset):
            return Status.error(f'error reading "{PRE_FILTER_KEY}" from cycle-state: not found')
        node = node_info.node
        if node is None:
            return Status.error("node not found")
        if not needed <= declared_features(node):
            return Status.unresolvable(ERR_REASON)
        return None


PLUGINS = [NodeDeclaredFeatures]
