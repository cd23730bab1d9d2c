"""A small deterministic cluster on a Scheduler (simulate's in-memory client), for the dry-run tests:
nodes of different free CPU (so that one node scores best for a pod), pods of two namespaces."""

from __future__ import annotations

from typing import Any

from kubeberth.config import default_spec
from kubeberth.scheduler import Scheduler
from kubeberth.testing import InMemoryClient
from tests.builders import node_dict, pod_dict

HIGH = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}}}


def cluster(*, free: tuple[str, ...] = ("3", "2", "1"), full: bool = False, seed: int = 7,
            metrics: Any = None) -> Scheduler:
    """Nodes n0.. of 4 CPUs with `free` CPUs free each (a 4-CPU node minus a running pod of team-b or
    team-a); `full`: every node full, by low-priority pods of team-a (n0) and team-b (the others)."""
    sched = Scheduler(seed=seed, metrics=metrics)
    sched.ctx.client = InMemoryClient(sched)
    sched.add_profile_spec(default_spec())
    for ns in ("team-a", "team-b"):
        sched.on_object("Namespace", namespace(ns))
    sched.on_object("PriorityClass", HIGH)
    for i, f in enumerate(free):
        sched.on_node_add(node_dict(f"n{i}", cpu="4"))
        used = "4" if full else f"{4 - float(f):g}"
        owner = "team-a" if i == 0 else "team-b"
        if float(used):
            sched.on_pod_add(pod_dict(f"run-{i}", owner, cpu=used, node=f"n{i}", priority=0))
    return sched


def new_pod(name: str, ns: str = "team-a", *, cpu: str = "500m", high: bool = False, **kw: Any) -> dict[str, Any]:
    raw = pod_dict(name, ns, cpu=cpu, **kw)
    del raw["status"]
    if high:
        raw["spec"]["priorityClassName"] = "high"
    return raw
