"""The placement extension points (PlacementGenerate, PlacementScore) as upstream's framework has
them: profile plugin sets like the other points (multiPoint expansion, enabled/disabled, weights
from the point's own set then multiPoint's), the default profile with the gates, and the runners
(only the first generator, the parent placement without one, "no feasible placements found",
normalisation, the range check and the weights, with upstream's words)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from kubeberth import features
from kubeberth.config import ConfigError
from kubeberth.features import FeatureGates
from kubeberth.framework import (
    CycleState,
    PlacementGeneratePlugin,
    PlacementScorePlugin,
    PluginError,
    Status,
)
from kubeberth.framework.status import Code
from kubeberth.framework.types import Placement, PlacementScore, PodGroupAssignments
from kubeberth.model import PodGroup
from kubeberth.plugins import in_tree_registry
from tests.builders import make_node, node_info
from tests.doubles import handle

TAWS = FeatureGates.parse("GenericWorkload=true,TopologyAwareWorkloadScheduling=true")
GROUP = PodGroup({"metadata": {"name": "g", "namespace": "default"}, "spec": {"schedulingPolicy": {"basic": {}}}})


def points(fw: Any) -> tuple[list[str], list[str], dict[str, int]]:
    return ([p.name for p in fw.placement_generate_plugins], [p.name for p in fw.placement_score_plugins],
            fw.placement_score_weights)


@pytest.mark.parametrize(("gates", "want"), [
    pytest.param(TAWS, (["TopologyPlacementGenerator"], ["NodeResourcesFit", "PodGroupPodsCount"],
                        {"NodeResourcesFit": 1, "PodGroupPodsCount": 1}), id="taws"),
    # NodeResourcesFit is a PlacementScore plugin whatever the gates (as upstream's Fit), unused without them
    pytest.param(FeatureGates.parse("GenericWorkload=true"), ([], ["NodeResourcesFit"], {"NodeResourcesFit": 1}),
                 id="gangs-only"),
])
def test_the_default_profile_follows_the_gates(gates: FeatureGates, want: Any) -> None:
    with features.override(gates):
        assert points(handle(profile={})) == want


@pytest.mark.parametrize(("plugins", "want"), [
    # the point's own entry overrides multiPoint's (and comes first, as upstream's expansion)
    pytest.param({"placementScore": {"enabled": [{"name": "PodGroupPodsCount", "weight": 5}]}},
                 (["TopologyPlacementGenerator"], ["PodGroupPodsCount", "NodeResourcesFit"],
                  {"NodeResourcesFit": 1, "PodGroupPodsCount": 5}), id="point-weight-over-multipoint"),
    pytest.param({"multiPoint": {"enabled": [{"name": "NodeResourcesFit", "weight": 3}]}},
                 (["TopologyPlacementGenerator"], ["NodeResourcesFit", "PodGroupPodsCount"],
                  {"NodeResourcesFit": 3, "PodGroupPodsCount": 1}), id="multipoint-weight"),
    # a Score weight is not a PlacementScore weight (upstream weighs each point from its own set)
    pytest.param({"score": {"enabled": [{"name": "NodeResourcesFit", "weight": 4}]}},
                 (["TopologyPlacementGenerator"], ["NodeResourcesFit", "PodGroupPodsCount"],
                  {"NodeResourcesFit": 1, "PodGroupPodsCount": 1}), id="score-weight-apart"),
    pytest.param({"placementScore": {"disabled": [{"name": "NodeResourcesFit"}]},
                  "placementGenerate": {"disabled": [{"name": "*"}]}},
                 ([], ["PodGroupPodsCount"], {"PodGroupPodsCount": 1}), id="disabled"),
])
def test_profiles_configure_the_points(plugins: dict[str, Any], want: Any) -> None:
    with features.override(TAWS):
        assert points(handle(profile={"plugins": plugins})) == want


def test_a_plugin_that_is_no_placement_score_plugin_is_refused() -> None:
    with features.override(TAWS), pytest.raises(ConfigError) as err:
        handle(profile={"plugins": {"placementScore": {"enabled": [{"name": "TaintToleration"}]}}})
    assert err.value.path == "spec.plugins.placementScore.enabled[0].name"
    assert "does not extend placementScore plugin" in str(err.value)


# ---- the runners, with plugins of one's own ---------------------------------------------------

class Halves(PlacementGeneratePlugin):
    """Two placements: the first half of the nodes and the rest."""

    name = "Halves"

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        pass

    def generate_placements(self, state: CycleState, pod_group: PodGroup, parent: Placement
                            ) -> tuple[list[Placement], Status | None]:
        half = len(parent.nodes) // 2
        return [Placement("first", parent.nodes[:half]), Placement("rest", parent.nodes[half:])], None


class Nothing(Halves):
    name = "Nothing"

    def generate_placements(self, state: CycleState, pod_group: PodGroup, parent: Placement
                            ) -> tuple[list[Placement], Status | None]:
        return [], None


class Fails(Halves):
    name = "Fails"

    def generate_placements(self, state: CycleState, pod_group: PodGroup, parent: Placement
                            ) -> tuple[list[Placement], Status | None]:
        return [], Status.error("no rack map")


class Raises(Halves):
    name = "Raises"

    def generate_placements(self, state: CycleState, pod_group: PodGroup, parent: Placement
                            ) -> tuple[list[Placement], Status | None]:
        raise RuntimeError("boom")


class ByNodes(PlacementScorePlugin):
    """The number of nodes, times `factor`; normalised to 0..100 against the largest when `normalise`."""

    name = "ByNodes"
    factor: ClassVar[int] = 1
    has_normalize_placement_score = True

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        pass

    def score_placement(self, state: CycleState, pod_group: PodGroup, assignments: PodGroupAssignments) -> int:
        return len(assignments.nodes) * self.factor

    def normalize_placement_scores(self, state: CycleState, pod_group: PodGroup,
                                   scores: list[PlacementScore]) -> Status | None:
        best = max(s.score for s in scores)
        for s in scores:
            s.score = s.score * 100 // best
        return None


class Raw(ByNodes):
    """Unnormalised: 50 per node (out of range with three nodes)."""

    name = "Raw"
    factor = 50
    has_normalize_placement_score = False


class Broken(ByNodes):
    name = "Broken"

    def score_placement(self, state: CycleState, pod_group: PodGroup, assignments: PodGroupAssignments) -> int:
        raise PluginError("cannot score")


def framework(plugins: dict[str, Any]) -> Any:
    reg = in_tree_registry()
    for cls in (Halves, Nothing, Fails, Raises, ByNodes, Raw, Broken):
        reg.register(cls)
    infos = [node_info(make_node(f"n{i}")) for i in range(5)]
    with features.override(TAWS):
        return handle(node_infos=infos, profile={"plugins": {
            point: {"disabled": [{"name": "*"}], **plugins.get(point, {})}
            for point in ("placementGenerate", "placementScore")}}, registry=reg)


def test_without_a_generator_the_parent_placement() -> None:
    fw = framework({})
    placements, status = fw.run_placement_generate(CycleState(), GROUP, list(fw.snapshot.node_infos))
    assert status is None
    assert [(p.name, len(p.nodes)) for p in placements] == [("", 5)]


def test_only_the_first_generator_runs() -> None:
    fw = framework({"placementGenerate": {"enabled": [{"name": "Halves"}, {"name": "Nothing"}]}})
    placements, status = fw.run_placement_generate(CycleState(), GROUP, list(fw.snapshot.node_infos))
    assert status is None
    assert [(p.name, p.node_names()) for p in placements] == [("first", ["n0", "n1"]), ("rest", ["n2", "n3", "n4"])]


@pytest.mark.parametrize(("generator", "code", "message"), [
    pytest.param("Nothing", Code.UNSCHEDULABLE, "no feasible placements found", id="none"),
    pytest.param("Fails", Code.ERROR, "no rack map", id="fails"),
    pytest.param("Raises", Code.ERROR, "boom", id="raises"),
])
def test_generator_failures_name_the_plugin(generator: str, code: Code, message: str) -> None:
    fw = framework({"placementGenerate": {"enabled": [{"name": generator}]}})
    placements, status = fw.run_placement_generate(CycleState(), GROUP, list(fw.snapshot.node_infos))
    assert placements == [] and status is not None
    assert (status.code, status.plugin) == (code, generator)
    assert message in status.message()


def halves(fw: Any) -> list[PodGroupAssignments]:
    nodes = list(fw.snapshot.node_infos)
    return [PodGroupAssignments(Placement("first", nodes[:2]), []),
            PodGroupAssignments(Placement("rest", nodes[2:]), [])]


def test_scores_are_normalised_weighted_and_summed() -> None:
    fw = framework({"placementScore": {"enabled": [{"name": "ByNodes", "weight": 3}]}})
    scores, status = fw.run_placement_score(CycleState(), GROUP, halves(fw))
    assert status is None
    assert [(s.placement.name, s.scores, s.total) for s in scores] == [
        ("first", {"ByNodes": 66 * 3}, 198), ("rest", {"ByNodes": 100 * 3}, 300)]


@pytest.mark.parametrize(("plugin", "message"), [
    pytest.param("Raw", 'applying score defaultWeights on PlacementScore plugins: plugin "Raw" returns an invalid '
                        "score 150, it should in the range of [0, 100] after normalizing", id="out-of-range"),
    pytest.param("Broken", 'running PlacementScore plugins: plugin "Broken" failed with: cannot score', id="fails"),
])
def test_score_failures_are_errors(plugin: str, message: str) -> None:
    fw = framework({"placementScore": {"enabled": [{"name": plugin}]}})
    scores, status = fw.run_placement_score(CycleState(), GROUP, halves(fw))
    assert scores == [] and status is not None
    assert (status.code, status.message()) == (Code.ERROR, message)
