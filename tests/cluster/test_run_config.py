"""`kubeberth run --config`: kube-scheduler's own configuration file, in force from start-up."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from .conftest import Operators
from .kube import Kube, eventually, node, pod

pytestmark = pytest.mark.cluster

CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
          "parallelism": 16,
          "profiles": [{"schedulerName": "packer",
                        "pluginConfig": [{"name": "NodeResourcesFit",
                                          "args": {"apiVersion": "kubescheduler.config.k8s.io/v1",
                                                   "kind": "NodeResourcesFitArgs",
                                                   "scoringStrategy": {"type": "MostAllocated"}}}]}]}


async def test_run_serves_the_profiles_of_a_config_file(kube: Kube, operators: Operators, tmp_path: Path) -> None:
    config = tmp_path / "scheduler-config.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    await kube.create("nodes", node("small", cpu="2"))
    await kube.create("nodes", node("large", cpu="8"))
    op = operators.start(f"--config={config}")
    await kube.create("pods", pod("packed", cpu="1", scheduler="packer"))
    await kube.create("pods", pod("spread", cpu="1"))

    async def node_of(name: str) -> str | None:
        return (await kube.get("pods", name, "default"))["spec"].get("nodeName")

    assert await eventually(lambda: node_of("packed"), what="packed bound") == "small"  # MostAllocated
    assert await eventually(lambda: node_of("spread"), what="spread bound") == "large"  # default profile
    assert "parallelism does not apply to kubeberth" in op.log()
