"""NodeVolumeLimits with VolumeLimitScaling (beta, on in v1.37): a CSI driver that opts in with
CSIDriver.spec.preventPodSchedulingIfMissing must be installed on the node (its CSINode),
after upstream's TestVolumeLimitScalingGate."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth.framework import Status
from kubeberth.plugins.node_volume_limits import EBSLimits, NodeVolumeLimits

from .test_node_volume_limits import EBS_CSI, EXCEEDED, GCE_CSI, claims, inline_ebs, run


def csi_driver(name: str, prevent: bool | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if prevent is not None:
        spec["preventPodSchedulingIfMissing"] = prevent
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": name}, "spec": spec}


NOT_INSTALLED = Status.unschedulable(f"{EBS_CSI} CSI driver is not installed on the node")

CASES = [
    # (id, CSIDriver objects, CSINode drivers (None: no CSINode), existing pods, want)
    ("no CSIDriver object: not checked", [], None, [], None),
    ("CSIDriver without the opt-in: not checked", [csi_driver(EBS_CSI)], None, [], None),
    ("CSIDriver opting out explicitly", [csi_driver(EBS_CSI, prevent=False)], {GCE_CSI: 5}, [], None),
    ("opted in, node has no CSINode", [csi_driver(EBS_CSI, prevent=True)], None, [], NOT_INSTALLED),
    ("opted in, CSINode lacks the driver", [csi_driver(EBS_CSI, prevent=True)], {GCE_CSI: 5}, [], NOT_INSTALLED),
    ("opted in, installed, within its limit", [csi_driver(EBS_CSI, prevent=True)], {EBS_CSI: 2},
     [claims("old", "csi-ebs-1")], None),
    ("opted in, installed, over its limit", [csi_driver(EBS_CSI, prevent=True)], {EBS_CSI: 1},
     [claims("old", "csi-ebs-1")], EXCEEDED),
    ("opted in, installed without a limit", [csi_driver(EBS_CSI, prevent=True)], {EBS_CSI: None}, [], None),
]


def test_the_missing_driver_is_told_before_the_count() -> None:
    got = run(NodeVolumeLimits, claims("new", "csi-ebs-0", "csi-gce-0"), [claims("old", "csi-gce-1")],
              csi_limits={GCE_CSI: 0}, extra=[csi_driver(EBS_CSI, prevent=True)])
    assert got == NOT_INSTALLED


@pytest.mark.parametrize(("drivers", "csi_node_drivers", "existing", "want"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_volume_limit_scaling(drivers: list[dict[str, Any]], csi_node_drivers: dict[str, int | None] | None,
                              existing: list[Any], want: Status | None) -> None:
    got = run(NodeVolumeLimits, claims("new", "csi-ebs-0"), existing, csi_limits=csi_node_drivers, extra=drivers)
    assert got == want


def test_unbound_claims_are_checked_by_their_provisioner() -> None:
    got = run(NodeVolumeLimits, claims("new", "pending-csi-0"), [], csi_limits={GCE_CSI: 5},
              extra=[csi_driver(EBS_CSI, prevent=True)])
    assert got == NOT_INSTALLED


def test_a_pod_without_csi_volumes_is_not_checked() -> None:
    got = run(NodeVolumeLimits, claims("new", "host-claim"), [], extra=[csi_driver(EBS_CSI, prevent=True)])
    assert got is None


def test_in_tree_only_limits_do_not_check_csi_drivers() -> None:
    got = run(EBSLimits, inline_ebs("new", "vol-1"), [], extra=[csi_driver(EBS_CSI, prevent=True)])
    assert got is None
