"""`kubeberth simulate` with TopologyAwareWorkloadScheduling on examples/racks.yaml: the gate is
accepted with its dependency, a group goes whole into the fuller rack, a group no rack holds is
unschedulable; without the gate the same objects spread over the racks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kubeberth import features
from kubeberth.cli import main
from kubeberth.features import FeatureGates

ROOT = Path(__file__).resolve().parents[2]
RACKS = ROOT / "examples" / "racks.yaml"
RACK_OF = {"n1": "a", "n2": "a", "n3": "b", "n4": "b"}


@pytest.fixture(autouse=True)
def restore_gates() -> Iterator[None]:
    with features.override(FeatureGates()):
        yield


def rows(out: str) -> dict[str, tuple[str, str]]:
    return {line.split()[0].split("/", 1)[1]: (line.split()[1], line.split()[2])
            for line in out.splitlines() if line.startswith("default/")}


def test_simulate_places_groups_in_one_rack(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--feature-gates", "GenericWorkload=true,TopologyAwareWorkloadScheduling=true",
                 str(RACKS)]) == 0
    out = capsys.readouterr().out
    got = rows(out)
    assert {RACK_OF[got[f"trainer-{i}"][1]] for i in range(2)} == {"b"}
    assert {got[f"wide-{i}"][0] for i in range(3)} == {"Unschedulable"}
    assert "0/2 placements are available" in out


def test_without_the_gate_the_groups_spread(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--feature-gates", "GenericWorkload=true", str(RACKS)]) == 0
    got = rows(capsys.readouterr().out)
    assert {got[f"wide-{i}"][0] for i in range(3)} == {"Scheduled"}
    assert len({RACK_OF[got[f"wide-{i}"][1]] for i in range(3)}) == 2


def test_the_gate_needs_generic_workload(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--feature-gates", "TopologyAwareWorkloadScheduling=true", str(RACKS)]) == 2
    assert ("TopologyAwareWorkloadScheduling is enabled, but depends on features that are disabled: "
            "[GenericWorkload]") in capsys.readouterr().err
