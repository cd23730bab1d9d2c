"""How often `simulate --suggest` finds a verified suggestion: on clusters of the differential
fuzzer's generator (tests/cluster/fuzz_gen.py, the workloads flavour's gangs too), the share of
unschedulable units (pods of no group, and gangs) with at least one suggestion, the rest by
reason, and the cost (re-simulations and seconds per unit).

    PYTHONPATH=operator python -m benchmarks.suggest_coverage --clusters 50 --seed 41

A unit without a suggestion is put under a reason read from the baseline's diagnosis (a gang
never tried: of mixed priorities, or short of pods; a request of an extended resource no node
offers; ...). `coverageOfPlaceable` leaves out the units asking for an extended resource no node
offers (suggest answers them by removing the request, LowerRequests to 0, when that places them:
the units whose request is needed are not placeable).
Several seeds at once: `--seed 41 --seed 7 --seed 13` (one result per seed and flavour).
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tests.cluster.fuzz_gen import generate
from tests.cluster.fuzz_groups import Options

from kubeberth import features
from kubeberth.model import ModelError, Node, Pod
from kubeberth.whatif.engine import run_simulation
from kubeberth.whatif.inputs import object_key
from kubeberth.whatif.policy_tests import parse_case, prepare_case
from kubeberth.whatif.suggest import UnitSuggestions, suggest
from kubeberth.whatif.suggest.nodes import holds as _holds
from kubeberth.whatif.suggest.on_node import lacking_resource, own_volumes_over_limit
from kubeberth.whatif.suggest.profile_change import added_affinity

FLAVOURS = {"default": Options(), "workloads": Options(flavour="workloads")}


def case_units(seed: int, index: int, flavour: str) -> tuple[list[dict[str, Any]], list[UnitSuggestions]]:
    """The suggestions of every unschedulable unit of one generated cluster."""
    doc = generate(seed, index, FLAVOURS[flavour])
    doc["expect"] = [{"pod": "-/-", "unschedulable": False}]  # not judged here
    case = parse_case(doc, str(doc["name"]))
    sim = prepare_case(case, io.StringIO())
    with features.override(case.gates):
        outcomes, _ = run_simulation(sim.objects, seed=case.seed, warn=io.StringIO(),
                                     percentage_of_nodes_to_score=sim.percentage_of_nodes_to_score or 0)
        return sim.objects, suggest(sim.objects, outcomes, seed=case.seed,
                                    percentage_of_nodes_to_score=sim.percentage_of_nodes_to_score or 0)


UNOFFERED = "asks for an extended resource no node offers"
# A profile's addedAffinity excludes every node the pod's PersistentVolume allows (RelaxProfile,
# a change for every pod of the profile, answers it).
PROFILE_EXCLUDES = "a profile's addedAffinity excludes every node its PersistentVolume allows"
ATTACH_LIMIT = "its volumes rule out every node: the PV's node attaches fewer volumes than the pod uses (CSINode)"
PV_NODE_LACKS = "its PV's node lacks an extended resource the pod requests (other nodes offer it)"
VOLUME = {"VolumeBinding", "VolumeZone", "VolumeRestrictions", "NodeVolumeLimits"}


def _unoffered(pod: Mapping[str, Any], nodes: Iterable[Mapping[str, Any]]) -> bool:
    """The pod requests an extended resource that no node has allocatable (no change but taking
    the request away places it)."""
    try:
        want = Pod(dict(pod)).requests
        allocs = [Node(dict(n)).allocatable for n in nodes]
    except ModelError:
        return False
    return any(want.get(r) > 0 and all(a.get(r) == 0 for a in allocs) for r in want.scalar)


def reason(u: UnitSuggestions, objects: Sequence[Mapping[str, Any]]) -> str:
    """Why no single change helped, in a few classes."""
    rejected = u.unit.rejected
    if not rejected:
        if "same priority" in u.message:
            return "a gang of mixed priorities (aligned, still placed by no further change)"
        if u.unit.group is not None:
            return "a gang short of pods (the missing pods added, or minCount lowered, still not placed)"
        return "never tried (gated)"
    pod = next((o for o in objects if o.get("kind") == "Pod" and object_key(o) == u.unit.pods[0]), None)
    nodes = {str(o["metadata"]["name"]): o for o in objects if o.get("kind") == "Node"}
    if pod is not None and _unoffered(pod, nodes.values()):
        return UNOFFERED
    if pod is not None and not any(_holds(n, pod) for n in nodes.values()):
        return "no node's allocatable holds the pod's requests"
    pinned = {n for n, ps in rejected.items() if not ps & {"VolumeBinding", "VolumeZone"}}
    added = added_affinity(objects)
    if pinned and len(pinned) < len(rejected) and added and not any(
            all(a.matches(n, (nodes[n].get("metadata") or {}).get("labels") or {}) for a in added)
            for n in pinned if n in nodes):
        return PROFILE_EXCLUDES
    if pod is not None and pinned and len(pinned) < len(rejected):
        if pinned <= own_volumes_over_limit(pod, objects):
            return ATTACH_LIMIT
        if pinned <= lacking_resource(pod, nodes):
            return PV_NODE_LACKS
    if all(ps & VOLUME for ps in rejected.values()):
        return "its volumes rule out every node (PV node affinity, ReadWriteOncePod, volume limits)"
    if all(len(ps) > 1 for ps in rejected.values()):
        return "two or more constraints on every node"
    return "other: " + "+".join(sorted(u.unit.failing_plugins()))


def measure(clusters: Sequence[tuple[int, int, str]]) -> dict[str, Any]:
    units = helped = runs = 0
    seconds = 0.0
    kinds: Counter[str] = Counter()
    missing: Counter[str] = Counter()
    examples: dict[str, str] = {}
    for seed, index, flavour in clusters:
        objects, found = case_units(seed, index, flavour)
        for u in found:
            units += 1
            runs += u.runs
            seconds += u.seconds
            if u.suggestions:
                helped += 1
                kinds.update({s["kind"] for s in u.suggestions})
            else:
                r = reason(u, objects)
                missing[r] += 1
                examples.setdefault(r, f"{flavour} {seed}/{index} {u.unit.key}: {u.message[:160]}")
    possible = units - missing[UNOFFERED]
    return {"clusters": len(clusters), "units": units, "withSuggestion": helped,
            "coverage": round(helped / units, 4) if units else 1.0,
            "coverageOfPlaceable": round(helped / possible, 4) if possible else 1.0,
            "unitsWithKind": dict(kinds.most_common()), "withoutByReason": dict(missing.most_common()),
            "examples": examples, "runsPerUnit": round(runs / units, 1) if units else 0,
            "secondsPerUnit": round(seconds / units, 3) if units else 0}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clusters", type=int, default=50, help="clusters per flavour (default 50)")
    p.add_argument("--seed", type=int, action="append", help="generator seed (repeat for several; default 41)")
    p.add_argument("--flavour", choices=[*FLAVOURS, "both"], default="both")
    args = p.parse_args(argv)
    flavours = list(FLAVOURS) if args.flavour == "both" else [args.flavour]
    seeds = args.seed or [41]
    start = time.perf_counter()
    out: dict[str, Any] = {}
    for seed in seeds:
        for f in flavours:
            name = f if len(seeds) == 1 else f"{f}/seed {seed}"
            out[name] = measure([(seed, i, f) for i in range(args.clusters)])
    out["seconds"] = round(time.perf_counter() - start, 1)
    json.dump(out, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
