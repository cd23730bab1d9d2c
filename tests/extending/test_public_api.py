"""kubeberth.framework is the plugin API: every exported name resolves, it is typed (py.typed is
packaged), and it carries a version plugins can pin."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.version import Version

import kubeberth
import kubeberth.framework as api

ROOT = Path(__file__).resolve().parents[2]


def test_every_exported_name_resolves() -> None:
    missing = [name for name in api.__all__ if not hasattr(api, name)]
    assert missing == []
    assert len(set(api.__all__)) == len(api.__all__)


def test_what_a_plugin_needs_is_exported() -> None:
    needed = {"API_VERSION", "ObjectKind", "Plugin", "PreEnqueuePlugin", "QueueSortPlugin", "PreFilterPlugin",
              "PreFilterExtensions", "FilterPlugin", "PostFilterPlugin", "PreScorePlugin", "ScorePlugin",
              "ReservePlugin", "PermitPlugin", "PreBindPlugin", "BindPlugin", "PostBindPlugin", "Status", "Code",
              "PluginError", "CycleState", "Handle", "NodeInfo", "Pod", "Node", "ClusterEvent", "ActionType",
              "QueueingHint", "ClusterEventWithHint", "NodeView", "AllNodes", "NodeArrays", "ObjectStore",
              "WaitingPod", "LabelSelector", "MAX_NODE_SCORE", "NodeScore", "PreFilterResult", "PostFilterResult"}
    assert needed <= set(api.__all__)


def test_the_version_is_a_version() -> None:
    assert Version(api.API_VERSION).major == 1


def test_it_is_typed_and_packaged_so() -> None:
    assert (Path(kubeberth.__file__).parent / "py.typed").exists()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in project["tool"]["setuptools"]["package-data"]["kubeberth"]
    assert any(dep.startswith("packaging") for dep in project["project"]["dependencies"])
