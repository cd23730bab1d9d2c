"""`kubeberth simulate --compare`: one cluster, one seed, two configurations (A and B).

The result (documented in the README) lists the pods whose fate differs and the spread of the
requested share of cpu and memory over the nodes and over the zones under each configuration.
"""

from __future__ import annotations

import io
import statistics
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from ..framework.tie_break import RESERVOIR
from .config_files import READ_KINDS, SimInput, load_config, prepare, profile_config
from .engine import run_simulation
from .inputs import InputError, Origins, load_files
from .outcomes import PodOutcome
from .simulate import report_data

ZONE_LABEL = "topology.kubernetes.io/zone"
PLACED = ("Existing", "Scheduled")


def _placed(o: PodOutcome | None) -> str | None:
    return o.node if o is not None and o.status in PLACED else None


def pod_changes(a: Sequence[PodOutcome], b: Sequence[PodOutcome]) -> dict[str, list[dict[str, Any]]]:
    """Pods that move, become unschedulable or schedulable, are evicted under one side only."""
    by_b = {o.pod: o for o in b}
    out: dict[str, list[dict[str, Any]]] = {"moved": [], "becameUnschedulable": [], "becameSchedulable": [],
                                            "evictedOnlyInA": [], "evictedOnlyInB": []}
    for oa in a:
        ob = by_b.get(oa.pod)
        if ob is None:
            continue
        na, nb = _placed(oa), _placed(ob)
        entry = {"pod": oa.pod, "a": {"status": oa.status, "node": oa.node},
                 "b": {"status": ob.status, "node": ob.node}}
        if oa.status == "Evicted" and ob.status != "Evicted":
            out["evictedOnlyInA"].append(entry)
        elif ob.status == "Evicted" and oa.status != "Evicted":
            out["evictedOnlyInB"].append(entry)
        elif na and nb and na != nb:
            out["moved"].append(entry)
        elif na and not nb:
            out["becameUnschedulable"].append({**entry, "message": ob.message})
        elif nb and not na:
            out["becameSchedulable"].append({**entry, "message": oa.message})
    return out


def _spread(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"stddev": 0.0, "max": 0.0, "min": 0.0}
    return {"stddev": round(statistics.pstdev(values), 4), "max": round(max(values), 4),
            "min": round(min(values), 4)}


def utilisation(nodes: Sequence[Mapping[str, Any]], zones: Mapping[str, str]) -> dict[str, Any]:
    """Requested share of allocatable cpu and memory after scheduling: per node, per zone
    (zone sums), and the spread of each (population standard deviation, max, min)."""
    per_node: dict[str, dict[str, float]] = {}
    zone_sum: dict[str, dict[str, list[int]]] = {}
    for n in nodes:
        shares = {}
        for r in ("cpu", "memory"):
            alloc = int(n["allocatable"][r])
            used = int(n["after"][r])
            shares[r] = round(used / alloc, 4) if alloc else 0.0
            zone = zones.get(n["node"])
            if zone is not None:
                acc = zone_sum.setdefault(zone, {}).setdefault(r, [0, 0])
                acc[0] += used
                acc[1] += alloc
        per_node[n["node"]] = shares
    per_zone = {z: {r: round(u / a, 4) if a else 0.0 for r, (u, a) in rs.items()} for z, rs in sorted(zone_sum.items())}
    return {
        "nodes": per_node, "zones": per_zone,
        "nodeSpread": {r: _spread([s[r] for s in per_node.values()]) for r in ("cpu", "memory")},
        "zoneSpread": {r: _spread([s[r] for s in per_zone.values()]) for r in ("cpu", "memory")},
    }


def _zones(objects: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    out = {}
    for obj in objects:
        if obj.get("kind") == "Node":
            meta = obj.get("metadata") or {}
            zone = (meta.get("labels") or {}).get(ZONE_LABEL)
            if zone:
                out[str(meta.get("name"))] = str(zone)
    return out


def compare(objects_a: list[dict[str, Any]], objects_b: list[dict[str, Any]], *, seed: int = 0,
            percentage: tuple[int, int] = (0, 0), labels: tuple[str, str] = ("A", "B"),
            warn: TextIO | None = None, origins: Origins | None = None, tie_break: str = RESERVOIR
            ) -> dict[str, Any]:
    """The comparison of one cluster under two sets of objects (the same cluster, other profiles):
    {"seed", "a", "b" (label, counts, utilisation, report), "changes"}. `origins`: where each
    object was read (for the errors about one). `tie_break`: the score ties' rule, both sides."""
    if warn is None:
        warn = sys.stderr  # the one of the call's time
    sides = []
    outcomes = []
    for i, (objects, pct, label) in enumerate(zip((objects_a, objects_b), percentage, labels, strict=True)):
        # the input's warnings (a node skipped, a PodGroup refused) once: both sides read the same input
        got, sched = run_simulation(objects, seed=seed, warn=warn if i == 0 else io.StringIO(),
                                    percentage_of_nodes_to_score=pct, origins=origins, tie_break=tie_break)
        outcomes.append(got)
        data = report_data(objects, got, sched, seed)
        counts: dict[str, int] = {}
        for o in got:
            counts[o.status] = counts.get(o.status, 0) + 1
        sides.append({"label": label, "counts": counts, "utilisation": utilisation(data["nodes"], _zones(objects)),
                      "report": data})
    return {"seed": seed, "a": sides[0], "b": sides[1], "changes": pod_changes(outcomes[0], outcomes[1])}


def _cluster_only(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o.get("kind") in READ_KINDS]


def sides(files: Sequence[str], profiles: Sequence[str], configs: Sequence[str], warn: TextIO
          ) -> tuple[tuple[SimInput, str], tuple[SimInput, str]]:
    """The two sides of --compare: two SchedulingProfile files (`profiles`), or two --config files
    (`configs`), each with its label. Each side's profiles replace the input's profiles serving the
    same schedulerNames; every profile, the input's included, must be one the operator would run
    (InputError naming it otherwise)."""
    if len(profiles) == 2 and not configs:
        origins = Origins()
        base = load_files(files, origins)
        prepare(base, warn, origins=origins)  # the input's own warnings (and errors), once
        out = []
        for path in profiles:
            sim = prepare(base, io.StringIO(), profile_config(path, origins), origins=origins)
            out.append((sim, path))
        return out[0], out[1]
    if not profiles and len(configs) == 2:
        origins = Origins()
        base = load_files(files, origins)
        first = prepare(base, warn, load_config(configs[0], warn), origins=origins)
        second = prepare(base, io.StringIO(), load_config(configs[1], warn), origins=origins)
        return (first, configs[0]), (second, configs[1])
    raise InputError("--compare: give two SchedulingProfile files (--compare A.yaml B.yaml) "
                     "or two --config files and a bare --compare")


def compare_files(files: Sequence[str], profiles: Sequence[str], configs: Sequence[str], *, seed: int = 0,
                  percentage_of_nodes_to_score: int = 0, warn: TextIO | None = None,
                  tie_break: str = RESERVOIR) -> dict[str, Any]:
    """`simulate --compare`: the cluster of `files` under the two sides (see `sides`), compared.
    `percentage_of_nodes_to_score`: the flag's value, which wins over each side's configuration."""
    if warn is None:
        warn = sys.stderr
    (a, label_a), (b, label_b) = sides(files, profiles, configs, warn)

    def pct(side: SimInput) -> int:
        return percentage_of_nodes_to_score or side.percentage_of_nodes_to_score or 0

    return compare(_cluster_only(a.objects), _cluster_only(b.objects), seed=seed,
                   percentage=(pct(a), pct(b)), labels=(label_a, label_b), warn=warn, origins=a.origins,
                   tie_break=tie_break)
