"""`simulate --compare`: pods that change fate between two configurations, and the spread."""

from __future__ import annotations

import io
import json
import statistics
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeberth.cli import main
from kubeberth.whatif.compare import compare, utilisation
from tests.builders import node_dict, pod_dict

ZONE = "topology.kubernetes.io/zone"
NO_TAINT_FILTER = {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": "b"},
                   "spec": {"plugins": {"filter": {"disabled": [{"name": "TaintToleration"}]}}}}
DEFAULT = {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": "a"}, "spec": {}}


def cluster() -> list[dict[str, Any]]:
    return [node_dict("n1", cpu="4", labels={ZONE: "a"}), node_dict("n2", cpu="4", labels={ZONE: "b"}),
            node_dict("t1", cpu="4", labels={ZONE: "b"},
                      taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]),
            pod_dict("low", cpu="3", node="n1", priority=0), pod_dict("other", cpu="3", node="n2"),
            pod_dict("high", cpu="2", priority=100),
            pod_dict("pinned", cpu="1", nodeSelector={"kubernetes.io/hostname": "t1"})]


def test_changes_between_two_profiles() -> None:
    result = compare([*cluster(), DEFAULT], [*cluster(), NO_TAINT_FILTER], seed=3, warn=io.StringIO())
    changes = result["changes"]
    # A: high preempts low on n1; B: high fits on the tainted node, nobody is evicted
    assert changes["moved"] == [{"pod": "default/high", "a": {"status": "Scheduled", "node": "n1"},
                                 "b": {"status": "Scheduled", "node": "t1"}}]
    assert [e["pod"] for e in changes["evictedOnlyInA"]] == ["default/low"]
    assert changes["evictedOnlyInB"] == [] and changes["becameUnschedulable"] == []
    [pinned] = changes["becameSchedulable"]
    assert pinned["pod"] == "default/pinned" and pinned["b"] == {"status": "Scheduled", "node": "t1"}
    assert "1 node(s) had untolerated taint(s)" in pinned["message"]
    assert result["a"]["counts"] == {"Evicted": 1, "Existing": 1, "Scheduled": 1, "Unschedulable": 1}
    # and the other way round
    back = compare([*cluster(), NO_TAINT_FILTER], [*cluster(), DEFAULT], seed=3, warn=io.StringIO())["changes"]
    assert [e["pod"] for e in back["becameUnschedulable"]] == ["default/pinned"]
    assert [e["pod"] for e in back["evictedOnlyInB"]] == ["default/low"]


def test_utilisation_per_node_and_zone() -> None:
    nodes = [{"node": "n1", "allocatable": {"cpu": 4000, "memory": 100}, "after": {"cpu": 2000, "memory": 100}},
             {"node": "n2", "allocatable": {"cpu": 4000, "memory": 100}, "after": {"cpu": 3000, "memory": 0}},
             {"node": "t1", "allocatable": {"cpu": 4000, "memory": 100}, "after": {"cpu": 1000, "memory": 50}}]
    got = utilisation(nodes, {"n1": "a", "n2": "b", "t1": "b"})
    assert got["nodes"]["n2"] == {"cpu": 0.75, "memory": 0.0}
    assert got["zones"] == {"a": {"cpu": 0.5, "memory": 1.0}, "b": {"cpu": 0.5, "memory": 0.25}}
    assert got["nodeSpread"]["cpu"] == {"stddev": round(statistics.pstdev([0.5, 0.75, 0.25]), 4),
                                        "max": 0.75, "min": 0.25}
    assert got["zoneSpread"]["cpu"] == {"stddev": 0.0, "max": 0.5, "min": 0.5}
    assert got["zoneSpread"]["memory"] == {"stddev": 0.375, "max": 1.0, "min": 0.25}


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {"cluster": tmp_path / "cluster.yaml", "a": tmp_path / "a.yaml", "b": tmp_path / "b.yaml"}
    out["cluster"].write_text(yaml.safe_dump_all(cluster()))
    out["a"].write_text(yaml.safe_dump(DEFAULT))
    out["b"].write_text(yaml.safe_dump(NO_TAINT_FILTER))
    return out


def test_cli_table_json_and_html(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", str(files["cluster"]), "--seed", "3", "--compare", str(files["a"]), str(files["b"])]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "Pods placed on another node (1):" in out
    assert "default/high  Scheduled on n1  Scheduled on t1" in out
    assert "Evicted under A only (1):" in out
    assert "Spread over the zones:" in out
    assert main([*argv, "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"seed", "a", "b", "changes"} and set(data["a"]) == {"label", "counts", "utilisation"}
    assert data["b"]["utilisation"]["nodes"]["t1"]["cpu"] == 0.75
    assert main([*argv, "-o", "html"]) == 0
    page = capsys.readouterr().out
    assert page.startswith("<!DOCTYPE html>") and '<tr class="change moved"><td>default/high</td>' in page


def test_cli_two_configs(files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    configs = []
    for name, spec in (("ca", {}), ("cb", NO_TAINT_FILTER["spec"])):
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump({"apiVersion": "kubescheduler.config.k8s.io/v1",
                                        "kind": "KubeSchedulerConfiguration", "profiles": [spec]}))
        configs += ["--config", str(path)]
    assert main(["simulate", str(files["cluster"]), "--seed", "3", *configs, "--compare", "-o", "json"]) == 0
    assert [e["pod"] for e in json.loads(capsys.readouterr().out)["changes"]["moved"]] == ["default/high"]


@pytest.mark.parametrize("extra", [["--compare", "x.yaml"], ["--compare"]])
def test_cli_compare_needs_two_sides(files: dict[str, Path], extra: list[str],
                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(files["cluster"]), *extra]) == 2
    assert "--compare: give two SchedulingProfile files" in capsys.readouterr().err
