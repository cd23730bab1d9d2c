"""NodeResourcesFit: PreFilter computes the pod's requests; Filter reports every
insufficient resource as upstream does; Score by LeastAllocated / MostAllocated /
RequestedToCapacityRatio over non-zero requests; args validated as upstream."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from kubeberth.config.models import ExtenderConfig
from kubeberth.extender import build_extenders
from kubeberth.framework import Code, CycleState, PluginError, Status
from kubeberth.model import Node, NodeInfo, Pod
from kubeberth.plugins._resource_allocation import ResourceAllocationScorer
from kubeberth.plugins._scoring_strategies import broken_linear_function, least_resource_scorer
from kubeberth.plugins.node_resources_fit import NodeResourcesFit, NodeResourcesFitArgs, fits, fits_request
from tests.builders import make_node, make_pod, node_dict
from tests.doubles import handle

from ._core_helpers import run_filter, run_score

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
K8S_A = "kubernetes.io/something"
K8S_B = "subdomain.kubernetes.io/something"
HUGE_A = "hugepages-2Mi"

_seq = [0]


def usage(cpu: int = 0, memory: int = 0, storage: int = 0, **scalars: int) -> dict[str, Any]:
    """A container's requests as upstream's newResourcePod writes them (cpu in millicores)."""
    reqs: dict[str, Any] = {"cpu": f"{cpu}m", "memory": str(memory), "pods": "0", "ephemeral-storage": str(storage)}
    for k, v in scalars.items():
        reqs[_SCALAR_NAMES[k]] = str(v)
    return reqs


_SCALAR_NAMES = {"ext_a": EXT_A, "ext_b": EXT_B, "k8s_a": K8S_A, "k8s_b": K8S_B, "huge_a": HUGE_A}


def res_pod(*containers: dict[str, Any], init: list[dict[str, Any]] | None = None,
            overhead: dict[str, str] | None = None, pod_level: dict[str, str] | None = None,
            node: str = "") -> Pod:
    _seq[0] += 1
    spec: dict[str, Any] = {}
    if init:
        spec["initContainers"] = [{"name": f"i{i}", "image": "i", "resources": {"requests": r}}
                                  for i, r in enumerate(init)]
    if overhead:
        spec["overhead"] = overhead
    if pod_level:
        spec["resources"] = {"requests": pod_level}
    return make_pod(f"p{_seq[0]}", node=node,
                    containers=[{"name": f"c{i}", "image": "i", "resources": {"requests": r}}
                                for i, r in enumerate(containers)], **spec)


def fit_node(cpu: int = 10, memory: int = 20, pods: int = 32, ext_a: int = 5, storage: int = 20,
             huge_a: int = 5) -> Node:
    """Upstream's makeAllocatableResources(milliCPU, memory, pods, extendedA, storage, hugePageA)."""
    return Node(node_dict("n1", cpu=f"{cpu}m", memory=str(memory), pods=str(pods),
                          extra={EXT_A: str(ext_a), "ephemeral-storage": str(storage), HUGE_A: str(huge_a)}))


def insufficient(name: str, requested: int, used: int, capacity: int, unresolvable: bool = False) -> tuple[
        str, str, int, int, int, bool]:
    return (name, f"Insufficient {name}", requested, used, capacity, unresolvable)


def unsched(*names: str) -> Status:
    return Status.unschedulable(*[f"Insufficient {n}" for n in names])


def unresolvable(*names: str) -> Status:
    return Status.unresolvable(*[f"Insufficient {n}" for n in names])


# (id, pod, the existing pod's container requests, args, want status, want insufficient resources)
ENOUGH_CASES: list[tuple[str, Pod, dict[str, Any], dict[str, Any], Status | None, list[tuple[Any, ...]]]] = [
    ("no resources requested always fits", make_pod("empty", containers=[]), usage(10, 20), {}, None, []),
    ("too many resources fails", res_pod(usage(1, 1)), usage(10, 20), {}, unsched("cpu", "memory"),
     [insufficient("cpu", 1, 10, 10), insufficient("memory", 1, 20, 20)]),
    ("too many resources fails due to init container cpu", res_pod(usage(1, 1), init=[usage(3, 1)]),
     usage(8, 19), {}, unsched("cpu"), [insufficient("cpu", 3, 8, 10)]),
    ("too many resources fails due to highest init container cpu",
     res_pod(usage(1, 1), init=[usage(3, 1), usage(2, 1)]), usage(8, 19), {}, unsched("cpu"),
     [insufficient("cpu", 3, 8, 10)]),
    ("too many resources fails due to init container memory", res_pod(usage(1, 1), init=[usage(1, 3)]),
     usage(9, 19), {}, unsched("memory"), [insufficient("memory", 3, 19, 20)]),
    ("too many resources fails due to highest init container memory",
     res_pod(usage(1, 1), init=[usage(1, 3), usage(1, 2)]), usage(9, 19), {}, unsched("memory"),
     [insufficient("memory", 3, 19, 20)]),
    ("init container fits because it's the max, not sum, of containers and init containers",
     res_pod(usage(1, 1), init=[usage(1, 1)]), usage(9, 19), {}, None, []),
    ("multiple init containers fit because it's the max, not sum",
     res_pod(usage(1, 1), init=[usage(1, 1), usage(1, 1)]), usage(9, 19), {}, None, []),
    ("both resources fit", res_pod(usage(1, 1)), usage(5, 5), {}, None, []),
    ("one resource memory fits", res_pod(usage(2, 1)), usage(9, 5), {}, unsched("cpu"),
     [insufficient("cpu", 2, 9, 10)]),
    ("one resource cpu fits", res_pod(usage(1, 2)), usage(5, 19), {}, unsched("memory"),
     [insufficient("memory", 2, 19, 20)]),
    ("equal edge case", res_pod(usage(5, 1)), usage(5, 19), {}, None, []),
    ("equal edge case for init container", res_pod(usage(4, 1), init=[usage(5, 1)]), usage(5, 19), {}, None, []),
    ("extended resource fits", res_pod(usage(ext_a=1)), usage(), {}, None, []),
    ("extended resource fits for init container", res_pod(usage(), init=[usage(ext_a=1)]), usage(), {}, None, []),
    ("extended resource capacity enforced", res_pod(usage(1, 1, ext_a=10)), usage(ext_a=0), {},
     unresolvable(EXT_A), [insufficient(EXT_A, 10, 0, 5, True)]),
    ("extended resource capacity enforced for init container",
     res_pod(usage(), init=[usage(1, 1, ext_a=10)]), usage(ext_a=0), {},
     unresolvable(EXT_A), [insufficient(EXT_A, 10, 0, 5, True)]),
    ("extended resource allocatable enforced", res_pod(usage(1, 1, ext_a=1)), usage(ext_a=5), {},
     unsched(EXT_A), [insufficient(EXT_A, 1, 5, 5)]),
    ("extended resource allocatable enforced for init container",
     res_pod(usage(), init=[usage(1, 1, ext_a=1)]), usage(ext_a=5), {}, unsched(EXT_A),
     [insufficient(EXT_A, 1, 5, 5)]),
    ("extended resource allocatable enforced for multiple containers",
     res_pod(usage(1, 1, ext_a=3), usage(1, 1, ext_a=3)), usage(ext_a=2), {},
     unresolvable(EXT_A), [insufficient(EXT_A, 6, 2, 5, True)]),
    ("extended resource allocatable admits multiple init containers",
     res_pod(usage(), init=[usage(1, 1, ext_a=3), usage(1, 1, ext_a=3)]), usage(ext_a=2), {}, None, []),
    ("extended resource allocatable enforced for multiple init containers",
     res_pod(usage(), init=[usage(1, 1, ext_a=6), usage(1, 1, ext_a=3)]), usage(ext_a=2), {},
     unresolvable(EXT_A), [insufficient(EXT_A, 6, 2, 5, True)]),
    ("extended resource allocatable enforced for unknown resource", res_pod(usage(1, 1, ext_b=1)), usage(), {},
     unresolvable(EXT_B), [insufficient(EXT_B, 1, 0, 0, True)]),
    ("extended resource allocatable enforced for unknown resource for init container",
     res_pod(usage(), init=[usage(1, 1, ext_b=1)]), usage(), {},
     unresolvable(EXT_B), [insufficient(EXT_B, 1, 0, 0, True)]),
    ("kubernetes.io resource capacity enforced", res_pod(usage(1, 1, k8s_a=10)), usage(), {},
     unresolvable(K8S_A), [insufficient(K8S_A, 10, 0, 0, True)]),
    ("kubernetes.io resource capacity enforced for init container",
     res_pod(usage(), init=[usage(1, 1, k8s_b=10)]), usage(), {},
     unresolvable(K8S_B), [insufficient(K8S_B, 10, 0, 0, True)]),
    ("hugepages resource capacity enforced", res_pod(usage(1, 1, huge_a=10)), usage(huge_a=0), {},
     unresolvable(HUGE_A), [insufficient(HUGE_A, 10, 0, 5, True)]),
    ("hugepages resource capacity enforced for init container",
     res_pod(usage(), init=[usage(1, 1, huge_a=10)]), usage(huge_a=0), {},
     unresolvable(HUGE_A), [insufficient(HUGE_A, 10, 0, 5, True)]),
    ("hugepages resource allocatable enforced for multiple containers",
     res_pod(usage(1, 1, huge_a=3), usage(1, 1, huge_a=3)), usage(huge_a=2), {},
     unresolvable(HUGE_A), [insufficient(HUGE_A, 6, 2, 5, True)]),
    ("skip checking ignored extended resource", res_pod(usage(1, 1, ext_b=1)), usage(),
     {"ignoredResources": [EXT_B]}, None, []),
    ("resources + pod overhead fits", res_pod(usage(1, 1), overhead={"cpu": "3m", "memory": "13"}), usage(5, 5),
     {}, None, []),
    ("requests + overhead does not fit for memory", res_pod(usage(1, 1), overhead={"cpu": "1m", "memory": "15"}),
     usage(5, 5), {}, unsched("memory"), [insufficient("memory", 16, 5, 20)]),
    ("skip checking ignored extended resource via resource groups", res_pod(usage(1, 1, ext_b=1, k8s_a=1)),
     usage(), {"ignoredResourceGroups": ["example.com"]},
     unresolvable(K8S_A), [insufficient(K8S_A, 1, 0, 0, True)]),
    ("ignoredResources does not apply to kubernetes.io resources", res_pod(usage(1, 1, k8s_a=1)), usage(),
     {"ignoredResources": [K8S_A], "ignoredResourceGroups": ["kubernetes.io"]},
     unresolvable(K8S_A), [insufficient(K8S_A, 1, 0, 0, True)]),
    ("ignoredResources does not apply to hugepages", res_pod(usage(1, 1, huge_a=6)), usage(),
     {"ignoredResources": [HUGE_A]}, unresolvable(HUGE_A), [insufficient(HUGE_A, 6, 0, 5, True)]),
    ("skip checking extended resource request with quantity zero", res_pod(usage(1, 1, ext_a=0)),
     usage(ext_a=6), {}, None, []),
    ("skip checking resource request with quantity zero", res_pod(usage(ext_a=1)), usage(20, 30, ext_a=1), {},
     None, []),
    ("both pod-level and container-level resources fit",
     res_pod(usage(1, 1), pod_level={"cpu": "1m", "memory": "2"}), usage(5, 5), {}, None, []),
    ("pod-level cpu resource not fit", res_pod(usage(1, 1), pod_level={"cpu": "7m", "memory": "2"}), usage(5, 5),
     {}, unsched("cpu"), [insufficient("cpu", 7, 5, 10)]),
    ("pod-level memory resource not fit", res_pod(usage(1, 1), pod_level={"cpu": "3m", "memory": "2"}),
     usage(5, 19), {}, unsched("memory"), [insufficient("memory", 2, 19, 20)]),
    ("pod-level hugepages resource not fit",
     make_pod("plh", containers=[], resources={"requests": {"cpu": "3m", "memory": "2", HUGE_A: "10"}}),
     usage(), {}, unresolvable(HUGE_A), [insufficient(HUGE_A, 10, 0, 5, True)]),
    ("both pod-level and container-level hugepages resource fit",
     res_pod(usage(1, 1, huge_a=3), pod_level={"cpu": "3m", "memory": "2", HUGE_A: "5"}), usage(), {}, None, []),
    ("one pod-level cpu resource fits and all init and non-init containers resources fit",
     res_pod(usage(1, 1), init=[usage(1, 1)], pod_level={"cpu": "3m", "memory": "2"}), usage(5, 19), {},
     unsched("memory"), [insufficient("memory", 2, 19, 20)]),
    ("several failures keep upstream's order: cpu, memory, ephemeral-storage, then scalars",
     res_pod(usage(11, 21, 21, ext_a=6, huge_a=1)), usage(huge_a=5), {},
     unresolvable("cpu", "memory", "ephemeral-storage", EXT_A, HUGE_A),
     [insufficient("cpu", 11, 0, 10, True), insufficient("memory", 21, 0, 20, True),
      insufficient("ephemeral-storage", 21, 0, 20, True), insufficient(EXT_A, 6, 0, 5, True),
      insufficient(HUGE_A, 1, 5, 5)]),
]


def _as_tuples(items: list[Any]) -> list[tuple[Any, ...]]:
    return [(i.resource_name, i.reason, i.requested, i.used, i.capacity, i.unresolvable) for i in items]


@pytest.mark.parametrize(("pod", "existing", "args", "want_status", "want_insufficient"),
                         [c[1:] for c in ENOUGH_CASES], ids=[c[0] for c in ENOUGH_CASES])
def test_enough_requests(pod: Pod, existing: dict[str, Any], args: dict[str, Any], want_status: Status | None,
                         want_insufficient: list[tuple[Any, ...]]) -> None:
    ni = NodeInfo(fit_node(), [res_pod(existing, node="n1")])
    pl = NodeResourcesFit(NodeResourcesFitArgs.model_validate(args), handle())
    got = run_filter(pl, pod, ni)
    assert got == want_status
    if want_status is not None:
        assert got is not None and got.code == want_status.code
    assert _as_tuples(fits_request(pod.requests, ni, pl.ignored_resources, pl.ignored_resource_groups)) == \
        want_insufficient


def test_pre_filter_disabled_is_an_error() -> None:
    pl = NodeResourcesFit(None, handle())
    got = pl.filter(CycleState(), make_pod("p"), NodeInfo(make_node("n")))
    assert got is not None and got.code == Code.ERROR


# (id, pod, existing pod usage) on a node with 1 pod slot and one pod already there.
NOT_ENOUGH_CASES = [
    ("even without specified resources, predicate fails when there's no space for additional pod",
     make_pod("e", containers=[]), usage(10, 20)),
    ("even if both resources fit, predicate fails when there's no space for additional pod",
     res_pod(usage(1, 1)), usage(5, 5)),
    ("even for equal edge case, predicate fails when there's no space for additional pod",
     res_pod(usage(5, 1)), usage(5, 19)),
    ("even for equal edge case, predicate fails when there's no space for additional pod due to init container",
     res_pod(usage(5, 1), init=[usage(5, 1)]), usage(5, 19)),
]


@pytest.mark.parametrize(("pod", "existing"), [c[1:] for c in NOT_ENOUGH_CASES], ids=[c[0] for c in NOT_ENOUGH_CASES])
def test_not_enough_pods(pod: Pod, existing: dict[str, Any]) -> None:
    node = Node(node_dict("n1", cpu="10m", memory="20", pods="1"))
    ni = NodeInfo(node, [res_pod(existing, node="n1")])
    assert run_filter(NodeResourcesFit(None, handle()), pod, ni) == Status.unschedulable("Too many pods")
    assert _as_tuples(fits(pod, ni)) == [("pods", "Too many pods", 1, 1, 1, False)]


def test_too_many_pods_and_insufficient_cpu_together() -> None:
    ni = NodeInfo(Node(node_dict("n1", cpu="10m", memory="20", pods="1")), [res_pod(usage(5, 5), node="n1")])
    got = run_filter(NodeResourcesFit(None, handle()), res_pod(usage(6, 1)), ni)
    assert got == Status.unschedulable("Too many pods", "Insufficient cpu")


STORAGE_CASES = [
    ("empty storage requested, and pod fits", res_pod(usage(1, 1)), usage(2, 10), None),
    ("storage ephemeral local storage request exceeds allocatable", res_pod(usage(storage=25)), usage(2, 2),
     unresolvable("ephemeral-storage")),
    ("ephemeral local storage is sufficient", res_pod(usage(storage=5)), usage(2, 2, 10), None),
    ("ephemeral local storage is insufficient", res_pod(usage(storage=11)), usage(2, 2, 10),
     unsched("ephemeral-storage")),
    ("pod fits", res_pod(usage(storage=10)), usage(2, 2), None),
]


@pytest.mark.parametrize(("pod", "existing", "want"), [c[1:] for c in STORAGE_CASES], ids=[c[0] for c in STORAGE_CASES])
def test_storage_requests(pod: Pod, existing: dict[str, Any], want: Status | None) -> None:
    ni = NodeInfo(fit_node(), [res_pod(existing, node="n1")])
    assert run_filter(NodeResourcesFit(None, handle()), pod, ni) == want


def sidecar_pod(request: str | None, sidecar_request: str | None) -> Pod:
    regular: dict[str, Any] = {"name": "regular", "image": "i"}
    if request:
        regular["resources"] = {"requests": {"cpu": request}}
    sidecar: dict[str, Any] = {"name": "restartable-init", "image": "i", "restartPolicy": "Always"}
    if sidecar_request:
        sidecar["resources"] = {"requests": {"cpu": sidecar_request}}
    return make_pod("sc", containers=[regular], initContainers=[sidecar])


@pytest.mark.parametrize(("pod", "want"), [
    (make_pod("plain", containers=[{"name": "regular", "image": "i"}]), None),
    (sidecar_pod(None, None), None),
    (sidecar_pod("1m", "1m"), None),
    (sidecar_pod("1m", "2m"), unresolvable("cpu")),
], ids=["pod without restartable init containers", "pod with restartable init containers",
        "total requests within allocatable", "total requests exceed allocatable"])
def test_restartable_init_containers(pod: Pod, want: Status | None) -> None:
    node = Node(node_dict("n1", cpu="2m", memory="0", pods="1"))
    assert run_filter(NodeResourcesFit(None, handle()), pod, NodeInfo(node)) == want


def test_ignored_extended_resources_from_extenders() -> None:
    pod = res_pod(usage(1, 1, ext_b=1))
    ni = NodeInfo(fit_node())
    assert run_filter(NodeResourcesFit(None, handle()), pod, ni) == unresolvable(EXT_B)
    # Read at each PreFilter from the profile's own extenders, which are attached after plugins are built.
    h = handle()
    pl = NodeResourcesFit(None, h)
    assert run_filter(pl, pod, ni) == unresolvable(EXT_B)
    h.extenders = build_extenders([ExtenderConfig(urlPrefix="http://127.0.0.1:1", managedResources=[
        {"name": EXT_B, "ignoredByScheduler": True}])])
    assert run_filter(pl, pod, ni) is None
    h.extenders = build_extenders([ExtenderConfig(urlPrefix="http://127.0.0.1:1", managedResources=[{"name": EXT_B}])])
    assert run_filter(pl, pod, ni) == unresolvable(EXT_B)


# ---- scoring -------------------------------------------------------------------------------------------------------

def cap_node(name: str, ext: dict[str, str] | None = None, **capacity: str) -> Node:
    """A node with only the given capacity (allocatable defaults to it), as st.MakeNode().Capacity()."""
    raw = {"metadata": {"name": name}, "status": {"capacity": {**capacity, **(ext or {})}}}
    return Node(raw)


def req_pod(*containers: dict[str, str], node: str = "", sidecar: dict[str, str] | None = None) -> Pod:
    """st.MakePod().Req(...): one container per request map (keys: cpu, memory, or an extended name)."""
    _seq[0] += 1
    spec: dict[str, Any] = {}
    if sidecar:
        spec["initContainers"] = [{"name": "sidecar", "image": "i", "restartPolicy": "Always",
                                   "resources": {"requests": sidecar}}]
    return make_pod(f"r{_seq[0]}", node=node, containers=[
        {"name": f"c{i}", "image": "i", "resources": {"requests": c}} for i, c in enumerate(containers)], **spec)


def score_fit(strategy: dict[str, Any], pod: Pod, nodes: list[Node], existing: list[Pod],
              pre_score: bool = True) -> list[int]:
    h = handle(nodes, existing)
    pl = NodeResourcesFit(NodeResourcesFitArgs.model_validate({"scoringStrategy": strategy}), h)
    return run_score(pl, pod, h.snapshot.node_infos, pre_score=pre_score)


DEFAULT = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
EXT_RES = "intel.com/foo"
EXTENDED_SET = [*DEFAULT, {"name": EXT_RES, "weight": 1}]
SHAPE_DOWN = {"shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]}
SHAPE_UP = {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}

N1_4000 = cap_node("node1", cpu="4000", memory="10000")
N2_4000 = cap_node("node2", cpu="4000", memory="10000")
N2_6000 = cap_node("node2", cpu="6000", memory="10000")
N1_10000 = cap_node("node1", cpu="10000", memory="20000")
N2_10000 = cap_node("node2", cpu="10000", memory="20000")
N2_10000_50000 = cap_node("node2", cpu="10000", memory="50000")

def fit_score_existing() -> list[Pod]:
    return [req_pod({"cpu": "2000", "memory": "4000"}, node="node1"),
            req_pod({"cpu": "1000", "memory": "2000"}, node="node2")]


# Pods as upstream writes them: Req cpu "3000" means 3000 cores; nodes have as many.
TWO_CONTAINERS = ({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})

# (id, strategy, pod, nodes, existing pods, want)
SCORE_CASES: list[tuple[str, dict[str, Any], Pod, list[Node], list[Pod], list[int]]] = [
    # -- fit_test.go TestFitScore
    ("RequestedToCapacityRatio case1",
     {"type": "RequestedToCapacityRatio", "resources": DEFAULT, "requestedToCapacityRatio": SHAPE_DOWN},
     req_pod({"cpu": "3000", "memory": "5000"}), [N1_4000, N2_6000],
     fit_score_existing(),
     [10, 32]),
    ("RequestedToCapacityRatio case2",
     {"type": "RequestedToCapacityRatio", "resources": DEFAULT, "requestedToCapacityRatio": SHAPE_UP},
     req_pod({"cpu": "3000", "memory": "5000"}), [N1_4000, N2_6000],
     fit_score_existing(),
     [95, 68]),
    ("MostAllocated", {"type": "MostAllocated", "resources": DEFAULT},
     req_pod({"cpu": "1000", "memory": "2000"}), [N1_4000, N2_6000],
     fit_score_existing(),
     [67, 36]),
    ("LeastAllocated", {"type": "LeastAllocated", "resources": DEFAULT},
     req_pod({"cpu": "1000", "memory": "2000"}), [N1_4000, N2_6000],
     fit_score_existing(),
     [32, 63]),
    ("MostAllocated with sidecar container", {"type": "MostAllocated", "resources": DEFAULT},
     req_pod({"cpu": "1000", "memory": "2000"}), [N1_4000, N2_4000],
     [req_pod({"cpu": "1000", "memory": "2000"}, node="node1", sidecar={"cpu": "1000", "memory": "2000"}),
      req_pod({"cpu": "1000", "memory": "2000"}, node="node2")],
     [67, 45]),
    ("LeastAllocated with sidecar container", {"type": "LeastAllocated", "resources": DEFAULT},
     req_pod({"cpu": "1000", "memory": "2000"}), [N1_4000, N2_4000],
     [req_pod({"cpu": "1000", "memory": "2000"}, node="node1", sidecar={"cpu": "1000", "memory": "2000"}),
      req_pod({"cpu": "1000", "memory": "2000"}, node="node2")],
     [32, 55]),
    # -- least_allocated_test.go
    ("least: nothing scheduled, nothing requested", {"type": "LeastAllocated", "resources": DEFAULT},
     req_pod(), [N1_4000, N2_4000], [], [100, 100]),
    ("least: nothing scheduled, resources requested, differently sized nodes",
     {"type": "LeastAllocated", "resources": DEFAULT}, req_pod(*TWO_CONTAINERS), [N1_4000, N2_6000], [], [37, 50]),
    ("least: no resources requested, pods scheduled", {"type": "LeastAllocated", "resources": DEFAULT},
     req_pod(), [N1_4000, N2_4000],
     [req_pod(node="node1"), req_pod(node="node1"), req_pod(node="node2"), req_pod(node="node2")],
     # Pods without containers request nothing, not even the scoring defaults.
     [100, 100]),
    ("least: no resources requested, pods scheduled with resources",
     {"type": "LeastAllocated", "resources": DEFAULT}, req_pod(), [N1_10000, N2_10000],
     [req_pod({"cpu": "3000", "memory": "0"}, node="node1"), req_pod({"cpu": "3000", "memory": "0"}, node="node1"),
      req_pod({"cpu": "3000", "memory": "0"}, node="node2"), req_pod({"cpu": "3000", "memory": "5000"}, node="node2")],
     [70, 57]),
    ("least: resources requested, pods scheduled with resources",
     {"type": "LeastAllocated", "resources": DEFAULT}, req_pod(*TWO_CONTAINERS), [N1_10000, N2_10000],
     [req_pod({"cpu": "3000", "memory": "0"}, node="node1"), req_pod({"cpu": "3000", "memory": "5000"}, node="node2")],
     [57, 45]),
    ("least: resources requested, pods scheduled with resources, differently sized nodes",
     {"type": "LeastAllocated", "resources": DEFAULT}, req_pod(*TWO_CONTAINERS), [N1_10000, N2_10000_50000],
     [req_pod({"cpu": "3000", "memory": "0"}, node="node1"), req_pod({"cpu": "3000", "memory": "5000"}, node="node2")],
     [57, 60]),
    ("least: requested resources exceed node capacity", {"type": "LeastAllocated", "resources": DEFAULT},
     req_pod({"cpu": "3000", "memory": "0"}), [N1_4000, N2_4000],
     [req_pod({"cpu": "3000", "memory": "0"}, node="node1"), req_pod({"cpu": "3000", "memory": "5000"}, node="node2")],
     [50, 25]),
    ("least: zero node resources, pods scheduled with resources", {"type": "LeastAllocated", "resources": DEFAULT},
     req_pod(), [cap_node("node1"), cap_node("node2")],
     [req_pod({"cpu": "3000", "memory": "0"}, node="node1"), req_pod({"cpu": "3000", "memory": "5000"}, node="node2")],
     [0, 0]),
    ("least: different weight on CPU and memory",
     {"type": "LeastAllocated", "resources": [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}]},
     req_pod(*TWO_CONTAINERS), [N1_4000, N2_6000], [], [41, 50]),
    ("least: bypass extended resource if the pod does not request",
     {"type": "LeastAllocated", "resources": EXTENDED_SET}, req_pod(*TWO_CONTAINERS),
     [cap_node("node1", cpu="6000", memory="10000"), cap_node("node2", cpu="6000", memory="10000", ext={EXT_RES: "4"})],
     [], [50, 50]),
    ("least: honor extended resource if the pod requests",
     {"type": "LeastAllocated", "resources": EXTENDED_SET}, req_pod({"cpu": "3000", "memory": "5000", EXT_RES: "2"}),
     [cap_node("node1", cpu="6000", memory="10000", ext={EXT_RES: "4"}),
      cap_node("node2", cpu="6000", memory="10000", ext={EXT_RES: "10"})],
     [], [50, 60]),
    ("least: if the node doesn't have a resource",
     {"type": "LeastAllocated", "resources": [{"name": EXT_RES, "weight": 2}, *DEFAULT]},
     req_pod({"cpu": "3000", "memory": "4000"}),
     [cap_node("node1", cpu="6000", memory="10000"), cap_node("node2", cpu="6000", memory="10000", ext={EXT_RES: "4"})],
     [], [55, 55]),
    # -- most_allocated_test.go
    ("most: nothing scheduled, nothing requested", {"type": "MostAllocated", "resources": DEFAULT},
     req_pod(), [N1_4000, N2_4000], [], [0, 0]),
    ("most: a container without requests counts the scoring defaults",
     {"type": "MostAllocated", "resources": DEFAULT}, req_pod({}), [N1_4000, N2_4000], [],
     # 100m of 4000 cores -> 0; 200Mi of 10000 bytes -> capped at 100: (0 + 100) / 2.
     [50, 50]),
    ("least: a container without requests counts the scoring defaults",
     {"type": "LeastAllocated", "resources": DEFAULT}, req_pod({}),
     [cap_node("node1", cpu="1", memory="1Gi"), cap_node("node2", cpu="2", memory="400Mi")], [],
     # node1: cpu (1000-100)*100/1000 = 90, memory (1024-200)*100/1024 = 80 -> 85;
     # node2: cpu 95, memory 50 -> 72.
     [85, 72]),
    ("most: nothing scheduled, resources requested, differently sized nodes",
     {"type": "MostAllocated", "resources": DEFAULT}, req_pod(*TWO_CONTAINERS), [N1_4000, N2_6000], [], [62, 50]),
    ("most: no resources requested, pods scheduled with resources",
     {"type": "MostAllocated", "resources": DEFAULT}, req_pod({"cpu": "0", "memory": "0"}), [N1_10000, N2_10000],
     [req_pod({"cpu": "3000", "memory": "0"}, node="node1"), req_pod({"cpu": "3000", "memory": "0"}, node="node1"),
      req_pod({"cpu": "3000", "memory": "0"}, node="node2"), req_pod({"cpu": "3000", "memory": "5000"}, node="node2")],
     [30, 42]),
    ("most: resources requested, pods scheduled with resources",
     {"type": "MostAllocated", "resources": DEFAULT}, req_pod(*TWO_CONTAINERS), [N1_10000, N2_10000],
     [req_pod({"cpu": "3000", "memory": "0"}, node="node1"), req_pod({"cpu": "3000", "memory": "5000"}, node="node2")],
     [42, 55]),
    ("most: resources requested with more than the node, pods scheduled with resources",
     {"type": "MostAllocated", "resources": DEFAULT}, req_pod({"cpu": "2000", "memory": "13000"}),
     [cap_node("node1", cpu="10000", memory="10000"), cap_node("node2", cpu="10000", memory="20000")],
     [req_pod({"cpu": "3000", "memory": "0"}, node="node1"), req_pod({"cpu": "3000", "memory": "5000"}, node="node2")],
     # node1: cpu 50, memory 13000/10000 capped at 100 -> 75; node2: cpu 50, memory 90 -> 70.
     [75, 70]),
    ("most: different weight on CPU and memory",
     {"type": "MostAllocated", "resources": [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}]},
     req_pod(*TWO_CONTAINERS), [N1_4000, N2_6000], [], [58, 50]),
    ("most: bypass extended resource if the pod does not request",
     {"type": "MostAllocated", "resources": EXTENDED_SET}, req_pod(*TWO_CONTAINERS),
     [cap_node("node1", cpu="6000", memory="10000"), cap_node("node2", cpu="6000", memory="10000", ext={EXT_RES: "4"})],
     [], [50, 50]),
    ("most: honor extended resource if the pod requests",
     {"type": "MostAllocated", "resources": EXTENDED_SET}, req_pod({"cpu": "2000", "memory": "4000", EXT_RES: "2"}),
     [cap_node("node1", cpu="6000", memory="10000", ext={EXT_RES: "4"}),
      cap_node("node2", cpu="6000", memory="10000", ext={EXT_RES: "10"})],
     # node1: cpu 33, memory 40, intel.com/foo 50 -> 41; node2: 33, 40, 20 -> 31.
     [], [41, 31]),
    # -- requested_to_capacity_ratio_test.go
    ("ratio: nothing scheduled, nothing requested (least requested nodes have priority)",
     {"type": "RequestedToCapacityRatio", "resources": DEFAULT, "requestedToCapacityRatio": SHAPE_DOWN},
     req_pod({"cpu": "0", "memory": "0"}), [N1_4000, N2_4000], [req_pod({"cpu": "0", "memory": "0"}, node="node1")],
     [100, 100]),
    ("ratio: nothing scheduled, resources requested, differently sized nodes",
     {"type": "RequestedToCapacityRatio", "resources": DEFAULT, "requestedToCapacityRatio": SHAPE_DOWN},
     req_pod(*TWO_CONTAINERS), [N1_4000, N2_6000], [], [38, 50]),
    ("ratio: no resources requested, pods scheduled with resources",
     {"type": "RequestedToCapacityRatio", "resources": DEFAULT, "requestedToCapacityRatio": SHAPE_DOWN},
     req_pod({"cpu": "0", "memory": "0"}), [N1_4000, N2_6000],
     [req_pod({"cpu": "3000", "memory": "5000"}, node="node1"),
      req_pod({"cpu": "3000", "memory": "5000"}, node="node2")],
     [38, 50]),
    ("ratio: single extended resource, nothing requested",
     {"type": "RequestedToCapacityRatio", "resources": [{"name": EXT_RES, "weight": 1}],
      "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 1}]}},
     req_pod(), [cap_node("node1", cpu="4000", memory="10Gi", ext={EXT_RES: "8"}),
                 cap_node("node2", cpu="4000", memory="10Gi", ext={EXT_RES: "4"})], [], [0, 0]),
    ("ratio: single extended resource requested",
     {"type": "RequestedToCapacityRatio", "resources": [{"name": EXT_RES, "weight": 1}],
      "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 1}]}},
     req_pod({EXT_RES: "2"}), [cap_node("node1", cpu="4000", memory="10Gi", ext={EXT_RES: "8"}),
                               cap_node("node2", cpu="4000", memory="10Gi", ext={EXT_RES: "4"})], [], [2, 5]),
    ("ratio: single extended resource, on node with existing pod running",
     {"type": "RequestedToCapacityRatio", "resources": [{"name": EXT_RES, "weight": 1}],
      "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 1}]}},
     req_pod({EXT_RES: "2"}), [cap_node("node1", cpu="4000", memory="10Gi", ext={EXT_RES: "8"}),
                               cap_node("node2", cpu="4000", memory="10Gi", ext={EXT_RES: "4"})],
     [req_pod({EXT_RES: "2"}, node="node2")], [2, 10]),
    ("ratio: multiple extended resources with weights, rounded",
     {"type": "RequestedToCapacityRatio",
      "resources": [{"name": "intel.com/foo", "weight": 3}, {"name": "intel.com/bar", "weight": 5}],
      "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 1}]}},
     req_pod({"intel.com/foo": "2", "intel.com/bar": "2"}),
     [cap_node("node1", cpu="4000", memory="10Gi", ext={"intel.com/foo": "8", "intel.com/bar": "4"}),
      cap_node("node2", cpu="4000", memory="10Gi", ext={"intel.com/foo": "4", "intel.com/bar": "8"})], [], [4, 3]),
    ("ratio: multiple extended resources, on node with existing pod running",
     {"type": "RequestedToCapacityRatio",
      "resources": [{"name": "intel.com/foo", "weight": 3}, {"name": "intel.com/bar", "weight": 5}],
      "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 1}]}},
     req_pod({"intel.com/foo": "2", "intel.com/bar": "2"}),
     [cap_node("node1", cpu="4000", memory="10Gi", ext={"intel.com/foo": "8", "intel.com/bar": "4"}),
      cap_node("node2", cpu="4000", memory="10Gi", ext={"intel.com/foo": "4", "intel.com/bar": "8"})],
     [req_pod({"intel.com/foo": "2", "intel.com/bar": "2"}, node="node2")], [4, 7]),
    ("ratio: multiple extended resources, more requested",
     {"type": "RequestedToCapacityRatio",
      "resources": [{"name": "intel.com/foo", "weight": 3}, {"name": "intel.com/bar", "weight": 5}],
      "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 1}]}},
     req_pod({"intel.com/foo": "4", "intel.com/bar": "2"}),
     [cap_node("node1", cpu="4000", memory="10Gi", ext={"intel.com/foo": "8", "intel.com/bar": "4"}),
      cap_node("node2", cpu="4000", memory="10Gi", ext={"intel.com/foo": "4", "intel.com/bar": "8"})], [], [5, 5]),
]


@pytest.mark.parametrize(("strategy", "pod", "nodes", "existing", "want"), [c[1:] for c in SCORE_CASES],
                         ids=[c[0] for c in SCORE_CASES])
@pytest.mark.parametrize("pre_score", [True, False], ids=["prescore", "no-prescore"])
def test_score(strategy: dict[str, Any], pod: Pod, nodes: list[Node], existing: list[Pod], want: list[int],
               pre_score: bool) -> None:
    assert score_fit(strategy, pod, nodes, existing, pre_score) == want


def test_default_strategy_is_least_allocated_cpu_memory() -> None:
    args = NodeResourcesFitArgs()
    assert args.scoringStrategy.type == "LeastAllocated"
    assert [(r.name, r.weight) for r in args.scoringStrategy.resources] == [("cpu", 1), ("memory", 1)]
    # Empty resources and weight 0 default as v1 does.
    args = NodeResourcesFitArgs.model_validate({"scoringStrategy": {
        "type": "MostAllocated", "resources": []}})
    assert [(r.name, r.weight) for r in args.scoringStrategy.resources] == [("cpu", 1), ("memory", 1)]
    args = NodeResourcesFitArgs.model_validate({"scoringStrategy": {"resources": [{"name": "cpu"}]}})
    assert [(r.name, r.weight) for r in args.scoringStrategy.resources] == [("cpu", 1)]


def test_resources_not_set_is_an_error() -> None:
    scorer = ResourceAllocationScorer([], least_resource_scorer([]), use_requested=False)
    with pytest.raises(PluginError, match="resources not found"):
        scorer.score(NodeInfo(make_node("n")), [])


@pytest.mark.parametrize(("args", "loc", "message"), [
    ({"scoringStrategy": {"resources": [{"name": "memory", "weight": -1}, {"name": "cpu", "weight": 1}]}},
     "scoringStrategy.resources", "resource weight of memory not in valid range (0, 100]"),
    ({"scoringStrategy": {"resources": [{"name": "memory", "weight": 1}, {"name": "cpu", "weight": 101}]}},
     "scoringStrategy.resources", "[1].weight"),
    ({"scoringStrategy": {"type": "Balanced"}}, "scoringStrategy.type", ""),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio"}}, "scoringStrategy", "at least one point"),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": []}}},
     "scoringStrategy.requestedToCapacityRatio.shape", "at least one point must be specified"),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [
        {"utilization": 10, "score": 1}, {"utilization": 10, "score": 2}]}}},
     "scoringStrategy.requestedToCapacityRatio.shape", "sorted in increasing order"),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [
        {"utilization": 50, "score": 1}, {"utilization": 20, "score": 2}]}}},
     "scoringStrategy.requestedToCapacityRatio.shape", "[1].utilization"),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [
        {"utilization": -10, "score": 1}]}}},
     "scoringStrategy.requestedToCapacityRatio.shape", "not in valid range [0, 100]"),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [
        {"utilization": 101, "score": 1}]}}},
     "scoringStrategy.requestedToCapacityRatio.shape", "not in valid range [0, 100]"),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [
        {"utilization": 10, "score": 11}]}}},
     "scoringStrategy.requestedToCapacityRatio.shape", "not in valid range [0, 10]"),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [
        {"utilization": 10, "score": -1}]}}},
     "scoringStrategy.requestedToCapacityRatio.shape", "[0].score"),
    ({"ignoredResources": ["example.com/ok", "-bad-"]}, "ignoredResources", "[1]"),
    ({"ignoredResourceGroups": ["example.com/foo"]}, "ignoredResourceGroups", "can't contain '/'"),
    ({"ignoredResourceGroups": ["Not_A_Domain!"]}, "ignoredResourceGroups", "[0]"),
    ({"scoringStrategy": {"resources": [{"name": "cpu", "weight": 1, "extra": 1}]}}, "scoringStrategy.resources", ""),
    ({"unknown": True}, "unknown", ""),
], ids=["negative weight", "weight above 100", "unknown strategy", "ratio without shape", "empty shape",
        "utilization not increasing", "utilization decreasing", "utilization below 0", "utilization above 100",
        "score above 10", "score below 0", "invalid ignored resource", "group with slash", "invalid group",
        "unknown resource field", "unknown arg"])
def test_invalid_args(args: dict[str, Any], loc: str, message: str) -> None:
    with pytest.raises(ValidationError) as exc:
        NodeResourcesFitArgs.model_validate(args)
    err = exc.value.errors()[0]
    assert ".".join(str(p) for p in err["loc"]).startswith(loc)
    assert message in err["msg"]


def test_valid_shape_edges() -> None:
    args = NodeResourcesFitArgs.model_validate({"scoringStrategy": {
        "type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [
            {"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}}})
    assert args.scoringStrategy.requestedToCapacityRatio is not None


# upstream's TestBrokenLinearFunction (scores as given, no scaling)
@pytest.mark.parametrize(("points", "assertions"), [
    ([(10, 1), (90, 9)], [(-10, 1), (0, 1), (9, 1), (10, 1), (15, 1), (19, 1), (20, 2), (89, 8), (90, 9), (99, 9),
                          (100, 9), (110, 9)]),
    ([(0, 2), (40, 10), (100, 0)], [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)]),
    ([(0, 2), (40, 2), (100, 2)], [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)]),
    # A falling segment truncates toward zero as Go does: 100 - 100*33/100 = 67, not 66.
    ([(0, 100), (100, 0)], [(33, 67), (1, 99), (99, 1)]),
], ids=["rising", "rise and fall", "flat", "falling truncates toward zero"])
def test_broken_linear_function(points: list[tuple[int, int]], assertions: list[tuple[int, int]]) -> None:
    f = broken_linear_function(points)
    for p, want in assertions:
        assert f(p) == want, (p, want)


def test_profile_args_error_names_the_field() -> None:
    from kubeberth.config import ConfigError

    profile = {
        "plugins": {"multiPoint": {"enabled": [{"name": "NodeResourcesFit"}], "disabled": [{"name": "*"}]},
                    "queueSort": {"enabled": [{"name": "PrioritySort"}]},
                    "bind": {"enabled": [{"name": "DefaultBinder"}]}},
        "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
            "type": "MostAllocated", "resources": [{"name": "cpu", "weight": 200}]}}}],
    }
    with pytest.raises(ConfigError) as exc:
        handle(profile=profile)
    assert exc.value.path.startswith("spec.pluginConfig[0].args.scoringStrategy.resources")
    profile["pluginConfig"][0]["args"]["scoringStrategy"]["resources"][0]["weight"] = 2
    fw = handle(profile=profile)
    pl = fw.plugin("NodeResourcesFit")
    assert isinstance(pl, NodeResourcesFit) and pl.scorer.weights == [2]
