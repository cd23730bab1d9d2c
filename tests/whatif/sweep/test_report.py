"""Replay's HTML page: deterministic bytes, one SVG per plot, every run's label, escaping, the
plots' data from the series, and matplotlib loaded only when a page is drawn."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kubeberth.whatif.replay.report import GPU, MAX_POINTS, _thin, plots, render_report, run_labels, write_report
from tests.whatif.sweep.conftest import profiles
from tests.whatif.sweep.replay_fixture import replay_result, write_trace

ROOT = Path(__file__).resolve().parents[3]


def results(tmp_path: Path) -> list[dict[str, Any]]:
    """FGD and Random, two seeds, with and without the artifact's protocol."""
    trace = write_trace(tmp_path, "alpha", tasks=40)
    profiles(tmp_path / "profiles")
    return [replay_result([str(trace)], nodes=str(tmp_path / "nodes.csv"),
                          profile=str(tmp_path / "profiles" / f"{p}.yaml"), seed=s, protocol=proto, tune=tune)
            for p in ("FGD", "Random") for s in (1, 2) for proto, tune in ((None, None), ("artifact", 1.3))]


def hand_made(columns: list[str], rows: list[list[float]], capacity: dict[str, int], **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "kubeberth.io/v1alpha1", "kind": "ReplayResult",
            "input": {"format": "yaml", "files": ["c.yaml"], "profile": None, "seed": 0, "protocol": None,
                      "tune": None, "tieBreak": "reservoir"},
            "summary": {"arrived": len(rows), "capacity": capacity}, "series": {"columns": columns, "rows": rows},
            "pods": [], **extra}


def test_the_page_has_one_svg_per_plot_and_every_run_label(tmp_path: Path) -> None:
    runs = results(tmp_path)
    labels = run_labels(runs)
    assert labels[:2] == ["FGD / seed 1", "FGD / seed 1 / artifact tune 1.3"]
    assert len(set(labels)) == len(runs)
    page = render_report(runs)
    ids = [p.id for p in plots(runs, labels)]
    assert ids == [f"allocation-{r}" for r in ("alibabacloud-com-gpu-milli", "cpu", "memory")] + \
        ["pending", "allocation-vs-arrived", "queueing-delay", "queueing-delay-over-time", "oldest-pending",
         *(f"metric-opengpushare-{m}" for m in ("fragmilli", "fragratio", "gpumilliused"))]
    assert page.count("<svg") == len(ids)
    for plot_id in ids:
        assert page.count(f'id="plot-{plot_id}"') == 1
    for label in labels:
        assert page.count(f"<td>{label}</td>") == 1  # the summary table
        assert page.count(f">{label}</text>") >= len(ids) - 1  # the legends (queueing delay: the runs with delays)
    for fetch in ('src="http', 'href="http', "<link", "<script", "url(http"):  # nothing fetched (xmlns are names)
        assert fetch not in page


def test_one_result_alone_is_a_page_of_one_run(tmp_path: Path) -> None:
    run = results(tmp_path)[0]
    write_report(run, tmp_path / "one.html")  # as `kubeberth replay --out DIR` writes it
    page = (tmp_path / "one.html").read_text()
    assert page == render_report([run]) and "kubeberth replay: 1 run</h1>" in page
    assert page.count('<tr class="run">') == 1 and "<td>FGD / seed 1</td>" in page


def test_the_page_is_the_same_bytes_in_another_process(tmp_path: Path) -> None:
    runs = results(tmp_path)
    write_report(runs, tmp_path / "a.html")
    assert render_report(runs) == (tmp_path / "a.html").read_text()
    script = (f"import sys; sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / 'operator')!r}]\n"
              "from tests.whatif.sweep.test_report import results\n"
              "from kubeberth.whatif.replay.report import write_report\n"
              "from pathlib import Path\n"
              f"write_report(results(Path({str(tmp_path)!r})), {str(tmp_path / 'b.html')!r})\n")
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120, env={**os.environ, "PYTHONHASHSEED": "7"})
    assert (tmp_path / "a.html").read_bytes() == (tmp_path / "b.html").read_bytes()


def test_allocation_against_arrived_from_the_series() -> None:
    gpu = hand_made(["time", "pending", f"allocated.{GPU}", f"arrivedRequests.{GPU}", "allocated.cpu",
                     "arrivedRequests.cpu"],
                    [[0, 0, 1000, 1000, 500, 500], [10, 1, 1000, 2000, 500, 1500], [20, 0, 3000, 3000, 900, 2000]],
                    {GPU: 4000, "cpu": 2000})
    cpu_only = hand_made(["time", "pending", "allocated.cpu", "arrivedRequests.cpu"],
                         [[0, 0, 500, 500], [5, 0, 1000, 1500]], {"cpu": 2000, GPU: 0})
    by_id = {p.id: p for p in plots([gpu, cpu_only], ["g", "c"])}
    fig9a = by_id["allocation-vs-arrived"]
    assert [(line.label, list(line.x), list(line.y)) for line in fig9a.lines] == [
        ("g", [25.0, 50.0, 75.0], [25.0, 25.0, 75.0]), ("c", [25.0, 75.0], [25.0, 50.0])]
    assert fig9a.xlabel == "arrived CPU/GPU requests (% of capacity)"
    alloc_cpu = by_id["allocation-cpu"]
    assert [list(line.y) for line in alloc_cpu.lines] == [[25.0, 25.0, 45.0], [25.0, 50.0]]
    assert list(alloc_cpu.lines[0].x) == [0.0, 10.0, 20.0] and alloc_cpu.xlabel == "time (s)"
    assert [line.label for line in by_id[f"allocation-{'alibabacloud-com-gpu-milli'}"].lines] == ["g"]
    assert [list(line.y) for line in by_id["pending"].lines] == [[0.0, 1.0, 0.0], [0.0, 0.0]]


def test_shares_of_the_capacity_at_each_sample_when_the_series_has_it() -> None:
    run = hand_made(["time", "allocated.cpu", "capacity.cpu", "arrivedRequests.cpu", "allocated.x/count",
                     "capacity.x/count"],
                    [[0, 500, 1000, 500, 0, 8], [5, 500, 2000, 1000, 0, 8], [9, 500, 0, 1000, 0, 8]], {"cpu": 2000})
    by_id = {p.id: p for p in plots([run], ["r"])}
    assert "allocation-x-count" not in by_id  # never allocated: no plot
    y = list(by_id["allocation-cpu"].lines[0].y)
    assert y[:2] == [50.0, 25.0] and math.isnan(y[2])  # no node left: no share
    assert list(by_id["allocation-vs-arrived"].lines[0].x)[:2] == [50.0, 50.0]
    assert [p for p in by_id if p.startswith("metric-")] == []  # capacity.* are replay's, not a plugin's


@pytest.mark.parametrize("longest, label, scale", [(0, "sample", None), (90, "time (s)", 1.0),
                                                   (600, "time (minutes)", 60.0), (7200, "time (hours)", 3600.0),
                                                   (149 * 86400, "time (days)", 86400.0)])
def test_the_time_axis_unit(longest: float, label: str, scale: float | None) -> None:
    run = hand_made(["time", "pending"], [[0, 0], [longest, 3]], {"cpu": 1})
    pending = {p.id: p for p in plots([run], ["r"])}["pending"]
    assert pending.xlabel == label
    assert list(pending.lines[0].x) == ([0.0, 1.0] if scale is None else [0.0, longest / scale])


def test_queueing_delay_distribution() -> None:
    pods = [{"pod": f"p{i}", "arrival": 10.0, "bound": 10.0 + d} for i, d in enumerate((4.0, 0.0, 2.0))] + \
        [{"pod": "never", "arrival": 1.0, "bound": None}]
    run = hand_made(["time"], [[0]], {"cpu": 1}, pods=pods)
    delay = {p.id: p for p in plots([run], ["r"])}["queueing-delay"]
    assert [(list(line.x), [round(y, 4) for y in line.y]) for line in delay.lines] == \
        [([0.0, 2.0, 4.0], [33.3333, 66.6667, 100.0])]


def test_long_series_are_thinned_keeping_the_last_sample() -> None:
    x = [float(i) for i in range(10_001)]
    tx, ty = _thin(x, x)
    assert len(tx) <= MAX_POINTS + 1 and tx[0] == 0.0 and tx[-1] == 10_000.0 and tx == ty
    assert _thin(x[:10], x[:10]) == (x[:10], x[:10])


def test_labels_and_titles_are_escaped(tmp_path: Path) -> None:
    run = hand_made(["time", "pending"], [[0, 1]], {"cpu": 1})
    page = render_report([run], ["<b>x</b> & y"], title="a <title>")
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt; &amp; y" in page
    assert "<title>a &lt;title&gt;</title>" in page
    with pytest.raises(ValueError, match="1 labels for 2 runs"):
        render_report([run, run], ["one"])


def test_matplotlib_and_dask_load_only_when_used() -> None:
    script = ("import sys; import kubeberth.cli, kubeberth.whatif.replay.report, kubeberth.whatif.sweep.command, "
              "kubeberth.whatif.sweep.output\n"
              "kubeberth.cli.build_parser()\n"
              "heavy = ('matplotlib', 'distributed', 'dask', 'tqdm')\n"
              "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "operator")})
    assert (proc.returncode, proc.stdout.strip()) == (0, "[]"), proc.stderr
