"""kubeberth.framework is the plugin API, kubeberth.framework.vector its vectorised path's
provisional surface: every exported name of both resolves, is typed (py.typed is packaged) and
documented, each carries a version plugins can pin, and the names API 1.4 moved to the vector
surface are still importable from the core, with a warning naming their new place."""

from __future__ import annotations

import dataclasses
import inspect
import re
import tomllib
from pathlib import Path
from types import ModuleType

import pytest
from packaging.version import Version

import kubeberth
import kubeberth.framework as api
import kubeberth.framework.vector as vector

ROOT = Path(__file__).resolve().parents[2]


SURFACES = [api, vector]


@pytest.mark.parametrize("surface", SURFACES, ids=lambda m: m.__name__)
def test_every_exported_name_resolves(surface: ModuleType) -> None:
    missing = [name for name in surface.__all__ if name not in vars(surface)]
    assert missing == []
    assert len(set(surface.__all__)) == len(surface.__all__)


def test_the_two_surfaces_are_apart() -> None:
    assert set(api.__all__).isdisjoint(vector.__all__)
    assert "vector" not in api.__all__


# What API 1.3's kubeberth.framework exported of the vectorised path: vector API 1.0.
MOVED_IN_1_4 = {
    "AllNodes", "NodeView", "NodeArrays", "COL_CPU", "COL_EPH", "COL_MEM", "COL_PODS", "MaskCache", "RowCache",
    "node_column", "labels_mask", "selector_mask", "requirement_mask", "untolerated_free_mask", "name_field_mask",
    "required_node_affinity_mask", "term_mask", "annotations_mask", "annotation_requirement_mask",
    "label_selector_key", "selector_key", "requirement_key", "term_key", "zero_scores", "is_zero_scores",
    "default_normalize_all", "arrays_for", "snapshot_arrays",
}


def test_the_vector_surface_is_what_1_3_exported_of_the_fast_path() -> None:
    assert set(vector.__all__) == MOVED_IN_1_4 | {"VECTOR_API_VERSION"}
    assert Version(vector.VECTOR_API_VERSION) == Version("1.0")
    assert Version(api.API_VERSION) == Version("1.5")


@pytest.mark.parametrize("name", sorted(MOVED_IN_1_4))
def test_a_moved_name_is_still_importable_from_the_core_with_a_warning(name: str) -> None:
    with pytest.warns(DeprecationWarning) as caught:
        got = getattr(api, name)
    assert got is getattr(vector, name)
    assert [str(w.message) for w in caught] == [
        f"kubeberth.framework.{name} is deprecated since plugin API 1.4 (it goes in 2.0): "
        f"import it from kubeberth.framework.vector"]
    assert caught[0].filename == __file__


def test_from_import_of_a_moved_name_warns_at_the_importer() -> None:
    with pytest.warns(DeprecationWarning, match="import it from kubeberth.framework.vector") as caught:
        from kubeberth.framework import NodeView, labels_mask
    assert NodeView is vector.NodeView and labels_mask is vector.labels_mask
    assert {w.filename for w in caught} == {__file__}


def test_other_names_are_still_missing() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'nothing_of_the_sort'"):
        api.nothing_of_the_sort  # noqa: B018
    with pytest.raises(ImportError):
        from kubeberth.framework import ScoreTable  # noqa: F401


def test_what_a_plugin_needs_is_exported() -> None:
    needed = {"API_VERSION", "ObjectKind", "Plugin", "PreEnqueuePlugin", "QueueSortPlugin", "PreFilterPlugin",
              "PreFilterExtensions", "FilterPlugin", "PostFilterPlugin", "PreScorePlugin", "ScorePlugin",
              "ReservePlugin", "PermitPlugin", "PreBindPlugin", "BindPlugin", "PostBindPlugin", "Status", "Code",
              "PluginError", "CycleState", "Handle", "NodeInfo", "Pod", "Node", "ClusterEvent", "ActionType",
              "QueueingHint", "ClusterEventWithHint", "ObjectStore", "WaitingPod", "LabelSelector",
              "MAX_NODE_SCORE", "NodeScore", "PreFilterResult", "PostFilterResult"}
    assert needed <= set(api.__all__)
    assert {"NodeView", "AllNodes", "NodeArrays", "VECTOR_API_VERSION"} <= set(vector.__all__)


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
    assert added <= set(api.__all__) | set(vector.__all__)
    assert Version(api.API_VERSION) >= Version("1.1")


def test_the_versions_are_versions() -> None:
    assert Version(api.API_VERSION).major == 1
    assert Version(vector.VECTOR_API_VERSION).major == 1


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


@pytest.mark.parametrize("surface", SURFACES, ids=lambda m: m.__name__)
def test_every_exported_function_and_method_is_typed(surface: ModuleType) -> None:
    untyped = {name: bad for name in surface.__all__ if (bad := _untyped(getattr(surface, name)))}
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


@pytest.mark.parametrize("surface", SURFACES, ids=lambda m: m.__name__)
def test_every_exported_class_and_function_has_a_docstring(surface: ModuleType) -> None:
    undocumented = [name for name in surface.__all__ if _own_docstring(getattr(surface, name)) == ""]
    assert undocumented == []


@pytest.mark.parametrize("surface, some", [(api, {"API_VERSION", "NODE"}), (vector, {"COL_CPU", "VECTOR_API_VERSION"})],
                         ids=lambda m: getattr(m, "__name__", ""))
def test_every_exported_constant_is_described_in_the_package_docstring(surface: ModuleType, some: set[str]) -> None:
    # Constants and type aliases cannot carry a docstring: the package's own describes them.
    constants = [name for name in surface.__all__ if _own_docstring(getattr(surface, name)) is None]
    assert some <= set(constants)
    doc = surface.__doc__ or ""
    assert [name for name in constants if f"`{name}`" not in doc] == []


def test_the_vector_surface_states_its_stability_rule() -> None:
    doc = " ".join((vector.__doc__ or "").split())
    assert "Provisional" in doc and "`VECTOR_API_VERSION`" in doc and "requires_vector_api" in doc
    assert "may come in any kubeberth release" in doc
    assert "API 1.4" in " ".join((api.__doc__ or "").split())


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
    assert {"annotations_mask", "annotation_requirement_mask", "node_column"} <= set(vector.__all__)
    assert Version(api.API_VERSION) >= Version("1.3")
    assert "API 1.3" in (api.__doc__ or "")
    for name in ("annotations", "raw"):
        assert name in (api.Node.__doc__ or "") and name in (api.Pod.__doc__ or "")


def test_the_readme_documents_every_exported_name() -> None:
    """The documentation's page on the plugin API (docs/plugins/api.md) names every exported name."""
    section = (ROOT / "docs" / "plugins" / "api.md").read_text()
    words = {w for code in re.findall(r"`([^`]+)`", section) for w in re.findall(r"[A-Za-z_]\w*", code)}
    assert [name for name in [*api.__all__, *vector.__all__] if name not in words] == []
    assert f"now `{api.API_VERSION}`" in section
    assert f"now `{vector.VECTOR_API_VERSION}`" in section


def test_it_is_typed_and_packaged_so() -> None:
    assert (Path(kubeberth.__file__).parent / "py.typed").exists()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in project["tool"]["setuptools"]["package-data"]["kubeberth"]
    assert any(dep.startswith("packaging") for dep in project["project"]["dependencies"])
