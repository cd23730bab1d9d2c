"""Scripted plugins for the scheduler tests (no in-tree plugin needed) and a scheduler built
with them over a RecordingClient."""

from __future__ import annotations

from typing import Any

from kubeberth.client import preemption_message
from kubeberth.clock import FakeClock
from kubeberth.config import parse_spec
from kubeberth.framework import (
    BindPlugin,
    Code,
    CycleState,
    NodeToStatus,
    PermitPlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    Registry,
    ReservePlugin,
    Status,
)
from kubeberth.model import Pod
from kubeberth.scheduler import Scheduler
from tests.builders import node_dict, pod_dict
from tests.doubles import CpuFit, RecordingClient, Sort

T0 = 1_700_000_000.0


class Script(ReservePlugin, PermitPlugin, PreBindPlugin, BindPlugin, PostBindPlugin):
    """Reserve/Permit/PreBind/Bind/PostBind doing what ctx.extras["script"] says; logs to ["journal"]."""

    name = "Script"

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        self.handle = handle

    @property
    def script(self) -> dict[str, Any]:
        return self.handle.ctx.extras.setdefault("script", {})

    def _log(self, entry: str) -> None:
        self.handle.ctx.extras.setdefault("journal", []).append(entry)

    def _take(self, point: str, default: str) -> str:
        """The scripted answer; a list is consumed one answer per call (the last one stays)."""
        got = self.script.get(point, default)
        if isinstance(got, list):
            return got.pop(0) if len(got) > 1 else got[0]
        return str(got)

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        self._log(f"reserve {pod.name} {node_name}")
        hook = self.script.get("on_reserve")
        if hook is not None:
            hook(pod)
        what = self._take("reserve", "ok")
        if what == "reject":
            return Status.unschedulable("reserve says no")
        if what == "error":
            return Status.error("reserve broke")
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self._log(f"unreserve {pod.name} {node_name}")

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        what = self._take("permit", "allow")
        if what == "reject":
            return Status.unschedulable("permit says no"), 0
        if what == "wait":
            return Status(Code.WAIT), float(self.script.get("timeout", 10))
        if what == "error":
            return Status.error("permit broke"), 0
        return None, 0

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Work to do only when the script says something about PreBind."""
        return None if "prebind" in self.script else Status.skip()

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        what = self._take("prebind", "ok")
        if what == "hang":  # until the script's "gate" (an asyncio.Event) is set
            self._log(f"prebind waits {pod.name}")
            await self.script["gate"].wait()
        return Status.error("volume not ready") if what == "error" else None

    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        what = self._take("bind", "ok")
        if what == "skip":
            return Status.skip()
        if what == "error":
            return Status.error("bind failed")
        await self.handle.client.bind(pod, node_name)
        self._log(f"bind {pod.name} {node_name}")
        return None

    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self._log(f"postbind {pod.name} {node_name}")


class FakePreempt(PostFilterPlugin):
    """Evicts every lower-priority pod of the first node that has one and nominates the pod there."""

    name = "FakePreempt"

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        self.handle = handle

    async def post_filter(self, state: CycleState, pod: Pod,
                          statuses: NodeToStatus) -> tuple[PostFilterResult | None, Status | None]:
        for ni in self.handle.snapshot.node_infos:
            victims = [p for p in ni.pods if p.priority < pod.priority]
            if victims:
                self.handle.nominator.add_nominated_pod(pod, ni.name)
                await self.handle.client.set_nominated_node(pod, ni.name)
                for v in victims:
                    await self.handle.client.delete_pod(v, preemption_message(pod.scheduler_name))
                self.handle.ctx.record_victims(pod, victims)
                return PostFilterResult(ni.name), None
        return PostFilterResult(""), Status.unschedulable("preemption: no victims")


def registry() -> Registry:
    r = Registry()
    for cls in (Sort, CpuFit, Script, FakePreempt):
        r.register(cls)
    return r


def spec(*, post_filter: bool = False, scheduler_name: str = "default-scheduler", initial: int = 1,
         maximum: int = 10) -> Any:
    plugins: dict[str, Any] = {
        "multiPoint": {"disabled": [{"name": "*"}]},
        "queueSort": {"enabled": [{"name": "Sort"}]},
        "filter": {"enabled": [{"name": "CpuFit"}]},
        "postFilter": {"enabled": [{"name": "FakePreempt"}] if post_filter else []},
        "reserve": {"enabled": [{"name": "Script"}]},
        "permit": {"enabled": [{"name": "Script"}]},
        "preBind": {"enabled": [{"name": "Script"}]},
        "bind": {"enabled": [{"name": "Script"}]},
        "postBind": {"enabled": [{"name": "Script"}]},
    }
    return parse_spec({"schedulerName": scheduler_name, "plugins": plugins,
                       "podInitialBackoffSeconds": initial, "podMaxBackoffSeconds": maximum})


def scheduler(*, post_filter: bool = False, feed: bool = True, script: dict[str, Any] | None = None,
              nodes: dict[str, str] | None = None) -> tuple[Scheduler, RecordingClient, FakeClock]:
    clock = FakeClock(T0)
    sched = Scheduler(clock=clock, seed=1)
    client = RecordingClient(sched, feed=feed)
    sched.ctx.client = client
    sched.ctx.extras["script"] = script if script is not None else {}
    sched.add_profile_spec(spec(post_filter=post_filter), registry())
    for name, cpu in (nodes or {"n1": "2"}).items():
        sched.on_node_add(node_dict(name, cpu=cpu))
    return sched, client, clock


def add_pod(sched: Scheduler, name: str, cpu: str = "1", prio: int | None = None, **kw: Any) -> Pod:
    pod = sched.on_pod_add(pod_dict(name, cpu=cpu, priority=prio, **kw))
    assert pod is not None
    return pod


def journal(sched: Scheduler) -> list[str]:
    return list(sched.ctx.extras.get("journal", []))
