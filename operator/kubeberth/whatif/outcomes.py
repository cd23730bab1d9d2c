"""What became of each pod of a what-if run: `PodOutcome`, made from the scheduler's records
(scheduler/records.py), and its renderings (simulate's table and JSON)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ..scheduler import (
    DELETED,
    EVICTED,
    EXISTING,
    IGNORED,
    PENDING,
    SCHEDULED,
    UNSCHEDULABLE,
    PodRecord,
    Scheduler,
)


@dataclass
class PodOutcome:
    """What became of one pod of the input (`pod`: NAMESPACE/NAME; `status`: one of
    scheduler/records.py's)."""

    pod: str
    status: str
    node: str | None = None
    nominatedNode: str | None = None
    victims: list[str] = field(default_factory=list)
    message: str = ""
    # Only for pods simulate was asked to explain: per attempt (the first and the latest ones kept),
    # scheduler/explain.py's Explanation.to_dict(). Left out of the JSON when empty.
    explanations: list[Mapping[str, Any]] = field(default_factory=list)
    # The annotations plugins wrote on the pod (ClusterClient.annotate_pod, API 1.5), e.g. the GPUs
    # a device plugin chose at PreBind. Left out of the JSON when empty.
    annotations: dict[str, str] = field(default_factory=dict)
    # simulate --suggest only (whatif/suggest/): the verified suggestions of an unschedulable pod
    # ([] for the others); left out of the JSON when None.
    suggestions: list[dict[str, Any]] | None = None


def outcome_dict(o: PodOutcome) -> dict[str, Any]:
    d = asdict(o)
    if not o.explanations:
        del d["explanations"]
    if not o.annotations:
        del d["annotations"]
    if o.suggestions is None:
        del d["suggestions"]
    return d



def pod_outcome(key: str, rec: PodRecord | None, sched: Scheduler) -> PodOutcome:
    """The outcome of pod `key` from its record (None: the scheduler never read it), with the
    explanations of its attempts when it was explained."""
    if rec is None:
        return PodOutcome(key, UNSCHEDULABLE, message="not read")
    out = _plain_outcome(rec, sched)
    out.explanations = [x.to_dict() for x in rec.explanations]
    written: Mapping[str, Mapping[str, str]] = getattr(sched.ctx.client, "annotations_written", None) or {}
    if out.status in (SCHEDULED, EXISTING) and key in written:
        out.annotations = dict(sorted(written[key].items()))
    return out


def _plain_outcome(rec: PodRecord, sched: Scheduler) -> PodOutcome:
    key = rec.key
    status = rec.status
    if status == EXISTING:
        return PodOutcome(key, EXISTING, node=rec.node or None)
    if status == SCHEDULED:
        return PodOutcome(key, SCHEDULED, node=rec.node or None, victims=list(rec.victims))
    if status in (EVICTED, DELETED):
        return PodOutcome(key, EVICTED, victims=list(rec.victims), message=rec.message)
    if status == IGNORED:
        return PodOutcome(key, IGNORED, message=rec.message)
    message = rec.message
    if status == PENDING and not message:
        message = _gated_message(rec, sched)
    return PodOutcome(key, UNSCHEDULABLE, nominatedNode=rec.nominated_node or None,
                      victims=list(rec.victims), message=message)


def _gated_message(rec: PodRecord, sched: Scheduler) -> str:
    """Why a pod was never tried: what its PreEnqueue plugins say."""
    pod = sched.pending_pod(rec.uid)
    fw = sched.profiles.get(pod.scheduler_name) if pod is not None else None
    if pod is None or fw is None:
        return ""
    status = fw.run_pre_enqueue(pod)
    return status.message() if status is not None else ""


def render_json(outcomes: list[PodOutcome], groups: list[Mapping[str, Any]] | None = None) -> str:
    """`groups` (pod_groups.group_dict of each pod group): under `podGroups`, only when there are any."""
    out: dict[str, Any] = {"pods": [outcome_dict(o) for o in outcomes]}
    if groups:
        out["podGroups"] = list(groups)
    return json.dumps(out, indent=2)


def render_table(outcomes: list[PodOutcome]) -> str:
    rows = [("POD", "STATUS", "NODE", "REASON")]
    for o in outcomes:
        reason = o.message
        if o.victims:
            reason = (f"preempted {', '.join(o.victims)}" + (f"; {reason}" if reason else ""))
        if o.nominatedNode and o.status != "Scheduled":
            reason = f"nominated to {o.nominatedNode}" + (f"; {reason}" if reason else "")
        rows.append((o.pod, o.status, o.node or "-", reason))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]}".rstrip() for r in rows]
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
    lines.append("")
    lines.append(", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no pods")
    return "\n".join(lines)
