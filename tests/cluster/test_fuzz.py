"""The fast subset of the differential fuzzer (tests/cluster/fuzz.py): a few random clusters through
upstream kube-scheduler and kubeberth. `make test-upstream` runs the full set (>= 60 clusters)."""

from __future__ import annotations

import pytest

from . import fuzz
from .control_plane import ControlPlane

pytestmark = pytest.mark.cluster

SEED = 1
CASES = [0, 1, 2, 3]


async def test_random_clusters_agree_with_upstream(control_plane: ControlPlane) -> None:
    reports = await fuzz.run(control_plane, SEED, CASES)
    lines = [line for r in reports for line in fuzz.render_case(r)]
    print("\n".join(lines))
    summary = fuzz.summarise(reports)
    assert not summary.errors, "cases not run:\n" + "\n".join(summary.errors)
    assert not summary.unexplained, "unexplained disagreements with kube-scheduler:\n" + "\n".join(lines)
    assert summary.pods >= 3 * len(CASES), f"only {summary.pods} pending pods judged"
