"""NodeUnschedulable: spec.unschedulable nodes are filtered unless the pod tolerates it."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth.framework import Status
from kubeberth.model import NodeInfo
from kubeberth.plugins.node_unschedulable import NodeUnschedulable
from tests.builders import make_node, make_pod

REASON = "node(s) were unschedulable"
UNSCHEDULABLE_TOLERATION = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                            "effect": "NoSchedule"}

CASES: list[tuple[str, bool, list[dict[str, Any]], Status | None]] = [
    ("does not schedule pod to unschedulable node", True, [], Status.unresolvable(REASON)),
    ("schedulable node", False, [], None),
    ("unschedulable node, pod tolerates the unschedulable taint", True, [UNSCHEDULABLE_TOLERATION], None),
    ("schedulable node, pod tolerates the unschedulable taint", False, [UNSCHEDULABLE_TOLERATION], None),
    ("a toleration with an empty effect also tolerates", True,
     [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}], None),
    ("tolerate-everything toleration", True, [{"operator": "Exists"}], None),
    ("a NoExecute toleration does not tolerate it", True,
     [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"}],
     Status.unresolvable(REASON)),
    ("a toleration for another key does not tolerate it", True,
     [{"key": "other", "operator": "Exists", "effect": "NoSchedule"}], Status.unresolvable(REASON)),
]


@pytest.mark.parametrize(("unschedulable", "tolerations", "want"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_filter(unschedulable: bool, tolerations: list[dict[str, Any]], want: Status | None) -> None:
    pod = make_pod("p", tolerations=tolerations)
    ni = NodeInfo(make_node("n1", unschedulable=unschedulable))
    got = NodeUnschedulable(None, None).filter(None, pod, ni)  # type: ignore[arg-type]
    assert got == want


def test_node_missing() -> None:
    got = NodeUnschedulable(None, None).filter(None, make_pod("p"), NodeInfo())  # type: ignore[arg-type]
    assert got == Status.unresolvable("node(s) had unknown conditions")
