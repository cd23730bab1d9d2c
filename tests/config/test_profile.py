from __future__ import annotations

from typing import Any

import pytest

from kubeberth.config import ConfigError, merge_with_defaults, parse_profile_object, parse_spec
from kubeberth.config.defaults import DEFAULT_MULTI_POINT, merged_origins
from kubeberth.config.models import Plugins, parse_duration
from kubeberth.plugins import in_tree_registry
from kubeberth.profile import check_buildable, enabled_plugins


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

    def test_origins_name_the_users_entries(self) -> None:
        custom = Plugins.model_validate({"multiPoint": {"enabled": [{"name": "Mine"}, {"name": "ImageLocality"}]},
                                         "score": {"enabled": [{"name": "A"}, {"name": "B"}]}})
        merged, origins = merge_with_defaults(custom), merged_origins(custom)
        by_name = dict(zip(names(merged.multiPoint.enabled), origins["multiPoint"], strict=True))
        assert (by_name["Mine"], by_name["ImageLocality"], by_name["NodeName"]) == (0, 1, None)
        assert origins["score"] == [0, 1] and origins["filter"] == []


# A plugin entry that cannot run is named by its index in the user's own list, at every extension
# point, never by its place in the list merged with upstream's defaults (20 entries in multiPoint).
class TestPluginEntryPaths:
    @pytest.mark.parametrize(("plugins", "path", "text"), [
        ({"multiPoint": {"enabled": [{"name": "ImageLocalty"}]}},
         "spec.plugins.multiPoint.enabled[0].name", "plugin 'ImageLocalty' does not exist"),
        ({"multiPoint": {"enabled": [{"name": "TaintToleration", "weight": 5}, {"name": "Nope"}]}},
         "spec.plugins.multiPoint.enabled[1].name", "plugin 'Nope' does not exist"),
        ({"multiPoint": {"enabled": [{"name": "Nope"}, {"name": "ImageLocality", "weight": 3}]}},
         "spec.plugins.multiPoint.enabled[0].name", "plugin 'Nope' does not exist"),
        ({"multiPoint": {"enabled": [{"name": "NodeName"}, {"name": "ImageLocality"}, {"name": "ImageLocality"}]}},
         "spec.plugins.multiPoint.enabled[2].name", "plugin 'ImageLocality' already registered as score"),
        ({"multiPoint": {"enabled": [{"name": "NodeName"}], "disabled": [{"name": "*"}]},
          "queueSort": {"enabled": [{"name": "PrioritySort"}]}, "bind": {"enabled": [{"name": "Typo"}]}},
         "spec.plugins.bind.enabled[0].name", "plugin 'Typo' does not exist"),
        ({"filter": {"enabled": [{"name": "NodeName"}, {"name": "ImageLocality"}]}},
         "spec.plugins.filter.enabled[1].name", "plugin 'ImageLocality' does not extend filter plugin"),
    ], ids=["multipoint-one-typo", "multipoint-after-a-default", "multipoint-before-a-default",
            "multipoint-twice", "point-after-disable-all", "wrong-point"])
    def test_the_users_index(self, plugins: dict[str, Any], path: str, text: str) -> None:
        with pytest.raises(ConfigError) as err:
            check_buildable(parse_spec({"plugins": plugins}), in_tree_registry())
        assert (err.value.path, err.value.detail) == (path, text)

    def test_the_enabled_plugins_say_the_same(self) -> None:
        with pytest.raises(ConfigError) as err:
            enabled_plugins(parse_spec({"plugins": {"multiPoint": {"enabled": [{"name": "Nope"}]}}}),
                            in_tree_registry())
        assert err.value.path == "spec.plugins.multiPoint.enabled[0].name"

    def test_disabling_a_name_no_plugin_has_is_no_error(self) -> None:
        """As upstream: only enabled entries are looked up (the disabled lists just filter)."""
        check_buildable(parse_spec({"plugins": {"multiPoint": {"disabled": [{"name": "Nope"}]},
                                                "filter": {"disabled": [{"name": "Nope"}]}}}), in_tree_registry())
