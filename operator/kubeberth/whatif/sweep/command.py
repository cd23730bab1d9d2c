"""`kubeberth sweep`: its arguments and what it does with them (cli.py adds the verb and calls
`main`). Exit status: 0 every run succeeded, 1 some runs failed (each recorded, the others
done), 2 the sweep itself is refused (a bad sweep file or flag), 130 interrupted (run the same
command again to resume)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ...argtypes import positive
from .plan import (
    Options,
    Sweep,
    SweepError,
    check_unique,
    expand_profiles,
    load_sweep,
    make_options,
    make_trace,
    parse_seeds,
    product,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The verb's arguments (but --plugins and --feature-gates, which cli.py adds as for every verb)."""
    parser.add_argument("sweep", nargs="?", metavar="SWEEP.yaml",
                        help="a sweep file (traces, profiles, seeds, options: docs/guides/sweep.md); the flags "
                             "below replace its lists")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="the output directory: runs/<name>.json per run, table.csv, means.csv, table.json, "
                             "report.html; runs already there are not redone")
    parser.add_argument("--trace", action="append", metavar="FILE",
                        help="a trace (repeatable): an openb tasks CSV with --nodes, or a YAML file")
    parser.add_argument("--nodes", metavar="NODES.csv", help="the openb nodes file of every --trace")
    parser.add_argument("--format", choices=["openb", "yaml"], help="the traces' format (default: openb with "
                                                                    "--nodes, else yaml)")
    parser.add_argument("--profile", action="append", metavar="FILE_OR_DIR",
                        help="a SchedulingProfile file or a directory of them, one run per profile (repeatable)")
    parser.add_argument("--seeds", metavar="SEEDS", help="seeds: 42-51, 1,2,3 or a mix (default 0)")
    parser.add_argument("--protocol", choices=["artifact"], help="replay's --protocol for every run")
    parser.add_argument("--tune", action="append", type=float, metavar="X",
                        help="replay's --tune (repeatable: one set of runs per value)")
    parser.add_argument("--tie-break", dest="tie_break", choices=["reservoir", "fixed-order"],
                        help="replay's --tie-break for every run")
    parser.add_argument("--reference", metavar="CSV",
                        help="results in the FGD artifact's format (expected_gpu_allocation.csv) shown beside "
                             "the table, with the difference")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--workers", type=positive, default=2, metavar="N",
                       help="worker processes of the local Dask cluster (default 2; one thread each)")
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="run on an existing Dask cluster (e.g. tcp://dask-scheduler:8786) instead")
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar on stderr")


def sweep_from_args(args: argparse.Namespace) -> Sweep:
    """The sweep file's sweep with the flags' lists in place of its own, or the flags' alone."""
    base = load_sweep(args.sweep) if args.sweep else None
    if base is None and not args.trace:
        raise SweepError("give a sweep file or at least one --trace")
    runs = base.runs if base else ()
    traces = [make_trace([t], format=args.format, nodes=args.nodes) for t in args.trace] if args.trace else \
        list(dict.fromkeys(r.trace for r in runs))
    profiles = expand_profiles(args.profile, "--profile") if args.profile else \
        list(dict.fromkeys(r.profile for r in runs)) or [None]
    seeds = parse_seeds(args.seeds) if args.seeds else list(dict.fromkeys(r.seed for r in runs)) or [0]
    if args.protocol or args.tune or args.tie_break:
        options = [make_options(args.protocol, t, args.tie_break, "--tune") for t in (args.tune or [None])]
    else:
        options = list(dict.fromkeys(r.options for r in runs)) or [Options()]
    plugins = [str(Path(p).resolve()) if Path(p).exists() else p for p in args.plugins or []]
    return check_unique(Sweep(product(traces, profiles, seeds, options),
                              tuple(plugins) or (base.plugins if base else ()),
                              tuple(args.feature_gates or ()) or (base.feature_gates if base else ()),
                              args.reference or (base.reference if base else None)))


def main(args: argparse.Namespace) -> int:
    """Run the sweep, write the table and the page, print the means."""
    from . import execute
    from .output import build_table, curves_of, write_outputs
    from .table import text_table

    def warn(message: str) -> None:
        print(f"kubeberth sweep: {message}", file=sys.stderr)

    try:
        sweep = sweep_from_args(args)
    except SweepError as exc:
        warn(str(exc))
        return 2
    if sweep.reference and not Path(sweep.reference).is_file():
        warn(f"--reference: {sweep.reference}: no such file")
        return 2
    try:
        (Path(args.out) / "runs").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        warn(f"--out {args.out}: {exc.strerror or exc}")
        return 2
    try:
        replay = execute.default_replay()  # here, so that a missing engine is one line, not a failure per run
    except (ImportError, RuntimeError) as exc:
        warn(str(exc))
        return 2
    try:
        swept = execute.run_sweep(sweep, args.out, workers=args.workers, scheduler=args.scheduler, replay=replay,
                                  progress=sys.stderr if args.progress else None)
    except KeyboardInterrupt:
        warn(f"interrupted: the finished runs are in {args.out}/runs; run the same command again to resume")
        return 130
    except execute.ClusterError as exc:
        warn(str(exc))
        return 2
    try:
        table = build_table(swept, sweep, warn)
    except ValueError as exc:  # a reference file whose header is not the artifact's
        warn(str(exc))
        return 2
    write_outputs(table, args.out, curves_of(swept))
    sys.stdout.write(f"{text_table(table['groups'])}")
    meta = table["metadata"]
    efficiency = meta["parallelEfficiency"]
    print(f"kubeberth sweep: {meta['runs']} runs ({meta['ran']} ran, {meta['resumed']} resumed, {meta['failed']} "
          f"failed) on {meta['workers']} workers: {meta['wallSeconds']:.1f}s wall, {meta['runSeconds']:.1f}s of "
          f"runs, parallel efficiency {'-' if efficiency is None else f'{efficiency:.2f}'}; {args.out}/report.html",
          file=sys.stderr)
    return 1 if meta["failed"] else 0
