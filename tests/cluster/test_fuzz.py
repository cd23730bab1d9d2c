"""The fast subset of the differential fuzzer (tests/cluster/fuzz.py): a few random clusters through
upstream kube-scheduler and kubeberth, and a few of the workload flavour (PodGroups, both schedulers
with GenericWorkload=true on an API server serving scheduling.k8s.io/v1beta1). `make test-upstream`
runs the full set (>= 60 clusters)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from . import fuzz
from .control_plane import ControlPlane, kubectl
from .fuzz_groups import Options

pytestmark = pytest.mark.cluster

SEED = 1
CASES = [0, 1, 2, 3]
WORKLOADS = Options("workloads")
WORKLOAD_CASES = [0, 2, 4]


async def test_random_clusters_agree_with_upstream(control_plane: ControlPlane) -> None:
    reports = await fuzz.run(control_plane, SEED, CASES)
    lines = [line for r in reports for line in fuzz.render_case(r)]
    print("\n".join(lines))
    summary = fuzz.summarise(reports)
    assert not summary.errors, "cases not run:\n" + "\n".join(summary.errors)
    assert not summary.unexplained, "unexplained disagreements with kube-scheduler:\n" + "\n".join(lines)
    assert summary.pods >= 3 * len(CASES), f"only {summary.pods} pending pods judged"


@pytest.fixture(scope="module")
def workload_plane() -> Iterator[ControlPlane]:
    plane = ControlPlane(feature_gates=WORKLOADS.gates).start()
    try:
        kubectl(plane, "apply", "-f", "crds/")
        kubectl(plane, "wait", "--for", "condition=established", "--timeout=60s",
                "crd/schedulingprofiles.kubeberth.io")
        yield plane
    finally:
        plane.stop()


async def test_random_workload_clusters_agree_with_upstream(workload_plane: ControlPlane) -> None:
    reports = await fuzz.run(workload_plane, SEED, WORKLOAD_CASES, options=WORKLOADS)
    lines = [line for r in reports for line in fuzz.render_case(r)]
    print("\n".join(lines))
    summary = fuzz.summarise(reports)
    assert not summary.errors, "cases not run:\n" + "\n".join(summary.errors)
    assert not summary.unexplained, "unexplained disagreements with kube-scheduler:\n" + "\n".join(lines)
    assert summary.groups >= len(WORKLOAD_CASES), f"only {summary.groups} pod groups judged"
    judged = [p for r in reports for p in r.pods if p.is_group]
    # the groups' conditions were compared, not absent on both sides
    assert any("PodGroupInitiallyScheduled" not in p.upstream.message for p in judged)
