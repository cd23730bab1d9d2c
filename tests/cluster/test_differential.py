"""Every conformance case through upstream kube-scheduler and through kubeberth (differential.py).

A disagreement fails unless tests/conformance/differential.yaml explains it; an explanation
whose case now agrees fails too, so that the file lists only what is still true. A PodGroup's
condition is compared as upstream decided it, whatever a later write from its stale cache left
(upstream_groups.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from . import differential
from .control_plane import ADMIN_TOKEN, ControlPlane, kubectl
from .kube import Kube
from .upstream_groups import ConditionWatch

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


# Conditions patched on one PodGroup in turn, as kube-scheduler's cycles of the group write them,
# the one the last write leaves, and the one upstream decided (upstream_groups.py).
CYCLES = [
    (["True"], "True", "True"),
    # a later cycle (the leftover pods retried) read the PodGroup before its watch brought the True
    (["True", "False"], "False", "True"),
    (["True", "False", "False"], "False", "True"),
    # a failed cycle's message patched onto the True from a cache still holding an earlier False
    (["False", "True", "True"], "True", "True"),
    # the group's first pods alone could not be placed; a later cycle placed them
    (["False", "True"], "True", "True"),
    (["False", "False"], "False", "False"),
]


@pytest.mark.parametrize(("written", "left", "decided"), CYCLES)
async def test_the_condition_compared_is_the_one_upstream_decided(workload_plane: ControlPlane, written: list[str],
                                                                  left: str, decided: str) -> None:
    async with Kube(workload_plane.url, ADMIN_TOKEN, workload_plane.ssl_context()) as kube:
        await differential.reset_groups(kube)
        await kube.create("podgroups", {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                                        "metadata": {"name": "g", "namespace": "default"},
                                        "spec": {"schedulingPolicy": {"basic": {}}}}, "default")
        async with ConditionWatch(kube) as watch:
            for i, status in enumerate(written):
                reason = "Scheduled" if status == "True" else "Unschedulable"
                await kube.patch("podgroups", "g", {"status": {"conditions": [{
                    "type": "PodGroupInitiallyScheduled", "status": status, "reason": reason, "message": f"cycle {i}",
                    "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1}]}}, "default",
                    subresource="status")
            groups = await kube.list("podgroups")
            outcome = await watch.decided(groups)
    assert differential.group_condition(groups[0]).status.split("/")[0] == left
    cond = outcome["default/g"]
    assert cond is not None and cond["status"] == decided
    trues = [i for i, s in enumerate(written) if s == "True"]
    assert cond["message"] == f"cycle {trues[0] if trues else len(written) - 1}"  # the scheduling cycle's
