"""`kubeberth simulate --explain` / `--verbose` from the command line: the table section, the
JSON contract of the README, the log lines, and errors that name the problem."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kubeberth.cli import main

from .helpers import small_cluster

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "cluster.yaml")

# The README's contract for one explanation (simulate -o json, pods[].explanations[]).
EXPLANATION_KEYS = {"attempt", "profile", "result", "nodes", "preFilter", "filter", "postFilter", "score", "selection"}
NODE_KEYS = {"node", "verdict", "reason", "plugin", "plugins", "detail", "details"}
SCORE_LINE_KEYS = {"node", "total", "extenders", "plugins"}
PLUGIN_SCORE_KEYS = {"raw", "normalized", "weight", "weighted"}


@pytest.fixture
def cluster_file(tmp_path: Path) -> str:
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump_all(small_cluster()))
    return str(path)


def test_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", EXAMPLE, "--seed", "1", "-o", "json", "--explain", "shop/payments-0", "web-1"]) == 0
    pods = {p["pod"]: p for p in json.loads(capsys.readouterr().out)["pods"]}
    assert "explanations" not in pods["shop/web-2"]  # not asked: the old contract, unchanged
    payments = pods["shop/payments-0"]["explanations"]
    assert [x["result"]["status"] for x in payments] == ["Unschedulable", "Scheduled"]
    for x in payments + pods["shop/web-1"]["explanations"]:
        assert set(x) == EXPLANATION_KEYS
        assert set(x["result"]) == {"status", "node", "message"}
        assert set(x["preFilter"]) == {"plugins", "skipped", "restrictedBy", "nodes", "status"}
        assert set(x["filter"]) == {"plugins", "skipped", "nominatedNodeFirst", "nodes", "filteredOut"}
        assert all(set(n) == NODE_KEYS for n in x["filter"]["nodes"])
        assert set(x["selection"]) == {"tied", "selected"}
        if x["score"] is not None:
            assert set(x["score"]) == {"plugins", "skipped", "nodes"}
            for line in x["score"]["nodes"]:
                assert set(line) == SCORE_LINE_KEYS
                assert all(set(s) == PLUGIN_SCORE_KEYS for s in line["plugins"].values())
    pf = payments[0]["postFilter"]
    assert set(pf) == {"message", "nominatedNode", "candidates", "rejected", "chosen"}
    assert pf["chosen"] == {"node": "worker-1", "victims": ["shop/batch-1"]}
    assert payments[1]["filter"]["nominatedNodeFirst"] == "worker-1"


def test_table_section(cluster_file: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", cluster_file, "--explain", "--explain-nodes", "1"]) == 0
    out = capsys.readouterr().out
    section = out[out.index("=== default/web: Scheduled on big-"):]
    assert "nodes: 4 total, 2 feasible, 2 filtered out, 0 excluded by PreFilter, 0 not evaluated" in section
    assert "1 node(s): node(s) had untolerated taint(s) [TaintToleration]: tainted" in section
    assert "1 node(s): Insufficient cpu [NodeResourcesFit]: small" in section
    assert "Score (top 1 of 2 feasible" in section and "TT=TaintToleration (weight 3)" in section
    assert "Tied at the top: big-1 (+1 more); drawn at random: big-" in section


@pytest.mark.parametrize(("argv", "text"), [
    (["--explain", "nope"], "kubeberth simulate: --explain: no pod nope in the input"),
    (["--explain-nodes", "0"], "must be at least 1, not 0"),
    (["--explain-nodes", "x"], "must be a whole number, not 'x'"),
])
def test_bad_explain_arguments(cluster_file: str, argv: list[str], text: str,
                               capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(["simulate", cluster_file, *argv])
    except SystemExit as exc:
        code = int(exc.code or 0)
    assert code == 2
    assert text in capsys.readouterr().err


def test_verbose_logs_one_line_per_decision() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "operator"), str(ROOT)])}
    proc = subprocess.run([sys.executable, "-m", "kubeberth.cli", "simulate", EXAMPLE, "--seed", "1", "--verbose"],
                          capture_output=True, text=True, env=env, timeout=120, check=True)
    lines = [line for line in proc.stderr.splitlines() if "kubeberth.decisions" in line]
    assert ("INFO kubeberth.decisions: attempt 1 of shop/web-1 (default-scheduler): 9/12 nodes feasible "
            "(12 evaluated); chose worker-7, score 463") in lines
    assert "INFO kubeberth.decisions: bound shop/web-1 to worker-7" in lines
    assert "INFO kubeberth.decisions: preemption for shop/payments-0: nominated to worker-1, evicting shop/batch-1" \
        in lines
    assert any(line.startswith("INFO kubeberth.decisions: attempt 1 of shop/legacy-0 (default-scheduler) failed: "
                               "0/12 nodes are available") for line in lines)
    quiet = subprocess.run([sys.executable, "-m", "kubeberth.cli", "simulate", EXAMPLE, "--seed", "1"],
                           capture_output=True, text=True, env=env, timeout=120, check=True)
    assert "kubeberth.decisions" not in quiet.stderr
