"""The `kubeberth` command line: each verb parses its arguments, calls the part that does the work
(the what-if tools are `whatif/`, `kubeberth run` is `operator/run.py`) and writes its output."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable

from .argtypes import positive
from .report.text import DEFAULT_EXPLAIN_NODES, render_explanations
from .whatif.inputs import InputError


def _simulate(args: argparse.Namespace) -> int:
    from .whatif.engine import UnknownPods, run_simulation
    from .whatif.simulate import percentage, read_input, report_data

    # simulate reports bad nodes and bad pods itself (a refused profile is an error); the scheduler's log
    # repeats them, so it is shown only with --verbose (with one line per decision).
    logging.basicConfig(level=logging.INFO if args.verbose else logging.ERROR, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")

    if not _set_gates(args, "simulate"):
        return 2
    explain = args.explain
    if args.output == "html" and explain is None:
        explain = []  # the report explains every pod unless told which
    try:
        if args.compare is not None:
            return _compare(args)
        sim_input = read_input(args.files, args.config or [], sys.stderr)
        objects = sim_input.objects
        pct = percentage(args.percentage_of_nodes_to_score, sim_input)
        outcomes, sched = run_simulation(objects, seed=args.seed, explain=explain,
                                         percentage_of_nodes_to_score=pct,
                                         origins=sim_input.origins, tie_break=args.tie_break)
        if args.suggest:
            from .whatif.suggest import attach

            for r in attach(objects, outcomes, seed=args.seed, percentage_of_nodes_to_score=pct,
                            tie_break=args.tie_break, limit=args.suggest_limit, budget=args.suggest_budget):
                for err in r.errors:
                    print(f"kubeberth simulate: --suggest for {r.unit.key}: {err}", file=sys.stderr)
    except (InputError, UnknownPods) as exc:
        print(f"kubeberth simulate: {exc}", file=sys.stderr)
        return 2
    if args.output == "html":
        from .report.html import render_html

        sys.stdout.write(render_html(report_data(objects, outcomes, sched, args.seed), args.explain_nodes))
        return 0
    from .whatif.outcomes import render_json, render_table
    from .whatif.pod_groups import group_dict, group_outcomes, render_groups_table

    groups = group_outcomes(sched, outcomes)
    if args.output == "json":
        print(render_json(outcomes, [group_dict(g) for g in groups]))
        return 0
    print(render_table(outcomes))
    if groups:
        print()
        print(render_groups_table(groups))
    explained = [(o.pod, o.explanations) for o in outcomes if o.explanations]
    if explained:
        print(render_explanations(explained, args.explain_nodes))
    if args.suggest:
        from .report.suggestions import render_section

        print(render_section(outcomes))
    return 0


def _replay(args: argparse.Namespace) -> int:
    from .whatif.replay.command import main as replay_main

    logging.basicConfig(level=logging.ERROR, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    if not _set_gates(args, "replay"):
        return 2
    return replay_main(args)


def _capacity(args: argparse.Namespace) -> int:
    from .whatif.capacity.command import run

    return run(args) if _set_gates(args, "capacity") else 2


def _compare(args: argparse.Namespace) -> int:
    import json

    from .report.compare import render_compare_html, render_compare_text
    from .whatif.compare import compare_files

    result = compare_files(args.files, args.compare or [], args.config or [], seed=args.seed,
                           percentage_of_nodes_to_score=int(args.percentage_of_nodes_to_score), warn=sys.stderr,
                           tie_break=args.tie_break)
    if args.output == "json":
        print(json.dumps({k: v for k, v in result.items()} | {
            "a": {k: v for k, v in result["a"].items() if k != "report"},
            "b": {k: v for k, v in result["b"].items() if k != "report"}}, indent=2))
    elif args.output == "html":
        sys.stdout.write(render_compare_html(result))
    else:
        print(render_compare_text(result))
    return 0


def _sweep(args: argparse.Namespace) -> int:
    from .whatif.sweep.command import main as sweep_main

    return sweep_main(args)


def _snapshot(args: argparse.Namespace) -> int:
    import time

    from .whatif.snapshot import SnapshotError, write_snapshot

    if args.page_size < 1:
        print("kubeberth snapshot: --page-size must be at least 1", file=sys.stderr)
        return 2
    options = {"kubeconfig": args.kubeconfig, "context": args.context, "server": args.server,
               "namespace": args.namespace, "selector": args.selector, "page_size": args.page_size,
               "request_timeout": args.request_timeout}
    started = time.monotonic()
    try:
        if args.output == "-":
            write_snapshot(sys.stdout, **options)
        else:
            with open(args.output, "w") as f:
                write_snapshot(f, **options)
    except (SnapshotError, OSError) as exc:
        # a bad kubeconfig, an unreachable server: one line, not a traceback
        print(f"kubeberth snapshot: {exc or type(exc).__name__}", file=sys.stderr)
        return 1
    print(f"snapshot taken in {time.monotonic() - started:.1f}s", file=sys.stderr)
    return 0


def _add_snapshot_arguments(parser: argparse.ArgumentParser) -> None:
    from .whatif.snapshot import DEFAULT_PAGE_SIZE

    parser.add_argument("--kubeconfig", metavar="PATH", default=None, help="kubeconfig file (default: $KUBECONFIG "
                                                                            "or ~/.kube/config)")
    parser.add_argument("--context", metavar="NAME", default=None, help="kubeconfig context to use")
    parser.add_argument("--server", metavar="URL", default=None, help="an API server URL without credentials "
                                                                       "(e.g. kubectl proxy)")
    parser.add_argument("--namespace", "-n", metavar="NS", default=None,
                        help="only this namespace's pending pods (pods on nodes always come)")
    parser.add_argument("--selector", "-l", metavar="SELECTOR", default=None,
                        help="only pending pods matching this label selector (e.g. app=web,tier!=db)")
    parser.add_argument("--output", "-o", metavar="FILE", default="-", help="where to write (default: stdout)")
    parser.add_argument("--page-size", dest="page_size", metavar="N", type=int, default=DEFAULT_PAGE_SIZE,
                        help=f"objects per list call (default {DEFAULT_PAGE_SIZE})")
    parser.add_argument("--request-timeout", dest="request_timeout", metavar="SECONDS", type=float, default=60.0,
                        help="timeout of each list call (default 60)")


def _test(args: argparse.Namespace) -> int:
    from .whatif.policy_tests import run_tests

    try:
        return run_tests(args.cases, sys.stdout, verbose=args.verbose)
    except InputError as exc:
        print(f"kubeberth test: {exc}", file=sys.stderr)
        return 2


def _profile_export(args: argparse.Namespace) -> int:
    import yaml

    from .config import ConfigError
    from .whatif.config_files import export_profiles

    try:
        doc = export_profiles(args.files)
    except (InputError, ConfigError) as exc:
        print(f"kubeberth profile export: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(yaml.safe_dump(doc, sort_keys=False))
    return 0


def convert_policy_main(argv: list[str]) -> int:
    """`kubeberth convert-policy ARGS` (parsed here: it has a parser of its own)."""
    from pathlib import Path

    from .config import ConfigError
    from .config.defaults import DEFAULT_SCHEDULER_NAME
    from .whatif.convert_policy import PolicyFileError, convert_file, to_yaml

    parser = argparse.ArgumentParser(
        prog="kubeberth convert-policy",
        description="Convert an old kube-scheduler Policy file (JSON or YAML) into a SchedulingProfile.")
    parser.add_argument("policy", metavar="POLICY.json", help="the Policy file ('-' reads stdin)")
    parser.add_argument("--name", help="metadata.name of the profile (default: from the file name)")
    parser.add_argument("--scheduler-name", default=DEFAULT_SCHEDULER_NAME,
                        help="spec.schedulerName (default: default-scheduler)")
    parser.add_argument("--output", "-o", metavar="FILE", help="write the YAML here instead of stdout")
    args = parser.parse_args(argv)
    try:
        profile, warnings = convert_file(args.policy, name=args.name, scheduler_name=args.scheduler_name)
    except PolicyFileError as exc:
        print(f"kubeberth convert-policy: {exc}", file=sys.stderr)
        return 2
    except ConfigError as exc:  # the result must be a profile kubeberth runs
        print(f"kubeberth convert-policy: the converted profile is invalid: {exc}", file=sys.stderr)
        return 1
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    out = to_yaml(profile, warnings, args.policy)
    if args.output:
        Path(args.output).write_text(out)
    else:
        sys.stdout.write(out)
    return 0



def _set_gates(args: argparse.Namespace, command: str) -> bool:
    """--feature-gates into the process's gate set; False (the error printed) when refused."""
    from .features import FeatureGateError, FeatureGates, set_current

    try:
        set_current(FeatureGates.parse(getattr(args, "feature_gates", None)))
    except FeatureGateError as exc:
        print(f"kubeberth {command}: --feature-gates: {exc}", file=sys.stderr)
        return False
    return True


def _add_feature_gates(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    from .features import KUBE_SCHEDULER_VERSION

    parser.add_argument("--feature-gates", dest="feature_gates", action="append", metavar="NAME=BOOL,...",
                        help=f"kube-scheduler's feature gates ({KUBE_SCHEDULER_VERSION}'s names, defaults and "
                             "dependencies), e.g. GenericWorkload=true; may be repeated")


def _run(args: argparse.Namespace) -> int:
    from .operator.run import run_main
    from .whatif.suggest.live import LiveSuggester

    if not _set_gates(args, "run"):
        return 2

    return run_main(args, suggester_factory=LiveSuggester)


PLUGINS_HELP = ("load scheduling plugins of your own from a .py file, a directory of them or a dotted module "
                "(repeatable; installed distributions' `kubeberth.plugins` entry points load without it)")


def _add_plugins_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plugins", action="append", default=None, metavar="PATH_OR_MODULE", help=PLUGINS_HELP)


def _load_plugins(args: argparse.Namespace) -> int | None:
    """Load the entry points' and --plugins' plugins; report each one that failed once. An error
    exit status when they cannot be merged (a name taken twice) or a source names nothing."""
    from .plugins import PluginLoadError, use_plugins

    try:
        loaded = use_plugins(args.plugins or [])
    except PluginLoadError as exc:
        print(f"kubeberth: {exc}", file=sys.stderr)
        return 2
    for failure in loaded.failures:
        print(f"kubeberth: plugin unavailable: {failure}", file=sys.stderr)
    return None


def _plugins(args: argparse.Namespace) -> int:
    from .plugins import loaded
    from .plugins._listing import render_json, render_table

    print(render_json(loaded()) if args.output == "json" else render_table(loaded()))
    return 0


class _Version(argparse.Action):
    """--version, its lines as version.py writes them (argparse's own action would join them)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        from .version import version_text

        print(version_text())
        parser.exit()


def _add_tie_break_argument(parser: argparse.ArgumentParser) -> None:
    """`--tie-break {reservoir,fixed-order}` (simulate, replay): how score ties are broken."""
    from .framework.tie_break import RESERVOIR, TIE_BREAKS

    parser.add_argument("--tie-break", dest="tie_break", choices=TIE_BREAKS, default=RESERVOIR,
                        help="how nodes tied on the highest score are chosen: reservoir (upstream's rule, a "
                             "uniform draw from --seed's generator; the default) or fixed-order (the first in a "
                             "random but fixed order of the node names drawn from --seed, as the FGD paper's "
                             "simulator does)")


def _verb(subparsers: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help: str, description: str,
          handler: Callable[[argparse.Namespace], int], *adders: Callable[[argparse.ArgumentParser], object],
          gates: bool = True) -> None:
    """Register one verb: its parser (`help` in the verb list, `description` atop its --help), the arguments
    each of `adders` adds in turn, then --plugins, --feature-gates (unless `gates` is False) and its handler."""
    parser = subparsers.add_parser(name, help=help, description=description)
    for add in adders:
        add(parser)
    _add_plugins_argument(parser)
    if gates:
        _add_feature_gates(parser)
    parser.set_defaults(func=handler)


def _add_simulate_arguments(sim: argparse.ArgumentParser) -> None:
    from .operator.options import PERCENTAGE_HELP, percentage

    sim.add_argument("files", nargs="+", metavar="FILE", help="multi-document YAML or kind: List")
    sim.add_argument("--output", "-o", choices=["table", "json", "html"], default="table",
                     help="output format; html: a self-contained report page (explains every pod unless "
                          "--explain names some)")
    sim.add_argument("--seed", type=int, default=0, help="seed for random tie-breaks (default 0)")
    _add_tie_break_argument(sim)
    sim.add_argument("--verbose", "-v", action="store_true",
                     help="log each scheduling attempt, preemption and binding to stderr")
    sim.add_argument("--explain", nargs="*", metavar="POD", default=None,
                     help="explain the decisions for these pods (NAMESPACE/NAME or NAME; all pods when none "
                          "is named): every plugin's verdict and score per node. Put it after the files.")
    sim.add_argument("--explain-nodes", dest="explain_nodes", metavar="N", type=positive,
                     default=DEFAULT_EXPLAIN_NODES,
                     help=f"nodes shown per explained pod in the table (default {DEFAULT_EXPLAIN_NODES})")
    sim.add_argument("--percentage-of-nodes-to-score", dest="percentage_of_nodes_to_score", metavar="PERCENT",
                     type=percentage, default=0, help=PERCENTAGE_HELP)
    sim.add_argument("--config", action="append", metavar="FILE",
                     help="a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) taken as is: each "
                          "profile serves its schedulerName; with --compare, give it twice (A then B)")
    sim.add_argument("--compare", nargs="*", metavar="PROFILE", default=None,
                     help="schedule the same cluster under two configurations: two SchedulingProfile files "
                          "(A B) or, with no file, the two --config files; prints what changes")
    sim.add_argument("--suggest", action="store_true",
                     help="for each unschedulable pod (or gang), the smallest changes that would place it (nodes to "
                          "add, pods to evict, a priority, a constraint to relax, requests to lower), ranked, each "
                          "verified by simulating the change (docs/guides/suggest.md)")
    sim.add_argument("--suggest-limit", dest="suggest_limit", metavar="N", type=positive, default=5,
                     help="suggestions kept per unschedulable pod (default 5)")
    sim.add_argument("--suggest-budget", dest="suggest_budget", metavar="N", type=positive, default=48,
                     help="re-simulations allowed per unschedulable pod or gang for --suggest (default 48; half as "
                          "many again for two-change suggestions)")


def _add_test_arguments(test: argparse.ArgumentParser) -> None:
    test.add_argument("cases", nargs="+", metavar="CASES", help="case files or directories of *.yaml cases")
    test.add_argument("--verbose", "-v", action="store_true", help="list the cases that pass too")


def build_parser() -> argparse.ArgumentParser:
    from .operator.options import add_run_arguments
    from .whatif.capacity.command import add_arguments as add_capacity_arguments
    from .whatif.replay.command import add_arguments as add_replay_arguments
    from .whatif.sweep.command import add_arguments as add_sweep_arguments

    parser = argparse.ArgumentParser(prog="kubeberth", description="A Kubernetes scheduler run as a kopf operator.")
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="print kubeberth's version, the plugin API's and the kube-scheduler release it follows")
    sub = parser.add_subparsers(dest="command", required=True)
    _verb(sub, "simulate", "run the scheduler offline on YAML dumps of a cluster",
          "Schedule the pending pods of one or more YAML files (kubectl get -o yaml output) and print where they "
          "land.", _simulate, _add_simulate_arguments)
    _verb(sub, "replay", "replay a workload over time (arrivals, departures) on a virtual clock",
          "Replay pods (and nodes) arriving and leaving over time through the scheduler, on a virtual clock; "
          "report allocation, pending pods, queueing delays and preemptions over time.", _replay,
          add_replay_arguments)
    _verb(sub, "capacity", "how many more copies of a pod, workload or gang fit, where, and why no more",
          "Add copies of the template to the cluster one after the other, as simulate would schedule them, until "
          "one does not fit.", _capacity, add_capacity_arguments, _add_tie_break_argument)
    _verb(sub, "run", "run the scheduler against a cluster (the kopf operator)",
          "Run kubeberth in a cluster: watch pods, nodes and SchedulingProfiles, bind pending pods of the served "
          "scheduler names.", _run, add_run_arguments)
    _verb(sub, "test", "run scheduling policy tests (cases: cluster, profile, expected outcomes)",
          "Run each case (YAML: objects, optional profile, expect) through simulate and compare with what it "
          "expects. Exit status: 0 all passed, 1 some failed, 2 a case is malformed.", _test, _add_test_arguments,
          gates=False)
    _verb(sub, "sweep", "many replays (traces x profiles x seeds x options) on Dask, one table",
          "Run replays as Dask tasks (a local cluster of worker processes, or --scheduler ADDRESS), write each "
          "result, one table (CSV, JSON) with the mean and std over seeds, and one HTML page. Resumes: runs "
          "already in --out are not redone.", _sweep, add_sweep_arguments)
    # snapshot takes --plugins too: the kinds your plugins read are in the snapshot
    _verb(sub, "snapshot", "write a live cluster as YAML for simulate",
          "List (page by page) exactly the kinds simulate reads and write them as one YAML stream, without "
          "managedFields and status noise.", _snapshot, _add_snapshot_arguments, gates=False)
    prof = sub.add_parser("profile", help="SchedulingProfile tools").add_subparsers(dest="profile_command",
                                                                                  required=True)
    _verb(prof, "export", "write SchedulingProfiles as one KubeSchedulerConfiguration",
          "Read SchedulingProfile objects (YAML) and write the KubeSchedulerConfiguration "
          "(kubescheduler.config.k8s.io/v1) that kube-scheduler would run them with.", _profile_export,
          lambda p: p.add_argument("files", nargs="+", metavar="FILE", help="YAML files of SchedulingProfile objects"),
          gates=False)
    _verb(sub, "plugins", "list the scheduling plugins: in-tree and your own",
          "Every plugin kubeberth can run, with its origin (in-tree, a distribution's entry point, a --plugins "
          "path or module), extension points, vectorised hooks and args (JSON Schema with -o json); and the "
          "plugins that failed to load, with the error.", _plugins,
          lambda p: p.add_argument("--output", "-o", choices=["table", "json"], default="table",
                                   help="output format"), gates=False)
    # Parsed by convert_policy_main (see _main below); listed here for --help.
    sub.add_parser("convert-policy", add_help=False,
                   help="convert an old kube-scheduler Policy file (JSON/YAML) into a SchedulingProfile")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run a command; a reader of its output that goes away early ends it quietly (pipes.py)."""
    from .pipes import guard_stdout

    return guard_stdout(lambda: _main(argv))


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["convert-policy"]:
        return convert_policy_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if hasattr(args, "plugins"):
        failed = _load_plugins(args)
        if failed is not None:
            return failed
    return int(args.func(args) or 0)


KOPF_RUN_REFUSAL = (
    "kubeberth: `kopf run` does not run kubeberth's scheduler (it would run your handlers and schedule "
    "nothing). Run `kubeberth run --plugins my.py` instead: the kopf handlers your module registers run "
    "inside kubeberth, with its login and leader election (a module that brings plugins: while a profile "
    "enables one of them).")


def _refuse_kopf_run() -> None:
    """`kopf run -m kubeberth.cli my.py` imports this module inside kopf's `run` command: say plainly
    that it is not the way, and stop, rather than run the handlers and schedule nothing."""
    if "kopf" not in sys.modules or "click" not in sys.modules:
        return
    import click

    ctx = click.get_current_context(silent=True)
    if ctx is None or ctx.command.name != "run" or "kopf" not in str(ctx.find_root().info_name or ""):
        return
    raise SystemExit(KOPF_RUN_REFUSAL)


_refuse_kopf_run()

if __name__ == "__main__":
    sys.exit(main())
