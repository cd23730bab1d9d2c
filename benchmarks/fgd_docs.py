"""The FGD table's page of the documentation, from a finished sweep: the mean GPU allocation of
each trace and policy at 100% and 130% arrived beside the artifact's (with the difference), the
checks of issue 40, and the paper's Fig. 9a (allocation against arrived GPU requests, the mean
over seeds per policy, the artifact's dashed) as an SVG for docs/.

    python -m benchmarks.fgd_docs .cache/fgd-table/<run> [--reference CSV] [--svg docs/performance/fgd-default.svg]
        [--trace default] > table.md

It reads only each run's `input` and `gpuAllocation` (the sweep's result files under runs/).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import orjson

from kubeberth.whatif.replay.report import Line, Plot, render_svg

from .fgd_table import POLICIES, TOLERANCE, TRACES_DIR

Curves = dict[tuple[str, str], list[dict[str, float]]]


def trace_name(files: Sequence[str]) -> str:
    """`openb_pod_list_default.csv` -> `default`."""
    stem = Path(files[-1]).stem
    return stem.removeprefix("openb_pod_list_")


def read_runs(sweep_dir: Path) -> Curves:
    """(trace, policy) -> the gpuAllocation of each run."""
    curves: Curves = {}
    for path in sorted((sweep_dir / "runs").glob("*.json")):
        if path.name.endswith(".error.json"):
            continue
        result = orjson.loads(path.read_bytes())
        info = result["input"]
        policy = Path(str(info["profile"])).stem
        curves.setdefault((trace_name(info["files"]), policy), []).append(
            {k: float(v) for k, v in result["gpuAllocation"].items()})
    return curves


def read_reference(path: Path) -> Curves:
    """The artifact's expected_gpu_allocation.csv: (trace, policy) -> each seed's row."""
    curves: Curves = {}
    lines = path.read_text().splitlines()
    header = lines[0].split(",")
    for line in lines[1:]:
        cells = dict(zip(header, line.split(","), strict=True))
        policy = cells["sc_policy"].split("-", 1)[1]
        row = {k: float(cells[k]) for k in header[5:] if cells[k] != ""}
        curves.setdefault((cells["workload"].removeprefix("openb_pod_list_"), policy), []).append(row)
    return curves


def mean_at(rows: Sequence[Mapping[str, float]], k: str) -> float | None:
    values = [r[k] for r in rows if k in r]
    return statistics.fmean(values) if values else None


def mean_curve(rows: Sequence[Mapping[str, float]]) -> tuple[list[float], list[float]]:
    keys = sorted(set.intersection(*(set(r) for r in rows)), key=float) if rows else []
    return [float(k) for k in keys], [statistics.fmean(r[k] for r in rows) for k in keys]


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def table(ours: Curves, ref: Curves) -> tuple[list[str], list[str]]:
    """The markdown table (one row per trace and policy) and the checks' failures."""
    out = ["| trace | policy | seeds | kubeberth 100% | artifact 100% | diff | kubeberth 130% | artifact 130% | diff |",
           "|---|---|---|---|---|---|---|---|---|"]
    failures: list[str] = []
    traces = sorted({t for t, _ in ours}, key=lambda t: (t != "default", t))
    for trace in traces:
        at130: dict[str, float] = {}
        for policy in POLICIES:
            runs = ours.get((trace, policy))
            if not runs:
                continue
            cells = [trace, policy, str(len(runs))]
            for k in ("100", "130"):
                mine, theirs = mean_at(runs, k), mean_at(ref.get((trace, policy), []), k)
                diff = None if mine is None or theirs is None else mine - theirs
                cells += [_cell(mine), _cell(theirs), "-" if diff is None else f"{diff:+.2f}"]
                if diff is not None and abs(diff) > TOLERANCE:
                    failures.append(f"{trace} {policy} at {k}%: {diff:+.2f} points")
                if k == "130" and mine is not None:
                    at130[policy] = mine
            out.append("| " + " | ".join(cells) + " |")
        if at130:
            top, bottom = max(at130, key=at130.__getitem__), min(at130, key=at130.__getitem__)
            if top != "FGD" or bottom != "Random":
                failures.append(f"{trace}: at 130% the highest is {top}, the lowest {bottom}")
    return out, failures


def figure(ours: Curves, ref: Curves, trace: str) -> str:
    lines = []
    for i, policy in enumerate(POLICIES):
        if (trace, policy) in ours:
            lines.append(Line(f"{policy} (kubeberth)", *mean_curve(ours[(trace, policy)]), colour=i))
        if (trace, policy) in ref:
            lines.append(Line(f"{policy} (artifact)", *mean_curve(ref[(trace, policy)]), colour=i, dashed=True))
    return render_svg(Plot(f"fgd-{trace}", f"{trace}: GPU allocation against arrived GPU requests (mean over seeds)",
                           "arrived GPU requests (% of the cluster's GPU capacity)", "GPU allocation (%)", lines))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fgd_docs", description=__doc__.split("\n\n")[0])
    parser.add_argument("sweep", type=Path)
    parser.add_argument("--reference", type=Path, default=TRACES_DIR / "expected_gpu_allocation.csv")
    parser.add_argument("--svg", type=Path)
    parser.add_argument("--trace", default="default")
    args = parser.parse_args(argv)
    ours, ref = read_runs(args.sweep), read_reference(args.reference)
    rows, failures = table(ours, ref)
    print("\n".join(rows))
    print()
    print("Checks: " + ("all hold" if not failures else "; ".join(failures)))
    if args.svg:
        args.svg.write_text(figure(ours, ref, args.trace) + "\n")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
