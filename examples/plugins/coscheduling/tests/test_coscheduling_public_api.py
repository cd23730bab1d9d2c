"""The plugin is written against kubeberth's public plugin API only (`kubeberth.framework`, and
`kubeberth.framework.vector` for vectorised hooks), and is found by its entry point."""

from __future__ import annotations

import ast
from pathlib import Path

import kubeberth_coscheduling

from kubeberth.framework import API_VERSION
from kubeberth.plugins import plugin_registry

PACKAGE = Path(kubeberth_coscheduling.__file__).parent


def test_imports_only_the_public_plugin_api() -> None:
    # kubeberth.framework, and kubeberth.framework.vector for vectorised hooks (it has none)
    found: set[str] = set()
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
    ours = {m for m in found if m.split(".")[0] == "kubeberth"}
    assert "kubeberth.framework" in ours and ours <= {"kubeberth.framework", "kubeberth.framework.vector"}


def test_the_entry_point_brings_the_plugin_into_the_registry() -> None:
    spec = plugin_registry().get("Coscheduling")
    assert spec is not None and spec.cls is kubeberth_coscheduling.Coscheduling
    assert spec.points() == ["queueSort", "preFilter", "postFilter", "reserve", "permit"]


def test_the_api_version_fits() -> None:
    from packaging.specifiers import SpecifierSet

    required = kubeberth_coscheduling.Coscheduling.requires_api
    assert required is not None and API_VERSION in SpecifierSet(required)
