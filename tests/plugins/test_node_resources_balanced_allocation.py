"""NodeResourcesBalancedAllocation as v1.37: the balance ((1 - std of the requested fractions)
* 100, over the configured resources, on plain requests) with the pod against without it,
mapped into 50..100 (75: no change); best-effort pods are skipped. The first cases and the
expected scores are upstream's own table (balanced_allocation_test.go of v1.37.2)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from kubeberth.framework import CycleState
from kubeberth.model import Node, Pod
from kubeberth.plugins.node_resources_balanced_allocation import (
    NodeResourcesBalancedAllocation,
    NodeResourcesBalancedAllocationArgs,
    balanced_resource_score,
    balanced_resource_scorer,
)
from tests.builders import make_pod
from tests.doubles import handle

from ._core_helpers import run_score

GPU = "nvidia.com/gpu"
_seq = [0]


def node(name: str, milli_cpu: int, memory: int, **ext: int) -> Node:
    """upstream's makeNode(name, milliCPU, memory[, extended])."""
    alloc: dict[str, Any] = {"cpu": f"{milli_cpu}m", "memory": str(memory), "pods": "110"}
    alloc.update({k.replace("_", "/").replace("nvidia/", "nvidia.com/"): str(v) for k, v in ext.items()})
    return Node({"metadata": {"name": name}, "status": {"capacity": alloc, "allocatable": alloc}})


def pod(*containers: dict[str, str], node_name: str = "", init: list[dict[str, Any]] | None = None) -> Pod:
    _seq[0] += 1
    spec: dict[str, Any] = {}
    if init:
        spec["initContainers"] = init
    return make_pod(f"p{_seq[0]}", node=node_name, containers=[
        {"name": f"c{i}", "image": "i", "resources": {"requests": r}} for i, r in enumerate(containers)], **spec)


def cpu_only(node_name: str = "") -> Pod:
    return pod({"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"}, node_name=node_name)


def cpu_and_memory(node_name: str = "") -> Pod:
    return pod({"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"}, node_name=node_name)


CPU_MEM = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
WITH_GPU = [*CPU_MEM, {"name": GPU, "weight": 1}]

# (id, pod, nodes, pods on them, resources, want)
CASES: list[tuple[str, Pod, list[Node], list[Pod], list[dict[str, Any]], list[int]]] = [
    ("nothing scheduled, nothing requested: best-effort pods are skipped",
     pod(), [node("node1", 4000, 10000), node("node2", 4000, 10000)], [], CPU_MEM, [0, 0]),
    # node1: balance 100 -> 87 (0.75, 0.5): 50 + (50 + 87 - 100) / 2 = 68; node2: 100 -> 100: 75
    ("nothing scheduled, resources requested, differently sized nodes",
     cpu_and_memory(), [node("node1", 4000, 10000), node("node2", 6000, 10000)], [], CPU_MEM, [68, 75]),
    ("no resources requested, pods scheduled with resources: skipped",
     pod(), [node("node1", 10000, 20000), node("node2", 10000, 20000)],
     [cpu_only("node1"), cpu_only("node1"), cpu_only("node2"), cpu_and_memory("node2")], CPU_MEM, [0, 0]),
    # node1: 85 (0.3, 0) -> 82 (0.6, 0.25): 73; node2: 97 (0.3, 0.25) -> 95 (0.6, 0.5): 74
    ("resources requested, pods scheduled with resources",
     cpu_and_memory(), [node("node1", 10000, 20000), node("node2", 10000, 20000)],
     [cpu_only("node1"), cpu_and_memory("node2")], CPU_MEM, [73, 74]),
    # node2: 90 (0.3, 0.1) -> 80 (0.6, 0.2): 70
    ("resources requested, pods scheduled with resources, differently sized nodes",
     cpu_and_memory(), [node("node1", 10000, 20000), node("node2", 10000, 50000)],
     [cpu_only("node1"), cpu_and_memory("node2")], CPU_MEM, [73, 70]),
    # node1: 50 (1, 0) -> 100 (1, 1): the pod restores the balance; node2: 100 (0, 0) -> 50 (0, 1)
    ("nodes to reach min/max score",
     pod({"memory": "2000"}, {"memory": "3000"}), [node("node1", 3000, 5000), node("node2", 3000, 5000)],
     [cpu_only("node1")], CPU_MEM, [100, 50]),
    # node1: 75 (0.5, 0) -> 50 (1, 0); node2: 100 (0.5, 0.5) -> 75 (1, 0.5): both 62
    ("requested resources at node capacity",
     cpu_only(), [node("node1", 6000, 10000), node("node2", 6000, 10000)],
     [cpu_only("node1"), cpu_and_memory("node2")], CPU_MEM, [62, 62]),
    # fractions above 1 are capped: node1: 62 (0.75, 0) -> 50 (1, 0): 69; node2: 87 -> 75: 69
    ("requested resources beyond node capacity",
     cpu_only(), [node("node1", 4000, 10000), node("node2", 4000, 10000)],
     [cpu_only("node1"), cpu_and_memory("node2")], CPU_MEM, [69, 69]),
    ("zero node resources: nothing to compare", cpu_and_memory(), [node("node1", 0, 0), node("node2", 0, 0)],
     [cpu_only("node1"), cpu_and_memory("node2")], CPU_MEM, [75, 75]),
    # three fractions: std over all of them. node1: 69 (0.857, 0.125, 0.375) -> 70 (.., 0.5): 75;
    # node2: 62 (0.857, 0.125, 0) -> 65 (.., 0.125): 76
    ("scalar resource is included in the score computation if pod requests the scalar resource",
     pod({"cpu": "0", "memory": "0", GPU: "1"}),
     [node("node1", 3500, 40000, nvidia_gpu=8), node("node2", 3500, 40000, nvidia_gpu=8)],
     [pod({"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000", GPU: "3"}, node_name="node1"),
      cpu_and_memory("node2")], WITH_GPU, [75, 76]),
    # node2 has no GPU: only cpu and memory count there: 100 -> 97 (0.25, 0.2): 73
    ("a node without the scalar resource skips it",
     pod({"cpu": "1000m", "memory": "2000", GPU: "1"}),
     [node("node1", 3500, 40000, nvidia_gpu=4), node("node2", 4000, 10000)], [], WITH_GPU, [69, 73]),
    # The pod asks for no GPU: only cpu and memory count. node1: 100 -> 88: 69; node2: 100 -> 97: 73
    ("a scalar resource the pod does not request is skipped",
     pod({"cpu": "1000m", "memory": "2000"}),
     [node("node1", 3500, 40000, nvidia_gpu=4), node("node2", 4000, 10000, nvidia_gpu=8)],
     [pod({GPU: "3"}, node_name="node1")], WITH_GPU, [69, 73]),
    # Plain requests count, not the scoring defaults: a pod without a memory request adds 0 memory.
    # node1: 100 -> 87 (0.25, 0): 68
    ("requests are used without the non-zero defaults",
     pod({"cpu": "1000m"}), [node("node1", 4000, 10000)], [], CPU_MEM, [68]),
    # Sidecar requests add to the pod's: 100 -> 95 (0.5, 0.4): 72
    ("sidecars count",
     pod({"cpu": "1000m", "memory": "2000"}, init=[
         {"name": "s", "image": "i", "restartPolicy": "Always",
          "resources": {"requests": {"cpu": "1000m", "memory": "2000"}}}]),
     [node("node1", 4000, 10000)], [], CPU_MEM, [72]),
    ("only cpu configured: one fraction, std 0, no change", cpu_and_memory(), [node("node1", 4000, 10000)], [],
     [{"name": "cpu", "weight": 1}], [75]),
]


@pytest.mark.parametrize(("incoming", "nodes", "existing", "resources", "want"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
@pytest.mark.parametrize("pre_score", [True, False], ids=["prescore", "no-prescore"])
def test_score(incoming: Pod, nodes: list[Node], existing: list[Pod], resources: list[dict[str, Any]],
               want: list[int], pre_score: bool) -> None:
    h = handle(nodes, existing)
    pl = NodeResourcesBalancedAllocation(NodeResourcesBalancedAllocationArgs.model_validate({"resources": resources}),
                                         h)
    assert run_score(pl, incoming, h.snapshot.node_infos, pre_score=pre_score) == want


def test_pre_score_skips_best_effort() -> None:
    h = handle([node("n1", 1000, 1000)])
    pl = NodeResourcesBalancedAllocation(None, h)
    s = pl.pre_score(CycleState(), pod(), h.snapshot.node_infos)
    assert s is not None and s.is_skip()
    assert pl.pre_score(CycleState(), cpu_only(), h.snapshot.node_infos) is None


@pytest.mark.parametrize(("requested", "allocatable", "want"), [
    ([0, 0], [0, 0], 100),
    ([1, 1], [2, 2], 100),
    ([3, 0], [4, 10], 62),
    ([5, 5], [4, 10], 75),
    ([1, 2, 3], [4, 4, 4], 79),
    ([1, 0, 3], [4, 0, 4], 75),
])
def test_balanced_resource_score(requested: list[int], allocatable: list[int], want: int) -> None:
    assert balanced_resource_score(requested, allocatable) == want


@pytest.mark.parametrize(("requested", "allocated", "allocatable", "want"), [
    ([3, 5], [0, 0], [4, 10], 68),   # 100 -> 87
    ([3, 5], [3, 5], [4, 10], 75),   # no change (87 -> 87)
    ([3, 5], [3, 0], [3, 5], 100),   # 50 -> 100: the most the balance can improve
    ([0, 5], [0, 0], [3, 5], 50),    # 100 -> 50: the most it can worsen
    ([6, 5], [3, 5], [6, 10], 62),   # 100 -> 75: (50 - 25) / 2 = 12 (Go truncates)
])
def test_balanced_resource_scorer_scores_the_change(requested: list[int], allocated: list[int],
                                                     allocatable: list[int], want: int) -> None:
    assert balanced_resource_scorer(requested, allocated, allocatable) == want


def test_args_defaults_and_validation() -> None:
    args = NodeResourcesBalancedAllocationArgs()
    assert [(r.name, r.weight) for r in args.resources] == [("cpu", 1), ("memory", 1)]
    args = NodeResourcesBalancedAllocationArgs.model_validate({"resources": []})
    assert [r.name for r in args.resources] == ["cpu", "memory"]
    args = NodeResourcesBalancedAllocationArgs.model_validate({"resources": [{"name": "cpu"}, {"name": GPU}]})
    assert [(r.name, r.weight) for r in args.resources] == [("cpu", 1), (GPU, 1)]
    with pytest.raises(ValidationError, match="Duplicate value"):
        NodeResourcesBalancedAllocationArgs.model_validate({"resources": [{"name": "cpu"}, {"name": "cpu"}]})
    with pytest.raises(ValidationError, match="must be 1"):
        NodeResourcesBalancedAllocationArgs.model_validate({"resources": [{"name": "cpu", "weight": 2}]})
    with pytest.raises(ValidationError):
        NodeResourcesBalancedAllocationArgs.model_validate({"shape": []})
