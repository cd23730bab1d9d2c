"""What became of each pod group in a what-if run (GenericWorkload): what became of each PodGroup and why it waits.

One `GroupOutcome` per PodGroup of the input (and per group its pods name that does not exist):
its policy, its pods, how many are scheduled, its status, and the reason:

- `Scheduled` / `Unschedulable` / `SchedulerError`: the PodGroupInitiallyScheduled condition the
  scheduler wrote (its message: quorum not reached, which pods fit nowhere, preemption's word);
- `Waiting`: never tried, a gang short of pods (`minCount` more than the pods that exist), or pods
  naming a PodGroup that does not exist (refused by the API server's admission, as an unknown
  PriorityClass is: the message says where the input gave it and admission's error, or malformed);
- `NotTried`: never tried for another reason (what the pods' PreEnqueue plugins say).

`lastAttempt` is the group's latest attempt pod by pod (scheduler/group_explain.py): where each pod
was placed, why it fit nowhere, and which pods the attempt never reached.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..model.pod_group import POD_GROUP_INITIALLY_SCHEDULED
from ..scheduler import EXISTING, SCHEDULED, Scheduler
from .outcomes import PodOutcome

GROUP_SCHEDULED, GROUP_UNSCHEDULABLE, GROUP_ERROR = "Scheduled", "Unschedulable", "SchedulerError"
WAITING, NOT_TRIED = "Waiting", "NotTried"
GANG_WAITING = "waiting for minCount pods from a gang to appear in scheduling queue"


@dataclass
class GroupOutcome:
    podGroup: str
    status: str
    policy: str = ""              # gang | basic ("" when the PodGroup does not exist)
    minCount: int | None = None
    pods: list[str] = field(default_factory=list)
    scheduled: int = 0
    message: str = ""
    condition: dict[str, str] | None = None
    lastAttempt: dict[str, Any] | None = None


def group_outcomes(sched: Scheduler, outcomes: list[PodOutcome]) -> list[GroupOutcome]:
    """The groups of the simulation, the PodGroups in input order first."""
    order = {o.pod: i for i, o in enumerate(outcomes)}
    by_pod = {o.pod: o for o in outcomes}
    keys = [str(k) for k in sched.pod_groups.keys()]
    keys += [k for k in sched.pod_group_errors if k not in keys]
    out = []
    for key in sorted(keys, key=lambda k: _first(sched, k, order)):
        state = sched.pod_groups.get(key)
        error = sched.pod_group_errors.get(key)
        if state is None and error is None:
            continue
        members = state.pods.values() if state is not None else ()
        pods = sorted((p.key for p in members), key=lambda k: order.get(k, len(order)))
        scheduled = sum(1 for k in pods if k in by_pod and by_pod[k].status in (SCHEDULED, EXISTING))
        pg = state.pod_group if state is not None else None
        if pg is None:
            why = "does not exist" if error is None else f"was refused ({error})"
            out.append(GroupOutcome(key, WAITING, pods=pods, scheduled=scheduled,
                                    message=f"PodGroup {key} {why}: its pods wait for it"))
            continue
        attempt = sched.group_attempts.get(key)
        g = GroupOutcome(key, NOT_TRIED, "gang" if pg.is_gang else "basic", pg.min_count, pods, scheduled,
                         lastAttempt=attempt.to_dict() if attempt is not None else None)
        current = sched.pod_groups.pod_group(key) or pg
        cond = current.condition(POD_GROUP_INITIALLY_SCHEDULED)
        if cond is not None:
            g.condition = {k: str(cond.get(k) or "") for k in ("status", "reason", "message")}
            g.status = GROUP_SCHEDULED if cond.get("status") == "True" else str(cond.get("reason") or
                                                                               GROUP_UNSCHEDULABLE)
            g.message = str(cond.get("message") or "")
        elif pg.is_gang and pg.min_count is not None and len(pods) < pg.min_count:
            g.status = WAITING
            g.message = (f"{GANG_WAITING}: {len(pods)} of minCount {pg.min_count} pods exist "
                         f"({pg.min_count - len(pods)} missing)")
        elif pods and scheduled == len(pods):
            g.status = GROUP_SCHEDULED
        else:
            g.message = next((by_pod[k].message for k in pods if k in by_pod and by_pod[k].message), "")
        out.append(g)
    return out


def _first(sched: Scheduler, key: str, order: dict[str, int]) -> tuple[int, str]:
    state = sched.pod_groups.get(key)
    pods = [order.get(p.key, len(order)) for p in state.pods.values()] if state is not None else []
    return (min(pods) if pods else len(order), key)


def group_dict(g: GroupOutcome) -> dict[str, Any]:
    return asdict(g)


def render_groups_table(groups: list[GroupOutcome]) -> str:
    """The table's section: one row per group."""
    rows = [("POD GROUP", "POLICY", "PODS", "SCHEDULED", "STATUS", "REASON")]
    for g in groups:
        policy = f"gang minCount={g.minCount}" if g.policy == "gang" else (g.policy or "-")
        rows.append((g.podGroup, policy, str(len(g.pods)), str(g.scheduled), g.status, g.message))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    return "\n".join(("  ".join(f"{r[i]:<{widths[i]}}" for i in range(5)) + f"  {r[5]}").rstrip() for r in rows)
