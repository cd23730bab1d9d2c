"""What a sweep leaves in its output directory besides `runs/`: `table.csv` (one row per run),
`means.csv` (per trace, policy and options: mean and std over seeds, and the reference beside
them), `table.json` (both, and the timing under `metadata`) and `report.html` (replay's report
of the runs overlaid, with the tables and the seed means of GPU allocation against arrived
workload, per trace, the reference's dashed beside them).

Everything but `metadata` depends on the results alone: an interrupted and resumed sweep writes
the same tables and page as one run straight through.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from ..replay.report import Line, Plot, render_report, render_svg
from .execute import SweepRun, write_atomic
from .plan import Sweep
from .table import GROUP_KEY, POINTS, add_reference, find_reference, group_rows, groups_csv, read_reference, runs_csv

MAX_OVERLAID = 12  # more runs than this: the page overlays the lowest seed of each group


def table_rows(swept: SweepRun) -> list[dict[str, Any]]:
    """One row per run, in the plan's order."""
    rows = []
    for o in swept.outcomes:
        rows.append({"trace": o.run.trace.name, "policy": o.run.policy, "options": o.run.options.label,
                     "seed": o.run.seed, "status": "failed" if o.status == "failed" else "ok",
                     "tune": o.run.options.tune, **o.fields, "name": o.name, "error": o.error})
    return rows


def build_table(swept: SweepRun, sweep: Sweep, warn: Callable[[str], None]) -> dict[str, Any]:
    """{"runs": rows, "groups": means per trace x policy x options, "metadata": timing,
    "reference": path or None}; the reference read when the sweep has one."""
    rows = table_rows(swept)
    groups = group_rows(rows)
    if sweep.reference:
        add_reference(groups, read_reference(sweep.reference, warn))
    return {"runs": rows, "groups": groups, "reference": sweep.reference, "metadata": swept.metadata()}


def curves_of(swept: SweepRun) -> dict[str, dict[str, float]]:
    """Each successful run's gpuAllocation, by run name."""
    return {o.name: o.curve for o in swept.outcomes if o.status != "failed"}


def _mean_curve(curves: Sequence[Mapping[str, float]]) -> tuple[list[float], list[float]]:
    """The mean over runs at each arrived percentage every run has."""
    keys = sorted(set.intersection(*(set(c) for c in curves)), key=float) if curves else []
    return [float(k) for k in keys], [statistics.fmean(c[k] for c in curves) for k in keys]


def mean_plots(table: Mapping[str, Any], curves: Mapping[str, Mapping[str, float]],
               reference: Mapping[Any, Any] | None) -> list[Plot]:
    """Per trace and options: GPU allocation against arrived workload, the mean over seeds of each
    policy's gpuAllocation (and the reference's, dashed, in the same colour)."""
    plots = []
    by_trace: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for g in table["groups"]:
        by_trace.setdefault((g["trace"], g["options"]), []).append(g)
    for (trace, options), groups in by_trace.items():
        lines = []
        for i, g in enumerate(groups):
            mine = [curves.get(r["name"]) for r in table["runs"]
                    if r["status"] == "ok" and all(r[k] == g[k] for k in GROUP_KEY)]
            present = [c for c in mine if c]
            if present:
                lines.append(Line(f"{g['policy']} (n={len(present)})", *_mean_curve(present), colour=i))
            match = find_reference(reference, trace, g["policy"], g.get("tune")) if reference else None
            if match and match["points"]:
                ref = {k: statistics.fmean(v) for k, v in match["points"].items() if v}
                lines.append(Line(f"{g['policy']} (reference)", *_mean_curve([ref]), colour=i, dashed=True))
        if lines:
            title = f"{trace}{' ' + options if options else ''}: GPU allocation against arrived GPU requests"
            plots.append(Plot(f"mean-{trace}-{options}", title, "arrived GPU requests (% of capacity)",
                              "GPU allocation (%, mean over seeds)", lines))
    return plots


def _html_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[tuple[str, str]], table_id: str) -> str:
    def cell(v: Any) -> str:
        if v is None:
            return "-"
        return f"{v:.2f}" if isinstance(v, float) else escape(str(v))

    head = "".join(f"<th>{escape(title)}</th>" for _, title in columns)
    body = "".join("<tr>" + "".join(f"<td>{cell(r.get(k))}</td>" for k, _ in columns) + "</tr>" for r in rows)
    return f'<table id="{table_id}"><tr>{head}</tr>{body}</table>'


def group_columns(groups: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    cols = [("trace", "trace"), ("policy", "policy"), ("options", "options"), ("runs", "runs"),
            ("failed", "failed")]
    for k in POINTS:
        cols += [(f"gpuAllocation.{k}.mean", f"GPU alloc. @{k} mean"), (f"gpuAllocation.{k}.std", "std")]
        if any(f"reference.{k}.mean" in g for g in groups):
            cols += [(f"reference.{k}.mean", f"reference @{k}"), (f"diff.{k}", "difference")]
    return [*cols, ("arrived.mean", "arrived"), ("failed.mean", "failed tasks")]


def render_sweep_report(table: Mapping[str, Any], runs_dir: Path, curves: Mapping[str, Mapping[str, float]],
                        reference: Mapping[Any, Any] | None) -> str:
    """The sweep's page (see the module's docstring)."""
    ok = [r for r in table["runs"] if r["status"] == "ok"]
    if len(ok) > MAX_OVERLAID:
        lowest: dict[tuple[Any, ...], Mapping[str, Any]] = {}
        for r in ok:
            key = tuple(r[k] for k in GROUP_KEY)
            if key not in lowest or r["seed"] < lowest[key]["seed"]:
                lowest[key] = r
        shown = list(lowest.values())
    else:
        shown = ok
    results = [json.loads((runs_dir / f"{r['name']}.json").read_text()) for r in shown]
    labels = [" / ".join(str(x) for x in (r["trace"], r["policy"], f"seed {r['seed']}", r["options"]) if x)
              for r in shown]
    means = mean_plots(table, curves, reference)
    run_cols = [("trace", "trace"), ("policy", "policy"), ("options", "options"), ("seed", "seed"),
                ("status", "status"), *[(f"gpuAllocation.{k}", f"GPU alloc. @{k}") for k in POINTS],
                ("arrived", "arrived"), ("failed", "failed tasks"), ("error", "error")]
    sections = [("Mean over seeds per trace and policy", _html_table(table["groups"], group_columns(table["groups"]),
                                                                     "groups"))]
    if means:
        sections.append(("GPU allocation against arrived workload, mean over seeds",
                         "".join(f'<div class="plot-box">{render_svg(p)}</div>' for p in means)))
    sections.append(("Every run", _html_table(table["runs"], run_cols, "every-run")))
    if len(shown) < len(ok):
        sections.append(("Runs overlaid below", f"<p>The table and plots below show {len(shown)} of the {len(ok)} "
                         "successful runs: the lowest seed of each trace, policy and options.</p>"))
    runs, failed = len(table["runs"]), sum(r["status"] == "failed" for r in table["runs"])
    heading = f"kubeberth sweep: {runs} runs" + (f", {failed} failed" if failed else "")
    return render_report(results, labels, title="kubeberth sweep", heading=heading, sections=sections)


def write_outputs(table: Mapping[str, Any], out: str | Path, curves: Mapping[str, Mapping[str, float]]) -> None:
    """table.csv, means.csv, table.json and report.html into `out` (each written atomically);
    `curves`: curves_of the sweep."""
    out = Path(out)
    write_atomic(out / "table.csv", runs_csv(table["runs"]))
    write_atomic(out / "means.csv", groups_csv(table["groups"]))
    write_atomic(out / "table.json", json.dumps(table, indent=2, sort_keys=True) + "\n")
    reference = read_reference(table["reference"], lambda _: None) if table.get("reference") else None
    write_atomic(out / "report.html", render_sweep_report(table, out / "runs", curves, reference))
