"""NodeDeclaredFeatures (v1.37, default profile): the features a pod needs, inferred from its
spec as upstream's registry does, must all be declared in the node's status.declaredFeatures."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth.framework import CycleState, Status
from kubeberth.framework.events import NODE, ActionType, ClusterEvent, node_scheduling_properties_change
from kubeberth.model import Node, NodeInfo, Pod
from kubeberth.plugins.node_declared_features import ERR_REASON, NodeDeclaredFeatures, required_features
from tests.builders import make_pod, node_dict

RESTART_ALL = {"name": "c", "image": "i", "restartPolicyRules": [
    {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}]}
BIND_MOUNT = {"name": "c", "image": "i", "volumeMounts": [{"name": "v", "mountPath": "/v",
                                                            "bindMountOptions": ["ro"]}]}


def pod(**spec: Any) -> Pod:
    return make_pod("p", **spec)


def node(*features: str) -> Node:
    raw = node_dict("n1")
    if features:
        raw["status"]["declaredFeatures"] = list(features)
    return Node(raw)


@pytest.mark.parametrize(("spec", "want"), [
    pytest.param({}, set(), id="plain pod"),
    pytest.param({"containers": [RESTART_ALL]}, {"RestartAllContainersOnContainerExits"}, id="restart rule"),
    pytest.param({"containers": [{"name": "c", "image": "i"}], "initContainers": [RESTART_ALL]},
                 {"RestartAllContainersOnContainerExits"}, id="restart rule on an init container"),
    pytest.param({"containers": [{"name": "c", "image": "i", "restartPolicyRules": [
        {"action": "Restart", "exitCodes": {"operator": "In", "values": [1]}}]}]}, set(),
                 id="another restart action"),
    pytest.param({"hostNetwork": True, "hostUsers": False}, {"UserNamespacesHostNetworkSupport"},
                 id="host network in a user namespace"),
    pytest.param({"hostNetwork": True}, set(), id="host network, host users"),
    pytest.param({"hostUsers": False}, set(), id="user namespace without host network"),
    pytest.param({"containers": [BIND_MOUNT]}, {"VolumeBindMountOptions"}, id="bind mount options"),
    pytest.param({"containers": [BIND_MOUNT, RESTART_ALL], "hostNetwork": True, "hostUsers": False},
                 {"VolumeBindMountOptions", "RestartAllContainersOnContainerExits",
                  "UserNamespacesHostNetworkSupport"}, id="all three"),
])
def test_required_features(spec: dict[str, Any], want: set[str]) -> None:
    assert required_features(pod(**spec)) == want


@pytest.mark.parametrize(("spec", "declared", "want"), [
    pytest.param({"containers": [BIND_MOUNT]}, ["VolumeBindMountOptions"], None, id="declared"),
    pytest.param({"containers": [BIND_MOUNT]}, [], Status.unresolvable(ERR_REASON), id="not declared"),
    pytest.param({"containers": [BIND_MOUNT, RESTART_ALL]}, ["VolumeBindMountOptions"],
                 Status.unresolvable(ERR_REASON), id="one of two declared"),
    pytest.param({"containers": [RESTART_ALL]}, ["RestartAllContainersOnContainerExits", "SomethingElse"], None,
                 id="more declared than needed"),
])
def test_filter(spec: dict[str, Any], declared: list[str], want: Status | None) -> None:
    pl = NodeDeclaredFeatures()
    state = CycleState()
    p = pod(**spec)
    _, status = pl.pre_filter(state, p, [])
    assert status is None
    assert pl.filter(state, p, NodeInfo(node(*declared))) == want


def test_a_pod_that_needs_nothing_is_skipped() -> None:
    _, status = NodeDeclaredFeatures().pre_filter(CycleState(), pod(), [])
    assert status is not None and status.is_skip()


def test_a_change_of_declared_features_is_a_node_event_that_requeues() -> None:
    old, new = node(), node("VolumeBindMountOptions")
    events = node_scheduling_properties_change(new, old)
    assert ClusterEvent(NODE, ActionType.UPDATE_NODE_DECLARED_FEATURE) in events
    registered = NodeDeclaredFeatures().events_to_register()
    assert any(r.event.match(e) for r in registered for e in events)
