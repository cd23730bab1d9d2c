"""kubeberth.framework is the plugin API: every exported name resolves, it is typed (py.typed is
packaged), and it carries a version plugins can pin."""

from __future__ import annotations

import dataclasses
import inspect
import re
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


def test_what_the_in_tree_plugins_needed_is_exported_since_1_1() -> None:
    # what the in-tree plugins imported from private modules under API 1.0
    added = {"AffinityTerm", "NodeSelectorTerm", "PreferredTerm", "Requirement", "PodAffinityTerms",
             "pod_affinity_terms", "NsLabels", "tolerated", "NO_SCHEDULE", "PREFER_NO_SCHEDULE", "CPU", "MEMORY",
             "EPHEMERAL_STORAGE", "is_scalar_resource", "quantity_value", "qualified_name_errors",
             "label_value_errors", "validate_selector", "default_normalize_score", "PERSISTENT_VOLUME",
             "PERSISTENT_VOLUME_CLAIM", "STORAGE_CLASS", "CSI_NODE", "CSI_DRIVER", "CSI_STORAGE_CAPACITY",
             "VOLUME_ATTACHMENT", "COL_CPU", "COL_MEM", "COL_EPH", "COL_PODS", "MaskCache", "RowCache", "arrays_for",
             "snapshot_arrays", "label_selector_key", "selector_key", "term_key", "term_mask",
             "required_node_affinity_mask"}
    assert added <= set(api.__all__)
    assert Version(api.API_VERSION) >= Version("1.1")


def test_the_version_is_a_version() -> None:
    assert Version(api.API_VERSION).major == 1


def _untyped(obj: object) -> list[str]:
    """Parameters (and returns) of a function, or of a class's public methods, without a type."""
    if inspect.isclass(obj):
        return [f"{name}: {miss}" for name, f in vars(obj).items()
                if inspect.isfunction(f) and not name.startswith("_") for miss in _untyped(f)]
    if not inspect.isfunction(obj):
        return []
    sig = inspect.signature(obj)
    out = [p for p, v in sig.parameters.items() if v.annotation is inspect.Parameter.empty and p not in {"self", "cls"}]
    return out + (["return"] if sig.return_annotation is inspect.Signature.empty else [])


def test_every_exported_function_and_method_is_typed() -> None:
    untyped = {name: bad for name in api.__all__ if (bad := _untyped(getattr(api, name)))}
    assert untyped == {}


def test_the_untyped_check_finds_what_is_untyped() -> None:
    def f(a, b: int):
        return b

    class C:
        def m(self, x: int) -> None: ...
        def n(self, y):
            return y

    assert _untyped(f) == ["a", "return"]
    assert _untyped(C) == ["n: y", "n: return"]


def _own_docstring(obj: object) -> str | None:
    """The docstring an exported class or function carries itself (not one inherited, not the
    signature a dataclass makes up); None for anything else (constants, type aliases)."""
    if inspect.isclass(obj):
        doc = vars(obj).get("__doc__")
        if dataclasses.is_dataclass(obj) and isinstance(doc, str) and doc.startswith(f"{obj.__name__}("):
            return ""
        return (doc or "").strip()
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return (obj.__doc__ or "").strip()
    return None


def test_every_exported_class_and_function_has_a_docstring() -> None:
    undocumented = [name for name in api.__all__ if _own_docstring(getattr(api, name)) == ""]
    assert undocumented == []


def test_every_exported_constant_is_described_in_the_package_docstring() -> None:
    # Constants and type aliases cannot carry a docstring: kubeberth.framework's own describes them.
    constants = [name for name in api.__all__ if _own_docstring(getattr(api, name)) is None]
    assert "COL_CPU" in constants and "API_VERSION" in constants
    doc = api.__doc__ or ""
    assert [name for name in constants if f"`{name}`" not in doc] == []


def test_the_docstring_check_finds_what_is_undocumented() -> None:
    def documented() -> None:
        """Documented."""

    def bare() -> None: ...

    class Base:
        """Documented."""

    class Inherits(Base): ...

    @dataclasses.dataclass
    class Made:
        x: int

    assert [_own_docstring(o) for o in (documented, bare, Base, Inherits, Made, 3, "s")] == [
        "Documented.", "", "Documented.", "", "", None, None]


def test_api_1_3_exports_annotations_and_columns_of_ones_own() -> None:
    assert {"annotations_mask", "annotation_requirement_mask", "node_column"} <= set(api.__all__)
    assert Version(api.API_VERSION) >= Version("1.3")
    assert "API 1.3" in (api.__doc__ or "")
    for name in ("annotations", "raw"):
        assert name in (api.Node.__doc__ or "") and name in (api.Pod.__doc__ or "")


def test_the_readme_documents_every_exported_name() -> None:
    """The documentation's page on the plugin API (docs/plugins/api.md) names every exported name."""
    section = (ROOT / "docs" / "plugins" / "api.md").read_text()
    words = {w for code in re.findall(r"`([^`]+)`", section) for w in re.findall(r"[A-Za-z_]\w*", code)}
    assert [name for name in api.__all__ if name not in words] == []
    assert f"now `{api.API_VERSION}`" in section


def test_it_is_typed_and_packaged_so() -> None:
    assert (Path(kubeberth.__file__).parent / "py.typed").exists()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in project["tool"]["setuptools"]["package-data"]["kubeberth"]
    assert any(dep.startswith("packaging") for dep in project["project"]["dependencies"])
