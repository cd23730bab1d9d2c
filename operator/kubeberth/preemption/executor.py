"""Acting on a preemption decision, after upstream's pkg/scheduler/framework/preemption/executor.go
with SchedulerAsyncPreemption (beta, on by default in v1.37).

The scheduling cycle only starts the work: `prepare_candidate_async` marks the preemptor as
preempting and hands the API calls to a task of their own, so the next pod is scheduled while the
victims are being deleted. Meanwhile DefaultPreemption's PreEnqueue keeps the preemptor out of
activeQ (`is_pod_running_preemption`); the victims' deletion events requeue it through the
QueueingHints of the plugins that rejected it. The task:

1. clears the nominations of lower-priority pods nominated to the node;
2. preempts every victim but the last at once;
3. then the last one, recorded first so that PreEnqueue can tell "still deleting it" from "its
   deletion has landed" by looking at that pod in the cache;
4. activates the preemptor when no deletion event will come for it (an error, or a last victim
   that was only waiting at Permit or in PreBind).

A victim is preempted (`preempt_pod`) by rejecting it where it waits (Permit, PreBind) or else by
setting its DisruptionTarget condition and deleting it; either way it gets a Preempted event. The
condition's message and the event's reporter name the preemptor's profile, not the victim's
scheduler.
Victims already being deleted get no call at all.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

from ..client import ClusterClient, preemption_message
from ..framework.interfaces import Handle
from ..framework.victims import Candidate
from ..model import Pod

log = logging.getLogger(__name__)

RESULT_SUCCESS = "success"
RESULT_ERROR = "error"


class _GroupPreemptor:
    __slots__ = ("members", "scheduler_name", "uid")

    def __init__(self, uid: str, scheduler_name: str, members: list[Pod]) -> None:
        self.uid = uid
        self.scheduler_name = scheduler_name
        self.members = members


class Executor:
    """Runs the preemptions one DefaultPreemption decides; remembers which preemptors are still
    running theirs (upstream's Executor.preempting and lastVictimsPendingPreemption)."""

    def __init__(self, handle: Handle, plugin_name: str) -> None:
        self.handle = handle
        self.plugin_name = plugin_name
        self._preempting: set[str] = set()               # preemptor uids with a task under way
        self._last_victim: dict[str, Pod] = {}           # preemptor uid -> the victim deleted last

    # ---- PreEnqueue's question ------------------------------------------------------
    def is_pod_running_preemption(self, uid: str) -> bool:
        """Whether the preemptor's victims are still being preempted. Once the last victim is
        being deleted, its deletion (or its deletionTimestamp) showing in the cluster's view
        ends the wait, even before the task itself has returned."""
        if uid not in self._preempting:
            return False
        victim = self._last_victim.get(uid)
        if victim is None:
            return True
        current = self.handle.lookup_pod(victim.uid)
        return current is not None and current.deletion_timestamp is None

    # ---- acting -------------------------------------------------------------------
    def prepare_pod_group_async(self, victims: Sequence[Pod], group_uid: str, members: Sequence[Pod],
                                scheduler_name: str) -> None:
        """Start preempting a pod group's victims (upstream's actuatePodGroupPreemption, async):
        the group's uid is the preemptor's, PreEnqueue holds its pods meanwhile. The domain is the
        cluster (upstream's candidate "cluster": no node has lower-priority nominations to clear)."""
        going = [v for v in victims if v.deletion_timestamp is None]
        if not going:
            return
        self._preempting.add(group_uid)
        preemptor = _GroupPreemptor(group_uid, scheduler_name, list(members))
        task = asyncio.get_running_loop().create_task(
            self._preempt_group_in_background(preemptor, going), name=f"kubeberth preemption for podgroup {group_uid}")
        tasks = self.handle.preemption_tasks
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    async def _preempt_group_in_background(self, preemptor: _GroupPreemptor, victims: Sequence[Pod]) -> None:
        started = time.perf_counter()
        result = RESULT_SUCCESS
        last_only_in_memory = False
        uid = preemptor.uid
        try:
            *first, last = victims
            preempt_last = True
            if first:
                outcomes = await asyncio.gather(*(self._preempt_for_group(preemptor, v) for v in first),
                                                return_exceptions=True)
                errors = [o for o in outcomes if isinstance(o, BaseException)]
                if errors:
                    log.error("preempting victims for podgroup %s failed: %s", uid, errors[0])
                    result = RESULT_ERROR
                    preempt_last = False
            if preempt_last:
                self._last_victim[uid] = last
                try:
                    last_only_in_memory = await self._preempt_for_group(preemptor, last)
                except Exception as exc:
                    log.error("preempting the last victim %s for podgroup %s failed: %s", last.key, uid, exc)
                    result = RESULT_ERROR
        finally:
            self._preempting.discard(uid)
            self._last_victim.pop(uid, None)
            self.handle.metrics.preemption_goroutine(result, time.perf_counter() - started)
            if result == RESULT_ERROR or last_only_in_memory:
                self.handle.activate(preemptor.members)

    async def _preempt_for_group(self, preemptor: _GroupPreemptor, victim: Pod) -> bool:
        return await self._preempt(victim, preemptor_type="podgroup", preemptor_uid=preemptor.uid,
                                   scheduler_name=preemptor.scheduler_name, domain="cluster")

    def prepare_candidate_async(self, candidate: Candidate, preemptor: Pod) -> None:
        """Start preempting the candidate's victims for `preemptor` in the background."""
        victims = [v for v in candidate.victims.pods if v.deletion_timestamp is None]
        if not victims:
            return  # every victim is already going: nothing to send, nothing to wait for
        self._preempting.add(preemptor.uid)
        task = asyncio.get_running_loop().create_task(
            self._preempt_in_background(candidate, preemptor, victims),
            name=f"kubeberth preemption for {preemptor.key}")
        tasks = self.handle.preemption_tasks
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    async def _preempt_in_background(self, candidate: Candidate, preemptor: Pod, victims: Sequence[Pod]) -> None:
        started = time.perf_counter()
        result = RESULT_SUCCESS
        last_only_in_memory = False
        try:
            if not await self.clear_lower_priority_nominations(preemptor, candidate.name):
                result = RESULT_ERROR  # not critical: the preemption goes on
            *first, last = victims
            preempt_last = True
            if first:
                outcomes = await asyncio.gather(
                    *(self.preempt_pod(candidate, preemptor, v) for v in first), return_exceptions=True)
                errors = [o for o in outcomes if isinstance(o, BaseException)]
                if errors:
                    log.error("preempting victims for %s on %s failed: %s", preemptor.key, candidate.name, errors[0])
                    result = RESULT_ERROR
                    preempt_last = False  # requeue the preemptor sooner: it will preempt again
            if preempt_last:
                self._last_victim[preemptor.uid] = last
                try:
                    last_only_in_memory = await self.preempt_pod(candidate, preemptor, last)
                except Exception as exc:
                    log.error("preempting the last victim %s for %s failed: %s", last.key, preemptor.key, exc)
                    result = RESULT_ERROR
        finally:
            self._preempting.discard(preemptor.uid)
            self._last_victim.pop(preemptor.uid, None)
            self.handle.metrics.preemption_goroutine(result, time.perf_counter() - started)
            if result == RESULT_ERROR or last_only_in_memory:
                # No deletion event will bring the preemptor back: it could wait in the
                # unschedulable pool for minutes.
                self.handle.activate([preemptor])

    async def preempt_pod(self, candidate: Candidate, preemptor: Pod, victim: Pod) -> bool:
        """Preempt one victim; True when no deletion event will follow (it was rejected at
        Permit or in PreBind and goes back to the queue, or it had already left the node).
        Raises what the API server answered."""
        return await self._preempt(victim, preemptor_type="pod", preemptor_uid=preemptor.uid,
                                   scheduler_name=preemptor.scheduler_name, domain=candidate.name)

    async def _preempt(self, victim: Pod, *, preemptor_type: str, preemptor_uid: str, scheduler_name: str,
                       domain: str) -> bool:
        fw = self.handle
        current = fw.lookup_pod(victim.uid)
        if current is not None and current.node_name != victim.node_name:
            # It left the node after the decision (its binding was cancelled by an earlier
            # preemption, and it is pending again): there is nothing to delete, and no deletion
            # event will come for it.
            return True
        message = f"Preempted by {preemptor_type} {preemptor_uid} on node {domain}"
        in_memory = False
        waiting = fw.waiting_pods.get(victim.uid)
        if waiting is not None:
            in_memory = waiting.preempt(self.plugin_name, "preempted")
        else:
            binding = fw.pods_in_pre_bind.get(victim.uid)
            if binding is not None:
                in_memory = binding.cancel(f"preempted by {self.plugin_name}")
        client: ClusterClient | None = fw.client
        if not in_memory and client is not None:
            # The preemptor's profile names itself, whichever scheduler placed the victim.
            await client.delete_pod(victim, preemption_message(scheduler_name, preemptor_type))
        if in_memory:
            message += " (in kube-scheduler memory)."
        if client is not None:
            # Reported by the preempting profile (upstream records it with the preemptor's
            # framework's recorder). Upstream names the preemptor as the related object, but
            # through a wrapper its scheme cannot reference: kube-scheduler v1.37.2's Preempted
            # events have no related object, and neither have ours.
            await client.record_event(victim, "Normal", "Preempted", message, reporter=fw.scheduler_name)
        return in_memory

    async def clear_lower_priority_nominations(self, preemptor: Pod, node_name: str) -> bool:
        """Lower-priority pods nominated to the node may no longer fit there: their nominations
        go, and with them they are tried elsewhere sooner. False if a patch failed."""
        nominator = self.handle.nominator
        if nominator is None:
            return True
        ok = True
        for p in nominator.nominated_pods_for_node(node_name):
            if p.priority >= preemptor.priority or p.uid == preemptor.uid:
                continue
            try:
                await self.clear_nomination(p)
            except Exception as exc:
                log.warning("cannot clear the nominated node of %s: %s", p.key, exc)
                ok = False
        return ok

    async def clear_nomination(self, pod: Pod) -> None:
        nominator = self.handle.nominator
        if nominator is not None:
            nominator.delete_nominated_pod_if_exists(pod)
        client = self.handle.client
        if client is not None:
            await client.set_nominated_node(pod, "")
