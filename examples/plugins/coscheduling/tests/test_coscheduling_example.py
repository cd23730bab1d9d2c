"""The README's example runs through `kubeberth simulate` as it stands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubeberth.cli import main

EXAMPLE = Path(__file__).parent.parent / "example.yaml"


def test_the_example_binds_one_gang_and_none_of_the_other(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(EXAMPLE), "-o", "json", "--seed", "1"]) == 0
    pods = {p["pod"]: p for p in json.loads(capsys.readouterr().out)["pods"]}
    assert {k: p["status"] for k, p in pods.items()} == {
        **{f"default/training-{i}": "Scheduled" for i in range(3)},
        **{f"default/tuning-{i}": "Unschedulable" for i in range(4)}}
    assert sorted(pods[f"default/training-{i}"]["node"] for i in range(3)) == ["node-a", "node-b", "node-c"]
    messages = [pods[f"default/tuning-{i}"]["message"] for i in range(4)]
    assert sum("PodGroup default/tuning gets rejected due to Pod" in m for m in messages) == 1
    assert sum(m == "0/1 nodes are available: 1 optimistic rejection in PostFilter." for m in messages) == 3
