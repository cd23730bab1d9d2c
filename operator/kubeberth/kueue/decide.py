"""Which of a Workload's admission checks wait on us, and what we answer (Kueue's AdmissionCheckState).

Kueue lists a ClusterQueue's admission checks in a Workload's `status.admissionChecks` with state
`Pending` once it has reserved quota for it (`QuotaReserved`, with `status.admission`; a new
reservation sets `Evicted` false: while it is true, the workload is on its way out, and a Pending
check then is Kueue's reset before it releases the quota, not a question). We answer
each of ours that is Pending, once: `Ready` when every pod of the Workload fits now, `Retry` when
not (Kueue then evicts the Workload, releases its quota, requeues it with backoff and, at its next
reservation, sets the check Pending again: we dry run again then). A check in any other state is
left alone: it is Kueue's to reset.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .api import (
    ACTIVE,
    API_VERSION,
    EVICTED,
    FINISHED,
    MAX_MESSAGE,
    PENDING,
    QUOTA_RESERVED,
    READY,
    RETRY,
    is_true,
)

PREFIX = "kubeberth: "
RETRY_BASE_SECONDS = 5   # a Retry asks Kueue to wait this long before the next reservation, doubled per retry
RETRY_MAX_SECONDS = 300


@dataclass(frozen=True)
class Verdict:
    """Our answer for one check: its state and message."""

    state: str
    message: str


def waiting_checks(workload: Mapping[str, Any], ours: Collection[str]) -> list[str]:
    """The names of our checks (`ours`: AdmissionChecks whose controllerName is ours) that
    `workload` has Pending while its quota is reserved; [] when there is nothing to do."""
    status = workload.get("status") or {}
    if not is_true(workload, QUOTA_RESERVED) or not status.get("admission") or is_true(workload, FINISHED):
        return []
    if is_true(workload, EVICTED):  # being evicted: the Pending seen is Kueue's reset, its quota about to go
        return []
    return [str(c.get("name")) for c in status.get("admissionChecks") or ()
            if c.get("name") in ours and c.get("state") == PENDING]


def _nodes(pods: Sequence[Mapping[str, Any]]) -> str:
    count: dict[str, int] = {}
    for p in pods:
        if p.get("node"):
            count[str(p["node"])] = count.get(str(p["node"]), 0) + 1
    shown = ", ".join(f"{n} x{c}" if c > 1 else n for n, c in sorted(count.items())[:10])
    return shown + (f", ... ({len(count)} nodes)" if len(count) > 10 else "")


def verdict(answer: Mapping[str, Any], suggestion: str | None = None) -> Verdict:
    """The check's state from a dry run's status (kubeberth.dryrun's DryRunStatus as a dict): Ready
    when every pod was placed; Retry with the first unplaced pod's reason (upstream's
    FailedScheduling message) and, when given, `suggestion`."""
    pods = list(answer.get("pods") or ())
    placed = sum(1 for p in pods if p.get("node"))
    if pods and placed == len(pods) and answer.get("schedulable", True):
        return Verdict(READY, _cut(f"{PREFIX}all {len(pods)} pod(s) fit now: {_nodes(pods)}"))
    first = next((p for p in pods if not p.get("node")), None)
    reason = (f"pod {first.get('name')}: {first.get('message') or first.get('status')}" if first is not None
              else "no pod to place")
    message = f"{PREFIX}{placed} of {len(pods)} pod(s) fit now; {reason}"
    preemption = (first or {}).get("preemption")
    if preemption:
        victims = len(preemption.get("victims") or ()) + int(preemption.get("victimsInOtherNamespaces") or 0)
        message += f" (preemption could make room on {preemption.get('node')}, evicting {victims} pod(s))"
    if suggestion:
        message += f"; suggestion: {suggestion}"
    return Verdict(RETRY, _cut(message))


def error_verdict(problem: str) -> Verdict:
    """A Workload we cannot dry run (a missing flavour, a pod the scheduler cannot read): Retry, saying why."""
    return Verdict(RETRY, _cut(f"{PREFIX}cannot dry run this workload: {problem}"))


def _cut(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[:MAX_MESSAGE - 3] + "..."


def workload_status_apply(workload: Mapping[str, Any], answers: Mapping[str, Verdict], now: str) -> dict[str, Any]:
    """The server-side apply body of the Workload's status subresource: our checks' entries only
    (status.admissionChecks is a list-map keyed by name: the others stay Kueue's and their controllers'),
    with the Workload's resourceVersion as a precondition (409 Conflict when it has changed since)."""
    meta = workload.get("metadata") or {}
    target = {"name": meta.get("name"), "namespace": meta.get("namespace")}
    if meta.get("resourceVersion"):  # the answer is for this version: a newer one is answered on its own event
        target["resourceVersion"] = meta["resourceVersion"]
    return {"apiVersion": API_VERSION, "kind": "Workload", "metadata": target,
            "status": {"admissionChecks": [_entry(workload, name, v, now) for name, v in sorted(answers.items())]}}


def retry_after(retry_count: int) -> int:
    """Seconds Kueue should wait before it reserves quota again after our Retry (its
    requeueAfterSeconds), from the check's retryCount (Kueue counts the Retries it reset)."""
    return int(min(RETRY_BASE_SECONDS * 2 ** min(max(retry_count, 0), 16), RETRY_MAX_SECONDS))


def _entry(workload: Mapping[str, Any], name: str, v: Verdict, now: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "state": v.state, "message": v.message, "lastTransitionTime": now}
    if v.state == RETRY:
        count = next((int(c.get("retryCount") or 0) for c in (workload.get("status") or {}).get("admissionChecks")
                      or () if c.get("name") == name), 0)
        entry["requeueAfterSeconds"] = retry_after(count)
    return entry


def admission_check_active_apply(check: Mapping[str, Any], now: str) -> dict[str, Any] | None:
    """The server-side apply body that marks our AdmissionCheck Active, None when it already is."""
    if is_true(check, ACTIVE):
        return None
    meta = check.get("metadata") or {}
    return {"apiVersion": API_VERSION, "kind": "AdmissionCheck", "metadata": {"name": meta.get("name")},
            "status": {"conditions": [
                {"type": ACTIVE, "status": "True", "reason": "Active", "lastTransitionTime": now,
                 "observedGeneration": int(meta.get("generation") or 0),
                 "message": "kubeberth dry runs the workloads' pods against its live cache"}]}}
