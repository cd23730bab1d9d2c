"""Every conformance case through upstream kube-scheduler and through kubeberth (differential.py).

A disagreement fails unless tests/conformance/differential.yaml explains it; an explanation
whose case now agrees fails too, so that the file lists only what is still true.
"""

from __future__ import annotations

import pytest

from . import differential
from .control_plane import ControlPlane

pytestmark = pytest.mark.cluster


async def test_upstream_and_kubeberth_agree(control_plane: ControlPlane) -> None:
    reports = await differential.run_cases(control_plane)
    print(differential.render(reports))
    unexplained = differential.unexplained(reports)
    assert not unexplained, "unexplained disagreements with kube-scheduler:\n" + differential.render(unexplained)
    stale = sorted(set(differential.known_disagreements()) - {r.case for r in reports
                                                              if r.skipped or r.disagreements})
    assert not stale, f"explained in differential.yaml but agreeing now (remove them): {stale}"
