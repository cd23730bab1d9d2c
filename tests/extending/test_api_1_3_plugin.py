"""A plugin written against plugin API 1.3 still loads and runs under 1.4: it imports the
vectorised path's names (`NodeView`, `AllNodes`, `labels_mask`) from `kubeberth.framework`, where
1.3 exported them, pins `requires_api = ">=1.3,<2"`, and its `filter_all` / `score_all` are used
on a cluster large enough to vectorise. Importing them from there warns, naming their new place."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from kubeberth.cli import main

PLUGIN_1_3 = '''
from pathlib import Path

import numpy as np

from kubeberth.framework import (
    MAX_NODE_SCORE, AllNodes, CycleState, FilterPlugin, NodeInfo, NodeView, Pod, ScorePlugin, Status, labels_mask,
)

CALLS = Path(__file__).with_suffix(".calls")


class GoldInZoneA(FilterPlugin, ScorePlugin):
    """Filter: gold nodes only; Score: zone a first. Per node, and over the label columns."""

    name = "GoldInZoneA"
    requires_api = ">=1.3,<2"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if node_info.node.labels.get("tier") == "gold":
            return None
        return Status.unschedulable("node(s) are not gold")

    def filter_all(self, state: CycleState, pod: Pod, nodes: NodeView | AllNodes) -> np.ndarray:
        with CALLS.open("a") as f:
            f.write("filter_all\\n")
        return nodes.take(labels_mask(nodes.arrays, {"tier": "gold"}))

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return MAX_NODE_SCORE if node_info.node.labels.get("zone") == "a" else 0

    def score_all(self, state: CycleState, pod: Pod, nodes: NodeView) -> np.ndarray:
        with CALLS.open("a") as f:
            f.write("score_all\\n")
        zone_a = nodes.take(labels_mask(nodes.arrays, {"zone": "a"}))
        return np.where(zone_a, MAX_NODE_SCORE, 0).astype(np.int64)
'''


def node(name: str, tier: str, zone: str) -> dict:  # type: ignore[type-arg]
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"tier": tier, "zone": zone}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def cluster(tmp_path: Path) -> str:
    # 70 nodes (the runner vectorises from 64 on): three gold ones, one of them in zone a.
    nodes = [node(f"n-{i:02d}", "silver", "ab"[i % 2]) for i in range(67)]
    nodes += [node("gold-1", "gold", "b"), node("gold-2", "gold", "a"), node("gold-3", "gold", "b")]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1"}}}]}}
    enabled = [{"name": "GoldInZoneA"}]
    profile = {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": "default"},
               "spec": {"schedulerName": "default-scheduler",
                        "plugins": {"filter": {"enabled": enabled}, "score": {"enabled": enabled}}}}
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([*nodes, pod, profile]))
    return str(path)


def test_a_plugin_written_against_1_3_loads_and_runs_vectorised(
        write: Callable[[str, str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write("gold13.py", PLUGIN_1_3)
    with pytest.warns(DeprecationWarning) as caught:
        assert main(["simulate", cluster(tmp_path), "--plugins", str(path), "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(p["pod"], p["status"], p["node"]) for p in out["pods"]] == [("default/web", "Scheduled", "gold-2")]
    assert sorted(set(path.with_suffix(".calls").read_text().split())) == ["filter_all", "score_all"]
    told = {str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)}
    for name in ("AllNodes", "NodeView", "labels_mask"):
        assert (f"kubeberth.framework.{name} is deprecated since plugin API 1.4 (it goes in 2.0): "
                f"import it from kubeberth.framework.vector") in told
    assert all(w.filename == str(path) for w in caught if "kubeberth.framework." in str(w.message))


def test_the_same_plugin_importing_from_the_vector_surface_warns_nothing(
        write: Callable[[str, str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = PLUGIN_1_3.replace(
        "from kubeberth.framework import (\n"
        "    MAX_NODE_SCORE, AllNodes, CycleState, FilterPlugin, NodeInfo, NodeView, Pod, ScorePlugin, Status, "
        "labels_mask,\n)",
        "from kubeberth.framework import MAX_NODE_SCORE, CycleState, FilterPlugin, NodeInfo, Pod, ScorePlugin, Status\n"
        "from kubeberth.framework.vector import AllNodes, NodeView, labels_mask")
    pins = 'requires_api = ">=1.4,<2"\n    requires_vector_api = ">=1.0,<2"'
    source = source.replace('requires_api = ">=1.3,<2"', pins)
    assert "kubeberth.framework.vector import" in source and "requires_vector_api" in source
    path = write("gold14.py", source)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["simulate", cluster(tmp_path), "--plugins", str(path), "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["pods"][0]["node"] == "gold-2"
    assert [str(w.message) for w in caught if "kubeberth.framework" in str(w.message)] == []
