"""A pending pod's nomination holds room for it; when the pod goes or its nomination moves, pods
of lower or equal priority that this room kept out are tried again (upstream: EventAssignedPodDelete
with getLEPriorityPreCheck)."""

from __future__ import annotations

from typing import Any

from kubeberth.clock import FakeClock
from kubeberth.config import SchedulingProfileSpec
from kubeberth.queue import UNSCHEDULABLE
from kubeberth.scheduler import SCHEDULED, Scheduler
from kubeberth.testing import InMemoryClient
from tests.builders import node_dict, pod_dict

NO_PREEMPTION = {"plugins": {"postFilter": {"disabled": [{"name": "*"}]}}}


async def _blocked_small_pod() -> tuple[Scheduler, dict[str, Any]]:
    """n1 has 1 CPU; `big` (priority 10, 2 CPUs: fits nowhere) is nominated to n1, so `small`
    (priority 0, 1 CPU) finds n1 taken by it and waits in the unschedulable pool."""
    sched = Scheduler(clock=FakeClock())
    sched.ctx.client = InMemoryClient(sched)
    sched.add_profile_spec(SchedulingProfileSpec.model_validate(NO_PREEMPTION))
    sched.on_node_add(node_dict("n1", cpu="1"))
    big = pod_dict("big", cpu="2", priority=10)
    big["status"] = {"nominatedNodeName": "n1"}
    sched.on_pod_add(big)
    await sched.run_until_idle(max_attempts=1)
    sched.on_pod_add(pod_dict("small", cpu="1", priority=0))
    await sched.run_until_idle(max_attempts=1)
    small = sched._pending[sched._uids["default/small"]]
    got = sched.queue.get(small.uid)
    assert got is not None and got[0] == UNSCHEDULABLE
    assert got[1].unschedulable_plugins == {"NodeResourcesFit"}
    return sched, big


async def test_deleting_a_nominated_pod_requeues_the_pods_it_kept_out() -> None:
    sched, big = await _blocked_small_pod()
    sched.on_pod_delete(big)
    await sched.run_until_idle()
    assert (sched.outcomes["default/small"].status, sched.outcomes["default/small"].node) == (SCHEDULED, "n1")


async def test_a_nomination_that_moves_requeues_the_pods_it_kept_out() -> None:
    sched, big = await _blocked_small_pod()
    moved = {**big, "status": {"nominatedNodeName": "elsewhere"}}
    moved["metadata"] = {**big["metadata"], "resourceVersion": "2"}
    sched.on_pod_update(moved)
    await sched.run_until_idle(max_attempts=3)
    assert (sched.outcomes["default/small"].status, sched.outcomes["default/small"].node) == (SCHEDULED, "n1")
