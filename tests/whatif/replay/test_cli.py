"""`kubeberth replay` end to end: a small generated openb trace (JSON, CSV, --out, errors), and
the shared `default` trace when ../shared is there."""

from __future__ import annotations

import csv
import io
import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubeberth import features
from kubeberth.cli import main
from kubeberth.features import FeatureGates

SHARED = Path(__file__).resolve().parents[3] / ".." / "shared" / "traces" / "alibaba-openb-2023"


@pytest.fixture(autouse=True)
def restore_gates() -> Iterator[None]:
    with features.override(FeatureGates()):
        yield


def trace(tmp_path: Path, tasks: int = 40, seed: int = 3) -> tuple[Path, Path]:
    """Four nodes (0, 2, 4, 8 GPUs) and `tasks` tasks arriving and leaving within 300 s."""
    rng = random.Random(seed)
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\n" + "".join(
        f"node-{i},32000,65536,{g},{'V100M16' if g else ''}\n" for i, g in enumerate((0, 2, 4, 8))))
    rows = []
    for i in range(tasks):
        start = rng.randint(0, 200)
        gpus = rng.choice((0, 1, 1, 2))
        milli = 1000 if gpus > 1 else rng.choice((250, 500, 1000)) if gpus else 0
        rows.append(f"task-{i:03d},{rng.choice((1000, 4000, 8000))},{rng.choice((1024, 4096))},{gpus},{milli},,LS,"
                    f"Running,{start},{start + rng.randint(5, 100)},{start}\n")
    path = tmp_path / "tasks.csv"
    path.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
                    "deletion_time,scheduled_time\n" + "".join(rows))
    return nodes, path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["replay", *argv])
    got = capsys.readouterr()
    return code, got.out, got.err


def test_json_is_one_replay_result(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes, tasks = trace(tmp_path)
    code, out, err = run(capsys, "--format", "openb", "--nodes", str(nodes), str(tasks), "-o", "json", "--seed", "4")
    assert code == 0, err
    r = json.loads(out)
    assert r["kind"] == "ReplayResult" and r["apiVersion"] == "kubeberth.io/v1alpha1"
    assert r["input"] == {"format": "openb", "files": [str(nodes), str(tasks)], "profile": None, "seed": 4,
                          "protocol": None, "tune": None, "tieBreak": "reservoir"}
    s = r["summary"]
    assert s["arrived"] == 40 == len(r["pods"])
    assert s["scheduled"] == sum(1 for p in r["pods"] if p["bound"] is not None)
    assert s["capacity"]["alibabacloud.com/gpu-milli"] == 14000 and s["capacity"]["cpu"] == 4 * 32000
    cols = r["series"]["columns"]
    assert "allocated.alibabacloud.com/gpu-milli" in cols and "arrivedRequests.cpu" in cols
    last = dict(zip(cols, r["series"]["rows"][-1], strict=True))
    assert last["arrived"] == 40 and last["running"] == 0  # everything has left by the end
    assert last["allocated.alibabacloud.com/gpu-milli"] == 0
    assert all(p["departure"] is not None for p in r["pods"])


def test_csv_and_out_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes, tasks = trace(tmp_path)
    out_dir = tmp_path / "out"
    code, out, _ = run(capsys, "--format", "openb", "--nodes", str(nodes), str(tasks), "-o", "csv",
                       "--out", str(out_dir), "--sample-every", "60")
    assert code == 0
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0][:3] == ["time", "arrived", "scheduled"]
    assert [float(r[0]) for r in rows[1:]][:4] == [0.0, 60.0, 120.0, 180.0]
    result = json.loads((out_dir / "result.json").read_text())
    assert (out_dir / "series.csv").read_text() == out
    summary = dict(csv.reader(io.StringIO((out_dir / "summary.csv").read_text())))
    assert summary["arrived"] == str(result["summary"]["arrived"])
    assert "allocation.cpu.mean" in summary


def test_reruns_are_byte_identical(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes, tasks = trace(tmp_path, tasks=60)
    args = ("--format", "openb", "--nodes", str(nodes), str(tasks), "-o", "json", "--seed", "9")
    assert run(capsys, *args)[1] == run(capsys, *args)[1]


def test_progress_goes_to_stderr_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes, tasks = trace(tmp_path)
    code, out, err = run(capsys, "--format", "openb", "--nodes", str(nodes), str(tasks), "-o", "json", "--progress")
    assert code == 0
    json.loads(out)
    assert "pod/s" in err or "s/pod" in err


@pytest.mark.parametrize(("argv", "message"), [
    (["--format", "openb", "TASKS"], "--format openb needs --nodes NODES.csv"),
    (["--format", "openb", "--nodes", "NODES", "missing.csv"], "missing.csv: No such file"),
    (["--nodes", "NODES", "TASKS"], "--nodes is for --format openb"),
    (["--format", "openb", "--nodes", "NODES", "TASKS", "--profile", "missing.yaml"], "missing.yaml: No such file"),
])
def test_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    nodes, tasks = trace(tmp_path)
    argv = [str(nodes) if a == "NODES" else str(tasks) if a == "TASKS" else a for a in argv]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert message in err and "Traceback" not in err


def test_a_refused_profile_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes, tasks = trace(tmp_path)
    profile = tmp_path / "p.yaml"
    profile.write_text("apiVersion: kubeberth.io/v1alpha1\nkind: SchedulingProfile\nmetadata: {name: p}\n"
                       "spec: {schedulerName: default-scheduler, percentageOfNodesToScore: 500}\n")
    code, _, err = run(capsys, "--format", "openb", "--nodes", str(nodes), str(tasks), "--profile", str(profile))
    assert code == 2 and "SchedulingProfile" in err and "Traceback" not in err


def test_bad_rows_are_reported_and_the_rest_replayed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes, tasks = trace(tmp_path, tasks=5)
    tasks.write_text(tasks.read_text() + "broken,1000,x,0,0,,,,1,2,\nhuge,999000,1,0,0,,,,1,2,\n")
    code, out, err = run(capsys, "--format", "openb", "--nodes", str(nodes), str(tasks), "-o", "json")
    assert code == 0
    assert f"{tasks}:7:3: memory_mib: 'x' is not a number; row skipped" in err
    assert "pod default/huge can never fit: requests more cpu than any node has" in err
    r = json.loads(out)
    assert r["summary"]["arrived"] == 6
    assert {p["pod"]: p["status"] for p in r["pods"]}["default/huge"] == "Unschedulable"


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/traces/alibaba-openb-2023 is not here")
def test_the_shared_default_trace(capsys: pytest.CaptureFixture[str]) -> None:
    """The first 120 days of `default` with its creation and deletion times (about 950 tasks)."""
    code, out, err = run(capsys, "--format", "openb", "--nodes", str(SHARED / "openb_node_list_gpu_node.csv"),
                         str(SHARED / "openb_pod_list_default.csv"), "--until", "10368000", "-o", "json",
                         "--sample-every", "3600")
    assert code == 0, err
    r = json.loads(out)
    s = r["summary"]
    arrived = [p for p in r["pods"]]
    assert s["arrived"] == len(arrived) > 900
    assert s["capacity"]["alibabacloud.com/gpu-milli"] == 6212 * 1000
    still = sum(1 for p in arrived if p["departure"] is None)
    last = dict(zip(r["series"]["columns"], r["series"]["rows"][-1], strict=True))
    assert last["running"] + last["pending"] == still
    assert s["queueingDelay"]["p50"] is not None
