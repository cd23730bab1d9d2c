"""The end of a pod group's attempt (upstream's submitPodGroupAlgorithmResult and
updatePodGroupCondition): each pod to its binding cycle (assumed, reserved and permitted for
real) or back to the queue with its own status or the group's, the PodGroup's
PodGroupInitiallyScheduled condition, the metrics, the group requeued."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from ..framework import Framework, Status
from ..framework.status import Code
from ..framework.types import QueuedPodGroupInfo, QueuedPodInfo
from ..model import PodGroup
from ..model.pod_group import (
    POD_GROUP_INITIALLY_SCHEDULED,
    REASON_SCHEDULED,
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
)
from . import decision_log
from .podgroup_results import SCHEDULED, UNSCHEDULABLE, WAITING_ON_PREEMPTION, PodResult, group_rejection, result_of
from .schedule_one import SchedulingCycles


def set_condition(conditions: list[dict[str, Any]], condition: Mapping[str, Any], now: str
                  ) -> dict[str, Any] | None:
    """apimachinery's SetStatusCondition for one condition: what to write, None when nothing
    changes. lastTransitionTime moves only when the status does."""
    existing = next((c for c in conditions if c.get("type") == condition["type"]), None)
    new = dict(condition)
    if existing is None:
        new["lastTransitionTime"] = now
        return new
    if all(existing.get(k) == new.get(k) for k in ("status", "reason", "message", "observedGeneration")):
        return None
    new["lastTransitionTime"] = now if existing.get("status") != new["status"] else existing.get("lastTransitionTime",
                                                                                               now)
    return new


class PodGroupOutcome(SchedulingCycles):
    """The pod-group cycle's last part (PodGroupCycles builds on it)."""

    async def _submit_pod_group_result(self, fw: Framework, g: QueuedPodGroupInfo, pg: PodGroup,
                                       queued: list[QueuedPodInfo], results: list[PodResult],
                                       status: Status | None, started: float,
                                       nominations: dict[str, str] | None = None) -> None:
        """upstream's submitPodGroupAlgorithmResult: the pods to their binding cycles or back to
        the queue, the PodGroup's condition, the metrics, the group requeued. `nominations`: the
        group waits on its preemption; its pods go back nominated to the nodes it found."""
        waiting = nominations is not None and status is not None and status.is_rejected()
        group_error = status is not None and not status.is_success() and not status.is_rejected()
        for res in results:
            q = res.q
            if group_error:
                assert status is not None
                own = res.status if res.status is not None and res.status.code == Code.ERROR else status
                await self._fail(fw, q, own, nominating="", started=started)
                continue
            nominated = nominations.get(q.pod.uid) if waiting and nominations is not None else None
            if res.status is None:
                if status is None:
                    await self._bind_group_pod(fw, res, started)
                elif waiting:
                    assert status is not None
                    await self._fail(fw, q, Status(status.code, *status.reasons), nominating=nominated,
                                     started=started)
                elif status.is_rejected():
                    await self._fail(fw, q, group_rejection(status.message()), nominating="", started=started)
                else:
                    await self._fail(fw, q, Status.error("received unexpected pod group scheduling algorithm status "
                                                         f"code: {status.code.upstream_name}"),
                                     nominating="", started=started)
            else:
                await self._fail(fw, q, res.status, fit=res.fit, nominating=nominated, started=started)
        result = result_of(status)
        if result == SCHEDULED:
            await self._set_pod_group_condition(pg, "True", REASON_SCHEDULED, "")
        elif result == UNSCHEDULABLE:
            await self._set_pod_group_condition(pg, "False", REASON_UNSCHEDULABLE,
                                                status.message() if status is not None else "")
        else:
            await self._set_pod_group_condition(pg, "False", REASON_SCHEDULER_ERROR,
                                                status.message() if status is not None else "")
        decision_log.pod_group(pg.key, result, status.message() if status is not None else "")
        self.metrics.pod_group_schedule_attempt(WAITING_ON_PREEMPTION if waiting else result, fw.profile_name,
                                                time.perf_counter() - started)
        self.queue.add_attempted_pod_group(g, result)

    async def _bind_group_pod(self, fw: Framework, res: PodResult, started: float) -> None:
        """upstream's prepareForBindingCycle: assume, Reserve and Permit for real, then the binding cycle."""
        q, state, host = res.q, res.state, res.host
        assumed = await self._assume(fw, q, host, started)
        if assumed is None:
            return
        status = fw.run_reserve(state, assumed, host)
        if status is None or status.is_success():
            status = fw.run_permit(state, assumed, host)
            if status is not None and status.is_wait():
                status = None
        if status is not None and not status.is_success():
            fw.run_unreserve(state, assumed, host)
            self._forget(assumed)
            await self._fail_after_assume(fw, q, status, host, started)
            return
        task = asyncio.get_running_loop().create_task(self._binding_cycle(fw, state, q, assumed, host, started))
        self._binding_tasks.add(task)
        task.add_done_callback(self._binding_done)
        self.metrics.goroutines("binding", len(self._binding_tasks))

    async def _set_pod_group_condition(self, pg: PodGroup, status: str, reason: str, message: str) -> None:
        """upstream's updatePodGroupCondition: a True condition is never taken back; nothing is
        written when nothing changes."""
        current = self.pod_groups.pod_group(pg.key) or pg
        existing = current.condition(POD_GROUP_INITIALLY_SCHEDULED)
        if existing is not None and existing.get("status") == "True" and status != "True":
            return
        condition = {"type": POD_GROUP_INITIALLY_SCHEDULED, "status": status, "observedGeneration": current.generation,
                     "reason": reason, "message": message}
        written = set_condition(current.conditions, condition, _rfc3339(self.clock.now()))
        if written is None or self.ctx.client is None:
            return
        await self._guard(self.ctx.client.set_pod_group_condition(current, written))



def _rfc3339(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
