"""kubeberth.testing, the public helpers a plugin of one's own is tested with: documented, and
`run_cluster` giving what `kubeberth simulate` gives, with the plugins it is handed."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

import kubeberth.testing as testing
from kubeberth import features
from kubeberth.framework import FilterPlugin, Status
from kubeberth.testing import InputError, run_cluster
from kubeberth.whatif.simulate import read_input, simulate
from tests.builders import node_dict, pod_dict

CLUSTER = Path(__file__).resolve().parents[1] / "examples" / "cluster.yaml"


class OnlyEven(FilterPlugin):
    """A plugin of one's own: only nodes whose name ends in an even digit."""

    name = "OnlyEven"

    def filter(self, state: Any, pod: Any, node_info: Any) -> Status | None:
        return None if int(node_info.node.name[-1]) % 2 == 0 else Status.unschedulable("odd node")


def profile(*enabled: str) -> dict[str, Any]:
    return {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": "mine"},
            "spec": {"plugins": {"filter": {"enabled": [{"name": n} for n in enabled]}}}}


@pytest.mark.parametrize("name", testing.__all__)
def test_every_exported_name_is_documented(name: str) -> None:
    assert (getattr(testing, name).__doc__ or "").strip(), name
    assert testing.__doc__ and "run_cluster" in testing.__doc__


def test_a_file_gives_what_simulate_gives() -> None:
    expected = simulate(read_input([str(CLUSTER)], [], io.StringIO()).objects, seed=1)
    result = run_cluster(CLUSTER, seed=1)
    assert result.outcomes == expected
    assert result.nodes == {o.pod: o.node for o in expected if o.status in ("Existing", "Scheduled")}


def test_the_plugins_handed_over_run() -> None:
    nodes = [node_dict(f"n{i}") for i in range(1, 5)]
    pods = [pod_dict(f"p{i}", cpu="3") for i in range(3)]
    result = run_cluster(profile("OnlyEven"), *nodes, *pods, plugins=[OnlyEven])
    assert sorted(result.nodes.values()) == ["n2", "n4"]
    assert result.outcome("p2").status == "Unschedulable"
    assert "2 odd node" in result.outcome("default/p2").message


def test_a_profile_naming_a_plugin_not_handed_over_is_refused() -> None:
    with pytest.raises(InputError, match="plugin 'OnlyEven' does not exist"):
        run_cluster(profile("OnlyEven"), node_dict("n2"), pod_dict("p"))


def test_a_class_that_is_no_plugin_is_refused() -> None:
    with pytest.raises(ValueError, match="NotAPlugin"):
        run_cluster(node_dict("n2"), plugins=[type("NotAPlugin", (), {})])  # type: ignore[list-item]


def test_outcome_names_a_pod_by_name_when_one_namespace_has_it() -> None:
    result = run_cluster(node_dict("n"), pod_dict("web", "a"), pod_dict("web", "b"), pod_dict("db", "a"))
    assert result.outcome("db").pod == "a/db"
    with pytest.raises(KeyError, match="more than one namespace"):
        result.outcome("web")
    with pytest.raises(KeyError, match="no such pod"):
        result.outcome("cache")


def test_feature_gates_hold_for_the_run_only() -> None:
    before = features.current()
    result = run_cluster(node_dict("n"), pod_dict("p"), feature_gates="GenericWorkload=true")
    assert result.scheduler.pod_groups_enabled
    assert features.current() is before


def test_explain_and_warnings() -> None:
    bad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    result = run_cluster(node_dict("n"), pod_dict("p"), bad, explain=["p"])
    assert result.outcome("p").explanations
    assert "ConfigMap" in result.warnings
