"""Differential fuzzer: random clusters through upstream kube-scheduler v1.37 and `kubeberth simulate`.

Cases come from a seeded generator (fuzz_gen.py); each is run on one real control plane
(fuzz_run.py) and each pending pod judged on node, victims and message (fuzz_judge.py), node picks
among upstream's equal best scores counting as ties. A disagreement fails unless
tests/conformance/fuzz-known.yaml explains it. Every line names the seed and the case index:

  python -m tests.cluster.fuzz --seed 7 --clusters 60     # a run
  python -m tests.cluster.fuzz --seed 7 --case 12         # replays case 12 of that run
  python -m tests.cluster.fuzz --seed 7 --case 12 --write-case /tmp/cases   # the case as YAML, not run

The workload flavour (`--flavour workloads`) runs kube-apiserver and kube-scheduler with
GenericWorkload=true (scheduling.k8s.io/v1beta1 served) and simulate under the same gates; its
clusters have PodGroups (fuzz_groups.py), each judged with its pods and on its
PodGroupInitiallyScheduled condition. `--group-preemption` and `--topology` make groups that need
group preemption or ask for a topology domain: off until those parts of issue 31 are merged.

  python -m tests.cluster.fuzz --flavour workloads --seed 1 --clusters 40
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .control_plane import ADMIN_TOKEN, ControlPlane, k8s_version, kubectl
from .fuzz_gen import generate
from .fuzz_groups import FLAVOURS, Options
from .fuzz_judge import Known, load_known
from .fuzz_run import CaseReport, run_case
from .kube import Kube


@dataclass
class Summary:
    clusters: int = 0
    pods: int = 0
    groups: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    unexplained: list[str] = field(default_factory=list)


async def run(plane: ControlPlane, seed: int, indexes: list[int], known: list[Known] | None = None,
              out: list[str] | None = None, verbose: bool = False, options: Options | None = None
              ) -> list[CaseReport]:
    """Runs the cases `indexes` of `seed`; with `out`, appends each case's lines as it finishes.
    The plane must run with `options.gates`."""
    known = load_known() if known is None else known
    reports = []
    async with Kube(plane.url, ADMIN_TOKEN, plane.ssl_context()) as kube:
        for i in indexes:
            report = await run_case(plane, kube, generate(seed, i, options), seed, i, known)
            reports.append(report)
            if out is not None:
                lines = render_case(report, verbose)
                out += lines
                print("\n".join(lines), flush=True)
    return reports


def render_case(r: CaseReport, verbose: bool = False) -> list[str]:
    head = f"seed={r.seed} case={r.index}"
    lines = []
    if r.error:
        lines.append(f"ERROR {head}: {r.error}")
    for p in r.pods:
        v = p.verdict
        if v.kind == "agree":
            if verbose:
                lines.append(f"same  {head} pod={p.pod}: {p.upstream.brief()}; upstream's final scores {p.scores}")
            continue
        tag = "tie " if v.kind == "tie" else ("known" if v.explained_by else "DIFF ")
        line = f"{tag} {head} pod={p.pod}: {v.field}: {v.detail}"
        if v.explained_by:
            line += f" [{v.explained_by}]"
        lines.append(line)
        if v.kind == "diff" and p.plugins:
            lines += [f"        upstream plugin scores on {n}: {dict(sorted(s.items()))}"
                      for n, s in sorted(p.plugins.items())]
    agree = sum(1 for p in r.pods if p.verdict.kind == "agree")
    lines.append(f"ok    {head}: {agree}/{len(r.pods)} pods agree [{r.seconds:.1f}s]")
    return lines


def summarise(reports: list[CaseReport]) -> Summary:
    s = Summary()
    for r in reports:
        s.clusters += 1
        if r.error:
            s.errors.append(f"seed={r.seed} case={r.index}: {r.error}")
        for p in r.pods:
            if p.is_group:
                s.groups += 1
            else:
                s.pods += 1
            kind = "explained" if p.verdict.explained_by else p.verdict.kind
            s.counts[kind] += 1
            if kind == "diff":
                s.unexplained.append(f"seed={r.seed} case={r.index} pod={p.pod}: {p.verdict.field}: "
                                     f"{p.verdict.detail}")
    return s


def render_summary(s: Summary, seed: int, seconds: float, options: Options | None = None) -> str:
    flags = options.flags() if options else ""
    groups = f", {s.groups} pod groups" if s.groups else ""
    return (f"fuzz seed={seed}{' ' + flags if flags else ''}: {s.clusters} clusters, {s.pods} pending pods{groups}: "
            f"{s.counts['agree']} agree, "
            f"{s.counts['tie']} ties, {s.counts['explained']} explained, {s.counts['diff']} unexplained "
            f"disagreements, {len(s.errors)} cases not run; {seconds:.0f}s on {os.cpu_count()} CPUs "
            f"({platform.machine()}, {platform.python_implementation()} {platform.python_version()}), "
            f"kube-scheduler {k8s_version()}" + (f" with --feature-gates={options.gates}" if options and options.gates
                                                 else ""))


def write_case(seed: int, index: int, directory: Path, options: Options | None = None) -> Path:
    case = generate(seed, index, options)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{case['name']}.yaml"
    path.write_text(yaml.safe_dump(case, sort_keys=False))
    return path


def dump_inputs(reports: list[CaseReport], directory: Path) -> list[Path]:
    paths = []
    for r in reports:
        for p in r.pods:
            if p.inputs:
                directory.mkdir(parents=True, exist_ok=True)
                path = directory / f"seed-{r.seed}-case-{r.index}-{p.pod.replace('/', '-')}.yaml"
                path.write_text(yaml.safe_dump_all(p.inputs, sort_keys=False))
                paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.cluster.fuzz", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=1, help="the generator's seed (default 1)")
    parser.add_argument("--clusters", type=int, default=60, help="how many random clusters (default 60)")
    parser.add_argument("--first", type=int, default=0, help="the first case index (default 0)")
    parser.add_argument("--case", type=int, action="append", help="run only this case index (repeatable)")
    parser.add_argument("--min-pods", type=int, default=0,
                        help="fail unless at least this many pending pods were judged")
    parser.add_argument("--dump", type=Path, metavar="DIR",
                        help="for each pod not agreeing, write what simulate was given into DIR "
                             "(kubeberth simulate FILE replays kubeberth's side)")
    parser.add_argument("--flavour", choices=FLAVOURS, default="default",
                        help="default: pods of no group; workloads: PodGroups too, both schedulers with "
                             "GenericWorkload=true")
    parser.add_argument("--group-preemption", action="store_true",
                        help="workloads: groups of priorities above running pods, that may need group preemption "
                             "(off until group preemption is merged)")
    parser.add_argument("--topology", action="store_true",
                        help="workloads: groups asking for a topology domain, TopologyAwareWorkloadScheduling=true "
                             "(off until topology-aware placement is merged)")
    parser.add_argument("--verbose", action="store_true", help="a line for every pod, agreeing ones too")
    parser.add_argument("--write-case", type=Path, metavar="DIR",
                        help="write the cases as conformance YAML into DIR instead of running them")
    args = parser.parse_args(argv)
    if args.clusters < 1 or args.first < 0:
        parser.error("--clusters must be at least 1 and --first not negative")
    try:
        options = Options(args.flavour, args.group_preemption, args.topology)
    except ValueError as exc:
        parser.error(str(exc))
    indexes = args.case or list(range(args.first, args.first + args.clusters))
    if args.write_case:
        for i in indexes:
            print(write_case(args.seed, i, args.write_case, options))
        return 0
    try:
        known = load_known()
    except ValueError as exc:
        parser.error(str(exc))
    started = time.monotonic()
    with ControlPlane(feature_gates=options.gates) as plane:
        kubectl(plane, "apply", "-f", "crds/")
        kubectl(plane, "wait", "--for", "condition=established", "--timeout=60s",
                "crd/schedulingprofiles.kubeberth.io")
        reports = asyncio.run(run(plane, args.seed, indexes, known, out=[], verbose=args.verbose, options=options))
    if args.dump:
        for path in dump_inputs(reports, args.dump):
            print(f"wrote {path}")
    summary = summarise(reports)
    print(render_summary(summary, args.seed, time.monotonic() - started, options))
    for line in summary.errors:
        print(f"not run: {line}")
    for line in summary.unexplained:
        print(f"unexplained: {line}")
    if summary.pods < args.min_pods:
        print(f"only {summary.pods} pending pods judged, fewer than --min-pods {args.min_pods}")
        return 1
    return 1 if summary.unexplained or summary.errors else 0


if __name__ == "__main__":
    sys.exit(main())
