"""PreEnqueue for a pod group's queue entry, answered again only where the answer may change.

Upstream runs every PreEnqueue plugin for every pod of a group's entry each time the entry is
looked at (a pod joins it, an event moves it): for a gang of n pods arriving one by one that is
n^2/2 calls. The answers are the same as long as what they depend on is, and each plugin says
what that is (`PreEnqueuePlugin.pre_enqueue_scope`):

- SCOPE_POD: the pod object alone. Asked once per pod object; a pod replaced is asked again.
- SCOPE_POD_GROUP: the same answer for every pod of the group (GangScheduling's quorum, the
  group's preemption). Asked once per pass, for one pod; when it differs from the last pass,
  every pod's verdict is worked out again from the answers kept.
- SCOPE_ANY (the default, and any plugin of one's own that says nothing): asked for every pod
  on every pass, as upstream.

An entry of fewer than KEEP_FROM_MEMBERS pods keeps nothing: every plugin is asked for each of
its few pods, as upstream.

A pod's verdict is the first plugin (in the profile's order) that gates it, "" when none does;
the entry is gated when any pod is, by the plugin that gates the last gated pod in member
order (upstream's runPreEnqueuePlugins). The gated pods are counted per gating plugin, so that
the entry's verdict needs no walk over its pods unless they are gated by different plugins.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..framework.types import QueuedPodGroupInfo, QueuedPodInfo
from ..model import Pod

if TYPE_CHECKING:
    from ..framework.status import Status

# Below this many pods an entry is asked pod by pod: its answers are not worth keeping.
KEEP_FROM_MEMBERS = 8

SCOPE_ANY = "Any"
SCOPE_POD = "Pod"
SCOPE_POD_GROUP = "PodGroup"


class PreEnqueueStep:
    """One PreEnqueue plugin as the queue calls it: `run(pod)` is None when the plugin lets the
    pod through, else its failure; `scope(pod)` as the plugin's `pre_enqueue_scope`."""

    __slots__ = ("name", "run", "scope")

    def __init__(self, name: str, run: Callable[[Pod], Status | None],
                 scope: Callable[[Pod], str] | None = None) -> None:
        self.name = name
        self.run = run
        self.scope = scope

    def scope_of(self, pod: Pod) -> str:
        if self.scope is None:
            return SCOPE_ANY
        try:
            scope = self.scope(pod)
        except Exception:  # a scope that cannot be told is asked every time
            return SCOPE_ANY
        return scope if scope in (SCOPE_POD, SCOPE_POD_GROUP) else SCOPE_ANY

    def ask(self, pod: Pod) -> str:
        """"" when the plugin lets the pod through, else the plugin that gates it."""
        status = self.run(pod)
        if status is None or status.is_success():
            return ""
        return status.plugin or "PreEnqueue"


def run_steps(steps: tuple[PreEnqueueStep, ...], pod: Pod) -> Status | None:
    """The profile's PreEnqueue for one pod: the first failure, None when every plugin lets it through."""
    for step in steps:
        status = step.run(pod)
        if status is not None and not status.is_success():
            return status
    return None


class _Memo:
    """What is kept of one pod object: each plugin's scope, and the answers of the SCOPE_POD ones."""

    __slots__ = ("answers", "pod", "scopes")

    def __init__(self, pod: Pod, scopes: tuple[str, ...]) -> None:
        self.pod = pod
        self.scopes = scopes
        self.answers: list[str | None] = [None] * len(scopes)


class GroupGate:
    """The PreEnqueue verdicts of one pod group entry's pods, for one profile (the one serving the
    entry's first pod: its `scheduler_name` and PreEnqueue `steps`; a new version of the profile
    has new steps, and a new gate); kept in the entry's `gate_state`."""

    __slots__ = ("asked", "dirty", "foreign", "gated_by", "memos", "probes", "scheduler_name", "steps", "verdicts",
                 "volatile")

    def __init__(self, scheduler_name: str, steps: tuple[PreEnqueueStep, ...], entry: QueuedPodGroupInfo) -> None:
        self.scheduler_name = scheduler_name
        self.steps = steps
        self.memos: dict[str, _Memo] = {}
        self.verdicts: dict[str, str] = {}  # uid -> the plugin that gates the pod, "" for none
        self.gated_by: dict[str, int] = {}  # plugin -> pods it gates
        self.dirty: set[str] = {m.pod.uid for m in entry.members}  # verdicts to work out again
        self.volatile: set[str] = set()  # pods with a SCOPE_ANY plugin: worked out on every pass
        self.foreign: set[str] = set()  # pods another profile serves (the entry is then looked at pod by pod)
        self.asked: dict[str, str] = {}  # SCOPE_POD_GROUP plugin -> its answer at the last pass
        self.probes: dict[str, Pod] = {}  # SCOPE_POD_GROUP plugin -> the pod it was asked for
        entry.changed.clear()

    def take_changes(self, entry: QueuedPodGroupInfo) -> None:
        """The pods added, replaced or removed since the last pass."""
        if not entry.changed:
            return
        name = self.scheduler_name
        for uid in entry.changed:
            m = entry.member(uid)
            if m is None:
                self._forget(uid)
                continue
            self.dirty.add(uid)
            if m.pod.scheduler_name != name:
                self.foreign.add(uid)
            else:
                self.foreign.discard(uid)
        entry.changed.clear()

    def _forget(self, uid: str) -> None:
        self.memos.pop(uid, None)
        self.dirty.discard(uid)
        self.volatile.discard(uid)
        self.foreign.discard(uid)
        self._set_verdict(uid, None)

    def _set_verdict(self, uid: str, verdict: str | None) -> None:
        old = self.verdicts.pop(uid, None)
        if old:
            left = self.gated_by[old] - 1
            if left:
                self.gated_by[old] = left
            else:
                del self.gated_by[old]
        if verdict is not None:
            self.verdicts[uid] = verdict
            if verdict:
                self.gated_by[verdict] = self.gated_by.get(verdict, 0) + 1

    def run(self, entry: QueuedPodGroupInfo) -> str:
        """A pass over the entry: each pod's `gated` (and its gating plugin among its
        unschedulable_plugins) as upstream's runPreEnqueuePlugins leaves them; returns the
        plugin that gates the entry, "" when none does."""
        # The group-wide answers the kept verdicts rest on, asked again in the profile's order;
        # one that changed puts every verdict in question.
        steps = self.steps
        current: dict[str, str] = {}
        if self.asked:
            for step in steps:
                before = self.asked.get(step.name)
                if before is None:
                    continue
                probe = self.probes[step.name]
                now = step.ask(probe)
                current[step.name] = now
                if now != before:
                    self.dirty.update(self.verdicts)
                    break
        todo = self.dirty | self.volatile if self.volatile else self.dirty
        for uid in todo:
            m = entry.member(uid)
            if m is not None:
                self._work_out(m, steps, current)
        self.dirty = set()
        self.asked = current
        return self._entry_verdict(entry)

    def _work_out(self, m: QueuedPodInfo, steps: tuple[PreEnqueueStep, ...], current: dict[str, str]) -> None:
        pod = m.pod
        uid = pod.uid
        memo = self.memos.get(uid)
        if memo is None or memo.pod is not pod:
            memo = self.memos[uid] = _Memo(pod, tuple(step.scope_of(pod) for step in steps))
            if SCOPE_ANY in memo.scopes:
                self.volatile.add(uid)
            else:
                self.volatile.discard(uid)
        verdict = ""
        for i, step in enumerate(steps):
            scope = memo.scopes[i]
            if scope == SCOPE_POD:
                answer = memo.answers[i]
                if answer is None:
                    answer = memo.answers[i] = step.ask(pod)
            elif scope == SCOPE_POD_GROUP:
                got = current.get(step.name)
                if got is None:
                    got = current[step.name] = step.ask(pod)
                    self.probes[step.name] = pod
                answer = got
            else:
                answer = step.ask(pod)
            if answer:
                verdict = answer
                break
        self._set_verdict(uid, verdict)
        if verdict:
            m.unschedulable_plugins.add(verdict)
            m.gated = True
        else:
            m.gated = False

    def _entry_verdict(self, entry: QueuedPodGroupInfo) -> str:
        gated_by = self.gated_by
        if not gated_by:
            return ""
        if len(gated_by) == 1:
            return next(iter(gated_by))
        verdicts = self.verdicts
        for m in reversed(entry.members):
            verdict = verdicts.get(m.pod.uid)
            if verdict:
                return verdict
        return ""
