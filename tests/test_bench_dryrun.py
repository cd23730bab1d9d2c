"""benchmarks/dryrun.py at a small size: it runs, measures both parts and writes its JSON."""

from __future__ import annotations

import json

import benchmarks.dryrun as dryrun
import pytest


@pytest.mark.parametrize("load", ["inproc", "http"])
def test_the_dry_run_benchmark_runs_small(tmp_path, monkeypatch, capsys, load):
    monkeypatch.setattr(dryrun, "RESULTS_DIR", tmp_path)
    assert dryrun.main(["--nodes", "30", "--pods", "20", "--latency", "10", "--rounds", "1", "--round-pods", "200",
                        "--load", load]) == 0
    [written] = list(tmp_path.glob("*-dryrun.json"))
    result = json.loads(written.read_text())
    assert set(result["latency"]) >= {"engine_live", "engine_copy", "engine_explain", "service", "http", "worker"}
    assert all(result["latency"][k]["p99_ms"] >= result["latency"][k]["p50_ms"] > 0 for k in ("engine_live", "http"))
    rounds = result["binding"]["rounds"]
    assert [r["rate"] for r in rounds] == [0.0, 100.0]  # interleaved: without, then with
    assert rounds[1]["dry_runs"]["sent"] > 0 and rounds[1]["load"] == load
    assert "slowdown" in capsys.readouterr().out
