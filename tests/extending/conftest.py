"""Fixtures for plugins of one's own: plugin files, installed distributions (a dist-info
directory on sys.path), and the process's plugin state reset after each test."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import kubeberth.plugins as plugins_pkg

SCORE_PLUGIN = '''
from pydantic import BaseModel
from kubeberth.framework import MAX_NODE_SCORE, ScorePlugin


class {cls}Args(BaseModel):
    label: str = "tier"
    value: str = "gold"


class {cls}(ScorePlugin):
    name = "{name}"
    args_model = {cls}Args

    def __init__(self, args, handle):
        self.args = args

    def score(self, state, pod, node_info):
        return MAX_NODE_SCORE if node_info.node.labels.get(self.args.label) == self.args.value else 0
'''


def score_plugin(name: str, cls: str | None = None) -> str:
    return SCORE_PLUGIN.format(name=name, cls=cls or name)


@pytest.fixture(autouse=True)
def fresh_plugin_state() -> Iterator[None]:
    """use_plugins/register change the process's registry: put it back, and forget the modules
    the test imported from its tmp_path."""
    saved = (plugins_pkg._sources, list(plugins_pkg._registered), plugins_pkg._loaded)
    modules = set(sys.modules)
    yield
    plugins_pkg._sources, plugins_pkg._registered, plugins_pkg._loaded = saved[0], saved[1], saved[2]
    for name in set(sys.modules) - modules:
        del sys.modules[name]


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], Path]:
    def write(rel: str, source: str) -> Path:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
        return path
    return write


@pytest.fixture
def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Path]:
    """install(dist, version, {module: source}, {entry name: value}): a distribution as pip
    leaves it (modules plus NAME-VERSION.dist-info with entry_points.txt) on sys.path."""
    site = tmp_path / "site-packages"
    site.mkdir(exist_ok=True)
    monkeypatch.syspath_prepend(str(site))

    def install(dist: str, version: str, modules: dict[str, str], entries: dict[str, str]) -> Path:
        for module, source in modules.items():
            path = site / (module.replace(".", "/") + ".py")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(source))
        info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        lines = "".join(f"{k} = {v}\n" for k, v in entries.items())
        (info / "entry_points.txt").write_text(f"[kubeberth.plugins]\n{lines}")
        return site
    return install
