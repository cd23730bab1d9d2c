"""NodeName: a pod naming spec.nodeName fits that node only."""

from __future__ import annotations

import pytest

from kubeberth.framework import Code, Status
from kubeberth.model import NodeInfo
from kubeberth.plugins.node_name import NodeName
from tests.builders import make_node, make_pod

REASON = "node(s) didn't match the requested node name"

CASES = [
    ("no host specified", "", "foo", None),
    ("host matches", "foo", "foo", None),
    ("host doesn't match", "bar", "foo", Status.unresolvable(REASON)),
]


@pytest.mark.parametrize(("pod_node", "node", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_filter(pod_node: str, node: str, want: Status | None) -> None:
    got = NodeName(None, None).filter(None, make_pod("p", node=pod_node), NodeInfo(make_node(node)))  # type: ignore[arg-type]
    assert got == want


def test_node_missing_is_an_error() -> None:
    got = NodeName(None, None).filter(None, make_pod("p", node="x"), NodeInfo())  # type: ignore[arg-type]
    assert got is not None and got.code == Code.ERROR
