"""The FGD paper's table (USENIX ATC'23, "Beware of Fragmentation") as one sweep: the five openb
traces of ../shared/traces/alibaba-openb-2023 x the six policies of the gpushare plugins x 10
seeds (42-51), `--protocol artifact --tune 1.3`, on a local Dask cluster of 2 worker processes;
then kubeberth's mean GPU allocation at 100% and 130% arrived beside the artifact's
(expected_gpu_allocation.csv) with the difference per cell, the issue's checks (every mean within
1.0 point; at 130% FGD highest and Random lowest on every trace), the wall time and the parallel
efficiency (sum of the runs' times / (wall time x workers)).

    python -m benchmarks.fgd_table                                # the 300 runs (make bench-fgd,
                                                                  # or make bench ARGS=--fgd-table)
    python -m benchmarks.fgd_table --traces default --seeds 42-43 # a corner of it
    python -m benchmarks.fgd_table --out .cache/fgd-table/X       # resume an interrupted one

The sweep's own output (one ReplayResult per run, the tables, report.html) goes under
.cache/fgd-table/<timestamp>/ (a few GB for the full table: not in the repository); the summary
(the table, the checks, timing, machine, commit) to benchmarks/results/<timestamp>-fgd-table.json
and latest-fgd-table.json.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .record import RESULTS_DIR, ROOT, git_commit, machine

TRACES_DIR = ROOT.parent / "shared" / "traces" / "alibaba-openb-2023"
PROFILES_DIR = ROOT / "examples" / "plugins" / "gpushare" / "kubeberth_gpushare" / "profiles"
TRACES = ("default", "cpu050", "gpushare40", "multigpu20", "gpuspec10")
POLICIES = ("Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD")  # the artifact's order
TOLERANCE = 1.0  # points of GPU allocation, the bound on |kubeberth - artifact|


def build_sweep(traces_dir: Path, traces: Sequence[str], policies: Sequence[str], seeds: Sequence[int],
                tune: float) -> Any:
    """The runs, in the artifact's order of policies, with its results as the reference."""
    from kubeberth.whatif.sweep.plan import Sweep, check_unique, expand_profiles, make_options, make_trace, product

    found = [make_trace([str(traces_dir / f"openb_pod_list_{t}.csv")], format="openb",
                        nodes=str(traces_dir / "openb_node_list_gpu_node.csv")) for t in traces]
    profiles = expand_profiles([str(PROFILES_DIR / f"{p}.yaml") for p in policies], "--policies")
    return check_unique(Sweep(product(found, profiles, list(seeds), [make_options("artifact", tune, None, "--tune")]),
                              reference=str(traces_dir / "expected_gpu_allocation.csv")))


def checks(groups: Sequence[Mapping[str, Any]], tolerance: float = TOLERANCE) -> dict[str, Any]:
    """The issue's checks on the table's groups: every mean at 100 and 130 within `tolerance` of
    the reference's; per trace, at 130, FGD the highest mean and Random the lowest."""
    far = [{"trace": g["trace"], "policy": g["policy"], "point": k, "diff": g[f"diff.{k}"]}
           for g in groups for k in ("100", "130")
           if g.get(f"diff.{k}") is not None and abs(g[f"diff.{k}"]) > tolerance]
    missing = [{"trace": g["trace"], "policy": g["policy"], "point": k} for g in groups for k in ("100", "130")
               if g.get(f"diff.{k}") is None]
    ordering = {}
    for trace in dict.fromkeys(g["trace"] for g in groups):
        at130 = {g["policy"]: g.get("gpuAllocation.130.mean") for g in groups if g["trace"] == trace}
        known = {p: v for p, v in at130.items() if v is not None}
        if {"FGD", "Random"} <= set(known):
            ordering[trace] = {"fgdHighest": known["FGD"] == max(known.values()),
                               "randomLowest": known["Random"] == min(known.values())}
    worst = max((abs(g[f"diff.{k}"]) for g in groups for k in ("100", "130") if g.get(f"diff.{k}") is not None),
                default=None)
    return {"withinTolerance": not far and not missing, "tolerance": tolerance, "worstDifference": worst,
            "outside": far, "missing": missing, "ordering": ordering,
            "orderingHolds": bool(ordering) and all(o["fgdHighest"] and o["randomLowest"] for o in ordering.values())}


def render(groups: Sequence[Mapping[str, Any]]) -> str:
    """Per trace: each policy's mean (± std) at 100 and 130, the artifact's, the difference."""
    def num(v: Any, fmt: str = "{:.2f}") -> str:
        return "-" if v is None else fmt.format(v)

    lines = []
    for trace in dict.fromkeys(g["trace"] for g in groups):
        lines.append(f"{trace}")
        lines.append(f"  {'policy':<14}{'kubeberth@100':>16}{'artifact':>10}{'diff':>8}"
                     f"{'kubeberth@130':>16}{'artifact':>10}{'diff':>8}  runs")
        for g in (g for g in groups if g["trace"] == trace):
            cells = []
            for k in ("100", "130"):
                mean, std = g.get(f"gpuAllocation.{k}.mean"), g.get(f"gpuAllocation.{k}.std")
                ours = num(mean) + (f" ± {std:.2f}" if std is not None else "")
                cells.append(f"{ours:>16}{num(g.get(f'reference.{k}.mean')):>10}"
                             f"{num(g.get(f'diff.{k}'), '{:+.2f}'):>8}")
            failed = f" ({g['failed']} failed)" if g["failed"] else ""
            lines.append(f"  {g['policy']:<14}{''.join(cells)}  {g['runs']}{failed}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from kubeberth.whatif.sweep import execute
    from kubeberth.whatif.sweep.output import build_table, curves_of, write_outputs
    from kubeberth.whatif.sweep.plan import SweepError, parse_seeds

    p = argparse.ArgumentParser(prog="python -m benchmarks.fgd_table", description=__doc__.split("\n\n")[0])
    p.add_argument("--traces", default=",".join(TRACES), help=f"comma-separated (default {','.join(TRACES)})")
    p.add_argument("--policies", default=",".join(POLICIES), help=f"comma-separated (default {','.join(POLICIES)})")
    p.add_argument("--seeds", default="42-51", help="default 42-51 (the artifact's)")
    p.add_argument("--tune", type=float, default=1.3)
    p.add_argument("--workers", type=int, default=2, help="worker processes of the local Dask cluster (default 2)")
    p.add_argument("--traces-dir", type=Path, default=TRACES_DIR, help=f"default {TRACES_DIR}")
    p.add_argument("--out", type=Path, help="the sweep's directory (an existing one resumes; default: a new one "
                                            "under .cache/fgd-table/)")
    p.add_argument("--no-write", action="store_true", help="do not write benchmarks/results/")
    args = p.parse_args(argv)
    if not (args.traces_dir / "expected_gpu_allocation.csv").is_file():
        print(f"fgd_table: {args.traces_dir}: no openb traces there (see its README)", file=sys.stderr)
        return 2
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    out = args.out or ROOT / ".cache" / "fgd-table" / stamp
    try:
        sweep = build_sweep(args.traces_dir, args.traces.split(","), args.policies.split(","),
                            parse_seeds(args.seeds), args.tune)
        replay = execute.default_replay()
    except (SweepError, RuntimeError) as exc:
        print(f"fgd_table: {exc}", file=sys.stderr)
        return 2
    print(f"fgd_table: {len(sweep.runs)} replays on {args.workers} workers into {out}", file=sys.stderr)
    swept = execute.run_sweep(sweep, out, workers=args.workers, replay=replay)
    table = build_table(swept, sweep, lambda m: print(f"fgd_table: {m}", file=sys.stderr))
    write_outputs(table, out, curves_of(swept))
    meta, verdict = table["metadata"], checks(table["groups"])
    print(render(table["groups"]))
    worst = verdict["worstDifference"]
    print(f"within {TOLERANCE} point of the artifact everywhere: {'yes' if verdict['withinTolerance'] else 'NO'} "
          f"(worst {'-' if worst is None else f'{worst:.2f}'}, {len(verdict['outside'])} cells outside, "
          f"{len(verdict['missing'])} missing)")
    print("at 130%, FGD highest and Random lowest on every trace: "
          f"{'yes' if verdict['orderingHolds'] else 'NO'} {json.dumps(verdict['ordering'])}")
    eff = meta["parallelEfficiency"]
    print(f"{meta['runs']} runs ({meta['ran']} ran now, {meta['resumed']} resumed, {meta['failed']} failed) on "
          f"{meta['workers']} workers: wall {meta['wallSeconds']:.1f}s (+{meta['startupSeconds']:.1f}s cluster "
          f"start), runs {meta['runSeconds']:.1f}s, parallel efficiency {'-' if eff is None else f'{eff:.3f}'}")
    print(f"report: {out / 'report.html'}")
    if not args.no_write:
        summary = {"timestamp": stamp, "commit": git_commit(), "machine": machine(), "out": str(out),
                   "metadata": {k: v for k, v in meta.items() if k != "perRun"}, "checks": verdict,
                   "groups": table["groups"]}
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        text = json.dumps(summary, indent=1, sort_keys=True) + "\n"
        (RESULTS_DIR / f"{stamp}-fgd-table.json").write_text(text)
        (RESULTS_DIR / "latest-fgd-table.json").write_text(text)
        print(f"wrote {RESULTS_DIR / f'{stamp}-fgd-table.json'}")
    return 1 if meta["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
