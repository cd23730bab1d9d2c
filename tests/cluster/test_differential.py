"""Every conformance case through upstream kube-scheduler and through kubeberth (differential.py).

A disagreement fails unless tests/conformance/differential.yaml explains it; an explanation
whose case now agrees fails too, so that the file lists only what is still true.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from . import differential
from .control_plane import ControlPlane, kubectl

pytestmark = pytest.mark.cluster

WORKLOAD_GATES = "GenericWorkload=true"


async def test_upstream_and_kubeberth_agree(control_plane: ControlPlane) -> None:
    reports = await differential.run_cases(control_plane)
    print(differential.render(reports))
    unexplained = differential.unexplained(reports)
    assert not unexplained, "unexplained disagreements with kube-scheduler:\n" + differential.render(unexplained)
    gated = {n for n, c in differential.load_cases() if differential.case_gates(c)}
    stale = sorted(set(differential.known_disagreements()) - gated - {r.case for r in reports
                                                                      if r.skipped or r.disagreements})
    assert not stale, f"explained in differential.yaml but agreeing now (remove them): {stale}"


@pytest.fixture(scope="module")
def workload_plane() -> Iterator[ControlPlane]:
    plane = ControlPlane(feature_gates=WORKLOAD_GATES).start()
    try:
        kubectl(plane, "apply", "-f", "crds/")
        yield plane
    finally:
        plane.stop()


async def test_gated_cases_agree_with_upstream(workload_plane: ControlPlane) -> None:
    """The cases with featureGates GenericWorkload=true, on an API server serving PodGroups, against
    kube-scheduler with the same gates: every pod and every PodGroup's condition."""
    reports = await differential.run_cases(workload_plane)
    print(differential.render(reports))
    assert [r.case for r in reports if r.case.startswith("gang-")], "no gated case ran"
    unexplained = differential.unexplained(reports)
    assert not unexplained, "unexplained disagreements with kube-scheduler:\n" + differential.render(unexplained)
    assert all(r.agreements >= 3 for r in reports if not r.skipped)
