"""`kubeberth replay`: its arguments, reading its input (YAML with times and ReplayScenarios, or
an openb trace), the run, and the output (a text summary, `-o json`, `-o csv`, `--out DIR`).
cli.py only adds the parser and calls `main`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, TextIO

from ..inputs import InputError, Origins, load_files
from .workload import SCENARIO_KIND, ReplayInput, Timed, replay_input

FORMATS = ("yaml", "openb")


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, not {text!r}") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, not {text}")
    return v


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """replay's own options (cli.py adds --plugins and --feature-gates as for simulate)."""
    from ...operator.options import PERCENTAGE_HELP, percentage

    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="YAML (objects with kubeberth.io/arrival-time ... annotations, ReplayScenario "
                             "documents) or, with --format openb, the tasks CSV")
    parser.add_argument("--format", choices=FORMATS, default="yaml", help="input format (default yaml)")
    parser.add_argument("--nodes", metavar="NODES.csv", help="with --format openb: the nodes CSV")
    parser.add_argument("--profile", action="append", metavar="FILE",
                        help="SchedulingProfile YAML (or a KubeSchedulerConfiguration document) to schedule with")
    parser.add_argument("--config", metavar="FILE", help="a KubeSchedulerConfiguration file, as simulate --config")
    parser.add_argument("--percentage-of-nodes-to-score", dest="percentage_of_nodes_to_score", metavar="PERCENT",
                        type=percentage, default=0, help=PERCENTAGE_HELP)
    parser.add_argument("--seed", type=int, default=0, help="seed for random tie-breaks (default 0)")
    parser.add_argument("--output", "-o", choices=["summary", "json", "csv"], default="summary",
                        help="summary: a few lines; json: the ReplayResult object; csv: the time series")
    parser.add_argument("--out", metavar="DIR",
                        help="also write result.json, series.csv, summary.csv (and report.html) into DIR")
    parser.add_argument("--sample-every", dest="sample_every", type=_seconds, metavar="SECONDS",
                        help="a row of the time series every SECONDS (default: after every instant)")
    parser.add_argument("--until", type=_seconds, metavar="SECONDS", help="stop the replay at that time")
    parser.add_argument("--progress", action="store_true",
                        help="a progress bar on stderr (shown anyway when stderr is a terminal)")


def read_input(args: argparse.Namespace, warn: TextIO) -> tuple[ReplayInput, int | None]:
    """The replay's input and the configuration's percentageOfNodesToScore (None: not set).
    InputError for what cannot be read."""
    from ..config_files import load_config, prepare

    origins = Origins()
    profiles = load_files(args.profile or [], origins)
    config = load_config(args.config, warn) if args.config else None
    if args.format == "openb":
        if not args.nodes:
            raise InputError("--format openb needs --nodes NODES.csv")
        if len(args.files) != 1:
            raise InputError("--format openb reads one tasks CSV")
        from .openb import read_openb

        nodes, tasks, skipped = read_openb(args.nodes, args.files[0], warn)
        prepared = prepare(profiles, warn, config, origins=origins)
        data = ReplayInput(static=prepared.objects, timed=[*nodes, *tasks], origins=origins, problems=skipped)
        if skipped:
            warn.write(f"{skipped} row{'s' if skipped != 1 else ''} skipped\n")
    else:
        if args.nodes:
            raise InputError("--nodes is for --format openb")
        objects = [*profiles, *load_files(args.files, origins)]
        scenarios = [o for o in objects if o.get("kind") == SCENARIO_KIND]
        prepared = prepare([o for o in objects if o.get("kind") != SCENARIO_KIND], warn, config, origins=origins)
        data = replay_input([*prepared.objects, *scenarios], warn, origins)
    report_never_fits(data.timed, warn)
    return data, prepared.percentage_of_nodes_to_score


def report_never_fits(timed: list[Timed], warn: TextIO) -> int:
    """Pods no node of the input could ever hold (a request above every node's allocatable):
    reported, not refused (they arrive, and stay unschedulable). Returns how many."""
    from .fit import never_fits

    bad = never_fits(timed)
    for key, why in bad[:20]:
        warn.write(f"pod {key} can never fit: {why}\n")
    if len(bad) > 20:
        warn.write(f"... and {len(bad) - 20} more pods that can never fit\n")
    return len(bad)


def render_summary(result: dict[str, Any]) -> str:
    s = result["summary"]
    q = s["queueingDelay"]
    lines = [f"arrived {s['arrived']}, scheduled {s['scheduled']}, failed {s['failed']}, departed {s['departed']}, "
             f"preemptions {s['preemptions']} over {s['duration']:g} s",
             "queueing delay: " + (f"p50 {q['p50']:g} s, p99 {q['p99']:g} s, mean {q['mean']:g} s, max {q['max']:g} s"
                                   if q["p50"] is not None else "no pod bound")]
    for r, a in s["allocation"].items():
        if a["mean"] is not None:
            lines.append(f"allocation {r}: mean {a['mean']:.2f}%, max {a['max']:.2f}%, final {a['final']:.2f}%")
    for reason, n in s["unschedulableByReason"].items():
        lines.append(f"unschedulable: {n} pod{'s' if n != 1 else ''}: {reason}")
    return "\n".join(lines) + "\n"


def main(args: argparse.Namespace, *, hooks: Callable[[ReplayInput, Any], ReplayInput | None] | None = None) -> int:
    """Run `kubeberth replay`. `hooks(data, options)` (a protocol's: `args` carry its options) may
    change the ReplayOptions and return the workload to replay instead of `data` (None: `data`);
    an InputError it raises is the command's error. Exit status 2 with a message for input or
    options refused."""
    from .engine import Replay, ReplayOptions
    from .output import build_result, render_json, render_series_csv, write_dir

    warn = sys.stderr
    try:
        data, config_percentage = read_input(args, warn)
    except InputError as exc:
        print(f"kubeberth replay: {exc}", file=warn)
        return 2
    files = [*([args.nodes] if args.nodes else []), *args.files]
    percentage = args.percentage_of_nodes_to_score or config_percentage or 0
    options = ReplayOptions(seed=args.seed, until=args.until, sample_every=args.sample_every,
                            percentage_of_nodes_to_score=percentage,
                            progress=bool(args.progress or warn.isatty()),
                            input_info={"format": args.format, "files": files,
                                        "profile": (args.profile or [args.config])[0], "seed": args.seed})
    try:
        if hooks is not None:
            data = hooks(data, options) or data
        replay = Replay(data, options, warn=warn)
        ledger = replay.run()
    except InputError as exc:
        print(f"kubeberth replay: {exc}", file=warn)
        return 2
    result = build_result(ledger, replay.end, options.input_info, options.extend_result)
    if args.out:
        try:
            write_dir(result, args.out)
        except OSError as exc:
            print(f"kubeberth replay: --out {args.out}: {exc.strerror or exc}", file=warn)
            return 2
    out = sys.stdout
    if args.output == "json":
        out.write(render_json(result))
    elif args.output == "csv":
        out.write(render_series_csv(result))
    else:
        out.write(render_summary(result))
    return 0
