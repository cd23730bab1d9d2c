from __future__ import annotations

from typing import Any

import pytest

from kubeberth.config import ConfigError, merge_with_defaults, parse_profile_object, parse_spec
from kubeberth.config.defaults import DEFAULT_MULTI_POINT
from kubeberth.config.models import Plugins, parse_duration


def names(refs: list[Any]) -> list[str]:
    return [r.name for r in refs]


class TestValidation:
    @pytest.mark.parametrize(("spec", "path", "text"), [
        ({"percentageOfNodesToScore": 101}, "spec.percentageOfNodesToScore", "less than or equal to 100"),
        ({"percentageOfNodesToScore": -1}, "spec.percentageOfNodesToScore", "greater than or equal to 0"),
        ({"podInitialBackoffSeconds": 0}, "spec.podInitialBackoffSeconds", "greater than 0"),
        ({"podInitialBackoffSeconds": 5, "podMaxBackoffSeconds": 2}, "spec", "podMaxBackoffSeconds"),
        ({"plugins": {"score": {"enabled": [{"name": "X", "weight": "heavy"}]}}},
         "spec.plugins.score.enabled[0].weight", "integer"),
        ({"plugins": {"scroe": {}}}, "spec.plugins.scroe", "Extra inputs"),
        ({"plugins": {"filter": {"enabled": [{"weight": 1}]}}}, "spec.plugins.filter.enabled[0].name", "required"),
        ({"schedulerName": ""}, "spec.schedulerName", "at least 1"),
        ({"pluginConfig": [{"name": "A"}, {"name": "A"}]}, "spec", "pluginConfig repeats A"),
        ({"extenders": [{"urlPrefix": "ftp://x"}]}, "spec.extenders[0].urlPrefix", "http"),
        ({"extenders": [{"urlPrefix": "http://x", "httpTimeout": "soon"}]}, "spec.extenders[0].httpTimeout",
         "invalid duration"),
        ({"extenders": [{"urlPrefix": "http://x", "prioritizeVerb": "p", "weight": 0}]}, "spec.extenders[0].weight",
         "weight must be a positive integer"),
    ])
    def test_errors_name_the_field(self, spec: dict[str, Any], path: str, text: str) -> None:
        with pytest.raises(ConfigError) as err:
            parse_spec(spec)
        assert err.value.path == path
        assert text in str(err.value)

    def test_design_example_parses(self) -> None:
        spec = parse_spec({
            "schedulerName": "default-scheduler", "percentageOfNodesToScore": 0,
            "podInitialBackoffSeconds": 1, "podMaxBackoffSeconds": 10,
            "plugins": {"multiPoint": {"enabled": [], "disabled": []},
                        "filter": {"enabled": [], "disabled": [{"name": "TaintToleration"}]},
                        "score": {"enabled": [{"name": "NodeResourcesFit", "weight": 2}],
                                  "disabled": [{"name": "*"}]}},
            "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}],
            "extenders": [{"urlPrefix": "http://127.0.0.1:12345/api/scheduler", "filterVerb": "filter",
                           "httpTimeout": "5s", "managedResources": [{"name": "example.com/foo",
                                                                      "ignoredByScheduler": True}]}]})
        assert spec.extenders[0].timeout_seconds == 5.0
        assert spec.plugins.score.enabled[0].weight == 2

    def test_profile_object(self) -> None:
        name, spec = parse_profile_object({"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile",
                                           "metadata": {"name": "binpack"}, "spec": {"schedulerName": "b"}})
        assert (name, spec.schedulerName) == ("binpack", "b")
        with pytest.raises(ConfigError, match="apiVersion"):
            parse_profile_object({"apiVersion": "v1", "metadata": {"name": "x"}})
        with pytest.raises(ConfigError, match=r"metadata\.name"):
            parse_profile_object({"metadata": {}})

    @pytest.mark.parametrize(("text", "seconds"), [("5s", 5), ("500ms", 0.5), ("1m30s", 90), ("2h", 7200), (3, 3)])
    def test_durations(self, text: Any, seconds: float) -> None:
        assert parse_duration(text) == pytest.approx(seconds)


class TestMergeWithDefaults:
    def test_default_weights(self) -> None:
        merged = merge_with_defaults(Plugins())
        weights = {r.name: r.weight for r in merged.multiPoint.enabled if r.weight}
        assert weights == {"TaintToleration": 3, "NodeAffinity": 2, "PodTopologySpread": 2, "InterPodAffinity": 2,
                           "DynamicResources": 2, "NodeResourcesFit": 1, "NodeResourcesBalancedAllocation": 1,
                           "ImageLocality": 1}
        assert names(merged.multiPoint.enabled) == [n for n, _ in DEFAULT_MULTI_POINT]

    def test_custom_entry_replaces_default_in_place(self) -> None:
        custom = Plugins.model_validate({"multiPoint": {"enabled": [{"name": "ImageLocality", "weight": 5},
                                                                    {"name": "Extra"}]}})
        merged = merge_with_defaults(custom)
        refs = merged.multiPoint.enabled
        assert names(refs)[-2:] == ["NodeDeclaredFeatures", "Extra"]
        assert next(r for r in refs if r.name == "ImageLocality").weight == 5
        assert names(refs).index("ImageLocality") == names(refs).index("DefaultBinder") - 1

    def test_disable_one_and_all(self) -> None:
        one = merge_with_defaults(Plugins.model_validate({"multiPoint": {"disabled": [{"name": "ImageLocality"}]}}))
        assert "ImageLocality" not in names(one.multiPoint.enabled)
        none = merge_with_defaults(Plugins.model_validate({"multiPoint": {"disabled": [{"name": "*"}],
                                                                          "enabled": [{"name": "Mine"}]}}))
        assert names(none.multiPoint.enabled) == ["Mine"]

    def test_point_specific_sets_pass_through(self) -> None:
        merged = merge_with_defaults(Plugins.model_validate(
            {"score": {"enabled": [{"name": "NodeResourcesFit", "weight": 2}], "disabled": [{"name": "*"}]}}))
        assert names(merged.score.enabled) == ["NodeResourcesFit"]
        assert names(merged.score.disabled) == ["*"]
