"""The profiles under `kubeberth simulate`'s engine: GPU pods land where their GPUs fit, the
GPUs chosen are written on the pods at binding, Filter's verdicts, Reserve/Unreserve accounting,
FGD with and without a WorkloadSummary, and `sample_metrics`."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from gpushare_testing import node, pod, shapes_summary, summary
from kubeberth_gpushare import PROFILES
from kubeberth_gpushare.accounting import NO_GPU, NO_ROOM, WRONG_MODEL, OpenGpuShare
from kubeberth_gpushare.ledger import ledger

from kubeberth.framework import CycleState, NodeInfo, Pod
from kubeberth.framework import Node as NodeModel
from kubeberth.plugins import use_plugins
from kubeberth.whatif.engine import run_simulation

POLICIES = ["Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD"]
INDEX = "alibabacloud.com/gpu-index"


@pytest.fixture(autouse=True, scope="module")
def _plugins() -> Iterator[None]:
    use_plugins(["kubeberth_gpushare"])
    yield
    use_plugins(())  # the entry points alone again


def profile(policy: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((PROFILES / f"{policy}.yaml").read_text())
    return loaded


def run(objects: list[dict[str, Any]], seed: int = 0) -> tuple[dict[str, Any], Any]:
    warn = io.StringIO()
    outcomes, sched = run_simulation(objects, seed=seed, warn=warn)
    assert "error" not in warn.getvalue().lower(), warn.getvalue()
    return {o.pod.split("/")[1]: o for o in outcomes}, sched


def test_every_profile_is_one_score_plugin_at_weight_1000() -> None:
    for policy in POLICIES:
        spec = profile(policy)["spec"]
        assert spec["percentageOfNodesToScore"] == 100
        assert spec["plugins"]["score"]["enabled"] == [{"name": policy, "weight": 1000}]
        for point in ("filter", "reserve", "preBind"):
            assert {"name": "OpenGpuShare"} in spec["plugins"][point]["enabled"]
    assert sorted(p.stem for p in Path(PROFILES).glob("*.yaml")) == sorted(POLICIES)


@pytest.mark.parametrize("policy", POLICIES)
def test_gpu_pods_land_on_gpus_that_fit_and_carry_their_index(policy: str) -> None:
    nodes = [node("a", 32000, 2, "V100M16"), node("b", 64000, 4, "T4"), node("c", 16000, 1, "P100")]
    pods = [pod("whole2", 4000, 1000, 2), pod("t4", 2000, 300, 1, "T4"), pod("s1", 4000, 500, 1),
            pod("s2", 4000, 700, 1), pod("cpu", 1000), pod("toobig", 1000, 1000, 8)]
    got, _ = run([profile(policy), *nodes, *pods, summary(pods)], seed=3)
    used: dict[tuple[str, int], int] = {}
    milli = {"whole2": 1000, "t4": 300, "s1": 500, "s2": 700}
    for name, m in milli.items():
        o = got[name]
        assert o.status == "Scheduled" and o.node, (name, o)
        index = o.annotations[INDEX]
        gpus = [int(g) for g in index.split("-")]
        assert len(gpus) == (2 if name == "whole2" else 1)
        for g in gpus:
            used[(o.node, g)] = used.get((o.node, g), 0) + m
    assert all(v <= 1000 for v in used.values()), used
    assert got["t4"].node == "b"
    assert got["cpu"].status == "Scheduled" and not got["cpu"].annotations
    assert got["toobig"].status == "Unschedulable"


def test_a_bound_pods_index_is_accounted() -> None:
    # GPU 0 of `a` holds 800 by annotation: a 500 pod must go to GPU 1 (best fit: 1000 left).
    objs = [profile("BestFit"), node("a", 32000, 2, "T4"),
            pod("old", 1000, 800, 1, node_name="a", index="0"), pod("new", 1000, 500, 1)]
    got, _ = run(objs)
    assert got["new"].annotations[INDEX] == "1"
    # ... and a 200 pod to GPU 0 (the least left that fits).
    got, _ = run([*objs[:3], pod("small", 1000, 200, 1)])
    assert got["small"].annotations[INDEX] == "0"


def test_fgd_without_a_workload_summary_names_it() -> None:
    got, _ = run([profile("FGD"), node("a", 32000, 2, "T4"), pod("p", 1000, 500, 1)])
    assert got["p"].status == "Unschedulable"
    assert "WorkloadSummary" in got["p"].message and "kubeberth.io/v1alpha1" in got["p"].message


def test_fgd_picks_the_gpu_that_fragments_least() -> None:
    # Typical pods: 500-milli pods mostly, some whole GPUs. `a` has GPU 0 at 600 left, GPU 1 free.
    # A 400 pod: on GPU 0 -> [200, 1000] (the 500 pods still fit GPU 1); on GPU 1 -> [600, 600]
    # (no whole GPU left): FGD takes GPU 0 here.
    typical = shapes_summary([(3, 1000, 500, 1, ""), (1, 1000, 1000, 1, "")])
    objs = [profile("FGD"), typical, node("a", 32000, 2, "T4"),
            pod("old", 1000, 400, 1, node_name="a", index="0"), pod("p", 1000, 400, 1)]
    got, _ = run(objs)
    assert got["p"].annotations[INDEX] == "0"


@pytest.mark.parametrize("free_node, p, want", [
    pytest.param(node("x", 8000, 0), pod("p", 1000, 500, 1), NO_GPU, id="no-gpu"),
    pytest.param(node("x", 8000, 2, "T4"), pod("p", 1000, 500, 1, "V100M16|V100M32"), WRONG_MODEL, id="model"),
    pytest.param(node("x", 8000, 2, "V100M32"), pod("p", 1000, 500, 1, "V100M16|V100M32"), None, id="model-ok"),
    pytest.param(node("x", 8000, 2, "T4"), pod("p", 1000, 1000, 3), NO_ROOM, id="count"),
    pytest.param(node("x", 8000, 2, "T4"), pod("p", 1000, 1000, 2), None, id="two-whole"),
    pytest.param(node("x", 8000, 1, "T4"), pod("p", 1000), None, id="cpu-only"),
])
def test_filter(free_node: dict[str, Any], p: dict[str, Any], want: str | None) -> None:
    plugin, ni = _accounting([NodeInfo(NodeModel(free_node))])
    st = plugin.filter(CycleState(), Pod(p), ni[0])
    assert (None if st is None or st.is_success() else st.message()) == want
    mask = plugin.filter_all(CycleState(), Pod(p), _all(plugin))
    assert mask is not None and bool(mask[0]) == (want is None)


def test_filter_counts_milli_left_per_gpu() -> None:
    ni = NodeInfo(NodeModel(node("x", 8000, 2, "T4")))
    ni.add_pod(Pod(pod("u0", 1000, 600, 1, node_name="x", index="0")))
    ni.add_pod(Pod(pod("u1", 1000, 700, 1, node_name="x", index="1")))
    plugin, infos = _accounting([ni])
    for milli, ok in ((400, True), (401, False)):
        st = plugin.filter(CycleState(), Pod(pod("p", 1000, milli, 1)), infos[0])
        assert (st is None or st.is_success()) == ok
    st = plugin.filter(CycleState(), Pod(pod("p", 1000, 400, 1)), infos[0])
    assert st is not None and st.detail == "GPU 0 (best fit)"  # what --explain shows


def test_reserve_and_unreserve_account_the_chosen_gpus() -> None:
    ni = NodeInfo(NodeModel(node("x", 8000, 2, "T4")))
    plugin, _ = _accounting([ni])
    p = Pod(pod("p", 1000, 300, 1, uid="u-p"))
    state = CycleState()
    assert plugin.reserve(state, p, "x") is None
    assert ledger(plugin.handle).assigned["u-p"] == ("x", (0,))
    ni.add_pod(p)  # the assumed pod, as the next snapshot has it
    assert ledger(plugin.handle).row(ni)[:2].tolist() == [700, 1000]
    plugin.unreserve(state, p, "x")
    plugin.unreserve(state, p, "x")  # idempotent
    assert "u-p" not in ledger(plugin.handle).assigned
    # Reserve reads the node without the pod itself, were it already there (assumed).
    assert plugin.reserve(CycleState(), p, "x") is None
    assert ledger(plugin.handle).assigned["u-p"] == ("x", (0,))


def test_sample_metrics_fragmentation() -> None:
    ni = NodeInfo(NodeModel(node("x", 8000, 2, "T4")))
    ni.add_pod(Pod(pod("u0", 1000, 600, 1, node_name="x", index="0")))
    plugin, _ = _accounting([ni])
    assert plugin.sample_metrics() == {"gpuMilliUsed": 600.0}
    plugin.handle.objects.put("WorkloadSummary.kubeberth.io", shapes_summary([(1, 1000, 500, 1, "")]))
    # One typical pod (500): GPU 0 has 400 left, too small: 400 of the 1400 idle milli (28.57 %).
    got = plugin.sample_metrics()
    assert got["fragMilli"] == pytest.approx(400.0) and got["fragRatio"] == pytest.approx(100 * 400 / 1400)
    # A pod reserved since the snapshot counts at once: 300 on GPU 0 (the least left that fits).
    assert plugin.reserve(CycleState(), Pod(pod("r", 1000, 300, 1, uid="u-r")), "x") is None
    got = plugin.sample_metrics()
    assert got["gpuMilliUsed"] == 900.0
    assert got["fragMilli"] == pytest.approx(100.0) and got["fragRatio"] == pytest.approx(100 * 100 / 1100)


def _accounting(infos: list[NodeInfo]) -> tuple[OpenGpuShare, list[NodeInfo]]:
    from test_gpushare_policies import _Handle

    handle = _Handle(infos)
    handle.plugin = lambda name: None  # type: ignore[attr-defined]
    handle.client = None  # type: ignore[attr-defined]
    return OpenGpuShare(None, handle), infos  # type: ignore[arg-type]


def _all(plugin: OpenGpuShare) -> Any:
    from kubeberth.framework.vector import AllNodes

    snap = plugin.handle.snapshot
    return AllNodes(snap.node_infos, snap.arrays())
