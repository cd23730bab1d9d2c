"""The `kubeberth` command line."""

from __future__ import annotations

import argparse
import logging
import sys

from . import sim_io


def _simulate(args: argparse.Namespace) -> int:
    from .simulate import simulate

    # simulate reports rejected profiles, bad nodes and bad pods itself; the scheduler's log
    # repeats them, so it is shown only with --verbose.
    logging.basicConfig(level=logging.INFO if args.verbose else logging.ERROR, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")

    try:
        objects = sim_io.load_files(args.files)
    except sim_io.InputError as exc:
        print(f"kubeberth simulate: {exc}", file=sys.stderr)
        return 2
    outcomes = simulate(objects, seed=args.seed, percentage_of_nodes_to_score=args.percentage_of_nodes_to_score)
    print(sim_io.render_json(outcomes) if args.output == "json" else sim_io.render_table(outcomes))
    return 0


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
    sim.add_argument("--output", "-o", choices=["table", "json"], default="table", help="output format")
    sim.add_argument("--seed", type=int, default=0, help="seed for random tie-breaks (default 0)")
    sim.add_argument("--verbose", "-v", action="store_true", help="log each scheduling step to stderr")
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
