"""The brute-force check of `kubeberth capacity`: for a cluster and a template, capacity's N must be
what simulate places of copies 1..N+1 added to the cluster (copies 1..N placed, on the nodes capacity
says, copy N+1 unschedulable with the diagnosis capacity gives)."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from kubeberth import features
from kubeberth.plugins import plugin_registry
from kubeberth.scheduler import SCHEDULED
from kubeberth.whatif.capacity import Answer, Options, capacity, read_template
from kubeberth.whatif.capacity.answer import cluster_objects
from kubeberth.whatif.capacity.copies import CopyMaker, base_time
from kubeberth.whatif.engine import run_simulation


def answer(objects: list[dict[str, Any]], pod_file: Path, options: Options,
           gates: features.FeatureGates | None = None) -> Answer:
    with features.override(gates or features.FeatureGates()):
        return capacity(objects, read_template(pod_file), plugin_registry(), options, warn=io.StringIO())


def simulated(objects: list[dict[str, Any]], pod_file: Path, count: int, options: Options,
              gates: features.FeatureGates | None = None) -> tuple[Counter[str], int, str]:
    """simulate of the cluster (pending pods left out) with copies 1..count: the nodes of the
    copies placed (pods per node), how many whole copies were placed, the first unplaced one's message."""
    cluster, _ = cluster_objects(objects)
    maker = CopyMaker(read_template(pod_file), base_time(cluster), allow_preemption=options.allow_preemption)
    copies = [maker.make(i) for i in range(1, count + 1)]
    with features.override(gates or features.FeatureGates()):
        outcomes, _ = run_simulation(cluster + [o for c in copies for o in c], seed=options.seed, warn=io.StringIO(),
                                     percentage_of_nodes_to_score=options.percentage_of_nodes_to_score,
                                     tie_break=options.tie_break)
    by_key = {o.pod: o for o in outcomes}
    nodes: Counter[str] = Counter()
    placed, message = 0, ""
    for i in range(1, count + 1):
        outs = [by_key[k] for k in maker.pod_keys(i)]
        if all(o.status == SCHEDULED for o in outs):
            placed += 1
            nodes.update(str(o.node) for o in outs)
        elif not message:
            message = next(o.message for o in outs if o.status != SCHEDULED)
    return nodes, placed, message


def check(objects: list[dict[str, Any]], pod_file: Path, options: Options,
          gates: features.FeatureGates | None = None) -> Answer:
    """capacity's answer, asserted against simulate of N+1 copies (and the exact path against the
    per-node path when that one answered)."""
    got = answer(objects, pod_file, options, gates)
    assert not got.max_reached, "raise --max for this check"
    nodes, placed, message = simulated(objects, pod_file, got.total + 1, options, gates)
    assert placed == got.total, f"simulate placed {placed} of {got.total + 1} copies; capacity says {got.total}"
    assert dict(nodes) == got.per_node
    assert message == got.stopped_by
    if got.path != "exact":
        exact = answer(objects, pod_file, Options(**{**options.__dict__, "per_node": False}), gates)
        assert (exact.total, exact.per_node, exact.stopped_by) == (got.total, got.per_node, got.stopped_by)
    return got


def write_yaml(path: Path, docs: list[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path
