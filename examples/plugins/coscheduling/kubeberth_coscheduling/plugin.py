"""Coscheduling: gang scheduling of the pods of a PodGroup, as kubernetes-sigs/scheduler-plugins'
plugin of that name does (pkg/coscheduling), on kubeberth's public plugin API alone.

- QueueSort: higher priority first; then the earlier PodGroup creation time (a pod without a
  group: its first attempt), except that a group that failed lately takes the time of that
  failure; then namespace/name.
- PreFilter: rejects (UnschedulableAndUnresolvable, so no preemption is tried) a pod whose group
  failed within podGroupBackoffSeconds, has fewer pods than minMember, has too many pods held by
  scheduling gates, or needs more than the cluster's free resources (minResources).
- PostFilter: a group member found no node: its siblings waiting at Permit are rejected and the
  group is marked failed, unless enough of it is placed already.
- Permit: a member waits until minMember pods of its group are placed (assumed or bound), then
  the whole group is allowed at once; the wait is the group's scheduleTimeoutSeconds, else the
  args' permitWaitingTimeSeconds.
- Unreserve: a member that times out or fails to bind releases the whole group.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, field_validator

from kubeberth.framework import (
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    NodeInfo,
    NodeToStatus,
    PermitPlugin,
    Pod,
    PostFilterPlugin,
    PostFilterResult,
    PreFilterPlugin,
    PreFilterResult,
    QueuedPodInfo,
    QueueSortPlugin,
    ReservePlugin,
    Status,
    WaitingPod,
)

from .podgroup import POD_GROUP_LABEL, PODGROUP, PodGroup, PodGroupError, parse_pod_group
from .quantity import BINARY_SI, DECIMAL_SI, GoQuantity, render_resource_list

log = logging.getLogger("kubeberth.coscheduling")

NAME = "Coscheduling"
# scheduler-plugins' DefaultWaitTime: the wait when neither the group nor the args set one.
DEFAULT_WAIT_SECONDS = 60.0
# The lifetime of "this group's minResources fit" (go-cache's default when the args' wait is 0).
PERMITTED_DEFAULT_TTL = 3.0
# How often PreFilter drops what the manager keeps for PodGroups that are gone (seconds).
SWEEP_SECONDS = 60.0


class CoschedulingArgs(BaseModel):
    """CoschedulingArgs of scheduler-plugins' config API, with its defaults."""

    model_config = ConfigDict(extra="forbid")

    permitWaitingTimeSeconds: int = 60
    podGroupBackoffSeconds: int = 0
    podGroupRejectPercentage: int = 10

    @field_validator("permitWaitingTimeSeconds", "podGroupBackoffSeconds")
    @classmethod
    def _not_negative(cls, v: int) -> int:
        if v < 0:
            raise ValueError("must be greater than 0")  # upstream's words (0 is accepted)
        return v

    @field_validator("podGroupRejectPercentage")
    @classmethod
    def _percentage(cls, v: int) -> int:
        if not 0 <= v <= 100:
            raise ValueError("must be between 0 and 100")
        return v


def pod_group_label(pod: Pod) -> str:
    return pod.labels.get(POD_GROUP_LABEL, "")


def pod_group_full_name(pod: Pod) -> str:
    name = pod_group_label(pod)
    return f"{pod.namespace}/{name}" if name else ""


class Coscheduling(QueueSortPlugin, PreFilterPlugin, PostFilterPlugin, PermitPlugin, ReservePlugin):
    name: ClassVar[str] = NAME
    args_model: ClassVar[type[BaseModel] | None] = CoschedulingArgs
    reads = (PODGROUP,)
    requires_api: ClassVar[str | None] = ">=1.0,<2"

    def __init__(self, args: CoschedulingArgs | None, handle: Handle) -> None:
        self.args = args if args is not None else CoschedulingArgs()
        self.handle = handle
        self.schedule_timeout = float(self.args.permitWaitingTimeSeconds)
        self.backoff = float(self.args.podGroupBackoffSeconds)
        self.reject_threshold = self.args.podGroupRejectPercentage / 100.0
        # The PodGroup manager's state (core.PodGroupManager), by "namespace/name":
        self.permitted: dict[str, float] = {}    # minResources found to fit, until (clock time)
        self.backed_off: dict[str, float] = {}   # failed lately, rejected at PreFilter until
        self.last_failed: dict[str, float] = {}  # when the group last failed (QueueSort's time)
        self._parsed: dict[str, tuple[Mapping[str, Any], PodGroup]] = {}
        self._unreadable: dict[str, Mapping[str, Any]] = {}  # PodGroups QueueSort warned about
        self._swept = handle.clock.now()

    # ---- events ---------------------------------------------------------------------------
    def events_to_register(self) -> Sequence[ClusterEvent | ClusterEventWithHint]:
        return [ClusterEvent(POD, ActionType.ADD),
                ClusterEvent(PODGROUP.group_kind, ActionType.ADD | ActionType.UPDATE)]

    # ---- the PodGroup manager -------------------------------------------------------------
    def pod_group(self, pod: Pod) -> tuple[str, PodGroup | None]:
        """(namespace/name, the PodGroup) of the pod's group; ("", None) without the label, (name,
        None) when no such PodGroup exists. Raises PodGroupError for one that cannot be read."""
        full = pod_group_full_name(pod)
        if not full:
            return "", None
        obj = self.handle.objects.get(PODGROUP.group_kind, full)
        if obj is None:
            return full, None
        cached = self._parsed.get(full)
        if cached is not None and cached[0] is obj:
            return full, cached[1]
        pg = parse_pod_group(obj)
        self._parsed[full] = (obj, pg)
        return full, pg

    def _tables(self) -> tuple[dict[str, Any], ...]:
        return (self.permitted, self.backed_off, self.last_failed, self._parsed, self._unreadable)

    def forget_gone_groups(self) -> None:
        """Drop what is kept for PodGroups deleted since (a scheduler runs for months: the groups
        of finished jobs must not stay). PreFilter calls it every SWEEP_SECONDS."""
        self._swept = self.handle.clock.now()
        objects = self.handle.objects
        for table in self._tables():
            for full in [k for k in table if objects.get(PODGROUP.group_kind, k) is None]:
                del table[full]

    def group_pods(self, namespace: str, group: str) -> list[Pod]:
        """The group's non-terminal pods, bound, assumed or pending (upstream's pod lister)."""
        return [p for p in self.handle.list_pods(namespace) if p.labels.get(POD_GROUP_LABEL) == group]

    @staticmethod
    def placed(members: list[Pod]) -> int:
        """How many of the group's pods are on a node: bound, or assumed (waiting at Permit or
        binding); upstream's assigned pods of the group."""
        return sum(1 for p in members if p.node_name)

    def _live(self, table: dict[str, float], key: str) -> bool:
        until = table.get(key)
        if until is None:
            return False
        if self.handle.clock.now() >= until:
            del table[key]
            return False
        return True

    def creation_timestamp(self, pod: Pod, default: float) -> float:
        full = pod_group_full_name(pod)
        if not full:
            return default
        failed = self.last_failed.get(full)
        if failed is not None:
            return failed
        try:
            _, pg = self.pod_group(pod)
        except PodGroupError as exc:
            obj = self.handle.objects.get(PODGROUP.group_kind, full)
            if obj is not None and self._unreadable.get(full) is not obj:  # once per version of it
                self._unreadable[full] = obj
                log.warning("%s (its pods are ordered by their first attempt; PreFilter fails them)", exc)
            return default
        return pg.creation_timestamp if pg is not None else default

    def _siblings_waiting(self, namespace: str, group: str) -> list[WaitingPod]:
        found: list[WaitingPod] = []

        def visit(wp: WaitingPod) -> None:
            if wp.pod.namespace == namespace and pod_group_label(wp.pod) == group:
                found.append(wp)

        self.handle.waiting_pods.iterate(visit)
        return found

    def _reject_waiting(self, namespace: str, group: str, message: str) -> None:
        for wp in self._siblings_waiting(namespace, group):
            wp.reject(self.name, message)

    def _mark_failed(self, full: str) -> None:
        self.permitted.pop(full, None)
        self.last_failed[full] = self.handle.clock.now()

    # ---- QueueSort ------------------------------------------------------------------------
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        p1, p2 = a.pod.priority, b.pod.priority
        if p1 != p2:
            return p1 > p2
        t1 = self.creation_timestamp(a.pod, _first_attempt(a))
        t2 = self.creation_timestamp(b.pod, _first_attempt(b))
        if t1 == t2:
            return a.pod.key < b.pod.key
        return t1 < t2

    # ---- PreFilter ------------------------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        try:
            message = self._pre_filter(pod, nodes)
        except PodGroupError as exc:
            return None, Status.error(str(exc))
        if message:
            # Unresolvable: no preemption is tried for a group that cannot be placed anyway.
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message)
        return None, None

    def _pre_filter(self, pod: Pod, nodes: Sequence[NodeInfo]) -> str:
        if self.handle.clock.now() - self._swept >= SWEEP_SECONDS:
            self.forget_gone_groups()
        full, pg = self.pod_group(pod)
        if pg is None:
            return ""
        if self._live(self.backed_off, full):
            return f"podGroup {full} failed recently"
        pods = self.group_pods(pod.namespace, pg.name)
        gap = pg.min_member - len(pods)
        if gap > 0:
            return (f"pre-filter pod {pod.name} cannot find enough sibling pods, "
                    f"current pods number: {len(pods)}, minMember of group: {pg.min_member}")
        # Pods held by scheduling gates cannot join the quorum: tolerate only as many as the
        # group has pods beyond minMember.
        for p in pods:
            if p.scheduling_gates:
                gap += 1
            if gap > 0:
                return f"pre-filter pod {pod.name} cannot proceed due to gated pods in the same PodGroup"
        if pg.min_resources is None:
            return ""
        if self._live(self.permitted, full):
            return ""
        wanted = pg.min_resources_quantities()
        wanted["pods"] = GoQuantity.of(pg.min_member, DECIMAL_SI)
        gap_message = check_cluster_resource(nodes, wanted, full)
        if gap_message:
            return gap_message
        self.permitted[full] = self.handle.clock.now() + (self.schedule_timeout or PERMITTED_DEFAULT_TTL)
        return ""

    # ---- PostFilter -----------------------------------------------------------------------
    async def post_filter(self, state: CycleState, pod: Pod,
                          statuses: NodeToStatus) -> tuple[PostFilterResult | None, Status | None]:
        try:
            full, pg = self.pod_group(pod)
        except PodGroupError as exc:
            return None, Status.error(str(exc))
        if pg is None:
            return PostFilterResult(), Status(Code.UNSCHEDULABLE, "can not find pod group")
        members = self.group_pods(pod.namespace, pg.name)
        assigned = self.placed(members)
        if assigned >= pg.min_member:
            # Enough of the group is placed already: do not reject the rest of it.
            return PostFilterResult(), Status(Code.UNSCHEDULABLE)
        if pg.min_member and (pg.min_member - assigned) / pg.min_member <= self.reject_threshold:
            # Close to the quorum: let the next members try.
            return PostFilterResult(), Status(Code.UNSCHEDULABLE)
        # If this member fails, the others most likely would too: release the ones waiting.
        self._reject_waiting(pod.namespace, pg.name, "optimistic rejection in PostFilter")
        if self.backoff > 0 and len(members) >= pg.min_member:
            self.backed_off[full] = self.handle.clock.now() + self.backoff
        self._mark_failed(full)
        message = f"PodGroup {full} gets rejected due to Pod {pod.name} is unschedulable even after PostFilter"
        return PostFilterResult(), Status(Code.UNSCHEDULABLE, message)

    # ---- Permit ---------------------------------------------------------------------------
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        try:
            full, pg = self.pod_group(pod)
        except PodGroupError as exc:
            return Status.error(str(exc)), 0.0
        if not full:
            return None, 0.0
        if pg is None:
            return Status(Code.UNSCHEDULABLE, "PodGroup not found"), 0.0
        # The pod itself is assumed on its node already, so it is among the placed ones.
        members = self.group_pods(pod.namespace, pg.name)
        assigned = self.placed(members)
        if assigned >= pg.min_member:
            self.last_failed.pop(full, None)
            for wp in self._siblings_waiting(pod.namespace, pg.name):
                wp.allow(self.name)
            return None, 0.0
        if assigned == 1:
            # The first member to arrive here brings its siblings back from the unschedulable
            # pool and backoff, so that they try now rather than after their backoff.
            siblings = [p for p in members if p.uid != pod.uid]
            if siblings:
                self.handle.activate(siblings)
        return Status(Code.WAIT), self.wait_seconds(pg)

    def wait_seconds(self, pg: PodGroup) -> float:
        if pg.schedule_timeout_seconds is not None:
            return float(pg.schedule_timeout_seconds)
        if self.schedule_timeout:
            return self.schedule_timeout
        return DEFAULT_WAIT_SECONDS

    # ---- Reserve / Unreserve --------------------------------------------------------------
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        try:
            full, pg = self.pod_group(pod)
        except PodGroupError:
            return
        if pg is None:
            return
        self._reject_waiting(pod.namespace, pg.name, "rejection in Unreserve")
        self._mark_failed(full)


def _first_attempt(q: QueuedPodInfo) -> float:
    return q.initial_attempt_timestamp if q.initial_attempt_timestamp is not None else q.timestamp


def _left_on_node(info: NodeInfo, group: str) -> dict[str, GoQuantity]:
    """What the node has free once the group's own pods are taken off it (util.ResourceList of
    the node's allocatable minus requested)."""
    node = info.node
    assert node is not None
    own = [p for p in info.pods if pod_group_full_name(p) == group]
    alloc = info.allocatable
    requested = info.requested.clone()
    for p in own:
        requested.sub(p.requests)
    left: dict[str, GoQuantity] = {
        "cpu": GoQuantity.milli(alloc.milli_cpu - requested.milli_cpu, DECIMAL_SI),
        "memory": GoQuantity.of(alloc.memory - requested.memory, BINARY_SI),
        "pods": GoQuantity.of(alloc.allowed_pod_number - (len(info.pods) - len(own)), BINARY_SI),
        "ephemeral-storage": GoQuantity.of(alloc.ephemeral_storage - requested.ephemeral_storage, BINARY_SI),
    }
    for name, amount in alloc.scalar.items():
        fmt = BINARY_SI if name.startswith("hugepages-") else DECIMAL_SI
        left[name] = GoQuantity.of(amount - requested.scalar.get(name, 0), fmt)
    return left


def check_cluster_resource(nodes: Sequence[NodeInfo], wanted: dict[str, GoQuantity], group: str) -> str:
    """"" when the nodes' free resources, summed node by node, cover `wanted`; else upstream's
    `resource gap: map[...]` naming what is still missing after the last node."""
    for info in nodes:
        if info is None or info.node is None:
            continue
        left = _left_on_node(info, group)
        for name in list(wanted):
            q = wanted[name]
            q.sub(left.get(name, GoQuantity()))
            if q.sign() <= 0:
                del wanted[name]
        if not wanted:
            return ""
    return f"resource gap: {render_resource_list(wanted)}"


PLUGINS = [Coscheduling]
