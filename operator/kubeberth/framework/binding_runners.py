"""The runners of the points after the node is chosen: Reserve, Permit (and the wait on it),
PreBindPreFlight, PreBind, Bind, PostBind. Framework (runtime.py) mixes them in."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from ..model import Pod
from .cycle_state import CycleState
from .interfaces import BindPlugin, PermitPlugin, PostBindPlugin, PreBindPlugin, ReservePlugin
from .plugin_metrics import PluginMetrics
from .status import Code, Status
from .waiting_pods import WaitingPod

if TYPE_CHECKING:
    from .context import SchedulerContext

MAX_PERMIT_TIMEOUT = 15 * 60.0


class BindingCycleRunners:
    """What the Framework gives these runners (declared here for the type checker)."""

    ctx: SchedulerContext
    reserve_plugins: list[ReservePlugin]
    permit_plugins: list[PermitPlugin]
    pre_bind_plugins: list[PreBindPlugin]
    bind_plugins: list[BindPlugin]
    post_bind_plugins: list[PostBindPlugin]
    plugin_metrics: PluginMetrics

    def _observe(self, point: str, status: Status | None, started: float) -> None:
        raise NotImplementedError

    def run_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        timed = state.record_plugin_metrics
        for p in self.reserve_plugins:
            t0 = time.perf_counter() if timed else 0.0
            try:
                s = p.reserve(state, pod, node_name)
            except Exception as exc:
                return self.ctx.plugin_errors.raised("Reserve", p.name, exc)
            if timed:
                self.plugin_metrics.took(p.name, "Reserve", s, time.perf_counter() - t0)
            if s is not None and not s.is_success():
                if s.is_rejected():
                    return s.with_plugin(p.name)
                return Status.error(f'running Reserve plugin "{p.name}": {s.message()}', p.name)
        return None

    def run_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for p in reversed(self.reserve_plugins):
            try:
                p.unreserve(state, pod, node_name)
            except Exception as exc:  # logged; the others still release what they hold
                self.ctx.plugin_errors.raised("Unreserve", p.name, exc)

    def run_permit(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        waits: dict[str, float] = {}
        timed = state.record_plugin_metrics
        for p in self.permit_plugins:
            t0 = time.perf_counter() if timed else 0.0
            try:
                s, timeout = p.permit(state, pod, node_name)
            except Exception as exc:
                return self.ctx.plugin_errors.raised("Permit", p.name, exc)
            if timed:
                self.plugin_metrics.took(p.name, "Permit", s, time.perf_counter() - t0)
            if s is None or s.is_success():
                continue
            if s.is_rejected():
                return s.with_plugin(p.name)
            if s.is_wait():
                waits[p.name] = min(max(timeout, 0.0), MAX_PERMIT_TIMEOUT)
                continue
            return Status.error(f'running Permit plugin "{p.name}": {s.message()}', p.name)
        if waits:
            self.ctx.waiting_pods.add(WaitingPod(pod, waits, asyncio.get_event_loop(),
                                                  clock=self.ctx.waiting_pods.virtual_clock))
            return Status(Code.WAIT, f"one or more plugins asked to wait and no plugin rejected pod {pod.name!r}")
        return None

    async def wait_on_permit(self, pod: Pod) -> Status | None:
        wp = self.ctx.waiting_pods.get(pod.uid)
        if wp is None:
            return None
        started = time.perf_counter()
        try:
            status = await wp.wait()
        finally:
            self.ctx.waiting_pods.remove(pod.uid)
        if self.ctx.metrics is not None:
            code = (status.code if status is not None else Code.SUCCESS).upstream_name
            self.ctx.metrics.permit_wait_duration(code, time.perf_counter() - started)
        if status is not None and not status.is_success() and not status.is_rejected():
            return Status.error(f"waiting on permit for pod: {status.message()}", status.plugin)
        return status

    def run_pre_bind_pre_flights(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """None when some PreBind plugin has work for the pod, Skip when none has, or an error;
        the plugins that said Skip are not called at PreBind."""
        started = time.perf_counter()
        result: Status | None = Status.skip()
        skipped: set[str] = set()
        for p in self.pre_bind_plugins:
            s = p.pre_bind_pre_flight(state, pod, node_name)
            if s is None or s.is_success():
                result = None
            elif s.is_skip():
                skipped.add(p.name)
            elif s.code == Code.ERROR:
                result = Status.error(f'running PreBindPreFlight "{p.name}": {s.message()}', p.name)
                break
            else:
                result = Status.error(f"PreBindPreFlight {p.name} returned \"{s.code.upstream_name}\", which is "
                                      "unsupported. It is supposed to return Success, Skip, or Error status", p.name)
                break
        state.skip_pre_bind_plugins = skipped
        self._observe("PreBindPreFlight", result, started)
        return result

    def will_wait_on_permit(self, pod: Pod) -> bool:
        return self.ctx.waiting_pods.get(pod.uid) is not None

    async def run_pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        skipped = state.skip_pre_bind_plugins
        timed = state.record_plugin_metrics
        for p in self.pre_bind_plugins:
            if p.name in skipped:
                continue
            t0 = time.perf_counter() if timed else 0.0
            s = await p.pre_bind(state, pod, node_name)
            if timed:
                self.plugin_metrics.took(p.name, "PreBind", s, time.perf_counter() - t0)
            if s is not None and not s.is_success():
                if s.is_rejected():
                    return s.with_plugin(p.name)
                return Status.error(f'running PreBind plugin "{p.name}": {s.message()}', p.name)
        return None

    async def run_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        if not self.bind_plugins:
            return Status.skip()
        timed = state.record_plugin_metrics
        for p in self.bind_plugins:
            t0 = time.perf_counter() if timed else 0.0
            s = await p.bind(state, pod, node_name)
            if timed:
                self.plugin_metrics.took(p.name, "Bind", s, time.perf_counter() - t0)
            if s is not None and s.is_skip():
                continue
            if s is not None and not s.is_success():
                if s.is_rejected():
                    return s.with_plugin(p.name)
                return Status.error(f'running Bind plugin "{p.name}": {s.message()}', p.name)
            return None
        return Status.skip()

    def run_post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        timed = state.record_plugin_metrics
        for p in self.post_bind_plugins:
            t0 = time.perf_counter() if timed else 0.0
            try:
                p.post_bind(state, pod, node_name)
            except Exception as exc:  # informational only, as upstream's PostBind: logged
                self.ctx.plugin_errors.raised("PostBind", p.name, exc)
            if timed:
                self.plugin_metrics.took(p.name, "PostBind", None, time.perf_counter() - t0)
