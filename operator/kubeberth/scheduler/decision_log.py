"""One log line per scheduling decision, on the `kubeberth.decisions` logger at INFO: each
attempt (feasible/total nodes, the chosen node and its score, or the failure), preemption, and
the binding's outcome. `kubeberth simulate --verbose` and `kubeberth run --verbose` show it; the
lines are only formatted when the logger is enabled."""

from __future__ import annotations

import logging

from ..model import Pod
from .algorithm import ScheduleResult

log = logging.getLogger("kubeberth.decisions")


def enabled() -> bool:
    return log.isEnabledFor(logging.INFO)


def attempt_placed(pod: Pod, attempt: int, profile: str, total_nodes: int, result: ScheduleResult) -> None:
    if not enabled():
        return
    host = result.suggested_host
    score = next((s.total for s in result.scores if s.name == host), None)
    scored = f"score {score}" if score is not None else "the only feasible node, not scored"
    log.info("attempt %d of %s (%s): %d/%d nodes feasible (%d evaluated); chose %s, %s",
             attempt, pod.key, profile, result.feasible_nodes, total_nodes, result.evaluated_nodes, host, scored)


def attempt_failed(pod: Pod, attempt: int, profile: str, message: str) -> None:
    if enabled():
        log.info("attempt %d of %s (%s) failed: %s", attempt, pod.key, profile, message)


def preemption(pod: Pod, nominated: str | None, victims: list[str], message: str) -> None:
    if not enabled():
        return
    if nominated:
        log.info("preemption for %s: nominated to %s, evicting %s", pod.key, nominated,
                 ", ".join(victims) if victims else "no pod")
    else:
        log.info("preemption for %s: none: %s", pod.key, message or "no PostFilter plugin helped")


def bound(pod: Pod, host: str) -> None:
    if enabled():
        log.info("bound %s to %s", pod.key, host)


def binding_failed(pod: Pod, host: str, message: str) -> None:
    if enabled():
        log.info("binding %s to %s failed: %s", pod.key, host, message)


def pod_group(key: str, result: str, message: str) -> None:
    """A pod group's attempt (all its queued pods at once): scheduled, unschedulable or error."""
    if enabled():
        log.info("pod group %s: %s%s", key, result, f": {message}" if message else "")
