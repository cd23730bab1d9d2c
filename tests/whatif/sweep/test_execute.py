"""Running sweeps on a Dask cluster of 2 worker processes: results identical to the replay run
alone, resume after an interruption (only the missing runs run, the same table), one failing
run recorded without stopping the others."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubeberth.whatif.sweep.execute import RunOutcome, result_text, run_sweep
from kubeberth.whatif.sweep.output import build_table, curves_of, write_outputs
from kubeberth.whatif.sweep.plan import Sweep, run_name
from tests.whatif.sweep.conftest import small_sweep
from tests.whatif.sweep.replay_fixture import replay_alone_text, replay_result


def sweep_to_end(sweep: Sweep, out: Path, client: Any, **kw: Any) -> dict[str, Any]:
    swept = run_sweep(sweep, out, client=client, replay=replay_result, progress=None, **kw)
    table = build_table(swept, sweep, print)
    write_outputs(table, out, curves_of(swept))
    return table


def outputs(out: Path) -> dict[str, Any]:
    """Everything a sweep writes but the timing."""
    table = json.loads((out / "table.json").read_text())
    del table["metadata"]
    return {"table.json": table, **{n: (out / n).read_text() for n in ("table.csv", "means.csv", "report.html")},
            "runs": sorted(p.name for p in (out / "runs").iterdir())}


def calls(sweep: Sweep) -> list[tuple[str, str, int]]:
    """(trace, policy, seed) of every replay that ran, from replay_fixture's log (calls.log)."""
    log = Path(sweep.runs[0].trace.files[0]).parent / "calls.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return [(t, p, int(s)) for t, p, s, _ in (line.split() for line in lines)]


def test_runs_in_a_sweep_are_byte_identical_to_each_replay_alone(tmp_path: Path, dask_client: Any) -> None:
    sweep = small_sweep(tmp_path, seeds=(7, 8))  # 8 runs on 2 workers: each worker runs several in turn
    sweep_to_end(sweep, tmp_path / "out", dask_client)
    texts = {run: (tmp_path / "out" / "runs" / f"{run_name(run, sweep)}.json").read_text() for run in sweep.runs}
    assert len(set(texts.values())) == len(sweep.runs)
    for run, text in texts.items():
        assert text == result_text(replay_result(**run.replay_kwargs()))
    last = sweep.runs[-1]
    assert texts[last] == replay_alone_text(last.replay_kwargs())


def test_an_interrupted_sweep_resumes_with_the_missing_runs_only(tmp_path: Path, dask_client: Any) -> None:
    sweep = small_sweep(tmp_path)  # 2 traces x 2 policies x 3 seeds
    straight = sweep_to_end(sweep, tmp_path / "straight", dask_client)
    assert straight["metadata"]["ran"] == 12
    (tmp_path / "traces" / "calls.log").unlink()

    seen: list[str] = []

    def interrupt_after_five(outcome: RunOutcome) -> None:
        seen.append(outcome.name)
        if len(seen) == 5:
            raise KeyboardInterrupt

    out = tmp_path / "resumed"
    with pytest.raises(KeyboardInterrupt):
        run_sweep(sweep, out, client=dask_client, replay=replay_result, progress=None, on_result=interrupt_after_five)
    written = sorted(p.stem for p in (out / "runs").glob("*.json"))
    assert written == sorted(seen)
    before = len(calls(sweep))

    swept = run_sweep(sweep, out, client=dask_client, replay=replay_result, progress=None)
    status = {o.name: o.status for o in swept.outcomes}
    assert sorted(n for n, s in status.items() if s == "resumed") == written
    assert sum(s == "ok" for s in status.values()) == 12 - 5
    again = {(r.trace.files[0], r.policy, r.seed) for r in sweep.runs if run_name(r, sweep) in written}
    called_now = {(t, p, s) for t, p, s in calls(sweep)[before:]}
    assert not {(Path(f).stem, p, s) for f, p, s in again} & called_now, "a finished run was run again"
    assert swept.metadata()["resumed"] == 5 and swept.metadata()["ran"] == 7
    table = build_table(swept, sweep, print)
    write_outputs(table, out, curves_of(swept))
    assert outputs(out) == outputs(tmp_path / "straight")

    third = run_sweep(sweep, out, client=dask_client, replay=replay_result, progress=None)
    assert {o.status for o in third.outcomes} == {"resumed"} and third.parallel_efficiency is None


def test_a_damaged_result_file_is_run_again(tmp_path: Path, dask_client: Any,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    sweep = small_sweep(tmp_path, traces=("alpha",), seeds=(1,))
    sweep_to_end(sweep, tmp_path / "out", dask_client)
    victim = tmp_path / "out" / "runs" / f"{run_name(sweep.runs[0], sweep)}.json"
    good = victim.read_text()
    victim.write_text(good[: len(good) // 2])
    (victim.parent / f".{victim.name}.123.abcd.tmp").write_text(good[:10])  # a writer killed mid-way
    swept = run_sweep(sweep, tmp_path / "out", client=dask_client, replay=replay_result, progress=None)
    assert [o.status for o in swept.outcomes] == ["ok", "resumed"]
    assert victim.read_text() == good
    assert capsys.readouterr() == ("", "")  # progress=None: silent
    assert sorted(p.name for p in victim.parent.iterdir()) == sorted(f"{run_name(r, sweep)}.json" for r in sweep.runs)


def test_a_failing_run_is_recorded_and_the_others_go_on(tmp_path: Path, dask_client: Any) -> None:
    sweep = small_sweep(tmp_path, seeds=(1, 2))
    (tmp_path / "traces" / "FAIL").write_text("openb_pod_list_beta\n")
    table = sweep_to_end(sweep, tmp_path / "out", dask_client)
    status = [(r["trace"], r["status"]) for r in table["runs"]]
    assert status == [("openb_pod_list_alpha", "ok")] * 4 + [("openb_pod_list_beta", "failed")] * 4
    failed = [r for r in table["runs"] if r["status"] == "failed"]
    assert all(r["error"] == f"BadTrace: {tmp_path / 'traces' / 'openb_pod_list_beta.csv'}: line 2: column cpu_milli: "
                             "not a number" for r in failed)
    errors = sorted((tmp_path / "out" / "runs").glob("*.error.json"))
    assert [json.loads(p.read_text())["error"] for p in errors] == [r["error"] for r in sorted(
        failed, key=lambda r: r["name"])]
    assert table["metadata"]["failed"] == 4
    beta = [g for g in table["groups"] if g["trace"] == "openb_pod_list_beta"]
    assert [(g["runs"], g["failed"]) for g in beta] == [(2, 2), (2, 2)]
    assert not any(k.endswith(".mean") for g in beta for k in g)

    (tmp_path / "traces" / "FAIL").unlink()
    swept = run_sweep(sweep, tmp_path / "out", client=dask_client, replay=replay_result, progress=None)
    assert [o.status for o in swept.outcomes] == ["resumed"] * 4 + ["ok"] * 4
    assert list((tmp_path / "out" / "runs").glob("*.error.json")) == []


def test_the_timing_in_the_metadata(tmp_path: Path, dask_client: Any) -> None:
    sweep = small_sweep(tmp_path, traces=("alpha",), seeds=(1, 2))
    swept = run_sweep(sweep, tmp_path / "out", client=dask_client, replay=replay_result, progress=None)
    meta = swept.metadata()
    assert meta["workers"] == 2 and meta["runs"] == meta["ran"] == 4
    assert set(meta["perRun"]) == {run_name(r, sweep) for r in sweep.runs}
    seconds = [o.seconds or 0.0 for o in swept.outcomes]
    assert all(s > 0 for s in seconds) and swept.run_seconds == pytest.approx(sum(seconds))
    assert swept.parallel_efficiency == pytest.approx(sum(seconds) / (swept.wall_seconds * 2))
    assert meta["parallelEfficiency"] == round(sum(seconds) / (swept.wall_seconds * 2), 4)
