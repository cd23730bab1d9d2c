"""The six policies' scores and GPU choices on hand-made nodes, against values worked out by
hand from the artifact's formulas; vectorised == per node on random clusters."""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pytest
from gpushare_testing import node, pod, shapes_summary
from kubeberth_gpushare.fgd import fgd_scores
from kubeberth_gpushare.model import gpu_request
from kubeberth_gpushare.policies import BestFit, DotProd, GpuClustering, GpuPacking
from kubeberth_gpushare.policy_base import GpuPolicy, NodeState, best_fit
from kubeberth_gpushare.typical import WORKLOAD_SUMMARY, typical_pods

from kubeberth.framework import CycleState, NodeInfo, Pod
from kubeberth.framework import Node as NodeModel


def state(free: list[int], cpu_left: int, tags: int = 0, model: str = "") -> NodeState:
    row = np.array(free + [-1] * (8 - len(free)), dtype=np.int64)[None, :]
    return NodeState(row, np.array([len(free)]), np.array([tags]), np.array([cpu_left]),
                     np.array([model], dtype=object))


def scores_of(policy: type[GpuPolicy], p: dict[str, Any], nodes: NodeState) -> int:
    plugin = policy(None, None)
    q = Pod(p)
    return int(plugin.scores(CycleState(), q, gpu_request(q), nodes)[0])


@pytest.mark.parametrize("policy, free, cpu_left, tags, p, want", [
    # BestFit raw: trunc(100 x (1 - ((cpu_left-cpu)/128000 x .5 + (gpu_left-gpu)/8000 x .5)))
    # (64000-32000)/128000 x .5 + (2000-500)/8000 x .5 = .125 + .09375 -> 78.125 -> 78
    pytest.param(BestFit, [1000, 1000], 64000, 0, pod("p", 32000, 500, 1), 78, id="bestfit-share"),
    pytest.param(BestFit, [1000], 8000, 0, pod("p", 8000, 1000, 1), 100, id="bestfit-exact"),
    # DotProd: 100 x (1 - (64000/128000 x 32000/128000 + 2000/8000 x 500/8000)/2) = 100 x (1 - (.125+.015625)/2)
    pytest.param(DotProd, [1000, 1000], 64000, 0, pod("p", 32000, 500, 1), 92, id="dotprod"),
    pytest.param(DotProd, [1000], 1000, 0, pod("p", 2000, 500, 1), 0, id="dotprod-no-cpu"),
    # GpuClustering: 25 x (8000 - left) // 8000 + 75 (only sharing pods there) / 50 / 25 / 0;
    # left 1600: 25 x 6400 // 8000 = 20
    pytest.param(GpuClustering, [600, 1000], 8000, 1, pod("p", 1000, 300, 1), 95, id="clustering-only"),
    pytest.param(GpuClustering, [600, 1000], 8000, 1 | 4, pod("p", 1000, 300, 1), 70, id="clustering-mixed"),
    pytest.param(GpuClustering, [1000, 1000], 8000, 0, pod("p", 1000, 300, 1), 43, id="clustering-idle"),
    pytest.param(GpuClustering, [0, 1000], 8000, 4, pod("p", 1000, 300, 1), 21, id="clustering-other"),
    pytest.param(GpuClustering, [1000], 8000, 0, pod("p", 1000), 0, id="clustering-cpu"),
    # GpuPacking: idle node: max(33 - free, free); used GPU: max(100 - (left*100//1000)//10, 50);
    # a free GPU on a used node: max(50 - new GPUs, 33)
    pytest.param(GpuPacking, [1000, 1000, 1000, 1000], 8000, 0, pod("p", 1000, 500, 1), 29, id="packing-idle"),
    pytest.param(GpuPacking, [600, 1000], 8000, 0, pod("p", 1000, 500, 1), 94, id="packing-shared"),
    pytest.param(GpuPacking, [300, 1000], 8000, 0, pod("p", 1000, 500, 1), 49, id="packing-new-gpu"),
    pytest.param(GpuPacking, [300, 1000, 1000], 8000, 0, pod("p", 1000, 1000, 2), 48, id="packing-two-new"),
    pytest.param(GpuPacking, [300, 1000], 8000, 0, pod("p", 1000), 0, id="packing-cpu"),
])
def test_scores_by_hand(policy: type[GpuPolicy], free: list[int], cpu_left: int, tags: int,
                        p: dict[str, Any], want: int) -> None:
    assert scores_of(policy, p, state(free, cpu_left, tags)) == want


def test_bestfit_normalises_min_max() -> None:
    got = BestFit(None, None).normalize_all(CycleState(), Pod(pod("p", 1)), None,  # type: ignore[arg-type]
                                            np.array([78, 60, 90], dtype=np.int64))
    assert got is not None and got.tolist() == [(78 - 60) * 100 // 30, 0, 100]
    same = BestFit(None, None).normalize_all(CycleState(), Pod(pod("p", 1)), None,  # type: ignore[arg-type]
                                             np.array([5, 5], dtype=np.int64))
    assert same is not None and same.tolist() == [0, 0]


@pytest.mark.parametrize("free, p, want", [
    ([1000, 300, 600], pod("p", 1, 500, 1), (2,)),      # least left that fits
    ([600, 1000, 600], pod("p", 1, 500, 1), (0,)),      # lowest index on a tie
    ([300, 1000, 1000, 1000], pod("p", 1, 1000, 2), (1, 2)),
    ([300, 400], pod("p", 1, 500, 1), ()),
])
def test_best_fit_gpu_choice(free: list[int], p: dict[str, Any], want: tuple[int, ...]) -> None:
    assert best_fit(state(free, 8000).free[0], gpu_request(Pod(p))) == want


def _sig(delta: float) -> int:
    return int(1 / (1 + math.exp(-delta / 1000)) * 100)


def test_fgd_by_hand() -> None:
    # Typical pods: 3 of (1000m, 500 x1) and 1 of (1000m, whole x1): weights .75 and .25.
    tp = typical_pods(shapes_summary([(3, 1000, 500, 1, ""), (1, 1000, 1000, 1, "")]))
    assert tp.weight.tolist() == [0.75, 0.25]
    nodes = state([1000, 600], 8000)
    # Before: for the 500 pod nothing is fragment (both fit); for the whole pod GPU 1's 600 is.
    # F = .75 x 0 + .25 x 600 = 150.
    # A 400 pod on GPU 0 -> [600, 600]: 500 pod fits, whole pod: none fits -> 1200 x .25 = 300
    # on GPU 1 -> [1000, 200]: 500 pod: 200 is fragment -> .75 x 200 + .25 x 200 = 200
    score, gpu = fgd_scores(tp, gpu_request(Pod(pod("p", 1000, 400, 1))), nodes, tp.access(nodes.model))
    assert (int(score[0]), int(gpu[0])) == (max(_sig(150 - 300), _sig(150 - 200)), 1)
    # A whole GPU: -> [0, 600]: 500 fits, whole does not: .25 x 600 = 150 -> delta 0 -> 50
    score, gpu = fgd_scores(tp, gpu_request(Pod(pod("p", 1000, 1000, 1))), nodes, tp.access(nodes.model))
    assert (int(score[0]), int(gpu[0])) == (50, -1)


def test_typical_pods_cover_95_percent_most_frequent_first() -> None:
    shapes = [(50, 1000, 500, 1, ""), (30, 2000, 0, 0, ""), (16, 4000, 1000, 2, ""), (4, 1000, 300, 1, "T4")]
    tp = typical_pods(shapes_summary(shapes))
    # 50 + 30 + 16 = 96 >= 95: the last shape is left out; weights renormalised over 96.
    assert tp.cpu.tolist() == [1000, 2000, 4000]
    assert np.allclose(tp.weight, [50 / 96, 30 / 96, 16 / 96])


# ---- vectorised == per node ----------------------------------------------------------------

def _random_node_info(rng: random.Random, i: int) -> NodeInfo:
    gpus = rng.choice([1, 2, 4, 8])
    model = rng.choice(["T4", "V100M16", "P100"])
    ni = NodeInfo(NodeModel(node(f"n{i}", rng.choice([16000, 64000, 96000]), gpus, model)))
    used = [0] * gpus
    for j in range(rng.randrange(6)):
        milli = rng.choice([200, 500, 700, 1000])
        fits = [g for g in range(gpus) if used[g] + milli <= 1000]
        if not fits:
            continue
        g = rng.choice(fits)
        used[g] += milli
        ni.add_pod(Pod(pod(f"b{i}-{j}", rng.choice([1000, 4000]), milli, 1, node_name=f"n{i}", index=str(g))))
    return ni


@pytest.mark.parametrize("seed", range(4))
def test_vectorised_equals_per_node(seed: int) -> None:
    from kubeberth_gpushare.fgd import FGD

    from kubeberth.framework import ObjectStore

    rng = random.Random(seed)
    infos = [_random_node_info(rng, i) for i in range(40)]
    handle = _Handle(infos)
    typical = shapes_summary([(5, 1000, 500, 1, ""), (3, 4000, 1000, 2, ""), (2, 2000, 0, 0, ""),
                              (2, 1000, 300, 1, "T4")])
    handle.objects.put(WORKLOAD_SUMMARY.group_kind, typical)
    assert isinstance(handle.objects, ObjectStore)
    pods = [Pod(pod(f"p{k}", rng.choice([1000, 8000]), *rng.choice([(0, 0), (300, 1), (500, 1), (1000, 1),
                                                                      (1000, 2)]))) for k in range(12)]
    for cls in (BestFit, DotProd, GpuClustering, GpuPacking, FGD):
        plugin = cls(None, handle)  # type: ignore[arg-type]
        for p in pods:
            view = handle.view()
            got = plugin.score_all(CycleState(), p, view)
            want = [plugin.score(CycleState(), p, ni) for ni in infos]
            assert got is not None and got.tolist() == want, (cls.name, p.key)
            for ni, k in zip(infos, range(len(infos)), strict=True):
                nodes = NodeState.of_node(handle, ni)  # type: ignore[arg-type]
                assert nodes.free.tolist() == [NodeState.of_nodes(handle, view).free[k].tolist()]


class _Handle:
    """Enough of a Handle for the policies: a snapshot of `infos`, an object store, an RNG."""

    def __init__(self, infos: list[NodeInfo]) -> None:
        from kubeberth.framework import ObjectStore, Snapshot

        self.snapshot = Snapshot(infos)
        self.objects = ObjectStore()
        self.shared_indexes: dict[str, Any] = {}
        self.rng = random.Random(0)
        self.vectorise = True
        self.vector_min_nodes = 1

    def view(self) -> Any:
        from kubeberth.framework.vector import NodeView

        return NodeView(self.snapshot.node_infos, self.snapshot.arrays())


@pytest.mark.parametrize("seed", range(3))
def test_filter_all_and_statuses_equal_filter(seed: int) -> None:
    from kubeberth_gpushare.accounting import OpenGpuShare

    rng = random.Random(100 + seed)
    infos = [_random_node_info(rng, i) for i in range(30)]
    infos.append(NodeInfo(NodeModel(node("cpu-only", 8000, 0))))
    handle = _Handle(infos)
    handle.plugin = lambda name: None  # type: ignore[attr-defined]
    plugin = OpenGpuShare(None, handle)  # type: ignore[arg-type]
    shapes = [(0, 0, ""), (300, 1, ""), (700, 1, "T4"), (1000, 1, ""), (1000, 2, "V100M16|P100"), (1000, 4, "")]
    for k, (milli, count, models) in enumerate(shapes):
        p = Pod(pod(f"p{k}", 1000, milli, count, models))
        view = handle.view()
        mask = plugin.filter_all(CycleState(), p, view)
        statuses = [plugin.filter(CycleState(), p, ni) for ni in infos]
        want = [st is None or st.is_success() for st in statuses]
        assert mask is not None and mask.tolist() == want, p.key
        rows = np.flatnonzero(~mask)
        bulk = plugin.filter_statuses(CycleState(), p, view.arrays, rows)
        assert bulk is not None
        assert [(s.code, s.message()) for s in bulk] == [
            (statuses[i].code, statuses[i].message()) for i in rows.tolist()]  # type: ignore[union-attr]
