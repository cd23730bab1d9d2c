"""Coscheduling through `kubeberth.testing.run_cluster`: the way a plugin's own tests run a cluster
through kubeberth's scheduler with their plugin, and read what became of each pod."""

from __future__ import annotations

from typing import Any

import pytest
from cosched_testing import coscheduling_profile, node_dict, pod_dict, pod_group
from kubeberth_coscheduling import Coscheduling

from kubeberth.testing import InputError, run_cluster


def profile(args: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": "gangs"},
            "spec": coscheduling_profile(args=args)}


def cluster(nodes: int) -> list[dict[str, Any]]:
    return [profile(), pod_group("job", 4), *[node_dict(f"n{i}") for i in range(nodes)],
            *[pod_dict(f"w{i}", group="job") for i in range(4)]]


def test_the_whole_group_binds_where_it_fits() -> None:
    result = run_cluster(*cluster(4), plugins=[Coscheduling])
    assert sorted(result.nodes) == ["default/w0", "default/w1", "default/w2", "default/w3"]
    assert sorted(result.nodes.values()) == ["n0", "n1", "n2", "n3"]
    assert result.outcome("w0").status == "Scheduled"


def test_no_pod_of_a_group_that_does_not_fit_binds() -> None:
    result = run_cluster(*cluster(3), plugins=[Coscheduling])
    assert result.nodes == {}
    assert {o.status for o in result.outcomes} == {"Unschedulable"}
    assert any("PodGroup default/job gets rejected" in o.message for o in result.outcomes)


def test_without_the_plugin_the_profile_is_refused() -> None:
    with pytest.raises(InputError, match="plugin 'Coscheduling' does not exist"):
        run_cluster(*cluster(4))
