"""The in-tree plugins' registered events and QueueingHints, as upstream v1.37 registers them:
which change may make a pod a plugin rejected schedulable again."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth.framework.events import (
    ASSIGNED_POD,
    NODE,
    TARGET_POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    with_hint,
)
from kubeberth.model import Pod
from kubeberth.plugins.node_affinity import NodeAffinity, NodeAffinityArgs
from kubeberth.plugins.node_declared_features import NodeDeclaredFeatures
from kubeberth.plugins.node_name import NodeName
from kubeberth.plugins.node_ports import NodePorts
from kubeberth.plugins.node_resources_fit import NodeResourcesFit
from kubeberth.plugins.node_unschedulable import NodeUnschedulable
from kubeberth.plugins.scheduling_gates import SchedulingGates
from kubeberth.plugins.taint_toleration import TaintToleration
from tests.builders import make_node, make_pod, node_dict, pod_dict
from tests.doubles import handle

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
A = ActionType


def registered(plugin: Any) -> list[tuple[str, ActionType, bool]]:
    return [(r.event.resource, r.event.action, r.hint is not None) for r in map(with_hint, plugin.events_to_register())]


def hint(plugin: Any, event: ClusterEvent, pod: Pod, old: Any, new: Any) -> QueueingHint:
    """What the plugin says of `event` for `pod`: its matching registration's hint (QUEUE without one)."""
    matching: list[ClusterEventWithHint] = [r for r in map(with_hint, plugin.events_to_register())
                                            if r.event.match(event)]
    assert matching, f"{plugin.name} registered nothing matching {event.label}"
    return QUEUE if any(r.hint is None or r.hint(pod, old, new) == QUEUE for r in matching) else SKIP


def test_registrations_are_upstreams() -> None:
    assert registered(NodeName()) == [(NODE, A.ADD, False)]
    assert registered(NodePorts()) == [(ASSIGNED_POD, A.DELETE, True), (NODE, A.ADD, False)]
    assert registered(NodeUnschedulable()) == [(NODE, A.ADD | A.UPDATE_NODE_TAINT, True),
                                               (TARGET_POD, A.UPDATE_POD_TOLERATION, True)]
    assert registered(TaintToleration()) == [(NODE, A.ADD | A.UPDATE_NODE_TAINT, True),
                                             (TARGET_POD, A.UPDATE_POD_TOLERATION, False)]
    assert registered(NodeAffinity()) == [(NODE, A.ADD | A.UPDATE_NODE_LABEL, True)]
    assert registered(NodeResourcesFit(None, handle())) == [
        (ASSIGNED_POD, A.DELETE, True), (NODE, A.ADD | A.UPDATE_NODE_ALLOCATABLE, True),
        (ASSIGNED_POD, A.UPDATE_POD_SCALE_DOWN, True), (TARGET_POD, A.UPDATE_POD_SCALE_DOWN, False)]
    assert registered(SchedulingGates()) == [(TARGET_POD, A.UPDATE_POD_SCHEDULING_GATES_ELIMINATED, False)]
    assert registered(NodeDeclaredFeatures()) == [(NODE, A.ADD | A.UPDATE_NODE_DECLARED_FEATURE, True),
                                                  (TARGET_POD, A.UPDATE, True)]


NODE_ADD = ClusterEvent(NODE, A.ADD)
LABELS = ClusterEvent(NODE, A.UPDATE_NODE_LABEL)
TAINTS = ClusterEvent(NODE, A.UPDATE_NODE_TAINT)
ALLOCATABLE = ClusterEvent(NODE, A.UPDATE_NODE_ALLOCATABLE)
POD_DELETED = ClusterEvent(ASSIGNED_POD, A.DELETE)
POD_SCALED_DOWN = ClusterEvent(ASSIGNED_POD, A.UPDATE_POD_SCALE_DOWN)


def test_node_affinity_queues_only_when_the_node_comes_to_match() -> None:
    pod = make_pod("p", nodeSelector={"zone": "a"})
    a, b = make_node("n", labels={"zone": "a"}), make_node("n", labels={"zone": "b"})
    assert hint(NodeAffinity(), NODE_ADD, pod, None, a) == QUEUE
    assert hint(NodeAffinity(), NODE_ADD, pod, None, b) == SKIP
    assert hint(NodeAffinity(), LABELS, pod, b, a) == QUEUE
    assert hint(NodeAffinity(), LABELS, pod, a, make_node("n", labels={"zone": "a", "x": "y"})) == SKIP
    # The profile's addedAffinity must match too.
    added = NodeAffinity(NodeAffinityArgs.model_validate({"addedAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["gpu"]}]}]}}}))
    assert hint(added, NODE_ADD, pod, None, a) == SKIP
    assert hint(added, NODE_ADD, pod, None, make_node("n", labels={"zone": "a", "pool": "gpu"})) == QUEUE


def test_node_ports_queues_only_when_a_placed_pod_holding_a_wanted_port_goes() -> None:
    def with_port(name: str, port: int, node: str = "n1") -> Pod:
        ports = [{"containerPort": port, "hostPort": port}]
        return make_pod(name, node=node, containers=[{"name": "c", "ports": ports}])

    pod = with_port("p", 8080, node="")
    assert hint(NodePorts(), POD_DELETED, pod, with_port("holder", 8080), None) == QUEUE
    assert hint(NodePorts(), POD_DELETED, pod, with_port("other", 9090), None) == SKIP
    assert hint(NodePorts(), POD_DELETED, pod, make_pod("no-ports", node="n1"), None) == SKIP
    assert hint(NodePorts(), POD_DELETED, pod, with_port("pending", 8080, node=""), None) == SKIP


def test_node_unschedulable_queues_when_a_node_becomes_schedulable_or_the_pod_tolerates_it() -> None:
    pod = make_pod("p")
    cordoned = make_node("n", unschedulable=True)
    assert hint(NodeUnschedulable(), NODE_ADD, pod, None, make_node("n")) == QUEUE
    assert hint(NodeUnschedulable(), NODE_ADD, pod, None, cordoned) == SKIP
    assert hint(NodeUnschedulable(), TAINTS, pod, cordoned, make_node("n")) == QUEUE
    tolerant = make_pod("p", tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                                            "effect": "NoSchedule"}])
    event = ClusterEvent(TARGET_POD, A.UPDATE_POD_TOLERATION)
    assert hint(NodeUnschedulable(), event, pod, pod, tolerant) == QUEUE
    other = make_pod("p", tolerations=[{"key": "x", "operator": "Exists"}])
    assert hint(NodeUnschedulable(), event, pod, pod, other) == SKIP


def test_taint_toleration_queues_when_the_taints_become_tolerated() -> None:
    pod = make_pod("p", tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}])
    tainted = make_node("n", taints=[{"key": "spot", "value": "true", "effect": "NoSchedule"}])
    tolerated = make_node("n", taints=[{"key": "gpu", "value": "x", "effect": "NoSchedule"}])
    assert hint(TaintToleration(), NODE_ADD, pod, None, tainted) == SKIP
    assert hint(TaintToleration(), NODE_ADD, pod, None, tolerated) == QUEUE
    assert hint(TaintToleration(), TAINTS, pod, tainted, tolerated) == QUEUE
    assert hint(TaintToleration(), TAINTS, pod, tolerated, make_node("n")) == SKIP  # was tolerated already
    assert hint(TaintToleration(), ClusterEvent(TARGET_POD, A.UPDATE_POD_TOLERATION), pod, pod, pod) == QUEUE


@pytest.mark.parametrize(("old", "new", "want"), [
    (None, {"cpu": "8"}, QUEUE),
    (None, {"cpu": "1"}, SKIP),                      # too small even when empty
    ({"cpu": "2"}, {"cpu": "8"}, QUEUE),              # more of what the pod asks for
    ({"cpu": "8"}, {"cpu": "8", "memory": "64Gi"}, SKIP),  # more memory: the pod asks for none
    ({"cpu": "8", "pods": "10"}, {"cpu": "8", "pods": "20"}, QUEUE),  # room for more pods
], ids=["added-fits", "added-too-small", "cpu-grew", "unrelated-grew", "pods-grew"])
def test_fit_node_change(old: dict[str, str] | None, new: dict[str, str], want: QueueingHint) -> None:
    from kubeberth.model import Node

    def node(alloc: dict[str, str]) -> Node:
        raw = node_dict("n")
        raw["status"]["allocatable"] = {"pods": "110", **alloc}
        raw["status"]["capacity"] = {"pods": "110", **alloc}
        return Node(raw)

    pod = make_pod("p", cpu="4")
    event = NODE_ADD if old is None else ALLOCATABLE
    assert hint(NodeResourcesFit(None, handle()), event, pod, None if old is None else node(old), node(new)) == want


def test_fit_pod_changes() -> None:
    fit = NodeResourcesFit(None, handle())
    pod = make_pod("p", cpu="4")
    assert hint(fit, POD_DELETED, pod, make_pod("gone", node="n1", cpu="1"), None) == QUEUE
    assert hint(fit, POD_DELETED, pod, make_pod("never-placed", cpu="1"), None) == SKIP
    big, small = Pod(pod_dict("q", node="n1", cpu="2")), Pod(pod_dict("q", node="n1", cpu="1"))
    assert hint(fit, POD_SCALED_DOWN, pod, big, small) == QUEUE
    lean = Pod(pod_dict("q", node="n1", cpu="2", memory="1Gi"))
    leaner = Pod(pod_dict("q", node="n1", cpu="2", memory="512Mi"))
    assert hint(fit, POD_SCALED_DOWN, pod, lean, leaner) == SKIP  # the pod asks for no memory
    assert hint(fit, ClusterEvent(TARGET_POD, A.UPDATE_POD_SCALE_DOWN), pod, pod, pod) == QUEUE


def test_node_declared_features_queue_on_a_change_of_features() -> None:
    ndf = NodeDeclaredFeatures()
    pod = make_pod("p")
    plain = make_node("n")
    raw = node_dict("n")
    raw["status"]["declaredFeatures"] = ["VolumeBindMountOptions"]
    from kubeberth.model import Node

    featured = Node(raw)
    event = ClusterEvent(NODE, A.UPDATE_NODE_DECLARED_FEATURE)
    assert hint(ndf, event, pod, plain, featured) == QUEUE
    assert hint(ndf, event, pod, featured, featured) == SKIP
    assert hint(ndf, NODE_ADD, pod, None, plain) == QUEUE
    assert hint(ndf, ClusterEvent(TARGET_POD, A.UPDATE_OTHER), pod, pod, make_pod("p")) == SKIP


def test_inter_pod_affinity() -> None:
    from kubeberth.plugins.inter_pod_affinity import InterPodAffinity

    ipa = InterPodAffinity(None, handle())
    assert registered(ipa) == [(ASSIGNED_POD, A.ADD | A.UPDATE_POD_LABEL | A.DELETE, True),
                               (TARGET_POD, A.UPDATE_POD_LABEL, True), (NODE, A.ADD | A.UPDATE_NODE_LABEL, True)]
    term = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}
    wants_db = make_pod("p", affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})
    hates_db = make_pod("p", affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})
    db, web = make_pod("db", node="n1", labels={"app": "db"}), make_pod("web", node="n1", labels={"app": "web"})
    added, deleted = ClusterEvent(ASSIGNED_POD, A.ADD), ClusterEvent(ASSIGNED_POD, A.DELETE)
    assert hint(ipa, added, wants_db, None, db) == QUEUE
    assert hint(ipa, added, wants_db, None, web) == SKIP
    assert hint(ipa, added, wants_db, None, make_pod("db", labels={"app": "db"})) == SKIP  # not placed
    assert hint(ipa, deleted, hates_db, db, None) == QUEUE
    assert hint(ipa, deleted, hates_db, web, None) == SKIP
    relabelled = make_pod("db", node="n1", labels={"app": "web"})
    assert hint(ipa, ClusterEvent(ASSIGNED_POD, A.UPDATE_POD_LABEL), hates_db, db, relabelled) == QUEUE
    # The deleted pod's own anti-affinity kept this pod out.
    hater = make_pod("h", node="n1", labels={"app": "x"},
                     affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                         {"labelSelector": {"matchLabels": {"role": "p"}}, "topologyKey": "zone"}]}})
    assert hint(ipa, deleted, make_pod("p", labels={"role": "p"}), hater, None) == QUEUE
    zoned, bare = make_node("n", labels={"zone": "a"}), make_node("n")
    assert hint(ipa, NODE_ADD, wants_db, None, zoned) == QUEUE
    assert hint(ipa, NODE_ADD, wants_db, None, bare) == SKIP
    assert hint(ipa, NODE_ADD, hates_db, None, bare) == QUEUE
    assert hint(ipa, LABELS, hates_db, zoned, bare) == QUEUE
    assert hint(ipa, LABELS, hates_db, bare, zoned) == SKIP
