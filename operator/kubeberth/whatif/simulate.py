"""`kubeberth simulate`: the scheduler run offline on a dump of a cluster (engine.py), its input
read from files (with a `--config` file's profiles), what became of each pod and each PodGroup, and
the data of the HTML report."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, TextIO

from ..framework.tie_break import RESERVOIR
from ..model import ModelError, Node, Pod
from ..scheduler import EXISTING, SCHEDULED, Scheduler
from .config_files import SimInput, load_config, prepare
from .engine import run_simulation
from .inputs import InputError, Origins, load_files
from .outcomes import PodOutcome, outcome_dict
from .pod_groups import group_dict, group_outcomes


def simulate(objects: list[dict[str, Any]], *, seed: int = 0, warn: TextIO | None = None,
             percentage_of_nodes_to_score: int = 0, explain: Collection[str] | None = None,
             origins: Origins | None = None, tie_break: str = RESERVOIR) -> list[PodOutcome]:
    """Schedule the pending pods of `objects`; one outcome per Pod, in input order.
    `percentage_of_nodes_to_score`: the scheduler-wide value (profiles may set their own).
    `explain`: pods to explain (NAMESPACE/NAME or NAME; empty: every pod; None: none); their
    outcomes carry the explanation of each attempt (the first and the latest ones,
    records.KEPT_EXPLANATIONS in all). Raises UnknownPods for a name that matches no pod, InputError
    for a SchedulingProfile the operator would refuse. `origins`: where each object was read, for
    the errors about one (a PodGroup admission refuses). `tie_break`: the score ties' rule
    (framework/tie_break.py: reservoir, upstream's, or fixed-order)."""
    return run_simulation(objects, seed=seed, warn=warn, percentage_of_nodes_to_score=percentage_of_nodes_to_score,
                          explain=explain, origins=origins, tie_break=tie_break)[0]


def read_input(files: Sequence[str], configs: Sequence[str], warn: TextIO) -> SimInput:
    """simulate's input: the objects of `files`, with the profiles of the one `--config` file (if
    any) in force, every profile checked as the operator would (InputError otherwise)."""
    if len(configs) > 1:
        raise InputError("--config: give one configuration (two only with --compare)")
    config = load_config(configs[0], warn) if len(configs) == 1 else None
    origins = Origins()
    return prepare(load_files(files, origins), warn, config, origins=origins)


def percentage(flag: int, sim_input: SimInput) -> int:
    """The scheduler-wide percentageOfNodesToScore: the flag wins over the configuration's value."""
    if flag or sim_input.percentage_of_nodes_to_score is None:
        return int(flag)
    return sim_input.percentage_of_nodes_to_score


def _usage(milli_cpu: int, memory: int, pods: int) -> dict[str, int]:
    return {"cpu": milli_cpu, "memory": memory, "pods": pods}


def report_data(objects: list[dict[str, Any]], outcomes: list[PodOutcome], sched: Scheduler,
                seed: int) -> dict[str, Any]:
    """What the HTML report shows (report/html.py): the outcomes (and who preempted whom), each
    node's allocatable and the requests of its pods before (running pods) and after (running,
    not evicted, plus scheduled: cpu in millicores, memory in bytes, pods), the profiles, the pod
    groups (pod_groups.py)."""
    nodes: dict[str, dict[str, Any]] = {}
    for obj in objects:
        if obj.get("kind") != "Node":
            continue
        try:
            node = Node(obj)
        except ModelError:
            continue  # reported already; the scheduler skipped it
        a = node.allocatable
        nodes[node.name] = {"node": node.name, "allocatable": _usage(a.milli_cpu, a.memory, a.allowed_pod_number),
                            "before": _usage(0, 0, 0), "after": _usage(0, 0, 0)}
    by_key = {o.pod: o for o in outcomes}
    for obj in objects:
        if obj.get("kind") != "Pod":
            continue
        try:
            pod = Pod(obj)
        except ModelError:
            continue
        o = by_key.get(pod.key)
        placed = {"before": pod.node_name,
                  "after": o.node if o is not None and o.status in (EXISTING, SCHEDULED) else None}
        for when, name in placed.items():
            if name and name in nodes:
                use = nodes[name][when]
                use["cpu"] += pod.requests.milli_cpu
                use["memory"] += pod.requests.memory
                use["pods"] += 1
    profiles = []
    for name, fw in sorted(sched.profiles.items()):
        profiles.append({"schedulerName": name, "percentageOfNodesToScore": fw.percentage_of_nodes_to_score,
                         "filter": [p.name for p in fw.filter_plugins],
                         "score": [{"name": p.name, "weight": fw.score_weights[p.name]} for p in fw.score_plugins],
                         "postFilter": [p.name for p in fw.post_filter_plugins]})
    preempted_by = {k: r.preempted_by for k, r in sched.outcomes.items() if r.preempted_by}
    return {"seed": seed, "pods": [outcome_dict(o) for o in outcomes], "preemptedBy": preempted_by,
            "nodes": list(nodes.values()), "profiles": profiles,
            "podGroups": [group_dict(g) for g in group_outcomes(sched, outcomes)]}
