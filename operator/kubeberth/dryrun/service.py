"""Where a dry run asked inside the operator is answered (the Kueue admission check's): in the
scheduler's own event loop, or by the forked worker. The HTTP dry runs do not come here: the
dry-run front (operator/dryrun_front.py) sends them all to forked workers.

A dry run of a few pods without an explanation costs what a scheduling cycle's algorithm costs
(a fraction of a millisecond to a few at 5,000 nodes; benchmarks/dryrun.py): cheaper to answer
at once, between two cycles, on the live scheduler (engine.py, `live=True`: nothing in it
changes) than to send to another process. The rest goes to the worker (worker.py), which keeps
the scheduling loop free: an explanation (it evaluates every plugin on every node), more than
`live_max_pods` pods, a gang (its PodGroup must be known to the plugins for the time of the run),
profiles with HTTP extenders (their calls would suspend the run), a pod group's cycle in
progress.

The loop's share is bounded whatever the rate. While the scheduler has pods in activeQ (it is
busy), the dry runs answered in the loop may take at most `live_share` of the loop thread's CPU
time; at any time, at most `live_budget` CPU seconds a second. Both are decaying sums over about
a second, of CPU time so that a machine busy with other work does not count. Beyond, the next ones are refused
(Overloaded: the endpoint's 429 with Retry-After) until the sums have decayed. They are not sent
to the worker instead: its fork costs the parent more than the dry run would (the page tables of
a large heap, then the copy-on-write faults), so the worker is kept for what needs it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .worker import DryRunWorkers, Overloaded, answer

if TYPE_CHECKING:
    from ..scheduler import Scheduler

LIVE_MAX_PODS = 16
LIVE_SHARE = 0.08  # of the loop thread's CPU time while the scheduler is busy
LIVE_BUDGET = 0.25  # CPU seconds of the loop per second, at any time


class DryRunService:
    def __init__(self, scheduler: Callable[[], Scheduler], workers: DryRunWorkers, *,
                 live_max_pods: int = LIVE_MAX_PODS, live_budget: float = LIVE_BUDGET,
                 live_share: float = LIVE_SHARE, clock: Callable[[], float] = time.monotonic,
                 cpu: Callable[[], float] = time.thread_time) -> None:
        self.scheduler = scheduler
        self.workers = workers
        self.live_max_pods = live_max_pods
        self.live_budget = live_budget
        self.live_share = live_share
        self.clock = clock
        self.thread_cpu = cpu
        self.spent = 0.0  # CPU seconds of dry runs in the loop, decaying with a time constant of one second
        self.loop = 0.0   # CPU seconds of the loop thread, all told, decaying alike
        self._at = clock()
        self._cpu_at = cpu()
        self.live = 0     # answered in the loop
        self.sent = 0     # sent to the worker
        self.refused = 0  # over the loop's budget
        self.cpu = 0.0    # CPU seconds the loop spent on dry runs, in all

    def _decay(self) -> None:
        now, cpu = self.clock(), self.thread_cpu()
        factor = math.exp(-(now - self._at))
        self.spent *= factor
        self.loop = self.loop * factor + (cpu - self._cpu_at)
        self._at, self._cpu_at = now, cpu

    def over_budget(self) -> str | None:
        """Why the loop takes no more dry runs now, None when it does."""
        self._decay()
        if self.spent > self.live_budget:
            return f"dry runs took {self.spent * 1000:.0f} ms of the scheduler's CPU in the last second"
        busy = self.scheduler().queue.active_count() > 0
        if busy and self.spent > self.live_share * self.loop:
            return (f"the scheduler is busy and dry runs took {self.spent / max(self.loop, 1e-9):.0%} of its CPU "
                    f"in the last second")
        return None

    def in_loop(self, request: dict[str, Any]) -> bool:
        """Whether `request` is answered in the scheduler's loop (else by the worker)."""
        if request.get("explain") or request.get("pod_group") is not None:
            return False
        if len(request.get("pods") or ()) > self.live_max_pods:
            return False
        sched = self.scheduler()
        return sched.snapshot.placement is None and not any(fw.extenders for fw in sched.profiles.values())

    async def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        """The DryRun's status; raises Overloaded when the loop's budget or the worker's queue is full."""
        if not self.in_loop(request):
            self.sent += 1
            return await self.workers.ask(request)
        why = self.over_budget()
        if why is not None:
            self.refused += 1
            raise Overloaded(why)
        started = self.thread_cpu()
        try:
            return answer(self.scheduler(), request, self.clock(), live=True)
        finally:
            took = self.thread_cpu() - started
            self.live += 1
            self.spent += took
            self.cpu += took

    async def close(self) -> None:
        await self.workers.close()
