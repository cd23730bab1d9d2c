"""The table's maths: per-run fields, mean and sample std over seeds, a reference beside them."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest

from kubeberth.whatif.sweep.table import (
    add_reference,
    group_rows,
    groups_csv,
    read_reference,
    result_fields,
    runs_csv,
    text_table,
)
from tests.whatif.sweep.conftest import profiles
from tests.whatif.sweep.replay_fixture import replay_result, write_trace


def row(trace: str, policy: str, seed: int, a100: float | None, a130: float | None, failed: int = 0,
        status: str = "ok") -> dict[str, Any]:
    r: dict[str, Any] = {"trace": trace, "policy": policy, "options": "artifact-tune1.3", "seed": seed,
                         "status": status, "tune": 1.3, "failed": failed, "name": f"{trace}-{policy}-{seed}",
                         "error": None if status == "ok" else "boom"}
    if a100 is not None:
        r["gpuAllocation.100"] = a100
    if a130 is not None:
        r["gpuAllocation.130"] = a130
    return r


ROWS = [row("t1", "FGD", 1, 80.0, 90.0, failed=3), row("t1", "FGD", 2, 82.0, 92.0, failed=5),
        row("t1", "FGD", 3, 84.0, 94.0, failed=10),
        row("t1", "Random", 1, 70.0, 75.5), row("t1", "Random", 2, None, None, status="failed"),
        row("t2", "FGD", 1, 60.0, None)]


def test_means_and_sample_std_over_the_successful_seeds() -> None:
    groups = {(g["trace"], g["policy"]): g for g in group_rows(ROWS)}
    assert list(groups) == [("t1", "FGD"), ("t1", "Random"), ("t2", "FGD")]
    fgd = groups["t1", "FGD"]
    assert (fgd["runs"], fgd["failed"], fgd["tune"]) == (3, 0, 1.3)
    assert fgd["gpuAllocation.100.mean"] == pytest.approx(82.0)
    assert fgd["gpuAllocation.100.std"] == pytest.approx(2.0)  # sqrt(((-2)^2 + 0 + 2^2) / (3 - 1))
    assert fgd["gpuAllocation.130.mean"] == pytest.approx(92.0)
    assert fgd["failed.mean"] == pytest.approx(6.0)
    assert fgd["failed.std"] == pytest.approx(3.605551, abs=1e-6)  # sqrt((9 + 1 + 16) / 2)
    rnd = groups["t1", "Random"]
    assert (rnd["runs"], rnd["failed"]) == (2, 1)
    assert rnd["gpuAllocation.130.mean"] == 75.5 and rnd["gpuAllocation.130.std"] is None  # one seed
    assert "gpuAllocation.130.mean" not in groups["t2", "FGD"]


REFERENCE = """workload,sc_policy,tune,seed,total_gpus,0,99,100,101,129,130
t1,06-FGD,1.3,42,6212,0.5,80,81.0,82,90,93.0
t1,06-FGD,1.3,43,6212,0.5,80,83.0,82,90,95.0
t1,01-Random,1.3,42,6212,0.5,70,71.5,72,80,x
t1,06-FGD,1.0,42,6212,0.5,50,50.0,50,50,50.0
"""


def test_the_reference_beside_each_group_and_the_difference(tmp_path: Path) -> None:
    (tmp_path / "ref.csv").write_text(REFERENCE)
    warnings: list[str] = []
    reference = read_reference(str(tmp_path / "ref.csv"), warnings.append)
    assert warnings == [f"{tmp_path / 'ref.csv'}: line 4: column 130: not a number: 'x'"]
    assert reference["t1", "FGD", 1.3]["points"]["130"] == [93.0, 95.0]
    groups = group_rows(ROWS)
    add_reference(groups, reference)
    fgd, rnd, t2 = groups
    assert fgd["reference.100.mean"] == pytest.approx(82.0) and fgd["diff.100"] == pytest.approx(0.0)
    assert fgd["reference.130.mean"] == pytest.approx(94.0) and fgd["diff.130"] == pytest.approx(-2.0)
    assert fgd["reference.130.std"] == pytest.approx(2 ** 0.5)
    assert rnd["reference.100.mean"] == 71.5 and rnd["diff.100"] == pytest.approx(-1.5)
    assert "reference.130.mean" not in rnd  # its only value was malformed
    assert not any(k.startswith("reference.") for k in t2)  # no such workload in the reference
    text = text_table(groups)
    assert "92.00 ± 2.00" in text and "94.00" in text and "-2.00" in text


def test_a_reference_with_another_header_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ref.csv").write_text("a,b,c\n")
    with pytest.raises(ValueError, match="line 1: expected the columns workload,sc_policy,tune,seed,total_gpus"):
        read_reference(str(tmp_path / "ref.csv"), print)


def test_result_fields_and_the_csv_columns(tmp_path: Path) -> None:
    trace = write_trace(tmp_path, "alpha")
    [fgd] = profiles(tmp_path / "profiles", ("FGD",))
    result = replay_result([str(trace)], nodes=str(tmp_path / "nodes.csv"), profile=fgd, seed=1,
                           protocol="artifact", tune=1.3)
    fields = result_fields(result)
    s = result["summary"]
    assert fields["arrived"] == s["arrived"] and fields["failed"] == s["failed"]
    assert fields["queueingDelay.p99"] == s["queueingDelay"]["p99"]
    assert fields["allocation.alibabacloud.com/gpu-milli.final"] == s["allocation"]["alibabacloud.com/gpu-milli"][
        "final"]
    for k in ("100", "130"):
        assert fields.get(f"gpuAllocation.{k}") == result["gpuAllocation"].get(k)
    runs = list(csv.DictReader(io.StringIO(runs_csv(ROWS))))
    head = list(runs[0])
    assert head[:8] == ["trace", "policy", "options", "seed", "status", "tune", "gpuAllocation.100",
                        "gpuAllocation.130"]
    assert head[-2:] == ["name", "error"]
    assert runs[4]["status"] == "failed" and runs[4]["error"] == "boom" and runs[4]["gpuAllocation.130"] == ""
    means = list(csv.DictReader(io.StringIO(groups_csv(group_rows(ROWS)))))
    assert float(means[0]["gpuAllocation.130.mean"]) == 92.0 and float(means[0]["gpuAllocation.130.std"]) == 2.0
