"""CheckNodeMemoryPressure, CheckNodeDiskPressure, CheckNodePIDPressure, CheckNodeCondition
(the old predicates' tests), and upstream's taint-based handling of the same conditions."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth.framework import Code, CycleState, Status
from kubeberth.model import NodeInfo, Pod
from kubeberth.plugins.node_conditions import (
    ERR_NODE_NETWORK_UNAVAILABLE,
    ERR_NODE_NOT_READY,
    ERR_NODE_UNDER_DISK_PRESSURE,
    ERR_NODE_UNDER_MEMORY_PRESSURE,
    ERR_NODE_UNDER_PID_PRESSURE,
    ERR_NODE_UNSCHEDULABLE,
    CheckNodeCondition,
    CheckNodeDiskPressure,
    CheckNodeMemoryPressure,
    CheckNodePIDPressure,
)
from tests.builders import make_node, make_pod
from tests.doubles import handle


def full_filter(fw: Any, pod: Pod, ni: NodeInfo) -> Status | None:
    """PreFilter then Filter through the framework, as a scheduling cycle runs them."""
    state = CycleState()
    _, status, _ = fw.run_pre_filter(state, pod, [ni])
    if status is not None:
        return status
    return fw.run_filter(state, pod, ni)


def cond(**conditions: str) -> list[dict[str, str]]:
    return [{"type": t, "status": s} for t, s in conditions.items()]


def node_with(conditions: list[dict[str, str]], **kw: Any) -> NodeInfo:
    return NodeInfo(make_node("n", conditions=conditions, **kw))


BEST_EFFORT = make_pod("best-effort")
BURSTABLE = make_pod("burstable", cpu="100m")
ZERO_REQUESTS = make_pod("zero", requests={"cpu": "0", "memory": "0"})
EXTENDED_ONLY = make_pod("extended", requests={"example.com/gpu": "1"})
LIMITS_ONLY = make_pod("limits", containers=[{"name": "c", "image": "i",
                                              "resources": {"limits": {"memory": "1Gi"}}}])
INIT_REQUESTS = make_pod("init", initContainers=[{"name": "i", "image": "i",
                                                  "resources": {"requests": {"cpu": "1"}}}])
QOS_STATUS = Pod({**make_pod("qos", cpu="1").raw, "status": {"phase": "Pending", "qosClass": "BestEffort"}})

MEMORY_PRESSURE = Status.unresolvable(ERR_NODE_UNDER_MEMORY_PRESSURE)

MEMORY_CASES = [
    ("best-effort pod schedulable on node without memory pressure condition", BEST_EFFORT, cond(Ready="True"),
     None),
    ("best-effort pod not schedulable on node with memory pressure condition on", BEST_EFFORT,
     cond(MemoryPressure="True"), MEMORY_PRESSURE),
    ("best-effort pod schedulable on node with memory pressure False", BEST_EFFORT, cond(MemoryPressure="False"),
     None),
    ("best-effort pod schedulable on node with memory pressure Unknown", BEST_EFFORT,
     cond(MemoryPressure="Unknown"), None),
    ("non best-effort pod schedulable on node with memory pressure condition on", BURSTABLE,
     cond(MemoryPressure="True"), None),
    ("non best-effort pod schedulable on node without memory pressure condition on", BURSTABLE,
     cond(MemoryPressure="False"), None),
    ("zero requests are best-effort", ZERO_REQUESTS, cond(MemoryPressure="True"), MEMORY_PRESSURE),
    ("extended resources only are best-effort", EXTENDED_ONLY, cond(MemoryPressure="True"), MEMORY_PRESSURE),
    ("limits only are not best-effort", LIMITS_ONLY, cond(MemoryPressure="True"), None),
    ("init container requests are not best-effort", INIT_REQUESTS, cond(MemoryPressure="True"), None),
    ("status.qosClass is trusted", QOS_STATUS, cond(MemoryPressure="True"), MEMORY_PRESSURE),
]


@pytest.mark.parametrize(("pod", "conditions", "want"), [c[1:] for c in MEMORY_CASES],
                         ids=[c[0] for c in MEMORY_CASES])
def test_check_node_memory_pressure(pod: Pod, conditions: list[dict[str, str]], want: Status | None) -> None:
    got = CheckNodeMemoryPressure().filter(CycleState(), pod, node_with(conditions))
    assert got == want
    if want is not None:
        assert got is not None and got.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


DISK_CASES = [
    ("pod schedulable on node without pressure condition on", BEST_EFFORT, cond(DiskPressure="False"), None),
    ("pod not schedulable on node with pressure condition on", BEST_EFFORT, cond(DiskPressure="True"),
     Status.unresolvable(ERR_NODE_UNDER_DISK_PRESSURE)),
    ("any pod, not only best-effort", BURSTABLE, cond(DiskPressure="True"),
     Status.unresolvable(ERR_NODE_UNDER_DISK_PRESSURE)),
    ("no condition at all", BURSTABLE, [], None),
]


@pytest.mark.parametrize(("pod", "conditions", "want"), [c[1:] for c in DISK_CASES], ids=[c[0] for c in DISK_CASES])
def test_check_node_disk_pressure(pod: Pod, conditions: list[dict[str, str]], want: Status | None) -> None:
    assert CheckNodeDiskPressure().filter(CycleState(), pod, node_with(conditions)) == want


@pytest.mark.parametrize(("conditions", "want"), [
    (cond(PIDPressure="False"), None),
    (cond(PIDPressure="True"), Status.unresolvable(ERR_NODE_UNDER_PID_PRESSURE)),
], ids=["no pressure", "pressure"])
def test_check_node_pid_pressure(conditions: list[dict[str, str]], want: Status | None) -> None:
    assert CheckNodePIDPressure().filter(CycleState(), BURSTABLE, node_with(conditions)) == want


@pytest.mark.parametrize(("conditions", "unschedulable", "want"), [
    (cond(Ready="True"), False, None),
    (cond(Ready="False"), False, Status.unresolvable(ERR_NODE_NOT_READY)),
    (cond(Ready="Unknown"), False, Status.unresolvable(ERR_NODE_NOT_READY)),
    (cond(Ready="True", NetworkUnavailable="True"), False, Status.unresolvable(ERR_NODE_NETWORK_UNAVAILABLE)),
    (cond(Ready="True", NetworkUnavailable="False"), False, None),
    (cond(Ready="True"), True, Status.unresolvable(ERR_NODE_UNSCHEDULABLE)),
    (cond(Ready="False", NetworkUnavailable="Unknown"), True,
     Status.unresolvable(ERR_NODE_NOT_READY, ERR_NODE_NETWORK_UNAVAILABLE, ERR_NODE_UNSCHEDULABLE)),
], ids=["ready", "not ready", "ready unknown", "network unavailable", "network available", "cordoned",
        "everything wrong"])
def test_check_node_condition(conditions: list[dict[str, str]], unschedulable: bool, want: Status | None) -> None:
    ni = node_with(conditions, unschedulable=unschedulable)
    assert CheckNodeCondition().filter(CycleState(), BURSTABLE, ni) == want


def test_not_in_default_profile_but_enableable() -> None:
    fw = handle(profile={}, nodes=[make_node("n")])
    names = [p.name for p in fw.filter_plugins]
    for name in ("CheckNodeMemoryPressure", "CheckNodeDiskPressure", "CheckNodePIDPressure", "CheckNodeCondition"):
        assert name not in names
    fw = handle(profile={"plugins": {"filter": {"enabled": [{"name": "CheckNodeMemoryPressure"},
                                                           {"name": "CheckNodeDiskPressure"}]}}})
    names = [p.name for p in fw.filter_plugins]
    assert names[-2:] == ["CheckNodeMemoryPressure", "CheckNodeDiskPressure"]


def test_profile_with_the_old_predicates_rejects_with_their_reasons() -> None:
    node = make_node("n", conditions=cond(Ready="True", MemoryPressure="True"))
    fw = handle(profile={"plugins": {"filter": {"enabled": [{"name": "CheckNodeMemoryPressure"}]}}}, nodes=[node])
    got = full_filter(fw, BEST_EFFORT, NodeInfo(node))
    assert got == MEMORY_PRESSURE and got is not None and got.plugin == "CheckNodeMemoryPressure"
    assert full_filter(fw, BURSTABLE, NodeInfo(node)) is None


# ---- upstream's taint-based handling: the node lifecycle controller taints, TaintToleration decides ----
CONDITION_TAINTS = [
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/network-unavailable", "NoSchedule"),
]


@pytest.mark.parametrize(("key", "effect"), CONDITION_TAINTS, ids=[k for k, _ in CONDITION_TAINTS])
def test_condition_taints_go_through_taint_toleration(key: str, effect: str) -> None:
    node = make_node("n", taints=[{"key": key, "effect": effect}])
    fw = handle(profile={}, nodes=[node])
    got = full_filter(fw, BURSTABLE, NodeInfo(node))
    assert got == Status.unresolvable("node(s) had untolerated taint(s)")
    assert got is not None and got.plugin == "TaintToleration"
    tolerant = make_pod("tolerant", cpu="100m", tolerations=[{"key": key, "operator": "Exists", "effect": effect}])
    assert full_filter(fw, tolerant, NodeInfo(node)) is None


def test_memory_pressure_taint_rejects_every_pod_unless_tolerated() -> None:
    """The taint is QoS-blind (the kubelet evicts by QoS); DaemonSet pods get the toleration."""
    node = make_node("n", taints=[{"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}],
                     conditions=cond(Ready="True", MemoryPressure="True"))
    fw = handle(profile={}, nodes=[node])
    for pod in (BEST_EFFORT, BURSTABLE):
        got = full_filter(fw, pod, NodeInfo(node))
        assert got is not None and got.plugin == "TaintToleration"
