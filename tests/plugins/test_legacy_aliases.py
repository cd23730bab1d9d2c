"""The older Policy API names, accepted in a SchedulingProfile as aliases of today's plugins."""

from __future__ import annotations

import pytest

from kubeberth.config import ConfigError
from kubeberth.plugins import in_tree_registry
from kubeberth.plugins.legacy_aliases import ALIASES, PREDICATES, PRIORITIES
from tests.builders import make_node
from tests.doubles import handle

NODES = [make_node("n")]

PREDICATE_ALIASES = [
    ("PodFitsResources", "NodeResourcesFit"),
    ("PodFitsHostPorts", "NodePorts"),
    ("HostName", "NodeName"),
    ("MatchNodeSelector", "NodeAffinity"),
    ("NoDiskConflict", "VolumeRestrictions"),
    ("NoVolumeZoneConflict", "VolumeZone"),
    ("MaxEBSVolumeCount", "EBSLimits"),
    ("MaxGCEPDVolumeCount", "GCEPDLimits"),
    ("MaxCSIVolumeCountPred", "NodeVolumeLimits"),
    ("CheckVolumeBinding", "VolumeBinding"),
    ("PodToleratesNodeTaints", "TaintToleration"),
    ("MatchInterPodAffinity", "InterPodAffinity"),
    ("EvenPodsSpread", "PodTopologySpread"),
    ("CheckNodeUnschedulable", "NodeUnschedulable"),
    ("CheckNodeMemoryPressure", "CheckNodeMemoryPressure"),
    ("CheckNodeDiskPressure", "CheckNodeDiskPressure"),
]

PRIORITY_ALIASES = [
    ("LeastRequestedPriority", "NodeResourcesFit"),
    ("MostRequestedPriority", "NodeResourcesFit"),
    ("BalancedResourceAllocation", "NodeResourcesBalancedAllocation"),
    ("SelectorSpreadPriority", "SelectorSpread"),
    ("ServiceSpreadingPriority", "SelectorSpread"),
    ("ImageLocalityPriority", "ImageLocality"),
    ("NodeAffinityPriority", "NodeAffinity"),
    ("TaintTolerationPriority", "TaintToleration"),
    ("InterPodAffinityPriority", "InterPodAffinity"),
    ("EvenPodsSpreadPriority", "PodTopologySpread"),
]


@pytest.mark.parametrize(("old", "new"), PREDICATE_ALIASES, ids=[o for o, _ in PREDICATE_ALIASES])
def test_predicate_name_enables_the_filter(old: str, new: str) -> None:
    fw = handle(profile={"plugins": {"filter": {"enabled": [{"name": old}], "disabled": [{"name": "*"}]}}},
                       nodes=NODES)
    assert [p.name for p in fw.filter_plugins] == [new]


@pytest.mark.parametrize(("old", "new"), PRIORITY_ALIASES, ids=[o for o, _ in PRIORITY_ALIASES])
def test_priority_name_enables_the_score_plugin_with_its_weight(old: str, new: str) -> None:
    fw = handle(profile={"plugins": {"score": {"enabled": [{"name": old, "weight": 7}],
                                              "disabled": [{"name": "*"}]}}}, nodes=NODES)
    assert [p.name for p in fw.score_plugins] == [new]
    assert fw.score_weights == {new: 7}


@pytest.mark.parametrize(("old", "strategy"), [
    ("LeastRequestedPriority", "LeastAllocated"),
    ("MostRequestedPriority", "MostAllocated"),
])
def test_requested_priorities_preset_the_scoring_strategy(old: str, strategy: str) -> None:
    fw = handle(profile={"plugins": {"score": {"enabled": [{"name": old}]}}}, nodes=NODES)
    args = fw.plugins["NodeResourcesFit"].args  # type: ignore[attr-defined]
    assert args.scoringStrategy.type == strategy
    assert [(r.name, r.weight) for r in args.scoringStrategy.resources] == [("cpu", 1), ("memory", 1)]


def test_plugin_config_refines_preset_args() -> None:
    fw = handle(profile={
        "plugins": {"score": {"enabled": [{"name": "MostRequestedPriority"}]}},
        "pluginConfig": [{"name": "NodeResourcesFit", "args": {"ignoredResources": ["example.com/foo"]}}],
    }, nodes=NODES)
    args = fw.plugins["NodeResourcesFit"].args  # type: ignore[attr-defined]
    assert args.scoringStrategy.type == "MostAllocated"
    assert args.ignoredResources == ["example.com/foo"]


def test_plugin_config_under_an_old_name() -> None:
    fw = handle(profile={"pluginConfig": [{"name": "MaxEBSVolumeCount", "args": {"maxEBSVolumes": 5}}],
                        "plugins": {"filter": {"enabled": [{"name": "MaxEBSVolumeCount"}]}}}, nodes=NODES)
    assert fw.plugins["EBSLimits"].args.maxEBSVolumes == 5  # type: ignore[attr-defined]


def test_least_and_most_requested_conflict() -> None:
    with pytest.raises(ConfigError) as err:
        handle(profile={"plugins": {"score": {"enabled": [{"name": "LeastRequestedPriority"},
                                                         {"name": "MostRequestedPriority"}]}}})
    assert "MostRequestedPriority" in str(err.value) and "NodeResourcesFit" in str(err.value)


def test_filter_and_score_names_of_one_plugin_combine() -> None:
    fw = handle(profile={"plugins": {"filter": {"enabled": [{"name": "PodFitsResources"}]},
                                    "score": {"enabled": [{"name": "MostRequestedPriority", "weight": 2}]}}},
                       nodes=NODES)
    assert fw.plugins["NodeResourcesFit"].args.scoringStrategy.type == "MostAllocated"  # type: ignore[attr-defined]
    assert fw.score_weights["NodeResourcesFit"] == 2


def test_old_name_disables_a_default_plugin() -> None:
    fw = handle(profile={"plugins": {"filter": {"disabled": [{"name": "NoVolumeZoneConflict"}]},
                                    "score": {"disabled": [{"name": "ImageLocalityPriority"}]}}}, nodes=NODES)
    assert "VolumeZone" not in [p.name for p in fw.filter_plugins]
    assert "ImageLocality" not in [p.name for p in fw.score_plugins]
    assert "VolumeZone" in [p.name for p in fw.pre_filter_plugins]


def test_every_alias_targets_a_registered_plugin() -> None:
    registry = in_tree_registry()
    for alias in ALIASES:
        assert alias.target in registry, alias
        assert registry.alias(alias.name) == alias
    for old, targets in PREDICATES.items():
        for t in targets or ():
            assert t in registry, (old, t)
    for old, entry in PRIORITIES.items():
        if entry is not None:
            assert entry[0] in registry, old


def test_the_issue_names_are_all_accepted() -> None:
    registry = in_tree_registry()
    names = ["PodFitsResources", "PodFitsHostPorts", "HostName", "MatchNodeSelector", "NoDiskConflict",
             "NoVolumeZoneConflict", "MaxEBSVolumeCount", "MaxGCEPDVolumeCount", "CheckNodeMemoryPressure",
             "CheckNodeDiskPressure", "LeastRequestedPriority", "MostRequestedPriority",
             "BalancedResourceAllocation", "SelectorSpreadPriority", "ImageLocalityPriority",
             "NodeAffinityPriority", "TaintTolerationPriority", "InterPodAffinityPriority"]
    for n in names:
        assert n in registry or registry.alias(n) is not None, n
