"""Traps a newcomer writing a plugin distribution met (issue 37): normalisation that needed a
hidden flag, a constructor the framework could not call, a `--plugins` module in the current
directory, and a broken entry point of another distribution spoiling the listing."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubeberth.config import parse_spec
from kubeberth.framework import (
    SchedulerContext,
)
from kubeberth.plugins import in_tree_registry, register, use_plugins
from kubeberth.plugins._loading import load
from kubeberth.profile import build_framework

from .conftest import score_plugin

# --- 3. __init__ is optional; a constructor the framework cannot call is refused at load ---------

NO_INIT = '''
from pydantic import BaseModel
from kubeberth.framework import FilterPlugin, Status


class NoInitArgs(BaseModel):
    label: str = "tier"


class NoInit(FilterPlugin):
    name = "NoInit"
    args_model = NoInitArgs

    def filter(self, state, pod, node_info):
        return None if self.args.label in node_info.node.labels else Status.unschedulable("no label")
'''


def test_a_plugin_without_init_gets_args_and_handle(write: Callable[[str, str], Path]) -> None:
    path = write("noinit.py", NO_INIT)
    got = load(in_tree_registry(), [str(path)], entry_points=False)
    assert got.failures == []
    spec = parse_spec({"schedulerName": "mine", "plugins": {"filter": {"enabled": [{"name": "NoInit"}]}},
                       "pluginConfig": [{"name": "NoInit", "args": {"label": "zone"}}]})
    fw = build_framework(spec, got.registry, SchedulerContext())
    plugin = fw.plugins["NoInit"]
    assert plugin.args.label == "zone"  # type: ignore[attr-defined]
    assert plugin.handle is fw


BAD_CONSTRUCTORS = [
    ("def __init__(self):\n        pass", "Bad()", "too many positional arguments"),
    ("def __init__(self, args):\n        pass", "Bad(args)", "too many positional arguments"),
    ("def __init__(self, args, handle, extra):\n        pass", "Bad(args, handle, extra)",
     "missing a required argument: 'extra'"),
    ("def __init__(self, *, args, handle):\n        pass", "Bad(*, args, handle)", "too many positional arguments"),
]


def bad_plugin(init: str) -> str:
    return textwrap.dedent('''
        from kubeberth.framework import ScorePlugin


        class Bad(ScorePlugin):
            name = "Bad"

            {init}

            def score(self, state, pod, node_info):
                return 0
        ''').replace("{init}", init) + score_plugin("Good")


def refusal(signature: str, why: str) -> str:
    return (f"plugin 'Bad': its constructor {signature} cannot be called as Bad(args, handle) ({why}): write "
            "__init__(self, args, handle), or no __init__ at all (kubeberth.framework.Plugin's keeps them as "
            "self.args and self.handle)")


@pytest.mark.parametrize("init, signature, why", BAD_CONSTRUCTORS, ids=["none", "args", "extra", "keywords"])
def test_a_constructor_that_cannot_take_args_and_handle_is_refused_from_a_path(
        write: Callable[[str, str], Path], init: str, signature: str, why: str) -> None:
    path = write("bad.py", bad_plugin(init))
    got = load(in_tree_registry(), [str(path)], entry_points=False)
    assert [str(f) for f in got.failures] == [f"path {path}: {refusal(signature, why)}"]
    assert got.registry.get("Good") is not None  # the module's other plugin loads
    assert got.registry.unknown("Bad") == f"plugin 'Bad' is unavailable: path {path}: {refusal(signature, why)}"


def test_a_constructor_refused_from_an_entry_point_and_a_module(install: Callable[..., Path]) -> None:
    install("bad-plugins", "1.0", {"badplug": bad_plugin("def __init__(self):\n        pass")},
            {"Bad": "badplug:Bad", "Good": "badplug:Good"})
    got = load(in_tree_registry(), ["badplug"])
    why = refusal("Bad()", "too many positional arguments")
    assert [str(f) for f in got.failures] == [
        f"distribution bad-plugins 1.0 (entry point Bad = badplug:Bad): {why}", f"module badplug: {why}"]
    assert got.registry.get("Good") is not None


def test_register_refuses_such_a_constructor_naming_where_it_came_from() -> None:
    namespace: dict[str, Any] = {}
    exec(bad_plugin("def __init__(self):\n        pass"), namespace)
    use_plugins([], entry_points=False)
    with pytest.raises(ValueError) as err:
        register(namespace["Bad"], origin="my program")
    assert str(err.value) == f"my program: {refusal('Bad()', 'too many positional arguments')}"
