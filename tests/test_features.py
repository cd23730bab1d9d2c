"""--feature-gates as kube-scheduler v1.37.2 takes them: parsing, defaults, locks, dependencies,
unknown gates (upstream's messages, checked against the binary in tests/cluster/test_gangs.py),
kubeberth's refusal of gates it does not implement, and the default profile following the gates."""

from __future__ import annotations

import pytest

from kubeberth import features
from kubeberth.config.defaults import DEFAULT_MULTI_POINT, default_multi_point
from kubeberth.features import FeatureGateError, FeatureGates

# (flag value, upstream's error) -- each also run through kube-scheduler by tests/cluster/test_gangs.py
REFUSED_AS_UPSTREAM = [
    pytest.param("TopologyAwareWorkloadScheduling=true",
                 "TopologyAwareWorkloadScheduling is enabled, but depends on features that are disabled: "
                 "[GenericWorkload]", id="dependency-off"),
    pytest.param("Foo=true", "unrecognized feature gate: Foo", id="unknown"),
    pytest.param("kube:Foo=true", "unrecognized feature gate: Foo", id="unknown-with-component"),
    pytest.param("wardle:X=true", "component not registered: wardle", id="other-component"),
    pytest.param("GenericWorkload=maybe",
                 'invalid value of GenericWorkload=maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax',
                 id="not-a-bool"),
    pytest.param("GenericWorkload", "missing bool value for GenericWorkload", id="no-value"),
    pytest.param("GenericWorkload=true,Foo", "missing bool value for Foo", id="no-value-second"),
    pytest.param("NodeDeclaredFeatures=false",
                 "cannot set feature gate NodeDeclaredFeatures to false, feature is locked to true", id="locked"),
    pytest.param("PodGroupPreemptionPolicy=true",
                 "PodGroupPreemptionPolicy is enabled, but depends on features that are disabled: [GenericWorkload]",
                 id="dependency-off-2"),
    pytest.param("CompositePodGroup=true,GenericWorkload=true",
                 "CompositePodGroup is enabled, but depends on features that are disabled: "
                 "[TopologyAwareWorkloadScheduling]", id="one-of-two-dependencies-off"),
]


@pytest.mark.parametrize(("value", "message"), REFUSED_AS_UPSTREAM)
def test_refused_with_upstreams_message(value: str, message: str) -> None:
    with pytest.raises(FeatureGateError) as err:
        FeatureGates.parse(value)
    assert str(err.value) == message


def test_several_errors_aggregate_as_upstream() -> None:
    with pytest.raises(FeatureGateError) as err:
        FeatureGates.parse("CompositePodGroup=true,PodGroupPreemptionPolicy=true")
    assert str(err.value) == (
        "[CompositePodGroup is enabled, but depends on features that are disabled: [GenericWorkload "
        "TopologyAwareWorkloadScheduling], PodGroupPreemptionPolicy is enabled, but depends on features that "
        "are disabled: [GenericWorkload]]")


@pytest.mark.parametrize(("value", "gate"), [
    pytest.param("GenericWorkload=true,PodGroupPreemptionPolicy=true", "PodGroupPreemptionPolicy=true",
                 id="group-preemption-policy"),
    pytest.param("APIResponseCompression=false", "APIResponseCompression=false", id="beta-off"),
])
def test_known_but_not_implemented_refused_by_kubeberth(value: str, gate: str) -> None:
    with pytest.raises(FeatureGateError) as err:
        FeatureGates.parse(value)
    assert f"kubeberth does not implement feature gate(s) {gate}" in str(err.value)
    assert "gates kubeberth implements: GenericWorkload, TopologyAwareWorkloadScheduling" in str(err.value)


@pytest.mark.parametrize(("values", "generic_workload"), [
    pytest.param(None, False, id="default-off"),
    pytest.param("GenericWorkload=true", True, id="on"),
    pytest.param(" GenericWorkload = 1 ", True, id="spaces-and-1"),
    pytest.param("kube:GenericWorkload=True", True, id="component-prefix"),
    pytest.param(["GenericWorkload=true", "GenericWorkload=false"], False, id="repeated-last-wins"),
    pytest.param("NodeDeclaredFeatures=true,DynamicResourceAllocation=true", False, id="locked-at-default"),
    pytest.param("PodGroupPreemptionPolicy=false", False, id="unimplemented-at-default"),
    pytest.param("GenericWorkload=true,TopologyAwareWorkloadScheduling=true", True, id="taws"),
])
def test_accepted(values: str | list[str] | None, generic_workload: bool) -> None:
    gates = FeatureGates.parse(values)
    assert gates.generic_workload is generic_workload
    assert gates.enabled("NodeDeclaredFeatures") is True


def test_defaults_are_v1_37s() -> None:
    gates = FeatureGates()
    assert gates.enabled("GenericWorkload") is False  # beta, off by default in v1.37
    assert gates.enabled("TopologyAwareWorkloadScheduling") is False
    assert gates.enabled("DynamicResourceAllocation") is True
    assert features.KNOWN["GenericWorkload"].pre_release == "BETA"
    assert features.KNOWN["TopologyAwareWorkloadScheduling"].depends_on == ("GenericWorkload",)


@pytest.mark.parametrize(("values", "expected_tail"), [
    pytest.param(None, [], id="defaults"),
    pytest.param("GenericWorkload=true", [("GangScheduling", None)], id="generic-workload"),
    pytest.param("GenericWorkload=true,TopologyAwareWorkloadScheduling=true",
                 [("GangScheduling", None), ("TopologyPlacementGenerator", None), ("PodGroupPodsCount", 1)],
                 id="taws"),
])
def test_default_profile_follows_gates(values: str | None, expected_tail: list[tuple[str, int | None]]) -> None:
    assert default_multi_point(FeatureGates.parse(values)) == DEFAULT_MULTI_POINT + expected_tail


def test_override_scopes_the_process_gates() -> None:
    before = features.current()
    with features.override(FeatureGates.parse("GenericWorkload=true")):
        assert features.current().generic_workload
        assert default_multi_point()[-1] == ("GangScheduling", None)
    assert features.current() is before
