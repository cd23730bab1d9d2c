"""`kubeberth sweep`: a sweep file or flags, an existing cluster's address or a local cluster, the
table and page written, the exit status."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from kubeberth.cli import main
from kubeberth.whatif.sweep import execute
from tests.whatif.sweep.conftest import profiles
from tests.whatif.sweep.replay_fixture import replay_result, write_trace


@pytest.fixture
def made_up_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(execute, "default_replay", lambda: replay_result)


def sweep_file(tmp_path: Path, seeds: str = "1-2") -> Path:
    write_trace(tmp_path / "data", "alpha")
    write_trace(tmp_path / "data", "beta")
    profiles(tmp_path / "profiles")
    path = tmp_path / "sweep.yaml"
    path.write_text(f"""traces:
- {{nodes: data/nodes.csv, files: [data/openb_pod_list_alpha.csv]}}
- {{nodes: data/nodes.csv, files: [data/openb_pod_list_beta.csv]}}
profiles: [profiles]
seeds: {seeds}
options: [{{protocol: artifact, tune: 1.3}}]
""")
    return path


@pytest.mark.usefixtures("made_up_replay")
def test_a_sweep_file_on_an_existing_cluster(tmp_path: Path, dask_client: Any,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sweep", str(sweep_file(tmp_path)), "--out", str(tmp_path / "out"), "--scheduler",
                 dask_client.scheduler.address, "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["means.csv", "report.html", "runs", "table.csv",
                                                                   "table.json"]
    assert len(list((tmp_path / "out" / "runs").glob("*.json"))) == 8
    assert out.splitlines()[0].split() == ["trace", "policy", "options", "runs", "failed", "alloc@100", "alloc@130"]
    assert len(out.splitlines()) == 5
    assert "8 runs (8 ran, 0 resumed, 0 failed) on 2 workers" in err and "parallel efficiency" in err

    code = main(["sweep", str(tmp_path / "sweep.yaml"), "--out", str(tmp_path / "out"), "--scheduler",
                 dask_client.scheduler.address, "--no-progress"])
    assert code == 0 and "8 runs (0 ran, 8 resumed, 0 failed)" in capsys.readouterr().err


@pytest.mark.usefixtures("made_up_replay")
def test_flags_a_local_cluster_and_a_reference(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_trace(tmp_path / "data", "alpha")
    profiles(tmp_path / "profiles")
    (tmp_path / "ref.csv").write_text("workload,sc_policy,tune,seed,total_gpus,100,130\n"
                                      "openb_pod_list_alpha,06-FGD,1.3,42,32,50.0,60.0\n"
                                      "openb_pod_list_alpha,01-Random,1.3,42,32,40.0,45.0\n")
    code = main(["sweep", "--trace", str(trace), "--nodes", str(tmp_path / "data" / "nodes.csv"), "--profile",
                 str(tmp_path / "profiles"), "--seeds", "3", "--protocol", "artifact", "--tune", "1.3",
                 "--reference", str(tmp_path / "ref.csv"), "--workers", "1", "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert code == 0, err
    means = {r["policy"]: r for r in csv.DictReader((tmp_path / "out" / "means.csv").open())}
    assert set(means) == {"FGD", "Random"}
    ours = replay_result([str(trace)], nodes=str(tmp_path / "data" / "nodes.csv"),
                         profile=str(tmp_path / "profiles" / "FGD.yaml"), seed=3, protocol="artifact", tune=1.3)
    assert float(means["FGD"]["reference.100.mean"]) == 50.0
    assert float(means["FGD"]["diff.100"]) == pytest.approx(ours["gpuAllocation"]["100"] - 50.0)
    assert "ref@100" in out and "on 1 workers" in err
    assert "sweep: 100%" in err and "2/2" in err  # the progress bar
    assert "(reference)" in (tmp_path / "out" / "report.html").read_text()


@pytest.mark.usefixtures("made_up_replay")
def test_failed_runs_exit_1(tmp_path: Path, dask_client: Any, capsys: pytest.CaptureFixture[str]) -> None:
    path = sweep_file(tmp_path, seeds="1")
    (tmp_path / "data" / "FAIL").write_text("openb_pod_list_beta")
    code = main(["sweep", str(path), "--out", str(tmp_path / "out"), "--scheduler", dask_client.scheduler.address,
                 "--no-progress"])
    assert code == 1
    assert "4 runs (4 ran, 0 resumed, 2 failed)" in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["--out", "o"], "give a sweep file or at least one --trace"),
    (["nowhere.yaml", "--out", "o"], "nowhere.yaml: No such file or directory"),
    (["--trace", "t.csv", "--out", "o"], "--trace: t.csv: no such file"),
    (["--trace", "t.csv", "--format", "openb", "--out", "o"], "--trace: the openb format needs a nodes file"),
    (["--trace", "s.yaml", "--seeds", "9-1", "--out", "o"], "--seeds: the range 9-1 is empty"),
    (["--trace", "s.yaml", "--tune", "0", "--out", "o"], "--tune: tune 0.0: must be a positive number"),
    (["--trace", "s.yaml", "--reference", "ref.csv", "--out", "o"], "--reference: ref.csv: no such file"),
    (["--trace", "s.yaml", "--out", "s.yaml"], "--out s.yaml: Not a directory"),
    (["--trace", "s.yaml", "--trace", "d/s.yaml", "--out", "o"],
     "two traces are labelled 's' (the table would mix them): give each trace a name"),
    (["--trace", "s.yaml", "--profile", "s.yaml", "--profile", "d/s.yaml", "--out", "o"],
     "two profiles are labelled 's' (the table would mix them): rename one of the profile files"),
    (["--trace", "s.yaml", "--feature-gates", "NoSuchGate=true", "--out", "o"],
     "featureGates: unrecognized feature gate: NoSuchGate"),
])
def test_refused_sweeps_exit_2_with_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str], args: list[str],
                                             message: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text("")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "s.yaml").write_text("# another\n")
    assert main(["sweep", *args]) == 2
    err = capsys.readouterr().err
    assert err == f"kubeberth sweep: {message}\n"


@pytest.mark.usefixtures("made_up_replay")
def test_an_unreachable_scheduler_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import dask

    (tmp_path / "s.yaml").write_text("")
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        code = main(["sweep", "--trace", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "o"), "--scheduler",
                     "tcp://127.0.0.1:9", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("kubeberth sweep: --scheduler tcp://127.0.0.1:9: ") and "\n" == err[-1]
    assert "Traceback" not in err


def test_without_the_replay_engine_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(execute, "REPLAY_FUNCTION", "no_such_function")
    (tmp_path / "s.yaml").write_text("")
    assert main(["sweep", "--trace", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err == ("kubeberth sweep: the replay engine is not available: no "
                                       "kubeberth.whatif.replay.no_such_function\n")


@pytest.mark.usefixtures("made_up_replay")
def test_an_interrupted_sweep_says_how_to_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(execute, "run_sweep", interrupted)
    (tmp_path / "s.yaml").write_text("")
    assert main(["sweep", "--trace", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "o")]) == 130
    assert "run the same command again to resume" in capsys.readouterr().err


KILLED_CLIENT = """
import os, signal, sys
from kubeberth.cli import main
from kubeberth.whatif.sweep import execute
from tests.whatif.sweep.replay_fixture import replay_result

execute.default_replay = lambda: replay_result
run_sweep, done = execute.run_sweep, []

def kill_after_three(outcome):
    done.append(outcome.name)
    if len(done) == 3:
        os.kill(os.getpid(), signal.SIGKILL)  # no clean-up at all: as a lost machine or `kill -9`

execute.run_sweep = lambda *a, **kw: run_sweep(*a, **kw, on_result=kill_after_three)
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.usefixtures("made_up_replay")
def test_a_killed_client_resumes(tmp_path: Path, dask_client: Any, capsys: pytest.CaptureFixture[str]) -> None:
    import os
    import signal
    import subprocess
    import sys

    from tests.whatif.sweep.replay_fixture import ROOT

    path = sweep_file(tmp_path)
    args = ["sweep", str(path), "--scheduler", dask_client.scheduler.address, "--no-progress"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "operator"), str(ROOT)])}
    proc = subprocess.run([sys.executable, "-c", KILLED_CLIENT, *args, "--out", str(tmp_path / "out")],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert len(list((tmp_path / "out" / "runs").glob("*.json"))) == 3
    assert not (tmp_path / "out" / "table.csv").exists()

    assert main([*args, "--out", str(tmp_path / "out")]) == 0
    assert "8 runs (5 ran, 3 resumed, 0 failed)" in capsys.readouterr().err
    assert main([*args, "--out", str(tmp_path / "straight")]) == 0
    for name in ("table.csv", "means.csv", "report.html"):
        assert (tmp_path / "out" / name).read_text() == (tmp_path / "straight" / name).read_text()
