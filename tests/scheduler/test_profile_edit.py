"""A SchedulingProfile edited live (the operator's ProfileManager puts a new version in force):
the pods the previous version left unschedulable are tried again at once, with no other event
and without the five-minute flush; the pods of other profiles stay where they are."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from kubeberth.clock import FakeClock
from kubeberth.framework import ActionType, ClusterEvent, CycleState, FilterPlugin, NodeInfo, Status
from kubeberth.framework import events as ev
from kubeberth.metrics import SchedulerMetrics
from kubeberth.model import Pod
from kubeberth.operator.profiles import ProfileManager
from kubeberth.queue import BACKOFF, UNSCHEDULABLE
from kubeberth.scheduler import SCHEDULED, Scheduler
from kubeberth.scheduler import UNSCHEDULABLE as S_UNSCHEDULABLE
from tests.builders import node_dict
from tests.doubles import RecordingClient
from tests.scheduler.fakes import T0, add_pod, registry


class CostAwareArgs(BaseModel):
    maxCost: int = 1


class CostAware(FilterPlugin):
    """A newcomer's filter: nodes whose `cost` label is at most maxCost. It registers the node
    events that may change its verdict, so no other event moves the pods it rejected."""

    name = "CostAware"
    args_model = CostAwareArgs

    def __init__(self, args: CostAwareArgs, handle: Any = None) -> None:
        self.max_cost = args.maxCost

    def events_to_register(self) -> list[Any]:
        return [ClusterEvent(ev.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)]

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if int(node_info.node.labels.get("cost", "0")) > self.max_cost:
            return Status.unschedulable("node costs too much")
        return None


def resource(scheduler_name: str, max_cost: int) -> dict[str, Any]:
    plugins = {"multiPoint": {"disabled": [{"name": "*"}]}, "queueSort": {"enabled": [{"name": "Sort"}]},
               "filter": {"enabled": [{"name": "CostAware"}]}, "bind": {"enabled": [{"name": "Script"}]}}
    return {"metadata": {"name": scheduler_name, "generation": max_cost},
            "spec": {"schedulerName": scheduler_name, "plugins": plugins,
                     "pluginConfig": [{"name": "CostAware", "args": {"maxCost": max_cost}}]}}


def where(sched: Scheduler, pod: Pod) -> str:
    got = sched.queue.get(pod.uid)
    return got[0] if got is not None else ("in-flight" if sched.queue.in_flight(pod.uid) else "absent")


async def test_relaxed_args_schedule_the_pod_the_previous_version_rejected() -> None:
    clock = FakeClock(T0)
    metrics = SchedulerMetrics()
    sched = Scheduler(clock=clock, seed=1, metrics=metrics)
    sched.ctx.client = RecordingClient(sched)
    reg = registry()
    reg.register(CostAware)
    manager = ProfileManager(sched, reg, default_profile=False)
    for name in ("default-scheduler", "batch"):
        manager.apply(name, resource(name, max_cost=1))
    sched.on_node_add(node_dict("n1", cpu="4", labels={"cost": "2"}))
    mine, theirs = add_pod(sched, "mine"), add_pod(sched, "theirs", scheduler="batch")
    await sched.run_until_idle()
    assert [sched.outcomes[f"default/{n}"].status for n in ("mine", "theirs")] == [S_UNSCHEDULABLE] * 2
    assert (where(sched, mine), where(sched, theirs)) == (UNSCHEDULABLE, UNSCHEDULABLE)

    manager.apply("default-scheduler", resource("default-scheduler", max_cost=3))
    assert manager.verdicts["default-scheduler"].accepted
    # its one-second backoff is not over: backoffQ, which is popped while activeQ is empty
    assert (where(sched, mine), where(sched, theirs)) == (BACKOFF, UNSCHEDULABLE)
    assert await sched.schedule_one()
    await sched.wait_for_bindings()
    assert (sched.outcomes["default/mine"].status, sched.outcomes["default/mine"].node) == (SCHEDULED, "n1")
    assert where(sched, theirs) == UNSCHEDULABLE and clock.now() == T0
    assert metrics.sample("scheduler_queue_incoming_pods_total",
                          {"queue": "backoff", "event": "kubeberth.io/SchedulingProfileUpdate"}) == 1
    # the same version again (the resource listed anew) is no event
    manager.apply("batch", resource("batch", max_cost=1))
    assert where(sched, theirs) == UNSCHEDULABLE
