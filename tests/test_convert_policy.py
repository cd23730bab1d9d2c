"""`kubeberth convert-policy`: old scheduler Policy files to SchedulingProfiles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeberth.cli import convert_policy_main as main
from kubeberth.config import parse_profile_object
from kubeberth.config.defaults import DEFAULT_MULTI_POINT
from kubeberth.framework import Framework, SchedulerContext
from kubeberth.plugins import in_tree_registry
from kubeberth.profile import build_framework
from kubeberth.whatif.convert_policy import PolicyError, convert_policy

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "policy.json"


def build(profile: dict[str, Any]) -> Framework:
    _, spec = parse_profile_object(profile)
    return build_framework(spec, in_tree_registry(), SchedulerContext())


def names(plugins: list[Any]) -> list[str]:
    return [p.name for p in plugins]


def test_sample_policy_of_the_extender_design_doc() -> None:
    policy = json.loads(EXAMPLE.read_text())
    profile, warnings = convert_policy(policy)
    assert warnings == []
    assert profile["apiVersion"] == "kubeberth.io/v1alpha1" and profile["kind"] == "SchedulingProfile"
    fw = build(profile)
    assert names(fw.filter_plugins) == ["NodeUnschedulable", "NodeName", "NodeAffinity", "NodeResourcesFit",
                                        "TaintToleration"]
    assert names(fw.score_plugins) == ["NodeResourcesFit"]
    assert fw.score_weights == {"NodeResourcesFit": 1}
    assert fw.plugins["NodeResourcesFit"].args.scoringStrategy.type == "LeastAllocated"  # type: ignore[attr-defined]
    # Plugins the policy did not list do not run at all in the scheduling cycle.
    for absent in ("VolumeBinding", "VolumeRestrictions", "PodTopologySpread", "InterPodAffinity", "ImageLocality"):
        assert absent not in names(fw.pre_filter_plugins + fw.filter_plugins + fw.pre_score_plugins
                                   + fw.score_plugins + fw.reserve_plugins + fw.pre_bind_plugins), absent
    # What the policy does not govern stays as in the default profile.
    assert names(fw.queue_sort_plugins) == ["PrioritySort"]
    assert names(fw.bind_plugins) == ["DefaultBinder"]
    assert names(fw.post_filter_plugins) == ["DynamicResources", "DefaultPreemption"]
    assert profile["spec"]["extenders"] == [
        {"urlPrefix": "http://127.0.0.1:12345/api/scheduler", "filterVerb": "filter", "enableHTTPS": False}]
    _, spec = parse_profile_object(profile)
    assert spec.extenders[0].filterVerb == "filter"


def test_policy_without_predicates_keeps_the_default_filters() -> None:
    profile, warnings = convert_policy({"kind": "Policy", "apiVersion": "v1",
                                        "priorities": [{"name": "MostRequestedPriority", "weight": 3}]})
    assert warnings == []
    fw = build(profile)
    default = build({"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile",
                     "metadata": {"name": "d"}, "spec": {}})
    assert names(fw.filter_plugins) == names(default.filter_plugins)
    assert names(fw.score_plugins) == ["NodeResourcesFit"]
    assert fw.score_weights == {"NodeResourcesFit": 3}


def test_policy_without_priorities_keeps_the_default_scores() -> None:
    profile, _ = convert_policy({"predicates": [{"name": "PodFitsResources"}]})
    fw = build(profile)
    # VolumeBinding has no weight in the default set but scores (StorageCapacityScoring), weight 1.
    default_scores = [n for n, w in DEFAULT_MULTI_POINT if w is not None or n == "VolumeBinding"]
    assert names(fw.score_plugins) == default_scores


def test_empty_lists_leave_only_mandatory_filters_and_no_scores() -> None:
    profile, warnings = convert_policy({"predicates": [], "priorities": []})
    assert warnings == []
    fw = build(profile)
    assert names(fw.filter_plugins) == ["NodeUnschedulable", "TaintToleration"]
    assert fw.score_plugins == []


PREDICATE_TABLE = [
    ("PodFitsHostPorts", ["NodePorts"]),
    ("HostName", ["NodeName"]),
    ("NoDiskConflict", ["VolumeRestrictions"]),
    ("NoVolumeZoneConflict", ["VolumeZone"]),
    ("MaxEBSVolumeCount", ["EBSLimits"]),
    ("MaxGCEPDVolumeCount", ["GCEPDLimits"]),
    ("MaxCSIVolumeCountPred", ["NodeVolumeLimits"]),
    ("CheckVolumeBinding", ["VolumeBinding"]),
    ("MatchInterPodAffinity", ["InterPodAffinity"]),
    ("CheckNodeMemoryPressure", ["CheckNodeMemoryPressure"]),
    ("CheckNodeDiskPressure", ["CheckNodeDiskPressure"]),
    ("CheckNodeCondition", ["CheckNodeCondition"]),
    ("GeneralPredicates", ["NodeName", "NodePorts", "NodeAffinity", "NodeResourcesFit"]),
]


@pytest.mark.parametrize(("predicate", "plugins"), PREDICATE_TABLE, ids=[p for p, _ in PREDICATE_TABLE])
def test_each_predicate(predicate: str, plugins: list[str]) -> None:
    profile, warnings = convert_policy({"predicates": [{"name": predicate}], "priorities": []})
    assert warnings == []
    fw = build(profile)
    got = [n for n in names(fw.filter_plugins) if n not in ("NodeUnschedulable", "TaintToleration")]
    assert sorted(got) == sorted(plugins)
    for p in fw.filter_plugins:
        # A filter with a PreFilter runs it too.
        if "preFilter" in in_tree_registry().get(p.name).points():  # type: ignore[union-attr]
            assert p.name in names(fw.pre_filter_plugins)


def test_volume_binding_kept_at_reserve_and_prebind_only_with_its_predicate() -> None:
    fw = build(convert_policy({"predicates": [{"name": "CheckVolumeBinding"}]})[0])
    assert "VolumeBinding" in names(fw.reserve_plugins) and "VolumeBinding" in names(fw.pre_bind_plugins)
    fw = build(convert_policy({"predicates": [{"name": "PodFitsResources"}]})[0])
    assert "VolumeBinding" not in names(fw.reserve_plugins) + names(fw.pre_bind_plugins)


PRIORITY_TABLE = [
    ("LeastRequestedPriority", "NodeResourcesFit"),
    ("BalancedResourceAllocation", "NodeResourcesBalancedAllocation"),
    ("SelectorSpreadPriority", "SelectorSpread"),
    ("ServiceSpreadingPriority", "SelectorSpread"),
    ("ImageLocalityPriority", "ImageLocality"),
    ("NodeAffinityPriority", "NodeAffinity"),
    ("TaintTolerationPriority", "TaintToleration"),
    ("InterPodAffinityPriority", "InterPodAffinity"),
    ("EvenPodsSpreadPriority", "PodTopologySpread"),
]


@pytest.mark.parametrize(("priority", "plugin"), PRIORITY_TABLE, ids=[p for p, _ in PRIORITY_TABLE])
def test_each_priority(priority: str, plugin: str) -> None:
    profile, warnings = convert_policy({"priorities": [{"name": priority, "weight": 4}]})
    assert warnings == []
    fw = build(profile)
    assert fw.score_weights == {plugin: 4}
    if "preScore" in in_tree_registry().get(plugin).points():  # type: ignore[union-attr]
        assert names(fw.pre_score_plugins) == [plugin]


def test_priorities_of_one_plugin_add_their_weights() -> None:
    profile, warnings = convert_policy({"priorities": [{"name": "SelectorSpreadPriority", "weight": 1},
                                                       {"name": "ServiceSpreadingPriority", "weight": 2}]})
    assert warnings == []
    assert build(profile).score_weights == {"SelectorSpread": 3}


def test_least_and_most_requested_conflict_keeps_the_first() -> None:
    profile, warnings = convert_policy({"priorities": [{"name": "LeastRequestedPriority", "weight": 1},
                                                       {"name": "MostRequestedPriority", "weight": 1}]})
    assert len(warnings) == 1 and "MostRequestedPriority" in warnings[0] and "LeastRequestedPriority" in warnings[0]
    fw = build(profile)
    assert fw.plugins["NodeResourcesFit"].args.scoringStrategy.type == "LeastAllocated"  # type: ignore[attr-defined]


def test_requested_to_capacity_ratio_arguments() -> None:
    profile, warnings = convert_policy({"priorities": [{
        "name": "RequestedToCapacityRatioPriority", "weight": 2,
        "argument": {"requestedToCapacityRatioArguments": {
            "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
            "resources": [{"name": "intel.com/foo", "weight": 3}, {"name": "cpu", "weight": 1}]}}}]})
    assert warnings == []
    fw = build(profile)
    strategy = fw.plugins["NodeResourcesFit"].args.scoringStrategy  # type: ignore[attr-defined]
    assert strategy.type == "RequestedToCapacityRatio"
    assert [(p.utilization, p.score) for p in strategy.requestedToCapacityRatio.shape] == [(0, 0), (100, 10)]
    assert [(r.name, r.weight) for r in strategy.resources] == [("intel.com/foo", 3), ("cpu", 1)]
    assert fw.score_weights == {"NodeResourcesFit": 2}


def test_hard_pod_affinity_symmetric_weight() -> None:
    profile, _ = convert_policy({"hardPodAffinitySymmetricWeight": 10,
                                 "priorities": [{"name": "InterPodAffinityPriority", "weight": 1}]})
    fw = build(profile)
    assert fw.plugins["InterPodAffinity"].args.hardPodAffinityWeight == 10  # type: ignore[attr-defined]
    _, warnings = convert_policy({"hardPodAffinitySymmetricWeight": 500})
    assert any("hardPodAffinitySymmetricWeight" in w for w in warnings)


NO_EQUIVALENT = [
    ({"predicates": [{"name": "ZoneAffinity", "argument": {"serviceAffinity": {"labels": ["zone"]}}}]},
     ["serviceAffinity", "['zone']", "ServiceAffinity plugin was removed"]),
    ({"predicates": [{"name": "RequireRegion", "argument": {"labelsPresence": {"labels": ["region"],
                                                                                "presence": True}}}]},
     ["labelsPresence", "['region']", "presence True", "nodeAffinity"]),
    ({"priorities": [{"name": "ZoneSpread", "weight": 2,
                      "argument": {"serviceAntiAffinity": {"label": "zone"}}}]},
     ["serviceAntiAffinity", "'zone'", "PodTopologySpread"]),
    ({"priorities": [{"name": "PreferSSD", "weight": 1,
                      "argument": {"labelPreference": {"label": "ssd", "presence": True}}}]},
     ["labelPreference", "'ssd'", "preferred nodeAffinity"]),
    ({"priorities": [{"name": "EqualPriority", "weight": 1}]}, ["EqualPriority", "no equivalent"]),
    ({"priorities": [{"name": "NodePreferAvoidPodsPriority", "weight": 10000}]},
     ["NodePreferAvoidPods", "removed"]),
    ({"predicates": [{"name": "MaxAzureDiskVolumeCount"}]}, ["MaxAzureDiskVolumeCount", "no equivalent"]),
    ({"predicates": [{"name": "CheckNodeLabelPresence"}]}, ["CheckNodeLabelPresence", "no equivalent"]),
    ({"predicates": [{"name": "NoSuchPredicate"}]}, ["NoSuchPredicate", "unknown predicate"]),
    ({"priorities": [{"name": "NoSuchPriority", "weight": 1}]}, ["NoSuchPriority", "unknown priority"]),
    ({"alwaysCheckAllPredicates": True}, ["alwaysCheckAllPredicates"]),
    ({"somethingElse": 1}, ["somethingElse", "unknown Policy field"]),
    ({"priorities": [{"name": "ImageLocalityPriority", "weight": 0}]}, ["weight 0"]),
    ({"extenders": [{"urlPrefix": "http://x", "prioritizeVerb": "p"}]}, ["weight set to 1"]),
    ({"extenders": [{"filterVerb": "f"}]}, ["no urlPrefix"]),
    ({"extenders": [{"urlPrefix": "http://x", "apiVersion": "v1beta1"}]}, ["extenders[0].apiVersion"]),
]


@pytest.mark.parametrize(("policy", "fragments"), NO_EQUIVALENT,
                         ids=["serviceAffinity", "labelsPresence", "serviceAntiAffinity", "labelPreference",
                              "EqualPriority", "NodePreferAvoidPods", "azure disk", "label presence no arg",
                              "unknown predicate", "unknown priority", "alwaysCheckAllPredicates",
                              "unknown field", "zero weight", "extender weight", "extender without url",
                              "extender unknown field"])
def test_what_has_no_equivalent_is_reported(policy: dict[str, Any], fragments: list[str]) -> None:
    profile, warnings = convert_policy(policy)
    text = "\n".join(warnings)
    for f in fragments:
        assert f in text
    build(profile)  # still a valid profile


def test_extender_fields() -> None:
    profile, warnings = convert_policy({"extenders": [{
        "urlPrefix": "https://ext:8443/sched", "filterVerb": "filter", "prioritizeVerb": "prioritize",
        "preemptVerb": "preempt", "bindVerb": "bind", "weight": 5, "enableHttps": True,
        "tlsConfig": {"insecure": True}, "httpTimeout": 5_000_000_000, "nodeCacheCapable": True,
        "managedResources": [{"name": "example.com/foo", "ignoredByScheduler": True}], "ignorable": True}]})
    assert warnings == []
    ext = profile["spec"]["extenders"][0]
    assert ext["enableHTTPS"] is True and ext["httpTimeout"] == "5s" and ext["weight"] == 5
    _, spec = parse_profile_object(profile)
    assert spec.extenders[0].timeout_seconds == 5.0
    assert spec.extenders[0].managedResources[0].ignoredByScheduler is True


@pytest.mark.parametrize(("nanos", "text"), [(1_500_000_000, "1500ms"), (30_000_000_000, "30s"),
                                             (120_000_000_000, "2m"), (7, "7ns")])
def test_http_timeout_in_nanoseconds(nanos: int, text: str) -> None:
    profile, _ = convert_policy({"extenders": [{"urlPrefix": "http://x", "httpTimeout": nanos}]})
    assert profile["spec"]["extenders"][0]["httpTimeout"] == text


def test_not_a_policy() -> None:
    with pytest.raises(PolicyError):
        convert_policy({"kind": "KubeSchedulerConfiguration"})
    with pytest.raises(PolicyError):
        convert_policy({"predicates": {"name": "x"}})
    with pytest.raises(PolicyError):
        convert_policy([])  # type: ignore[arg-type]


def test_main_writes_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(EXAMPLE)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.startswith("# Converted from")
    obj = yaml.safe_load(out)
    name, spec = parse_profile_object(obj)
    assert name == "policy"
    assert spec.plugins.filter.disabled[0].name == "*"
    target = tmp_path / "profile.yaml"
    assert main([str(EXAMPLE), "--name", "legacy", "--scheduler-name", "legacy-scheduler", "-o", str(target)]) == 0
    obj = yaml.safe_load(target.read_text())
    assert obj["metadata"]["name"] == "legacy" and obj["spec"]["schedulerName"] == "legacy-scheduler"


def test_main_reports_warnings_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "My Policy.yaml"
    src.write_text(yaml.safe_dump({"kind": "Policy", "predicates": [
        {"name": "Zone", "argument": {"serviceAffinity": {"labels": ["zone"]}}}]}))
    assert main([str(src)]) == 0
    out, err = capsys.readouterr()
    assert "warning: predicates[0] 'Zone': serviceAffinity" in err
    assert "# warning: predicates[0]" in out
    assert yaml.safe_load(out)["metadata"]["name"] == "my-policy"
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "Deployment"}')
    assert main([str(bad)]) == 2
    assert "want Policy" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.json")]) == 2


def test_converted_profile_runs_in_simulate() -> None:
    """The sample policy's plugins, without its (unreachable) extender, schedule a pod in simulate."""
    simulate = pytest.importorskip("kubeberth.whatif.simulate").simulate
    policy = json.loads(EXAMPLE.read_text())
    policy.pop("extenders")
    profile, _ = convert_policy(policy)
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
            "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "10"}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]}}
    big = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "8"}}}]}}
    outcomes = {o.pod: o for o in simulate([profile, node, pod, big])}
    assert outcomes["default/p"].status == "Scheduled" and outcomes["default/p"].node == "n1"
    assert outcomes["default/big"].status == "Unschedulable"
    assert "Insufficient cpu" in outcomes["default/big"].message
