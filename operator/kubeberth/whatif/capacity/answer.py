"""`kubeberth capacity`'s answer: how many copies of a template the cluster takes now, where, and
the diagnosis of the first one it does not take. Two paths give it:

- exact: one scheduler (session.py) over the cluster; copy 1 is added and scheduled until it is
  placed or left unschedulable, then copy 2, ... up to the first copy not placed (after simulate's
  settle rounds). Copies are identical and queue in creation order, so simulate given copies
  1..N+1 at once pops them in the same order, places copies 1..N where this does, and leaves copy
  N+1 unschedulable with the same diagnosis: N is what simulate places of N+1 copies.
- per-node (per_node.py), when every filter's verdict for a copy on a node depends on that node
  alone: each node's limit counted at once, the nodes filled to it, copy N+1 scheduled for the
  diagnosis (falling back to the exact path should it be placed).

The cluster's own pending pods are left out: they hold nothing now (say it with --explain of
simulate to see where they would go)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TextIO

from ...framework.registry import Registry
from ...model import ModelError, Pod
from ..inputs import InputError, Origins
from .copies import CopyMaker, base_time
from .per_node import per_node_answer
from .result import EXACT, PER_NODE, Answer, Options
from .session import Session
from .template import Template

__all__ = ["EXACT", "PER_NODE", "Answer", "Options", "capacity", "cluster_objects", "exact_answer"]

def cluster_objects(objects: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The cluster without its pending pods (those with no spec.nodeName), and how many were left out."""
    kept = [o for o in objects if o.get("kind") != "Pod" or (o.get("spec") or {}).get("nodeName")]
    return kept, len(objects) - len(kept)


def check_copy(session: Session, maker: CopyMaker, template: Template) -> Pod:
    """Copy 1's first pod as the scheduler reads it; InputError (the template's file, document and
    field) when the API server would refuse it or its schedulerName has no profile."""
    objs = maker.make(1)
    pods = [o for o in objs if o.get("kind") == "Pod"]
    for member, raw in zip(template.members, pods, strict=True):
        prefix = f"{member.path}." if member.path else ""
        try:
            pod = Pod(raw)
            pod.priority, pod.preemption_policy = session.sched.ctx.objects.priorities.resolve(pod.spec)
        except ModelError as exc:  # named after the template, not the copy
            text = re.sub(r"^pod \S+?:? (?=field )", "", str(exc))
            raise InputError(f"{member.where}: {prefix}{text}") from None
        if pod.scheduler_name not in session.sched.profiles:
            raise InputError(f"{member.where}: {prefix}spec.schedulerName: {pod.scheduler_name} is served by no "
                             f"profile (served: {', '.join(sorted(session.sched.profiles))})")
    return Pod(pods[0]) if pods else Pod({})


def capacity(objects: list[dict[str, Any]], template: Template, registry: Registry, options: Options, *,
             warn: TextIO, origins: Origins | None = None) -> Answer:
    """The answer for the cluster `objects` (module docstring). InputError for a template refused."""
    cluster, left_out = cluster_objects(objects)
    maker = CopyMaker(template, base_time(cluster), allow_preemption=options.allow_preemption)

    def new_session() -> Session:
        return Session(cluster, registry, seed=options.seed, tie_break=options.tie_break,
                       percentage_of_nodes_to_score=options.percentage_of_nodes_to_score, warn=warn,
                       origins=origins)

    session = new_session()
    try:
        check_copy(session, maker, template)
        if template.group is not None and not session.sched.pod_groups_enabled:
            warn.write(f"note: {template.group_where}: PodGroups are not read without the GenericWorkload feature "
                       "gate: a copy's pods are scheduled one by one, not as a gang\n")
        answer: Answer | None = None
        reason = "--exact"
        if options.per_node:
            answer, reason = per_node_answer(session, maker, options)
            if answer is None and reason.startswith("fallback"):
                session.close()
                session = new_session()
        if answer is None:
            answer = exact_answer(session, maker, options)
            answer.not_per_node = reason
        answer.pending_left_out = left_out
        if options.allow_preemption or options.verify:
            answer = by_simulation(answer, cluster, maker, registry, options, warn, origins)
        return answer
    finally:
        session.close()


def exact_answer(session: Session, maker: CopyMaker, options: Options,
                 progress: Callable[[int], None] | None = None) -> Answer:
    """Copies added one at a time until one is not placed (module docstring)."""
    per_node: dict[str, int] = {}
    victims: list[str] = []
    i = 0
    while True:
        i += 1
        if i > options.max_copies:
            return Answer(options.max_copies, per_node, None, victims=victims, max_reached=True)
        session.add(maker.make(i))
        keys = maker.pod_keys(i)
        session.run()
        placed = session.placed(keys)
        if placed is None:
            session.settle()
            placed = session.placed(keys)
        if placed is None:
            return Answer(i - 1, per_node, session.message(keys), victims=victims)
        for node in placed.values():
            per_node[node] = per_node.get(node, 0) + 1
        victims += session.victims(keys)
        if progress is not None:
            progress(i)


# How many times --allow-preemption's answer is taken again from simulate when it places another count.
CONVERGE_ROUNDS = 4


def by_simulation(answer: Answer, cluster: list[dict[str, Any]], maker: CopyMaker, registry: Registry,
                  options: Options, warn: TextIO, origins: Origins | None) -> Answer:
    """The answer checked by simulate of total+1 copies (verify.py): `verified` says whether it
    agrees. With --allow-preemption simulate's placement is the answer: when it places another
    count M, simulate of M+1 copies is asked in turn (at most CONVERGE_ROUNDS times)."""
    from .verify import simulate_copies

    if answer.max_reached:
        return answer
    total = answer.total
    for _ in range(CONVERGE_ROUNDS if options.allow_preemption else 1):
        sim = simulate_copies(cluster, maker, total + 1, registry, seed=options.seed, tie_break=options.tie_break,
                              percentage_of_nodes_to_score=options.percentage_of_nodes_to_score, warn=warn,
                              origins=origins)
        agrees = sim.placed == total and sim.message is not None
        if not options.allow_preemption:
            answer.verified = agrees and sim.per_node == answer.per_node and sim.message == answer.stopped_by
            return answer
        if agrees:
            answer.total, answer.per_node, answer.stopped_by = total, sim.per_node, sim.message
            answer.victims, answer.verified = sim.victims, True
            return answer
        total = sim.placed
    answer.verified = False
    return answer
