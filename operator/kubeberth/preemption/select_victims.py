"""Which pods on a node a preemptor would evict: upstream's DefaultPreemption.SelectVictimsOnNode
(and, with GenericWorkload, over victim units: GetVictimsOnNode), the part of preemption the
plugin provides to the evaluator (evaluator.py, whose base `VictimSelection` is). Runs on clones
of the node's NodeInfo and of the CycleState (the evaluator's dry run makes them)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..cache.pod_groups import PodGroupStates
from ..framework.cycle_state import CycleState
from ..framework.interfaces import Handle
from ..framework.status import Status
from ..model import NodeInfo, Pod
from ..priority import HIGHEST_USER_PRIORITY
from .pdb import PDB, filter_pods_with_pdb_violation
from .pick import more_important_key
from .pod_group import GroupVictim, domain_victims, split_by_pdb
from .pod_group import more_important_key as more_important_unit_key
from .reprieve import reprieve_in_order

MSG_NO_VICTIMS = "No preemption victims found for incoming pod"

# (node_info, victim, preemptor) -> may the victim be preempted (besides being of lower priority)?
IsEligiblePodFunc = Callable[[NodeInfo, Pod, Pod], bool]


def default_is_eligible_pod(node_info: NodeInfo, victim: Pod, preemptor: Pod) -> bool:
    """Pods of system priority are never victims of user pods."""
    return not (victim.priority >= HIGHEST_USER_PRIORITY > preemptor.priority)


class VictimSelection:
    """The victims on one node, for the framework of `handle`; `is_eligible_pod` is the
    eligibility hook (DefaultPreemption's default: `default_is_eligible_pod`)."""

    handle: Handle
    is_eligible_pod: IsEligiblePodFunc

    def is_preemption_allowed(self, node_info: NodeInfo, victim: Pod, preemptor: Pod) -> bool:
        """Only strictly lower-priority pods may be victims (and the eligibility hook agrees)."""
        return victim.priority < preemptor.priority and self.is_eligible_pod(node_info, victim, preemptor)

    def select_victims_on_node(self, state: CycleState, pod: Pod, node_info: NodeInfo,
                               pdbs: Sequence[PDB], *, groups: PodGroupStates | None = None
                               ) -> tuple[list[Pod], int, Status | None]:
        """The fewest pods to evict from `node_info` (a clone, as is `state`) for `pod` to fit.

        Remove every lower-priority pod; if the pod still does not fit, the node is out.
        Then reprieve, PDB-violating pods first and then the others, each group from the
        most important down, keeping a pod whenever the preemptor still fits.
        Returns (victims most important first, number of PDB-violating victims, status).
        With `groups`, the victims are units (select_victim_units_on_node).
        """
        if groups is not None:
            return self.select_victim_units_on_node(state, pod, node_info, pdbs, groups)
        fw = self.handle

        def remove(p: Pod) -> Status | None:
            if not node_info.remove_pod(p):
                return Status.error(f"pod {p.key} not found on node {node_info.name}")
            status: Status | None = fw.run_pre_filter_remove_pod(state, pod, p, node_info)
            return status

        def add(p: Pod) -> Status | None:
            node_info.add_pod(p)
            status: Status | None = fw.run_pre_filter_add_pod(state, pod, p, node_info)
            return status

        potential = [p for p in node_info.pods if self.is_preemption_allowed(node_info, p, pod)]
        if not potential:
            return [], 0, Status.unresolvable(MSG_NO_VICTIMS)
        for p in potential:
            s = remove(p)
            if s is not None and not s.is_success():
                return [], 0, s
        s = fw.run_filter_with_nominated_pods(state, pod, node_info)
        if s is not None and not s.is_success():
            return [], 0, s

        key = more_important_key(self.handle.clock.now())
        potential.sort(key=key)
        violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
        return reprieve_in_order([(p, 1) for p in violating], non_violating, add=add, remove=remove,
                                 fits=lambda: fw.run_filter_with_nominated_pods(state, pod, node_info), key=key)

    def _unit_eligible(self, pods: Sequence[tuple[NodeInfo, Pod]], preemptor: Pod) -> bool:
        """The eligibility hook for a unit: asked for each of its pods, on that pod's node. The
        default hook (no pod of system priority for a user pod) is upstream's `true` once the
        priorities are compared, which for a unit are its group's, not its pods'."""
        if self.is_eligible_pod is default_is_eligible_pod:
            return True
        return all(self.is_eligible_pod(ni, p, preemptor) for ni, p in pods)

    def select_victim_units_on_node(self, state: CycleState, pod: Pod, node_info: NodeInfo,
                                    pdbs: Sequence[PDB], groups: PodGroupStates
                                    ) -> tuple[list[Pod], int, Status | None]:
        """upstream's SelectVictimsOnNode over victim units (GetVictimsOnNode with GenericWorkload):
        the units with a pod on the node, of lower priority than the preemptor (a unit's priority
        is its PodGroup's), are all taken off: their pods on this node off the clone, every pod
        through the PreFilter extensions with its own node's NodeInfo (the snapshot's, left as it
        is, for the other nodes). If the preemptor then fits, the units are given back whole, the
        PDB-violating ones first, each time the most important first (higher priority, groups
        before pods, larger, earlier start); a unit that the preemptor does not fit with goes,
        all of its pods. Returns (the victims' pods, unit by unit, most important first; the
        PDB-violating pods of the units that go; status)."""
        fw = self.handle
        snapshot = fw.snapshot
        main = node_info.name
        units = domain_victims([node_info], groups, fw.clock.now(), everywhere=snapshot.node_infos)

        def node_of(p: Pod) -> NodeInfo | None:
            return node_info if p.node_name == main else snapshot.get(p.node_name)

        potential: list[GroupVictim] = []
        for unit in units:
            if unit.priority >= pod.priority:
                continue
            placed = [(ni, p) for p in unit.pods if (ni := node_of(p)) is not None]
            if len(placed) != len(unit.pods):
                missing = next(p.node_name for p in unit.pods if node_of(p) is None)
                return [], 0, Status.error(f"failed to get node info for node {missing!r} from snapshot")
            if self._unit_eligible(placed, pod):
                potential.append(unit)
        if not potential:
            return [], 0, Status.unresolvable(MSG_NO_VICTIMS)

        def remove(unit: GroupVictim) -> Status | None:
            for p in unit.pods:
                ni = node_of(p)
                assert ni is not None
                if ni is node_info and not node_info.remove_pod(p):
                    return Status.error(f"pod {p.key} not found on node {main}")
                s: Status | None = fw.run_pre_filter_remove_pod(state, pod, p, ni)
                if s is not None and not s.is_success():
                    return s
            return None

        def add(unit: GroupVictim) -> Status | None:
            for p in unit.pods:
                ni = node_of(p)
                assert ni is not None
                if ni is node_info:
                    node_info.add_pod(p)
                s: Status | None = fw.run_pre_filter_add_pod(state, pod, p, ni)
                if s is not None and not s.is_success():
                    return s
            return None

        for unit in potential:
            s = remove(unit)
            if s is not None:
                return [], 0, s
        s = fw.run_filter_with_nominated_pods(state, pod, node_info)
        if s is not None and not s.is_success():
            return [], 0, s

        potential.sort(key=more_important_unit_key)
        violating, non_violating = split_by_pdb(potential, pdbs)
        units, num_violating, err = reprieve_in_order(
            violating, non_violating, add=add, remove=remove,
            fits=lambda: fw.run_filter_with_nominated_pods(state, pod, node_info), key=more_important_unit_key)
        return [p for unit in units for p in unit.pods], num_violating, err
