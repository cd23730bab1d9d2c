"""`kubeberth replay`: its arguments, reading its input (YAML with times and ReplayScenarios, or
an openb trace), the run, and the output (a text summary, `-o json`, `-o csv`, `--out DIR`).
cli.py only adds the parser and calls `main`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
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
    add_protocol_arguments(parser)


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


def _tune(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, not {text!r}") from None
    if not v >= 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {text}")
    return v


def add_protocol_arguments(parser: argparse.ArgumentParser) -> None:
    """--protocol, --tune, --tie-break."""
    from ...framework.tie_break import TIE_BREAKS
    from .protocol_hooks import DEFAULT_TUNE, PROTOCOLS

    parser.add_argument("--protocol", choices=PROTOCOLS, default=None,
                        help="artifact: the FGD paper's protocol (the workload built for --tune, one task per "
                             "instant, nothing leaves, unschedulable tasks dropped, every feasible node scored, "
                             "fixed-order tie-break) and the result's gpuAllocation curve")
    parser.add_argument("--tune", type=_tune, default=None, metavar="RATIO",
                        help="with --protocol artifact: the workload's GPU request as a multiple of the "
                             f"cluster's GPU capacity (default {DEFAULT_TUNE}; 0: the trace as it is)")
    parser.add_argument("--tie-break", dest="tie_break", choices=TIE_BREAKS, default=None,
                        help="how nodes tied on the highest score are chosen: reservoir (upstream's rule, a "
                             "uniform draw from --seed's generator; the default) or fixed-order (the first in a "
                             "random but fixed order of the node names drawn from --seed; the default with "
                             "--protocol artifact)")


def execute(args: argparse.Namespace, warn: TextIO, *, progress: bool = False,
            hooks: Callable[[ReplayInput, Any], ReplayInput | None] | None = None) -> dict[str, Any]:
    """The replay `args` describe, its ReplayResult; nothing printed but warnings on `warn`.
    InputError for input or options refused. `hooks(data, options)`: see `main`."""
    from ...framework.tie_break import RESERVOIR, tie_break_rule
    from .engine import Replay, ReplayOptions
    from .output import build_result
    from .protocol_hooks import DEFAULT_TUNE, attach, make_protocol

    protocol_name = getattr(args, "protocol", None)
    tune = getattr(args, "tune", None)
    if tune is not None and protocol_name is None:
        raise InputError("--tune is for --protocol artifact")
    if protocol_name is not None and tune is None:
        tune = DEFAULT_TUNE
    protocol = make_protocol(protocol_name, float(tune or 0), args.seed) if protocol_name else None
    tie_break = getattr(args, "tie_break", None) or (protocol.tie_break if protocol else RESERVOIR)
    data, config_percentage = read_input(args, warn)
    files = [*([args.nodes] if args.nodes else []), *args.files]
    percentage = args.percentage_of_nodes_to_score or config_percentage or 0
    options = ReplayOptions(seed=args.seed, until=args.until, sample_every=args.sample_every,
                            percentage_of_nodes_to_score=percentage, progress=progress,
                            input_info={"format": args.format, "files": files,
                                        "profile": (args.profile or [args.config])[0], "seed": args.seed,
                                        "protocol": protocol_name, "tune": tune, "tieBreak": tie_break})
    if protocol is not None:
        data = attach(protocol, data, options, tie_break)
    elif tie_break != RESERVOIR:
        rule = tie_break_rule(tie_break, args.seed)
        options.configure = lambda sched: setattr(sched.ctx, "tie_break", rule)
    if hooks is not None:
        data = hooks(data, options) or data
    replay = Replay(data, options, warn=warn)
    ledger = replay.run()
    return build_result(ledger, replay.end, options.input_info, options.extend_result)


def run_replay(files: Sequence[str], *, format: str = "yaml", nodes: str | None = None,
               profile: str | None = None, seed: int = 0, protocol: str | None = None,
               tune: float | None = None, tie_break: str | None = None,
               warn: TextIO | None = None) -> dict[str, Any]:
    """The ReplayResult `kubeberth replay FILES --format FORMAT [--nodes NODES] [--profile
    PROFILE] --seed SEED [--protocol P] [--tune T] [--tie-break R] -o json` prints (the same
    object: output.render_json gives the same bytes). Prints nothing; warnings (skipped rows...)
    go to `warn` (default: dropped). InputError (a ValueError) for input or options refused."""
    import io

    parser = argparse.ArgumentParser(prog="kubeberth replay", add_help=False)
    add_arguments(parser)
    args = parser.parse_args(["-"])
    args.files, args.format, args.nodes, args.seed = list(files), format, nodes, seed
    args.profile = [profile] if profile else None
    if format not in FORMATS:
        raise InputError(f"--format: {format!r} is not one of {', '.join(FORMATS)}")
    from .protocol_hooks import PROTOCOLS

    if protocol is not None and protocol not in PROTOCOLS:
        raise InputError(f"--protocol: {protocol!r} is not one of {', '.join(PROTOCOLS)}")
    if tune is not None and (not tune >= 0 or tune == float("inf")):
        raise InputError(f"--tune: must be 0 or more, not {tune}")
    args.protocol, args.tune, args.tie_break = protocol, tune, tie_break
    return execute(args, warn if warn is not None else io.StringIO())


def main(args: argparse.Namespace, *, hooks: Callable[[ReplayInput, Any], ReplayInput | None] | None = None) -> int:
    """Run `kubeberth replay`. `hooks(data, options)` may change the ReplayOptions and return the
    workload to replay instead of `data` (None: `data`), after the protocol's own; an InputError
    it raises is the command's error. Exit status 2 with a message for input or options refused."""
    from .output import render_json, render_series_csv, write_dir

    warn = sys.stderr
    try:
        result = execute(args, warn, progress=bool(args.progress or warn.isatty()), hooks=hooks)
    except InputError as exc:
        print(f"kubeberth replay: {exc}", file=warn)
        return 2
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
