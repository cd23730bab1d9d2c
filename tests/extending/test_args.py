"""A plugin's args_model validates its pluginConfig args as the in-tree plugins' are: errors name
spec.pluginConfig[i].args.<field> in simulate and in the Accepted condition; defaults come from
the model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubeberth.config import ConfigError, parse_spec
from kubeberth.config.args import strict_args_model
from kubeberth.framework import SchedulerContext
from kubeberth.framework.registry import Registry
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


# A field the plugin's model does not declare is refused as the in-tree plugins' are, whatever the
# model's own `extra` (pydantic's default, "ignore", drops it silently; "allow" keeps it), at every
# level of nested models; the author's classes are left as written.
LOOSE_PLUGIN = '''
from pydantic import BaseModel, ConfigDict
from kubeberth.framework import ScorePlugin


class Band(BaseModel):
    {config}
    low: int = 0
    high: int = 100


class Pricing(BaseModel):
    {config}
    label: str = "cost"
    band: Band = Band()
    bands: list[Band] = []
    named: dict[str, Band] = {{}}
    maybe: Band | None = None


class CostArgs(BaseModel):
    {config}
    annotation: str = "gpu"
    pricing: Pricing = Pricing()


class Cost(ScorePlugin):
    name = "Cost"
    args_model = CostArgs

    def __init__(self, args, handle):
        self.args = args

    def score(self, state, pod, node_info):
        return 0
'''

CONFIGS = {"plain": "", "ignore": 'model_config = ConfigDict(extra="ignore")',
           "allow": 'model_config = ConfigDict(extra="allow")', "forbid": 'model_config = ConfigDict(extra="forbid")'}


def cost_spec(args: dict[str, Any]) -> dict[str, Any]:
    return {"schedulerName": "mine", "plugins": {"score": {"enabled": [{"name": "Cost"}]}},
            "pluginConfig": [{"name": "NodeResourcesFit", "args": {}}, {"name": "Cost", "args": args}]}


@pytest.fixture(params=list(CONFIGS))
def config(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def loose(config: str, write: Callable[[str, str], Path]) -> Registry:
    source = LOOSE_PLUGIN.format(config=CONFIGS[config])
    return load(in_tree_registry(), [str(write("cost.py", source))], entry_points=False).registry


@pytest.mark.parametrize("args, path", [
    ({"colour": "red"}, "spec.pluginConfig[1].args.colour"),
    ({"pricing": {"lable": "x"}}, "spec.pluginConfig[1].args.pricing.lable"),
    ({"pricing": {"band": {"hi": 5}}}, "spec.pluginConfig[1].args.pricing.band.hi"),
    ({"pricing": {"bands": [{}, {"lo": 1}]}}, "spec.pluginConfig[1].args.pricing.bands[1].lo"),
    ({"pricing": {"named": {"gpu": {"top": 1}}}}, "spec.pluginConfig[1].args.pricing.named.gpu.top"),
    ({"pricing": {"maybe": {"mid": 1}}}, "spec.pluginConfig[1].args.pricing.maybe.mid"),
], ids=["top", "nested", "twice-nested", "in-a-list", "in-a-map", "optional"])
def test_an_undeclared_field_is_refused_at_every_level(loose: Registry, args: dict[str, Any], path: str) -> None:
    with pytest.raises(ConfigError) as err:
        build_framework(parse_spec(cost_spec(args)), loose, SchedulerContext())
    assert (err.value.path, err.value.detail) == (path, "Extra inputs are not permitted")


def test_the_plugin_gets_its_own_models_and_they_stay_as_written(loose: Registry, config: str) -> None:
    args = {"annotation": "tpu", "pricing": {"band": {"high": 9}, "bands": [{"low": 1}]}}
    fw = build_framework(parse_spec(cost_spec(args)), loose, SchedulerContext())
    got = fw.plugins["Cost"].args  # type: ignore[attr-defined]
    cost = loose.get("Cost")
    assert cost is not None and cost.args_model is not None
    model = cost.args_model
    assert type(got) is model and got == model.model_validate(args)
    assert type(got.pricing.bands[0]).__qualname__ == "Band" and got.pricing.band.high == 9
    assert got.model_extra in (None, {})
    assert model.model_config.get("extra") == (None if config == "plain" else config)  # the author's class untouched


def test_errors_of_the_model_itself_still_name_their_field(loose: Registry) -> None:
    with pytest.raises(ConfigError) as err:
        build_framework(parse_spec(cost_spec({"pricing": {"band": {"low": "cheap"}}})), loose, SchedulerContext())
    assert err.value.path == "spec.pluginConfig[1].args.pricing.band.low"


def test_an_undeclared_field_refuses_the_live_profile_and_the_previous_stays(loose: Registry) -> None:
    sched = Scheduler()
    manager = ProfileManager(sched, loose)
    manager.apply("cost", {"metadata": {"name": "cost", "generation": 1}, "spec": cost_spec({"annotation": "tpu"})})
    assert manager.verdicts["cost"].accepted
    running = sched.profiles["mine"]
    manager.apply("cost", {"metadata": {"name": "cost", "generation": 2},
                           "spec": cost_spec({"annotation": "tpu", "pricing": {"colour": "red"}})})
    verdict = manager.verdicts["cost"]
    assert (verdict.accepted, verdict.reason) == (False, "Invalid")
    assert verdict.message == ("spec.pluginConfig[1].args.pricing.colour: Extra inputs are not permitted "
                               "(the previous version stays in force)")
    assert sched.profiles["mine"] is running and running.plugins["Cost"].args.annotation == "tpu"  # type: ignore[attr-defined]


def test_the_in_tree_args_models_are_strict_already() -> None:
    """Their models forbid extra fields at every level: they are validated once, by themselves."""
    models = {spec.args_model for spec in in_tree_registry().specs() if spec.args_model is not None}
    assert models and all(strict_args_model(m) is m for m in models)
