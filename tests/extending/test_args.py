"""A plugin's args_model validates its pluginConfig args as the in-tree plugins' are: errors name
spec.pluginConfig[i].args.<field> in simulate and in the Accepted condition; defaults come from
the model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubeberth.config import ConfigError, parse_spec
from kubeberth.framework import SchedulerContext
from kubeberth.operator.profiles import ProfileManager
from kubeberth.plugins import in_tree_registry
from kubeberth.plugins._loading import load
from kubeberth.profile import build_framework
from kubeberth.scheduler import Scheduler

ARGS_PLUGIN = '''
from typing import Literal
from pydantic import BaseModel, Field
from kubeberth.framework import ScorePlugin


class ZoneArgs(BaseModel):
    label: str = "tier"
    weightOfGold: int = Field(default=7, ge=0, le=100)
    mode: Literal["Prefer", "Avoid"] = "Prefer"


class Zone(ScorePlugin):
    name = "Zone"
    args_model = ZoneArgs

    def __init__(self, args, handle):
        self.args = args

    def score(self, state, pod, node_info):
        return 0
'''


def spec(args: dict[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {"schedulerName": "mine", "plugins": {"score": {"enabled": [{"name": "Zone"}]}}}
    out["pluginConfig"] = [{"name": "NodeResourcesFit", "args": {}}]
    if args is not None:
        out["pluginConfig"].append({"name": "Zone", "args": args})
    return out


@pytest.fixture
def registry(write: Callable[[str, str], Path]):  # type: ignore[no-untyped-def]
    return load(in_tree_registry(), [str(write("zone.py", ARGS_PLUGIN))], entry_points=False).registry


@pytest.mark.parametrize("args, path, detail", [
    ({"weightOfGold": 101}, "spec.pluginConfig[1].args.weightOfGold", "Input should be less than or equal to 100"),
    ({"weightOfGold": "lots"}, "spec.pluginConfig[1].args.weightOfGold",
     "Input should be a valid integer, unable to parse string as an integer"),
    ({"mode": "Maybe"}, "spec.pluginConfig[1].args.mode", "Input should be 'Prefer' or 'Avoid'"),
])
def test_args_errors_name_the_field(registry, args: dict[str, Any], path: str, detail: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError) as err:
        build_framework(parse_spec(spec(args)), registry, SchedulerContext())
    assert (err.value.path, err.value.detail) == (path, detail)


@pytest.mark.parametrize("args, expected", [
    (None, {"label": "tier", "weightOfGold": 7, "mode": "Prefer"}),
    ({"mode": "Avoid"}, {"label": "tier", "weightOfGold": 7, "mode": "Avoid"}),
])
def test_defaults_come_from_the_model(registry, args: dict[str, Any] | None, expected: dict[str, Any]) -> None:  # type: ignore[no-untyped-def]
    fw = build_framework(parse_spec(spec(args)), registry, SchedulerContext())
    assert fw.plugins["Zone"].args.model_dump() == expected  # type: ignore[attr-defined]


def test_the_accepted_condition_names_the_field(registry) -> None:  # type: ignore[no-untyped-def]
    manager = ProfileManager(Scheduler(), registry)
    manager.apply("zone", {"metadata": {"name": "zone", "generation": 1}, "spec": spec({"weightOfGold": -1})})
    verdict = manager.verdicts["zone"]
    assert (verdict.accepted, verdict.reason) == (False, "Invalid")
    assert verdict.message == "spec.pluginConfig[1].args.weightOfGold: Input should be greater than or equal to 0"
