"""VolumeBinding with CSIStorageCapacity (the filter of dynamic provisioning) and
StorageCapacityScoring (its score and shape), after upstream's volume_binding_test.go,
binder_test.go (hasEnoughCapacity) and scorer_test.go."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth.framework import CycleState, Status
from kubeberth.model import NodeInfo, Pod
from kubeberth.plugins._scoring_strategies import broken_linear_function as broken_linear
from kubeberth.plugins.volume_binding import ERR_REASON_NOT_ENOUGH_SPACE, VolumeBinding, VolumeBindingArgs
from kubeberth.plugins.volume_binding.capacity import StorageResource, build_scorer
from tests.builders import make_node, make_pod
from tests.doubles import handle, store_of

from ._volume_helpers import claim_volume, pv, pvc, storage_class

DRIVER = "csi.example.com"
FAST = storage_class("fast", wait=True, provisioner=DRIVER)
LOCAL = storage_class("local", wait=True)
NODES = [NodeInfo(make_node(n, labels={"kubernetes.io/hostname": n})) for n in ("node-a", "node-b")]


def driver(storage_capacity: bool | None) -> dict[str, Any]:
    spec = {} if storage_capacity is None else {"storageCapacity": storage_capacity}
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": DRIVER}, "spec": spec}


def capacity(name: str, host: str | None, size: str | None, *, cls: str = "fast",
             max_size: str | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                           "metadata": {"name": name, "namespace": "kube-system"}, "storageClassName": cls}
    if host is not None:
        obj["nodeTopology"] = {"matchLabels": {"kubernetes.io/hostname": host}}
    if size is not None:
        obj["capacity"] = size
    if max_size is not None:
        obj["maximumVolumeSize"] = max_size
    return obj


def claim_pod(*claims: str) -> Pod:
    return make_pod("pod-a", volumes=[claim_volume(c) for c in claims])


def filter_all(objs: list[dict[str, Any]], pod: Pod, args: VolumeBindingArgs | None = None
               ) -> tuple[VolumeBinding, CycleState, dict[str, Status | None]]:
    plugin = VolumeBinding(args or VolumeBindingArgs(), handle(objects=store_of(FAST, LOCAL, *objs), node_infos=NODES))
    state = CycleState()
    _, pre = plugin.pre_filter(state, pod, NODES)
    assert pre is None
    return plugin, state, {ni.node.name: plugin.filter(state, pod, ni) for ni in NODES if ni.node}


NO_ROOM = Status.unresolvable(ERR_REASON_NOT_ENOUGH_SPACE)
CLAIM = pvc("data", storage_class="fast", request="5Gi")
FILTER_CASES = [
    # (id, objects, want per node)
    ("no CSIDriver: capacity not checked", [CLAIM, capacity("a", "node-a", "1Gi")], (None, None)),
    ("driver does not opt in", [CLAIM, driver(False), capacity("a", "node-a", "1Gi")], (None, None)),
    ("driver opts in: only the node with room", [CLAIM, driver(True), capacity("a", "node-a", "10Gi"),
                                                capacity("b", "node-b", "4Gi")], (None, NO_ROOM)),
    ("no capacity object at all", [CLAIM, driver(True)], (NO_ROOM, NO_ROOM)),
    ("maximumVolumeSize wins over capacity", [CLAIM, driver(True),
                                             capacity("a", "node-a", "100Gi", max_size="1Gi")], (NO_ROOM, NO_ROOM)),
    ("capacity of another class", [CLAIM, driver(True), capacity("a", "node-a", "10Gi", cls="other")],
     (NO_ROOM, NO_ROOM)),
    ("no nodeTopology: reachable from nowhere", [CLAIM, driver(True), capacity("a", None, "10Gi")],
     (NO_ROOM, NO_ROOM)),
    ("no storage request: nothing to check", [pvc("data", storage_class="fast"), driver(True)], (None, None)),
]


@pytest.mark.parametrize(("objs", "want"), [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES])
def test_capacity_filter(objs: list[dict[str, Any]], want: tuple[Status | None, Status | None]) -> None:
    _, _, got = filter_all(objs, claim_pod("data"))
    assert (got["node-a"], got["node-b"]) == want


def scores(objs: list[dict[str, Any]], pod: Pod, args: VolumeBindingArgs | None = None) -> dict[str, int] | None:
    plugin, state, got = filter_all(objs, pod, args)
    fits = [ni for ni in NODES if ni.node and got[ni.node.name] is None]
    pre = plugin.pre_score(state, pod, fits)
    if pre is not None and pre.is_skip():
        return None
    return {ni.node.name: plugin.score(state, pod, ni) for ni in fits if ni.node}


def test_dynamic_provisioning_prefers_the_emptier_pool() -> None:
    objs = [CLAIM, driver(True), capacity("a", "node-a", "10Gi"), capacity("b", "node-b", "50Gi")]
    # 5/10 used -> 50, 5/50 -> 10: 100 - utilisation with the default shape.
    assert scores(objs, claim_pod("data")) == {"node-a": 50, "node-b": 90}


def test_claims_of_one_class_share_the_pool() -> None:
    objs = [CLAIM, pvc("more", storage_class="fast", request="3Gi"), driver(True),
            capacity("a", "node-a", "10Gi"), capacity("b", "node-b", "100Gi")]
    assert scores(objs, claim_pod("data", "more")) == {"node-a": 20, "node-b": 92}


def test_static_bindings_score_by_pv_utilisation_per_class() -> None:
    objs = [pvc("small", storage_class="local", request="2Gi"),
            pv("pv-a", storage_class="local", capacity="4Gi", hosts=["node-a"]),
            pv("pv-b", storage_class="local", capacity="20Gi", hosts=["node-b"])]
    assert scores(objs, claim_pod("small")) == {"node-a": 50, "node-b": 90}


def test_custom_shape_prefers_fuller_nodes() -> None:
    objs = [CLAIM, driver(True), capacity("a", "node-a", "10Gi"), capacity("b", "node-b", "50Gi")]
    shape = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
    assert scores(objs, claim_pod("data"), VolumeBindingArgs.model_validate({"shape": shape})) == {
        "node-a": 50, "node-b": 10}


def test_nothing_to_weigh_skips_the_score() -> None:
    # Provisioning without capacity tracking, and a pod without claims.
    assert scores([CLAIM], claim_pod("data")) is None
    plugin = VolumeBinding(VolumeBindingArgs(), handle(objects=store_of(FAST), node_infos=NODES))
    state = CycleState()
    plugin.pre_filter(state, make_pod("plain"), NODES)
    st = plugin.pre_score(state, make_pod("plain"), NODES)
    assert st is not None and st.is_skip()


def test_scorer_over_capacity_and_rounding() -> None:
    score = build_scorer([(0, 10), (100, 0)])
    assert score({}) == 0
    assert score({"a": StorageResource(requested=11, capacity=10)}) == 0
    assert score({"a": StorageResource(requested=0, capacity=0)}) == 0
    # (100 + 55) / 2 = 77.5 rounds half up.
    assert score({"a": StorageResource(0, 10), "b": StorageResource(45, 100)}) == 78


def test_broken_linear_truncates_toward_zero_as_go() -> None:
    f = broken_linear([(0, 100), (30, 0)])
    assert f(10) == 67  # 100 + trunc(-1000 / 30), not floor
    assert f(0) == 100 and f(50) == 0


def test_args_defaults_and_validation() -> None:
    from kubeberth.config import ConfigError

    args = VolumeBindingArgs()
    assert args.bindTimeoutSeconds == 600
    assert args.shape_points() == [(0, 10), (100, 0)]
    assert VolumeBindingArgs.model_validate({"shape": []}).shape_points() == [(0, 10), (100, 0)]
    for bad in ([{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}],
                [{"utilization": 0, "score": 11}], [{"utilization": 101, "score": 1}]):
        with pytest.raises(ConfigError, match="shape"):
            handle(profile={"pluginConfig": [{"name": "VolumeBinding", "args": {"shape": bad}}]})


def test_default_profile_scores_with_it() -> None:
    fw = handle(profile={}, nodes=[make_node("n")])
    assert "VolumeBinding" in [p.name for p in fw.score_plugins]
