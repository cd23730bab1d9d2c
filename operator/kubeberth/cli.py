"""The `kubeberth` command line."""

from __future__ import annotations

import argparse
import logging
import sys

from . import sim_io
from .report.text import DEFAULT_EXPLAIN_NODES, render_explanations


def _simulate(args: argparse.Namespace) -> int:
    from .simulate import UnknownPods, report_data, run_simulation

    # simulate reports rejected profiles, bad nodes and bad pods itself; the scheduler's log
    # repeats them, so it is shown only with --verbose (with one line per decision).
    logging.basicConfig(level=logging.INFO if args.verbose else logging.ERROR, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")

    explain = args.explain
    if args.output == "html" and explain is None:
        explain = []  # the report explains every pod unless told which
    try:
        objects = sim_io.load_files(args.files)
        outcomes, sched = run_simulation(objects, seed=args.seed, explain=explain,
                                         percentage_of_nodes_to_score=args.percentage_of_nodes_to_score)
    except (sim_io.InputError, UnknownPods) as exc:
        print(f"kubeberth simulate: {exc}", file=sys.stderr)
        return 2
    if args.output == "html":
        from .report.html import render_html

        sys.stdout.write(render_html(report_data(objects, outcomes, sched, args.seed), args.explain_nodes))
        return 0
    if args.output == "json":
        print(sim_io.render_json(outcomes))
        return 0
    print(sim_io.render_table(outcomes))
    explained = [(o.pod, o.explanations) for o in outcomes if o.explanations]
    if explained:
        print(render_explanations(explained, args.explain_nodes))
    return 0


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, not {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {n}")
    return n


def _run(args: argparse.Namespace) -> int:
    from .operator.run import run_main

    return run_main(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kubeberth", description="A Kubernetes scheduler run as a kopf operator.")
    sub = parser.add_subparsers(dest="command", required=True)
    sim = sub.add_parser("simulate", help="run the scheduler offline on YAML dumps of a cluster",
                         description="Schedule the pending pods of one or more YAML files "
                                     "(kubectl get -o yaml output) and print where they land.")
    sim.add_argument("files", nargs="+", metavar="FILE", help="multi-document YAML or kind: List")
    sim.add_argument("--output", "-o", choices=["table", "json", "html"], default="table",
                     help="output format; html: a self-contained report page (explains every pod unless "
                          "--explain names some)")
    sim.add_argument("--seed", type=int, default=0, help="seed for random tie-breaks (default 0)")
    sim.add_argument("--verbose", "-v", action="store_true",
                     help="log each scheduling attempt, preemption and binding to stderr")
    sim.add_argument("--explain", nargs="*", metavar="POD", default=None,
                     help="explain the decisions for these pods (NAMESPACE/NAME or NAME; all pods when none "
                          "is named): every plugin's verdict and score per node. Put it after the files.")
    sim.add_argument("--explain-nodes", dest="explain_nodes", metavar="N", type=_positive,
                     default=DEFAULT_EXPLAIN_NODES,
                     help=f"nodes shown per explained pod in the table (default {DEFAULT_EXPLAIN_NODES})")
    from .operator.run import PERCENTAGE_HELP, percentage

    sim.add_argument("--percentage-of-nodes-to-score", dest="percentage_of_nodes_to_score", metavar="PERCENT",
                     type=percentage, default=0, help=PERCENTAGE_HELP)
    sim.set_defaults(func=_simulate)
    from .operator.run import add_run_arguments

    run = sub.add_parser("run", help="run the scheduler against a cluster (the kopf operator)",
                         description="Run kubeberth in a cluster: watch pods, nodes and SchedulingProfiles, "
                                     "bind pending pods of the served scheduler names.")
    add_run_arguments(run)
    run.set_defaults(func=_run)
    # Parsed by convert_policy.main itself (see main below); listed here for --help.
    sub.add_parser("convert-policy", add_help=False,
                   help="convert an old kube-scheduler Policy file (JSON/YAML) into a SchedulingProfile")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["convert-policy"]:
        from .convert_policy import main as convert_main

        return convert_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
