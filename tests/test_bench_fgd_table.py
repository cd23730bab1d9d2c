"""benchmarks/fgd_table.py: the issue's checks on a table, and the benchmark end to end on two
small made-up traces (the replay stood in for by tests/whatif/sweep/replay_fixture.py)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from benchmarks import fgd_table

from kubeberth.whatif.sweep import execute
from tests.whatif.sweep.conftest import profiles
from tests.whatif.sweep.replay_fixture import replay_result, write_trace


def group(trace: str, policy: str, a130: float, d100: float | None, d130: float | None) -> dict[str, Any]:
    return {"trace": trace, "policy": policy, "gpuAllocation.130.mean": a130, "diff.100": d100, "diff.130": d130,
            "runs": 10, "failed": 0}


@pytest.mark.parametrize("groups, within, worst, ordering", [
    ([group("t", "Random", 87.0, 0.2, -0.3), group("t", "BestFit", 93.0, 0.0, 1.0), group("t", "FGD", 95.0, -0.5, 0.1)],
     True, 1.0, True),
    ([group("t", "Random", 87.0, 0.2, -1.01), group("t", "FGD", 95.0, 0.0, 0.0)], False, 1.01, True),
    ([group("t", "Random", 87.0, 0.2, None), group("t", "FGD", 95.0, 0.0, 0.0)], False, 0.2, True),
    ([group("t", "Random", 87.0, 0, 0), group("t", "BestFit", 96.0, 0, 0), group("t", "FGD", 95.0, 0, 0)],
     True, 0.0, False),
    ([group("t", "Random", 88.0, 0, 0), group("t", "DotProd", 87.5, 0, 0), group("t", "FGD", 95.0, 0, 0),
      group("u", "Random", 80.0, 0, 0), group("u", "FGD", 90.0, 0, 0)], True, 0.0, False),
])
def test_the_issues_checks(groups: list[dict[str, Any]], within: bool, worst: float, ordering: bool) -> None:
    verdict = fgd_table.checks(groups)
    assert (verdict["withinTolerance"], verdict["worstDifference"], verdict["orderingHolds"]) == \
        (within, pytest.approx(worst), ordering)


def test_the_benchmark_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "traces"
    for t in ("one", "two"):
        write_trace(data, t)
    shutil.copy(data / "nodes.csv", data / "openb_node_list_gpu_node.csv")
    (data / "expected_gpu_allocation.csv").write_text(
        "workload,sc_policy,tune,seed,total_gpus,100,130\n"
        "openb_pod_list_one,01-Random,1.3,42,32,70.0,78.0\nopenb_pod_list_one,06-FGD,1.3,42,32,90.0,96.0\n")
    profiles(tmp_path / "profiles", ("Random", "FGD"))
    monkeypatch.setattr(fgd_table, "PROFILES_DIR", tmp_path / "profiles")
    monkeypatch.setattr(execute, "default_replay", lambda: replay_result)
    code = fgd_table.main(["--traces-dir", str(data), "--traces", "one,two", "--policies", "Random,FGD",
                           "--seeds", "1-2", "--workers", "1", "--out", str(tmp_path / "out"), "--no-write"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[0] == "openb_pod_list_one"
    assert "kubeberth@100" in out and "8 runs (8 ran now, 0 resumed, 0 failed) on 1 workers" in out
    assert "within 1.0 point of the artifact everywhere: NO" in out  # trace two has no reference
    assert (tmp_path / "out" / "report.html").exists()
    monkeypatch.setattr(fgd_table, "PROFILES_DIR", tmp_path / "nowhere")
    assert fgd_table.main(["--traces-dir", str(data), "--traces", "one", "--no-write"]) == 2
    assert "--policies: " in capsys.readouterr().err
