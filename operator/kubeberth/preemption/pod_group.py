"""Preemption for a pod group (workload-aware preemption, KEP-5710), after kube-scheduler v1.37.2's
framework/preemption/podgrouppreemption.go and types.go, GenericWorkload on, CompositePodGroup off.

The domain is the whole cluster. Its victims are units: a pod, or, for a PodGroup whose
`spec.disruptionMode` is `all`, every scheduled pod of that group at once (wherever they run). A
unit's priority is its group's when the pod names an existing PodGroup, else the pod's. The units
of lower priority than the preemptor are all taken off the snapshot, the group's algorithm is run
again (`schedule_group`), and if the group then fits, the units are given back one by one, the
PDB-violating ones first, each time the most important first: a unit stays (is reprieved) when
every placed preemptor pod still passes its filters on its node with it back. The rest are
preempted together, in the background (executor.py), and the group's pods are nominated to the
nodes the algorithm gave them.

`SnapshotEdits` is the cycle's mutable view of the snapshot (upstream's MutableSnapshotSharedLister
between StartMutations and EndMutations): NodeInfos it changes are clones put in the snapshot's
list, and `restore` puts the cache's own back.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..cache.pod_groups import PodGroupStates
from ..cache.snapshot import Snapshot
from ..framework.cycle_state import CycleState
from ..framework.status import Code, Status
from ..model import NodeInfo, Pod, PodGroup
from ..model.pod_group import PREEMPT_LOWER_PRIORITY
from .pdb import PDB
from .pick import pod_start_time

log = logging.getLogger(__name__)

PREEMPT_NEVER = "Never"
TYPE_POD = "pod"
TYPE_POD_GROUP = "podgroup"
CLUSTER_DOMAIN = "cluster"  # upstream's candidate name for a pod group's preemption

MSG_NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
MSG_NO_VICTIMS = "No preemption victims found for incoming preemptor"
MSG_ONGOING = "ongoing preemption on nominated nodes"


def found_placement_message(victims: int) -> str:
    return f"found a placement for podgroup, preempting {victims} victims"


def resolve_preemption_policy(pg: PodGroup, pods: Iterable[Pod], pod_group_preemption_policy: bool) -> str:
    """upstream's resolvePreemptionPolicy: the PodGroup's own spec.preemptionPolicy with the
    PodGroupPreemptionPolicy gate (unset: PreemptLowerPriority); without it Never when any of the
    group's unscheduled pods says Never."""
    if pod_group_preemption_policy:
        return pg.preemption_policy
    if any(p.preemption_policy == PREEMPT_NEVER for p in pods):
        return PREEMPT_NEVER
    return PREEMPT_LOWER_PRIORITY


@dataclass
class GroupVictim:
    """One unit of preemption (upstream's DomainVictim): its pods go together."""

    pods: list[Pod]
    priority: int
    kind: str  # TYPE_POD: a pod of no group; TYPE_POD_GROUP: a group's pod(s)
    earliest_start: float
    key: str = ""  # the PodGroup's key for a disruptionMode all unit

    @property
    def is_group(self) -> bool:
        return self.kind == TYPE_POD_GROUP

    @property
    def affected_nodes(self) -> list[str]:
        return list(dict.fromkeys(p.node_name for p in self.pods))


def pod_priority(pod: Pod, groups: PodGroupStates | None) -> int:
    """upstream's GetPodPriority: the PodGroup's priority for a pod of an existing group."""
    if pod.pod_group_name and groups is not None:
        pg = groups.pod_group(pod.pod_group_key)
        if pg is not None:
            return pg.priority
    return pod.priority


def domain_victims(node_infos: Sequence[NodeInfo], groups: PodGroupStates | None, now: float, *,
                   everywhere: Sequence[NodeInfo] | None = None) -> list[GroupVictim]:
    """upstream's getCrossNodesVictims: every pod on a node is a unit of its own, except the pods
    of a disruptionMode-all group, which make one unit of all the group's scheduled (bound or
    assumed) pods. A pod of any group counts as of type podgroup. `everywhere`: the nodes the
    group's pods are looked for on (default: `node_infos`; a single pod's preemption scans one
    node, its units reach over the whole snapshot)."""
    seen: set[str] = set()
    search = node_infos if everywhere is None else everywhere
    out: list[GroupVictim] = []
    for ni in node_infos:
        for pod in ni.pods:
            pg = groups.pod_group(pod.pod_group_key) if pod.pod_group_name and groups is not None else None
            kind = TYPE_POD_GROUP if pod.pod_group_name and groups is not None else TYPE_POD
            priority = pod_priority(pod, groups)
            if pg is None or not pg.disruption_all:
                if pod.uid not in seen:
                    seen.add(pod.uid)
                    out.append(GroupVictim([pod], priority, kind, pod_start_time(pod, now)))
                continue
            if pg.key in seen:
                continue
            seen.add(pg.key)
            state = groups.get(pg.key) if groups is not None else None
            # the group's scheduled pods (bound or assumed) are those on the nodes
            on_nodes = _pods_on_nodes(search, set(state.pods)) if state is not None else []
            if not on_nodes:
                out.append(GroupVictim([pod], priority, kind, pod_start_time(pod, now)))
                continue
            out.append(GroupVictim(on_nodes, priority, TYPE_POD_GROUP,
                                   min(pod_start_time(p, now) for p in on_nodes), key=pg.key))
    return out


def _pods_on_nodes(node_infos: Sequence[NodeInfo], uids: set[str]) -> list[Pod]:
    return [p for ni in node_infos for p in ni.pods if p.uid in uids]


def _rank(v: GroupVictim) -> int:
    return 2 if v.kind == TYPE_POD_GROUP else 1


def more_important_key(v: GroupVictim) -> tuple[int, int, int, float]:
    """upstream's MoreImportantVictim as a sort key, most important first: higher priority, then
    groups before pods, then more pods, then the earlier start."""
    return (-v.priority, -_rank(v), -len(v.pods), v.earliest_start)


def split_by_pdb(victims: Sequence[GroupVictim], pdbs: Sequence[PDB]
                 ) -> tuple[list[tuple[GroupVictim, int]], list[GroupVictim]]:
    """upstream's FilterVictimsWithPDBViolation over units: a unit any of whose pods would break a
    budget is violating as a whole, with the count of its violating pods. Budgets are spent in
    the units' order."""
    allowed = [p.disruptions_allowed for p in pdbs]

    def violating(pod: Pod) -> bool:
        if not pod.labels:
            return False
        for i, pdb in enumerate(pdbs):
            if not pdb.matches(pod) or pod.name in pdb.disrupted_pods:
                continue
            allowed[i] -= 1
            if allowed[i] < 0:
                return True
        return False

    bad: list[tuple[GroupVictim, int]] = []
    good: list[GroupVictim] = []
    for v in victims:
        count = sum(1 for p in v.pods if violating(p))
        if count:
            bad.append((v, count))
        else:
            good.append(v)
    return bad, good


class SnapshotEdits:
    """Pods taken off or put on the cycle's snapshot for the time of a pod group's preemption.
    `apply` after the cache brought the snapshot up to date keeps the removed pods removed."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.removed: dict[str, dict[str, Pod]] = {}
        self._owned: dict[str, tuple[NodeInfo, NodeInfo]] = {}  # node -> (our clone, the cache's)

    def own(self, name: str) -> NodeInfo | None:
        snap = self.snapshot
        ni = snap.by_name.get(name)
        if ni is None:
            return None
        entry = self._owned.get(name)
        if entry is not None and entry[0] is ni:
            return ni
        clone = ni.clone()
        clone.image_num_nodes = ni.image_num_nodes
        for pod in self.removed.get(name, {}).values():
            clone.remove_pod(pod)
        snap.node_infos[snap.node_infos.index(ni)] = clone
        snap.by_name[name] = clone
        snap.affinity_lists_changed()
        self._owned[name] = (clone, ni)
        return clone

    def apply(self) -> None:
        for name in list(self.removed):
            self.own(name)

    def remove_victim(self, pod: Pod) -> None:
        self.removed.setdefault(pod.node_name, {})[pod.uid] = pod
        ni = self.own(pod.node_name)
        if ni is not None:
            ni.remove_pod(pod)

    def add_victim_back(self, pod: Pod) -> NodeInfo | None:
        self.removed.get(pod.node_name, {}).pop(pod.uid, None)
        ni = self.own(pod.node_name)
        if ni is not None:
            ni.add_pod(pod)
        return ni

    def add(self, pod: Pod, node: str) -> NodeInfo | None:
        ni = self.own(node)
        if ni is not None:
            ni.add_pod(pod)
        return ni

    def discard(self, pod: Pod, node: str) -> None:
        ni = self.own(node)
        if ni is not None:
            ni.remove_pod(pod)

    def restore(self) -> None:
        snap = self.snapshot
        for name, (clone, original) in self._owned.items():
            if snap.by_name.get(name) is clone:
                snap.node_infos[snap.node_infos.index(clone)] = original
                snap.by_name[name] = original
        snap.affinity_lists_changed()
        self._owned.clear()
        self.removed.clear()


@dataclass
class Assignment:
    """A preemptor pod the group's algorithm placed (upstream's ProposedAssignment)."""

    pod: Pod        # as assumed on the node
    node: str
    state: CycleState


@dataclass
class GroupPreemptionResult:
    victims: list[Pod] = field(default_factory=list)
    num_pdb_violations: int = 0
    num_pod_group_disruptions: int = 0
    nominations: dict[str, str] = field(default_factory=dict)  # pod uid -> node


class GroupRunner(Protocol):
    """What the evaluator needs of the framework (filters, PreFilter extensions, Reserve)."""

    def run_filter_with_nominated_pods(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None: ...

    def run_pre_filter_add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod,
                               node_info: NodeInfo) -> Status | None: ...

    def run_pre_filter_remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: Pod,
                                  node_info: NodeInfo) -> Status | None: ...

    def run_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None: ...

    def run_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None: ...


class PodGroupPreemptionError(Exception):
    pass


async def select_victims(fw: GroupRunner, edits: SnapshotEdits, potential: list[GroupVictim], pdbs: Sequence[PDB],
                         schedule_group: Callable[[], Awaitable[tuple[list[Assignment], Status | None]]]
                         ) -> tuple[GroupPreemptionResult | None, Status | None]:
    """upstream's selectVictimsOnDomain. `potential` is not empty. Returns the victims and the
    nominations, or the status of the group's algorithm when it fails even without them."""
    for v in potential:
        for pod in v.pods:
            edits.remove_victim(pod)
    assignments, status = await schedule_group()
    if status is not None and not status.is_success():
        return None, status
    potential = sorted(potential, key=more_important_key)
    violating, non_violating = split_by_pdb(potential, pdbs)
    placed = [a for a in assignments if a.node]

    def remove_again(v: GroupVictim) -> None:
        for pod in v.pods:
            edits.remove_victim(pod)
            ni = edits.own(pod.node_name)
            if ni is None:
                continue
            for a in placed:
                s = fw.run_pre_filter_remove_pod(a.state, a.pod, pod, ni)
                if s is not None and not s.is_success():
                    raise PodGroupPreemptionError(s.message())

    def reprieve(v: GroupVictim) -> bool:
        for pod in v.pods:
            ni = edits.add_victim_back(pod)
            if ni is None:
                continue
            for a in placed:
                s = fw.run_pre_filter_add_pod(a.state, a.pod, pod, ni)
                if s is not None and not s.is_success():
                    raise PodGroupPreemptionError(s.message())
        cleanups: list[Assignment] = []
        try:
            for a in placed:
                ni = edits.own(a.node)
                if ni is None:
                    raise PodGroupPreemptionError(f"node {a.node} is not in the snapshot")
                s = fw.run_filter_with_nominated_pods(a.state, a.pod, ni)
                if s is not None and not s.is_success():
                    remove_again(v)
                    return False
                # the preemptor pod as assumed there, for the next ones' filters
                edits.add(a.pod, a.node)
                fw.run_reserve(a.state, a.pod, a.node)
                cleanups.append(a)
            return True
        finally:
            for a in reversed(cleanups):
                fw.run_unreserve(a.state, a.pod, a.node)
                edits.discard(a.pod, a.node)

    to_preempt: list[GroupVictim] = []
    pdb_violations = 0
    try:
        for v, count in violating:
            if not reprieve(v):
                to_preempt.append(v)
                pdb_violations += count
        for v in non_violating:
            if not reprieve(v):
                to_preempt.append(v)
    except PodGroupPreemptionError as exc:
        return None, Status.error(str(exc))
    to_preempt.sort(key=more_important_key)
    result = GroupPreemptionResult(
        victims=[p for v in to_preempt for p in v.pods], num_pdb_violations=pdb_violations,
        num_pod_group_disruptions=sum(1 for v in to_preempt if v.is_group),
        nominations={a.pod.uid: a.node for a in placed})
    return result, None


def no_victims_status() -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, MSG_NO_VICTIMS)
