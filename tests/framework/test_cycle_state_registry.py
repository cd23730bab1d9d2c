from __future__ import annotations

import pytest

from kubeberth.framework import CycleState, Registry, RegistryError
from kubeberth.framework.registry import PluginSpec

from .fakes import Fixed, Reject


class Counter:
    def __init__(self, n: int) -> None:
        self.n = n

    def clone(self) -> Counter:
        return Counter(self.n)


def test_clone_copies_cloneable_values() -> None:
    state = CycleState()
    state.write("count", Counter(1))
    state.write("shared", [1])
    state.skip_filter_plugins.add("X")
    copy = state.clone()
    copy.read("count").n = 5
    copy.skip_filter_plugins.add("Y")
    assert state.read("count").n == 1
    assert copy.read("shared") is state.read("shared")
    assert state.skip_filter_plugins == {"X"}


def test_read_missing_key() -> None:
    with pytest.raises(KeyError, match="not found"):
        CycleState().read("nope")


def test_registry_register_duplicate_unregister_merge() -> None:
    r = Registry()
    r.register(PluginSpec("Reject", Reject))
    with pytest.raises(RegistryError, match="already exists"):
        r.register(PluginSpec("Reject", Reject))
    other = Registry([PluginSpec("Fixed", Fixed)])
    r.merge(other)
    assert sorted(r.names()) == ["Fixed", "Reject"]
    with pytest.raises(RegistryError):
        r.merge(other)
    r.unregister("Fixed")
    assert "Fixed" not in r
    with pytest.raises(RegistryError, match="no plugin named"):
        r.unregister("Fixed")


def test_plugin_points() -> None:
    assert PluginSpec("Fixed", Fixed).points() == ["score"]
