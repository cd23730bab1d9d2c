"""`--feature-gates` on simulate (and the process's gates), `featureGates` in `kubeberth test` cases."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kubeberth import features
from kubeberth.cli import main
from kubeberth.features import FeatureGates

ROOT = Path(__file__).resolve().parents[2]
GANGS = ROOT / "examples" / "gangs.yaml"


@pytest.fixture(autouse=True)
def restore_gates() -> Iterator[None]:
    with features.override(FeatureGates()):
        yield


def test_simulate_places_gangs_with_the_gate(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--feature-gates", "GenericWorkload=true", str(GANGS)]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines()[1:] if line.startswith("default/")}
    assert {rows[f"default/trainer-{i}"] for i in range(3)} == {"Scheduled"}
    assert {rows[f"default/toobig-{i}"] for i in range(3)} == {"Unschedulable"}
    assert "minCount (3) cannot be satisfied" in out


def test_simulate_without_the_gate_places_pods_alone(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(GANGS)]) == 0
    rows = [line.split()[1] for line in capsys.readouterr().out.splitlines() if line.startswith("default/toobig")]
    assert sorted(rows) == ["Scheduled", "Unschedulable", "Unschedulable"]  # one placed alone: no gang


@pytest.mark.parametrize(("command", "gates", "message"), [
    pytest.param("simulate", "TopologyAwareWorkloadScheduling=true",
                 "kubeberth simulate: --feature-gates: TopologyAwareWorkloadScheduling is enabled, but depends on "
                 "features that are disabled: [GenericWorkload]", id="simulate-dependency"),
    pytest.param("simulate", "Nope=true", "kubeberth simulate: --feature-gates: unrecognized feature gate: Nope",
                 id="simulate-unknown"),
    pytest.param("run", "GenericWorkload=true,PodGroupPreemptionPolicy=true",
                 "kubeberth run: --feature-gates: kubeberth does not implement feature gate(s) "
                 "PodGroupPreemptionPolicy=true", id="run-not-implemented"),
])
def test_refused_gates_exit_2_naming_the_flag(command: str, gates: str, message: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    argv = [command, "--feature-gates", gates] + ([str(GANGS)] if command == "simulate" else [])
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == ""


def case(gates: object, expect_unschedulable: bool) -> dict[str, object]:
    objects = list(yaml.safe_load_all(GANGS.read_text()))
    doc: dict[str, object] = {"name": "gangs", "objects": objects, "expect": [
        {"pod": "default/toobig-0", **({"unschedulable": True} if expect_unschedulable else {"node": "n1"})},
        {"pod": "default/trainer-0", "nodeIn": ["n1", "n2"]}]}
    if gates is not None:
        doc["featureGates"] = gates
    return doc


@pytest.mark.parametrize(("gates", "unschedulable"), [
    pytest.param("GenericWorkload=true", True, id="string"),
    pytest.param({"GenericWorkload": True}, True, id="mapping"),
    pytest.param(None, False, id="none"),
])
def test_a_case_names_its_gates(gates: object, unschedulable: bool, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "case.yaml"
    path.write_text(yaml.safe_dump(case(gates, unschedulable)))
    assert main(["test", str(path)]) == 0, capsys.readouterr().out
    assert features.current() == FeatureGates()  # the case's gates do not outlive it


def test_a_case_with_refused_gates_is_malformed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "case.yaml"
    path.write_text(yaml.safe_dump(case("GenericWorkload=maybe", True)))
    assert main(["test", str(path)]) == 2
    assert ('case.yaml.featureGates: invalid value of GenericWorkload=maybe, err: strconv.ParseBool: parsing '
            '"maybe": invalid syntax') in capsys.readouterr().err
