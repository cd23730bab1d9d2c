"""A plugin's reason stays a constant string (upstream's FailedScheduling message counts nodes by
reason); the value behind it goes in `Status.detail`, which `--explain` shows per node and the
message never carries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from kubeberth.cli import main

PLUGIN = '''
from pydantic import BaseModel
from kubeberth.framework import FilterPlugin, Status


class MaxCostArgs(BaseModel):
    maxCost: float = 1.0


class MaxCost(FilterPlugin):
    name = "MaxCost"
    args_model = MaxCostArgs

    def __init__(self, args, handle):
        self.max_cost = args.maxCost

    def filter(self, state, pod, node_info):
        cost = float(node_info.node.labels.get("cost", "0"))
        if cost > self.max_cost:
            return Status.unschedulable("node cost exceeds maxCost",
                                        detail=f"cost {cost:.2f} exceeds {self.max_cost}")
        return None
'''


def _cluster() -> list[dict]:
    docs: list[dict] = [{
        "apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": "default"},
        "spec": {"schedulerName": "default-scheduler", "plugins": {"filter": {"enabled": [{"name": "MaxCost"}]}}}}]
    for name, cost in (("n-2", "2"), ("n-3", "3"), ("n-5", "5")):
        docs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"cost": cost}},
                     "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})
    docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
                 "spec": {"containers": [{"name": "app", "image": "nginx"}]}})
    return docs


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    plugin = tmp_path / "maxcost.py"
    plugin.write_text(PLUGIN)
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all(_cluster()))
    return str(cluster), str(plugin)


def test_the_message_counts_one_reason_and_explain_shows_each_value(
        files: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    cluster, plugin = files
    assert main(["simulate", cluster, "--plugins", plugin, "-o", "json", "--explain", "web"]) == 0
    [pod] = json.loads(capsys.readouterr().out)["pods"]
    assert pod["message"] == "0/3 nodes are available: 3 node cost exceeds maxCost. " \
        "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    nodes = {n["node"]: n for n in pod["explanations"][-1]["filter"]["nodes"]}
    assert nodes["n-2"]["detail"] == "cost 2.00 exceeds 1.0"
    assert nodes["n-5"]["details"] == {"MaxCost": "cost 5.00 exceeds 1.0"}
    assert nodes["n-3"]["reason"] == "node cost exceeds maxCost"


def test_the_table_lists_the_details(files: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    cluster, plugin = files
    assert main(["simulate", cluster, "--plugins", plugin, "--explain", "web", "--explain-nodes", "2"]) == 0
    out = capsys.readouterr().out
    assert "3 node(s): node cost exceeds maxCost [MaxCost]: n-2, n-3, n-5" in out
    assert "    n-2: cost 2.00 exceeds 1.0 [MaxCost]" in out
    assert "    n-3: cost 3.00 exceeds 1.0 [MaxCost]" in out
    assert "(+1 more)" in out


def test_detail_is_not_part_of_equality() -> None:
    from kubeberth.framework import Status
    assert Status.unschedulable("x", detail="a") == Status.unschedulable("x", detail="b")
    assert Status.unschedulable("x", detail="a").message() == "x"
