"""Traps a newcomer writing a plugin distribution met (issue 37): normalisation that needed a
hidden flag, a constructor the framework could not call, a `--plugins` module in the current
directory, and a broken entry point of another distribution spoiling the listing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
import yaml

import kubeberth
from kubeberth import features
from kubeberth.cli import main
from kubeberth.config import parse_spec
from kubeberth.framework import (
    CycleState,
    NodeScore,
    PlacementScorePlugin,
    SchedulerContext,
    ScorePlugin,
    Status,
)
from kubeberth.framework.types import PlacementScore, PodGroupAssignments
from kubeberth.model import Pod, PodGroup
from kubeberth.plugins import PluginLoadError, in_tree_registry, register, use_plugins
from kubeberth.plugins._listing import listing
from kubeberth.plugins._loading import load
from kubeberth.profile import build_framework
from kubeberth.scheduler.algorithm import schedule_pod
from tests.builders import make_node, make_pod
from tests.doubles import handle

from .conftest import score_plugin

# --- 1. a plugin that defines normalize_score normalises ------------------------------------------

COSTS = {"n1": 200, "n2": 50, "n3": 120}


class CostAware(ScorePlugin):
    """The newcomer's Score: the node's cost (out of range), normalised so the cheapest gets 100."""

    name = "CostAware"

    def score(self, state: CycleState, pod: Pod, node_info: Any) -> int:
        return int(node_info.node.labels["cost"])

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        top = max(s.score for s in scores) or 1
        for s in scores:
            s.score = 100 - s.score * 100 // top
        return None


class CostAwareVectorised(CostAware):
    """Only the vectorised hook besides the per-node one it inherits."""

    name = "CostAwareVectorised"
    calls: ClassVar[list[int]] = []

    def normalize_all(self, state: CycleState, pod: Pod, nodes: Any, scores: np.ndarray) -> np.ndarray | None:
        self.calls.append(len(scores))
        return np.asarray(100 - scores * 100 // max(int(scores.max()), 1), dtype=np.int64)


class RawCost(CostAware):
    """Says explicitly that it keeps its raw scores (they are in range here)."""

    name = "RawCost"
    has_normalize = False

    def score(self, state: CycleState, pod: Pod, node_info: Any) -> int:
        return int(node_info.node.labels["cost"]) // 2


class RawCostNormalisedAgain(RawCost):
    """Its parent said False; defining normalize_score again is nearer, so it normalises."""

    name = "RawCostNormalisedAgain"

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        for s in scores:
            s.score = 7
        return None


def score_framework(plugin: type[ScorePlugin], vectorise: bool) -> Any:
    reg = in_tree_registry()
    reg.register(plugin)
    nodes = [make_node(n, labels={"cost": str(c)}) for n, c in COSTS.items()]
    spec = {"plugins": {"multiPoint": {"disabled": [{"name": "*"}]},
                        "queueSort": {"enabled": [{"name": "PrioritySort"}]},
                        "filter": {"enabled": [{"name": "NodeUnschedulable"}]},  # (the vectorised walk)
                        "bind": {"enabled": [{"name": "DefaultBinder"}]},
                        "score": {"enabled": [{"name": plugin.name, "weight": 2}]}}}
    return handle(nodes, profile=spec, registry=reg, vectorise=vectorise)


def totals(plugin: type[ScorePlugin], vectorise: bool) -> dict[str, int]:
    fw = score_framework(plugin, vectorise)
    result = asyncio_run(schedule_pod(fw, CycleState(), make_pod()))
    return {s.name: s.total for s in result.scores}


def asyncio_run(coro: Any) -> Any:
    import asyncio

    return asyncio.run(coro)


@pytest.mark.parametrize("vectorise", [False, True], ids=["per-node", "vectorised"])
def test_defining_normalize_score_is_enough(vectorise: bool) -> None:
    assert CostAware.has_normalize is True
    # 100 - cost * 100 // 200, times the weight 2.
    assert totals(CostAware, vectorise) == {"n1": 0, "n2": 150, "n3": 80}


def test_defining_normalize_all_is_enough_too() -> None:
    class OnlyVector(ScorePlugin):
        name = "OnlyVector"

        def normalize_all(self, state: CycleState, pod: Pod, nodes: Any, scores: np.ndarray) -> np.ndarray | None:
            return scores

    assert OnlyVector.has_normalize is True
    assert CostAwareVectorised.has_normalize is True
    CostAwareVectorised.calls.clear()
    assert totals(CostAwareVectorised, True) == {"n1": 0, "n2": 150, "n3": 80}
    assert CostAwareVectorised.calls == [3]


@pytest.mark.parametrize("vectorise", [False, True], ids=["per-node", "vectorised"])
def test_an_explicit_flag_is_honoured(vectorise: bool) -> None:
    assert RawCost.has_normalize is False
    assert totals(RawCost, vectorise) == {"n1": 200, "n2": 50, "n3": 120}  # raw (cost // 2) times 2
    assert RawCostNormalisedAgain.has_normalize is True
    assert totals(RawCostNormalisedAgain, vectorise) == {"n1": 14, "n2": 14, "n3": 14}


def test_a_plugin_without_normalize_score_keeps_its_raw_scores() -> None:
    class Plain(ScorePlugin):
        name = "Plain"

    class PlainChild(Plain):
        name = "PlainChild"

    assert Plain.has_normalize is False and PlainChild.has_normalize is False


def test_in_tree_plugins_normalise_as_before() -> None:
    """Upstream's plugins whose ScoreExtensions() is not nil (and PlacementScore's normalisers)."""
    reg = in_tree_registry()
    scores = {s.name: s.cls.has_normalize for s in reg.specs() if issubclass(s.cls, ScorePlugin)}
    assert {n for n, v in scores.items() if v} == {
        "DynamicResources", "InterPodAffinity", "NodeAffinity", "PodTopologySpread", "SelectorSpread",
        "TaintToleration"}
    assert {n for n, v in scores.items() if not v} == {
        "ImageLocality", "NodeResourcesBalancedAllocation", "NodeResourcesFit", "VolumeBinding"}
    placement = {s.name: s.cls.has_normalize_placement_score for s in reg.specs()
                 if issubclass(s.cls, PlacementScorePlugin)}
    assert placement == {"NodeResourcesFit": False, "PodGroupPodsCount": True}


class ByCount(PlacementScorePlugin):
    """A placement's pod count times 60 (out of range for two), normalised against the largest."""

    name = "ByCount"

    def score_placement(self, state: CycleState, pod_group: PodGroup, assignments: PodGroupAssignments) -> int:
        return len(assignments.placement.nodes) * 60

    def normalize_placement_scores(self, state: CycleState, pod_group: PodGroup,
                                   scores: list[PlacementScore]) -> Status | None:
        best = max(s.score for s in scores)
        for s in scores:
            s.score = s.score * 100 // best
        return None


def test_defining_normalize_placement_scores_is_enough() -> None:
    from kubeberth.features import FeatureGates
    from kubeberth.framework.types import Placement

    assert ByCount.has_normalize_placement_score is True
    reg = in_tree_registry()
    reg.register(ByCount)
    gates = FeatureGates.parse("GenericWorkload=true,TopologyAwareWorkloadScheduling=true")
    with features.override(gates):
        fw = handle([make_node(f"n{i}") for i in range(3)], registry=reg, profile={"plugins": {
            point: {"disabled": [{"name": "*"}]} for point in ("placementGenerate", "placementScore")} | {
            "placementScore": {"disabled": [{"name": "*"}], "enabled": [{"name": "ByCount"}]}}})
    nodes = list(fw.snapshot.node_infos)
    group = PodGroup({"metadata": {"name": "g", "namespace": "default"}, "spec": {"schedulingPolicy": {"basic": {}}}})
    scores, status = fw.run_placement_score(CycleState(), group, [
        PodGroupAssignments(Placement("one", nodes[:1]), []), PodGroupAssignments(Placement("two", nodes[1:]), [])])
    assert status is None
    assert [(s.placement.name, s.total) for s in scores] == [("one", 50), ("two", 100)]


NODES = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"cost": cost}},
          "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}
         for name, cost, cpu in (("a-dear", "200", "8"), ("b-cheap", "50", "2"), ("c-dear", "120", "8"))]
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
       "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1"}}}]}}
COST_AWARE = '''
from kubeberth.framework import ScorePlugin


class CostAware(ScorePlugin):
    name = "CostAware"

    def score(self, state, pod, node_info):
        return int(node_info.node.labels["cost"])

    def normalize_score(self, state, pod, scores):
        top = max(s.score for s in scores) or 1
        for s in scores:
            s.score = 100 - s.score * 100 // top
'''


def test_the_newcomers_plugin_through_simulate(write: Callable[[str, str], Path], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """No __init__, no has_normalize: the pod goes to the cheapest node (NodeResourcesFit alone
    would send it elsewhere: it is the smallest)."""
    path = write("cost.py", COST_AWARE)
    prof = {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": "default"},
            "spec": {"schedulerName": "default-scheduler",
                     "plugins": {"score": {"enabled": [{"name": "CostAware", "weight": 50}]}}}}
    files = tmp_path / "cluster.yaml"
    files.write_text(yaml.safe_dump_all([*NODES, POD, prof]))
    assert main(["simulate", str(files), "--plugins", str(path), "-o", "json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["pods"][0]["node"] == "b-cheap", out.err


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


# --- 8a. --plugins MODULE from the module's own directory ----------------------------------------

def kubeberth_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The console script (not `python -m`, which would put the current directory on the path),
    with this tree's kubeberth first and nothing else on PYTHONPATH."""
    script = Path(sys.executable).parent / "kubeberth"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(Path(kubeberth.__file__).resolve().parent.parent)
    return subprocess.run([str(script), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_a_module_in_the_current_directory_loads_as_python_m_would(tmp_path: Path) -> None:
    (tmp_path / "cost_aware.py").write_text(COST_AWARE)
    pkg = tmp_path / "costpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "plugin.py").write_text(COST_AWARE.replace('"CostAware"', '"CostAwarePkg"'))
    done = kubeberth_cli(tmp_path, "plugins", "-o", "json", "--plugins", "cost_aware", "--plugins", "costpkg.plugin")
    assert done.returncode == 0, done.stderr
    found = {p["name"]: p["origin"] for p in json.loads(done.stdout)["plugins"]}
    assert found["CostAware"] == "module cost_aware"
    assert found["CostAwarePkg"] == "module costpkg.plugin"


def test_a_module_found_nowhere_says_where_it_was_looked_for(tmp_path: Path) -> None:
    with pytest.raises(PluginLoadError) as err:
        load(in_tree_registry(), ["no_such_plugin_module_anywhere"], entry_points=False)
    assert str(err.value) == ("--plugins no_such_plugin_module_anywhere: no such file, directory or module (looked "
                              f"on the Python path and in the current directory, {os.getcwd()})")


# --- 8b. a broken entry point of another distribution affects its own entries only ---------------

BROKEN_ENTRIES = {
    "its entry's name": ({"otherplug": "import no_such_dependency\n"}, {"CostAware": "otherplug:Thing"}),
    "its module's names": ({"otherplug": "import no_such_dependency\n" + score_plugin("CostAware")},
                           {"Other": "otherplug:CostAware"}),
    "a malformed value": ({}, {"Other": "other-plug:Thing"}),
    "a package that raises": ({"otherpkg.__init__": "raise RuntimeError('boom')\n", "otherpkg.sub": ""},
                              {"Other": "otherpkg.sub:Thing"}),
}


@pytest.mark.parametrize("modules, entries", list(BROKEN_ENTRIES.values()), ids=list(BROKEN_ENTRIES))
def test_a_broken_entry_point_leaves_another_distributions_plugin_available(
        install: Callable[..., Path], modules: dict[str, str], entries: dict[str, str]) -> None:
    install("costaware", "1.0", {"costaware": score_plugin("CostAware")}, {"CostAware": "costaware:CostAware"})
    install("other", "2.0", modules, entries)
    got = load(in_tree_registry(), [])
    assert got.registry.get("CostAware") is not None
    data = listing(got)
    assert "CostAware" in [p["name"] for p in data["plugins"]]
    broken = [f for f in data["unavailable"] if f["origin"].startswith("distribution other 2.0")]
    assert len(broken) == 1  # the broken entry is still told
    assert all("CostAware" not in f["names"] for f in data["unavailable"])
    build_framework(parse_spec({"schedulerName": "mine", "plugins": {"score": {"enabled": [{"name": "CostAware"}]}}}),
                    got.registry, SchedulerContext())


def test_a_distribution_whose_entry_points_cannot_be_read_fails_alone(install: Callable[..., Path]) -> None:
    install("costaware", "1.0", {"costaware": score_plugin("CostAware")}, {"CostAware": "costaware:CostAware"})
    site = install("other", "2.0", {}, {})
    (site / "other-2.0.dist-info" / "entry_points.txt").write_text("[kubeberth.plugins]\nno equals sign here\n")
    got = load(in_tree_registry(), [])
    assert got.registry.get("CostAware") is not None
    [failure] = [str(f) for f in got.failures if "other" in f.origin]
    assert failure.startswith("distribution other 2.0: its entry_points.txt cannot be read: ")
