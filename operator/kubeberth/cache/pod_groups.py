"""What the scheduler knows of each PodGroup (upstream's podGroupState in backend/cache): the
PodGroup object as last observed and the pods that name it, pending or bound. Assumed pods are the
cache's: a pod counts as scheduled when it is bound or the cache holds it assumed.

Kept by the scheduler's event handlers with GenericWorkload on; GangScheduling reads it through
`handle.shared_indexes[POD_GROUP_STATES]`.
"""

from __future__ import annotations

from collections.abc import Callable

from ..model import Pod, PodGroup

POD_GROUP_STATES = "PodGroupStates"  # the key in SchedulerContext.shared_indexes


class PodGroupState:
    __slots__ = ("_assumed", "_assumed_pod", "_is_assumed", "_scheduled", "key", "pod_group", "pods")

    def __init__(self, key: str, is_assumed: Callable[[str], bool],
                 assumed_pod: Callable[[str], Pod | None] | None = None, tracked: bool = False) -> None:
        self.key = key
        self.pod_group: PodGroup | None = None
        self.pods: dict[str, Pod] = {}  # uid -> the latest pod (pending or bound)
        self._is_assumed = is_assumed
        self._assumed_pod = assumed_pod
        # Kept when the states are told of every change of is_assumed (PodGroupStates(tracked=True)):
        # the uids of the pods bound or assumed, and of those assumed and not bound yet.
        self._scheduled: set[str] | None = set() if tracked else None
        self._assumed: set[str] | None = set() if tracked else None

    def _refresh(self, uid: str) -> None:
        """Where the pod `uid` counts, after it (or the cache's word on it) changed."""
        scheduled, assumed = self._scheduled, self._assumed
        if scheduled is None or assumed is None:
            return
        p = self.pods.get(uid)
        if p is None:
            scheduled.discard(uid)
            assumed.discard(uid)
            return
        if p.node_name:
            scheduled.add(uid)
            assumed.discard(uid)
        elif self._is_assumed(uid):
            scheduled.add(uid)
            assumed.add(uid)
        else:
            scheduled.discard(uid)
            assumed.discard(uid)

    def all_pods_count(self) -> int:
        return len(self.pods)

    def assigned(self) -> list[Pod]:
        return [p for p in self.pods.values() if p.node_name]

    def assumed_uids(self) -> set[str]:
        if self._assumed is not None:
            return set(self._assumed)
        return {uid for uid, p in self.pods.items() if not p.node_name and self._is_assumed(uid)}

    def scheduled_pods_count(self) -> int:
        """Bound or assumed (upstream's ScheduledPodsCount)."""
        if self._scheduled is not None:
            return len(self._scheduled)
        return sum(1 for uid, p in self.pods.items() if p.node_name or self._is_assumed(uid))

    def scheduled_pods(self) -> list[Pod]:
        """The bound pods and the assumed ones as assumed, on their nodes (upstream's ScheduledPods)."""
        out: list[Pod] = []
        for uid, p in self.pods.items():
            if p.node_name:
                out.append(p)
            elif self._is_assumed(uid):
                assumed = self._assumed_pod(uid) if self._assumed_pod is not None else None
                out.append(assumed if assumed is not None else p)
        return out

    def unscheduled_pods(self) -> list[Pod]:
        scheduled = self._scheduled
        if scheduled is not None:
            if not scheduled:
                return list(self.pods.values())
            return [p for uid, p in self.pods.items() if uid not in scheduled]
        return [p for uid, p in self.pods.items() if not p.node_name and not self._is_assumed(uid)]

    def empty(self) -> bool:
        return not self.pods and self.pod_group is None


class PodGroupStates:
    """key ("namespace/name") -> PodGroupState."""

    def __init__(self, is_assumed: Callable[[str], bool],
                 assumed_pod: Callable[[str], Pod | None] | None = None, *, tracked: bool = False) -> None:
        """`tracked`: the owner calls `assumed_changed` whenever `is_assumed` changes for a pod
        (the scheduler's cache does); the counts GangScheduling reads are then kept instead of
        counted on every call."""
        self._is_assumed = is_assumed
        self._assumed_pod = assumed_pod  # the cache's pod of an assumed uid (with its node)
        self._tracked = tracked
        self._states: dict[str, PodGroupState] = {}

    def _state(self, key: str) -> PodGroupState:
        s = self._states.get(key)
        if s is None:
            s = self._states[key] = PodGroupState(key, self._is_assumed, self._assumed_pod, self._tracked)
        return s

    def assumed_changed(self, pod: Pod) -> None:
        """The cache assumed `pod`, or no longer does (bound, forgotten, expired, removed)."""
        key = pod.pod_group_key
        if key:
            s = self._states.get(key)
            if s is not None:
                s._refresh(pod.uid)

    def get(self, key: str) -> PodGroupState | None:
        return self._states.get(key)

    def pod_group(self, key: str) -> PodGroup | None:
        s = self._states.get(key)
        return s.pod_group if s is not None else None

    def set_pod_group(self, pg: PodGroup) -> None:
        self._state(pg.key).pod_group = pg

    def remove_pod_group(self, key: str) -> None:
        s = self._states.get(key)
        if s is not None:
            s.pod_group = None
            if s.empty():
                del self._states[key]

    def add_or_update_pod(self, pod: Pod) -> None:
        if pod.pod_group_key:
            s = self._state(pod.pod_group_key)
            s.pods[pod.uid] = pod
            s._refresh(pod.uid)

    def remove_pod(self, pod: Pod) -> None:
        key = pod.pod_group_key
        s = self._states.get(key)
        if s is not None:
            s.pods.pop(pod.uid, None)
            s._refresh(pod.uid)
            if s.empty():
                del self._states[key]

    def keys(self) -> list[str]:
        return list(self._states)
