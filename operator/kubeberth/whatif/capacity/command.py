"""`kubeberth capacity CLUSTER.yaml... --pod POD.yaml`: its arguments (cli.py adds simulate's
--plugins, --feature-gates and --tie-break) and its run: read the inputs, answer (answer.py),
print the answer as JSON or text, or write the copies for simulate (--emit-copies)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import TextIO

from ...argtypes import whole_number
from ..inputs import InputError
from .answer import capacity, cluster_objects
from .copies import CopyMaker, base_time, copy_name, emit_copies
from .result import DEFAULT_MAX, Answer, Options
from .template import read_template


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """capacity's own arguments."""
    from ...operator.options import PERCENTAGE_HELP, percentage

    parser.add_argument("files", nargs="+", metavar="CLUSTER.yaml",
                        help="the cluster: YAML dumps or a `kubeberth snapshot` (its pending pods are left out)")
    parser.add_argument("--pod", required=True, metavar="POD.yaml",
                        help="the template: a Pod, a Deployment/ReplicaSet/StatefulSet/Job/CronJob, or a PodGroup "
                             "(scheduling.k8s.io/v1beta1) with the Pods naming it (one copy = the whole gang)")
    parser.add_argument("--output", "-o", choices=["text", "json"], default="text", help="output format")
    parser.add_argument("--seed", type=int, default=0, help="seed for random tie-breaks, as simulate's (default 0)")
    parser.add_argument("--max", dest="max_copies", type=whole_number(0), default=DEFAULT_MAX, metavar="N",
                        help=f"stop counting at N copies (default {DEFAULT_MAX})")
    parser.add_argument("--allow-preemption", dest="allow_preemption", action="store_true",
                        help="copies may evict lower-priority pods (as their PriorityClass allows); by default "
                             "each copy says preemptionPolicy: Never")
    parser.add_argument("--exact", action="store_true",
                        help="always schedule the copies one by one (no per-node count)")
    parser.add_argument("--verify", action="store_true",
                        help="check the answer with simulate of N+1 copies (`verified` in the output)")
    parser.add_argument("--emit-copies", dest="emit_copies", type=whole_number(0), default=None, metavar="K",
                        help="write copies 1..K as YAML (for `kubeberth simulate CLUSTER.yaml COPIES.yaml`) and stop")
    parser.add_argument("--with-cluster", dest="with_cluster", action="store_true",
                        help="with --emit-copies: write the cluster first (without its pending pods, with the "
                             "profiles of --config), so that `simulate` of that one file reproduces the answer")
    parser.add_argument("--config", action="append", metavar="FILE",
                        help="a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1), as simulate's")
    parser.add_argument("--percentage-of-nodes-to-score", dest="percentage_of_nodes_to_score", metavar="PERCENT",
                        type=percentage, default=0, help=PERCENTAGE_HELP)
    parser.add_argument("--verbose", "-v", action="store_true", help="log each scheduling attempt to stderr")


def render_text(answer: Answer, maker: CopyMaker, args: argparse.Namespace) -> str:
    """The answer for a reader, with the commands that check it."""
    t = maker.template
    what = f"PodGroup {t.namespace}/{t.name} (with {len(t.members)} pods)" if t.group else f"{t.namespace}/{t.name}"
    lines = [f"{answer.total} more cop{'y' if answer.total == 1 else 'ies'} of {what} fit now "
             f"({answer.path} path{'; ' + answer.not_per_node if answer.not_per_node else ''})."]
    width = max((len(n) for n in answer.per_node), default=4)
    lines += [f"  {name:<{width}}  {n}" for name, n in sorted(answer.per_node.items())]
    if answer.victims:
        lines.append(f"evicting: {', '.join(answer.victims)}")
    nxt = answer.total + 1
    if answer.max_reached:
        lines.append(f"stopped at --max {answer.total}: more may fit")
    else:
        lines.append(f"copy {nxt} ({t.namespace}/{copy_name(t.members[0].name, nxt)}): {answer.stopped_by}")
    if answer.verified is not None:
        lines.append(f"simulate of {nxt} copies {'agrees' if answer.verified else 'DISAGREES'}")
    if answer.pending_left_out:
        lines.append(f"({answer.pending_left_out} pending pod(s) of the input left out: they hold nothing now)")
    if not answer.max_reached:
        lines.append(f"check: kubeberth capacity ... --emit-copies {nxt} --with-cluster > check.yaml; "
                     f"kubeberth simulate check.yaml --seed {args.seed} (or --verify)")
    return "\n".join(lines)


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """The command (its feature gates and plugins already in force): 0, or 2 for a refused input.
    `out`: sys.stdout when None (the one of the call's time)."""
    if out is None:
        out = sys.stdout
    from ...plugins import plugin_registry
    from ..simulate import percentage, read_input

    logging.basicConfig(level=logging.INFO if args.verbose else logging.ERROR, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        template = read_template(args.pod)
        sim_input = read_input(args.files, args.config or [], sys.stderr)
        objects = sim_input.objects
        cluster, _ = cluster_objects(objects)
        maker = CopyMaker(template, base_time(cluster), allow_preemption=args.allow_preemption)
        if args.emit_copies is not None:
            out.write(emit_copies(maker, args.emit_copies, cluster if args.with_cluster else []))
            return 0
        options = Options(seed=args.seed, tie_break=args.tie_break,
                          percentage_of_nodes_to_score=percentage(args.percentage_of_nodes_to_score, sim_input),
                          allow_preemption=args.allow_preemption, max_copies=args.max_copies,
                          per_node=not args.exact, verify=args.verify)
        answer = capacity(objects, template, plugin_registry(), options, warn=sys.stderr,
                          origins=sim_input.origins)
    except InputError as exc:
        print(f"kubeberth capacity: {exc}", file=sys.stderr)
        return 2
    if args.output == "json":
        out.write(json.dumps(answer.as_dict(), indent=2) + "\n")
    else:
        out.write(render_text(answer, maker, args) + "\n")
    return 0
