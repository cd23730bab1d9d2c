"""SchedulingGates: a gated pod waits (UnschedulableAndUnresolvable) at PreEnqueue."""

from __future__ import annotations

import pytest

from kubeberth.framework import Code, Status
from kubeberth.plugins.scheduling_gates import SchedulingGates
from tests.builders import make_pod

CASES = [
    ("pod does not carry scheduling gates", None, None),
    ("empty list of gates", [], None),
    ("pod carrying one gate", ["foo"], Status.unresolvable("waiting for scheduling gates: [foo]")),
    ("pod carrying scheduling gates", ["foo", "bar"],
     Status.unresolvable("waiting for scheduling gates: [foo bar]")),
]


@pytest.mark.parametrize(("gates", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_pre_enqueue(gates: list[str] | None, want: Status | None) -> None:
    kw = {} if gates is None else {"schedulingGates": [{"name": g} for g in gates]}
    got = SchedulingGates(None, None).pre_enqueue(make_pod("p", **kw))
    assert got == want
    if want is not None:
        assert got is not None and got.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
