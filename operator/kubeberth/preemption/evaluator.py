"""The preemption evaluator, after upstream's pkg/scheduler/framework/preemption; the victims on
one node (the DefaultPreemption plugin's SelectVictimsOnNode) are select_victims.py's.

`Evaluator.preempt` runs once per pod that no node fits:

1. eligibility: PreemptionPolicy Never, or victims of a preemption still terminating on the
   node the pod is already nominated to, stop it;
2. candidates: the nodes whose filters said Unschedulable (not Unresolvable), from a
   random offset, until enough candidates are found; each is dry-run on a clone of its
   NodeInfo and of the CycleState;
3. extenders that support preemption may drop candidates or change their victims;
4. the best candidate is picked (fewest PDB violations, then lowest highest victim
   priority, ...);
5. acting: the victims are noted (`ctx.record_victims(pod, victims)` when the scheduler set
   it) and handed to the executor (executor.py), which preempts them in the background, as
   v1.37's asynchronous preemption does; the scheduler nominates the preemptor to the node
   the result names.

With GenericWorkload on and pods of pod groups in the cluster, the victims on a node are units
(upstream's GetVictimsOnNode over getCrossNodesVictims): a pod, or, for a PodGroup with
`disruptionMode: all`, all of that group's scheduled pods wherever they run, which go together or
not at all; a pod of a group counts at its PodGroup's priority. The node's dry run then takes the
units off (the pods of the node off its clone, the others through the PreFilter extensions only),
and gives them back whole, in the units' order (preemption/pod_group.py's); the prescreen and the
arithmetic dry run, which weigh pods one by one, are not used then.

Nothing here mutates the snapshot the cycle reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter

from .. import features
from ..cache.pod_groups import POD_GROUP_STATES, PodGroupStates
from ..framework.cycle_state import CycleState
from ..framework.explain import preemption_notes
from ..framework.interfaces import Handle
from ..framework.status import Code, Status
from ..framework.types import Diagnosis, FitError, NodeToStatus, PostFilterResult
from ..framework.victims import Candidate, Victims, candidates_to_victims_map
from ..model import NodeInfo, Pod
from .arithmetic_dry_run import ArithmeticDryRun
from .executor import Executor
from .extenders import call_preempt_extenders
from .pdb import PDB, list_pdbs
from .pick import more_important_key, pick_one_node_for_preemption
from .pod_group import pod_priority
from .potential import potential_rows
from .prescreen import HOPELESS, NO_VICTIMS, Prescreen
from .select_victims import MSG_NO_VICTIMS, IsEligiblePodFunc, VictimSelection, default_is_eligible_pod

MSG_NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
MSG_NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
MSG_NOT_HELPFUL = "Preemption is not helpful for scheduling"
MSG_NO_CANDIDATE = "no candidate node for preemption"


def terminating_by_preemption(pod: Pod) -> bool:
    """Being deleted because the scheduler preempted it: deletionTimestamp set and the
    DisruptionTarget condition True with reason PreemptionByScheduler (upstream's
    podTerminatingByPreemption). A pod terminating for another reason does not count."""
    if pod.deletion_timestamp is None:
        return False
    for cond in (pod.raw.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "DisruptionTarget":
            return cond.get("status") == "True" and cond.get("reason") == "PreemptionByScheduler"
    return False


def calculate_num_candidates(num_nodes: int, percentage: int, absolute: int) -> int:
    """How many candidates the dry run must find: a percentage of the nodes, at least
    `absolute`, at most all of them."""
    n = num_nodes * percentage // 100
    n = max(n, absolute)
    return min(n, num_nodes)


class Evaluator(VictimSelection):
    """Preemption for one framework (the handle). Stateless between calls."""

    def __init__(self, handle: Handle, plugin_name: str = "DefaultPreemption", *,
                 min_candidate_nodes_percentage: int = 10, min_candidate_nodes_absolute: int = 100,
                 is_eligible_pod: IsEligiblePodFunc | None = None) -> None:
        self.handle = handle
        self.plugin_name = plugin_name
        self.min_candidate_nodes_percentage = min_candidate_nodes_percentage
        self.min_candidate_nodes_absolute = min_candidate_nodes_absolute
        self.is_eligible_pod: IsEligiblePodFunc = is_eligible_pod or default_is_eligible_pod
        self.executor = Executor(handle, plugin_name)

    # ---- the whole flow -------------------------------------------------------
    async def preempt(self, state: CycleState, pod: Pod, statuses: NodeToStatus
                      ) -> tuple[PostFilterResult | None, Status]:
        """(result, status) as upstream's Evaluator.Preempt:

        - (None, Unschedulable): not eligible; the nomination stays as it is;
        - (PostFilterResult(""), Unschedulable): preemption cannot help; the message is a
          FitError of the dry run; the preemptor's own nomination is cleared;
        - (None, Error): something failed;
        - (PostFilterResult(node), Success): victims are being evicted, pod nominated to node.
        """
        best, status, hopeless = await self.choose(state, pod, statuses)
        if best is None:
            # The empty nomination tells the scheduler to clear the pod's own.
            return (PostFilterResult("") if hopeless else None), status
        self.prepare_candidate(best, pod)
        return PostFilterResult(best.name), status

    async def choose(self, state: CycleState, pod: Pod, statuses: NodeToStatus
                     ) -> tuple[Candidate | None, Status, bool]:
        """Steps 1 to 4 of `preempt` (eligibility, candidates, extenders, the pick), nothing acted
        on: (the chosen candidate or None, the status `preempt` returns, whether preemption cannot
        help: no candidate at all). The dry runs (dryrun/engine.py) stop here."""
        nominated = self.nominated_node_of(pod)
        ok, msg = self.pod_eligible_to_preempt_others(
            pod, statuses.get(nominated) if nominated else None, nominated, groups=self.pod_groups())
        if not ok:
            return None, Status(Code.UNSCHEDULABLE, msg), False

        all_nodes = list(self.handle.snapshot.node_infos)
        if not all_nodes:
            return None, Status.error("no nodes available"), False
        candidates, node_statuses, errors = self.find_candidates(state, all_nodes, pod, statuses)
        notes = preemption_notes(state)  # None unless the pod is explained
        if notes is not None:
            notes.note_candidates(candidates, node_statuses.statuses.items())
        if errors and not candidates:
            return None, Status.error(errors[0]), False
        if not candidates:
            diagnosis = Diagnosis()
            diagnosis.node_to_status = node_statuses
            node_statuses.absent = Status.unresolvable(MSG_NOT_HELPFUL)
            fit_error = FitError(pod, len(all_nodes), diagnosis, [ni.name for ni in all_nodes])
            return None, Status(Code.UNSCHEDULABLE, fit_error.message()), True

        candidates, status = await self.call_extenders(pod, candidates)
        if status is not None and not status.is_success():
            return None, status, False

        best = self.select_candidate(candidates)
        if best is None or not best.name:
            return None, Status(Code.UNSCHEDULABLE, MSG_NO_CANDIDATE), False
        if notes is not None:
            notes.note_chosen(best)
        return best, Status(Code.SUCCESS, f"found a potential placement for pod on node {best.name}, "
                                          f"preempting {len(best.victims.pods)} victims"), False

    # ---- eligibility ----------------------------------------------------------
    def pod_groups(self) -> PodGroupStates | None:
        """The scheduler's PodGroups and their pods with GenericWorkload on (upstream's
        podGroupSnapshot of the evaluator), else None: pods are then victims one by one."""
        if not features.current().enabled(features.GENERIC_WORKLOAD):
            return None
        groups = self.handle.shared_indexes.get(POD_GROUP_STATES)
        return groups if isinstance(groups, PodGroupStates) else None

    def nominated_node_of(self, pod: Pod) -> str:
        """The node the pod is nominated to: the queue's nominator knows best, else its status."""
        nominator = self.handle.nominator
        node = nominator.nominated_node_for(pod) if nominator is not None else ""
        return node or pod.nominated_node_name

    def pod_eligible_to_preempt_others(self, pod: Pod, nominated_node_status: Status | None,
                                       nominated_node: str | None = None, *,
                                       groups: PodGroupStates | None = None) -> tuple[bool, str]:
        """(eligible, reason). Not eligible: preemptionPolicy Never, or a victim of an earlier
        preemption is still terminating on the node the pod is nominated to. With `groups`
        (GenericWorkload), a pod of a PodGroup there counts at its group's priority."""
        if pod.preemption_policy == "Never":
            return False, MSG_NOT_ELIGIBLE_NEVER
        node = pod.nominated_node_name if nominated_node is None else nominated_node
        if node:
            # The nominated node no longer fits at all: preempt again, elsewhere.
            if nominated_node_status is not None and nominated_node_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            node_info = self.handle.snapshot.get(node)
            if node_info is not None:
                for p in node_info.pods:
                    if not terminating_by_preemption(p):
                        continue
                    if groups is None:
                        allowed = self.is_preemption_allowed(node_info, p, pod)
                    else:
                        allowed = pod_priority(p, groups) < pod.priority and self._unit_eligible(
                            [(node_info, p)], pod)
                    if allowed:
                        return False, MSG_NOT_ELIGIBLE_TERMINATING
        return True, ""

    # ---- candidates -----------------------------------------------------------
    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        offset = self.handle.rng.randrange(num_nodes) if num_nodes > 0 else 0
        return offset, calculate_num_candidates(
            num_nodes, self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute)

    def find_candidates(self, state: CycleState, all_nodes: Sequence[NodeInfo], pod: Pod,
                        statuses: NodeToStatus) -> tuple[list[Candidate], NodeToStatus, list[str]]:
        """Candidates among the nodes preemption may help (status Unschedulable), the statuses
        of the nodes it cannot help, and the errors met."""
        found = potential_rows(self.handle, all_nodes, statuses)
        potential, rows = found if found is not None else (
            [ni for ni in all_nodes if (s := statuses.get(ni.name)) is not None and s.code == Code.UNSCHEDULABLE],
            None)
        if not potential:
            return [], NodeToStatus(), []
        pdbs = list_pdbs(self.handle.objects)
        offset, num = self.get_offset_and_num_candidates(len(potential))
        return self.dry_run_preemption(state, pod, potential, pdbs, offset, num, rows=rows,
                                       groups=self.unit_groups())

    def unit_groups(self) -> PodGroupStates | None:
        """The PodGroups when victims are units (GenericWorkload on and some pod or PodGroup of a
        group known); None when every victim is a pod of no group, as without the gate."""
        groups = self.pod_groups()
        return groups if groups is not None and groups.keys() else None

    def dry_run_preemption(self, state: CycleState, pod: Pod, potential_nodes: Sequence[NodeInfo],
                           pdbs: Sequence[PDB], offset: int, num_candidates: int, *,
                           rows: Sequence[int] | None = None, groups: PodGroupStates | None = None
                           ) -> tuple[list[Candidate], NodeToStatus, list[str]]:
        """Try the nodes from `offset` on, wrapping around, until `num_candidates` are found of
        which at least one violates no PDB. Non-violating candidates come first. `rows`: the
        potential nodes' rows in the snapshot's node arrays, when known. `groups`: victims are
        units of pod groups (every node is then dry-run in full).

        Nodes the prescreen proves hopeless are not cloned; their statuses (and errors), which
        matter only when no candidate is found, are then taken from real dry runs."""
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        if groups is not None:
            return self._dry_run_units(state, pod, potential_nodes, pdbs, offset, num_candidates, groups)
        screen = Prescreen(self.handle, state, pod, self.is_preemption_allowed,
                           memoisable=self.is_eligible_pod is default_is_eligible_pod)
        fast = ArithmeticDryRun.for_cycle(self.handle, state, pod, self.is_preemption_allowed,
                                          by_priority=self.is_eligible_pod is default_is_eligible_pod)
        now = self.handle.clock.now()
        key = more_important_key(now)
        # (step from the offset, node, status); None: skipped by the prescreen
        failed: list[tuple[int, NodeInfo, Status | None]] = []
        n = len(potential_nodes)
        screened = screen.screen_all(potential_nodes, offset, rows)
        if screened is not None and fast is not None:
            fast.use_rows(screened.arrays, screened.usage, screened.kept, now)
        for i in range(n) if screened is None else screened.visit:
            j = (offset + i) % n
            original = potential_nodes[j]
            verdict = screen.verdict(original) if screened is None else screened.verdicts[j]
            if verdict == NO_VICTIMS:
                failed.append((i, original, Status.unresolvable(MSG_NO_VICTIMS)))
                continue
            if verdict == HOPELESS:
                failed.append((i, original, None))
                continue
            row = None if screened is None else screened.rows[j]
            found = fast.select_victims(original, pdbs, key, row) if fast is not None else None
            if found is not None and found[0]:
                outcome: Candidate | Status = Candidate(original.name, Victims(*found))
            else:
                outcome = self._dry_run_node(state, pod, original, pdbs)
            if isinstance(outcome, Status):
                failed.append((i, original, outcome))
                continue
            if _keep_candidate(outcome, non_violating, violating, num_candidates):
                break
        node_statuses = NodeToStatus()
        errors: list[str] = []
        candidates = non_violating + violating
        if screened is not None and not candidates:  # every step was taken: add the hopeless nodes
            verdicts = screened.verdicts
            failed.extend((i, potential_nodes[(offset + i) % n], None) for i in range(n)
                          if verdicts[(offset + i) % n] == HOPELESS)
            failed.sort(key=itemgetter(0))
        for _, node_info, status in failed:
            if status is None:
                if candidates:
                    continue
                outcome = self._dry_run_node(state, pod, node_info, pdbs)
                if not isinstance(outcome, Status):
                    raise AssertionError(f"the preemption prescreen skipped candidate node {node_info.name!r}")
                status = outcome
            if status.code == Code.ERROR:
                errors.append(status.message())
            node_statuses.set(node_info.name, status)
        return candidates, node_statuses, errors

    def _dry_run_units(self, state: CycleState, pod: Pod, potential_nodes: Sequence[NodeInfo],
                       pdbs: Sequence[PDB], offset: int, num_candidates: int, groups: PodGroupStates
                       ) -> tuple[list[Candidate], NodeToStatus, list[str]]:
        """dry_run_preemption with victim units: every node in turn from `offset`, in full."""
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        node_statuses = NodeToStatus()
        errors: list[str] = []
        n = len(potential_nodes)
        for i in range(n):
            original = potential_nodes[(offset + i) % n]
            outcome = self._dry_run_node(state, pod, original, pdbs, groups)
            if isinstance(outcome, Status):
                if outcome.code == Code.ERROR:
                    errors.append(outcome.message())
                node_statuses.set(original.name, outcome)
                continue
            if _keep_candidate(outcome, non_violating, violating, num_candidates):
                break
        return non_violating + violating, node_statuses, errors

    def _dry_run_node(self, state: CycleState, pod: Pod, original: NodeInfo,
                      pdbs: Sequence[PDB], groups: PodGroupStates | None = None) -> Candidate | Status:
        """One dry run on clones of the node and the cycle state: a candidate, or why not."""
        node_info = original.clone()
        pods, num_violations, status = self.select_victims_on_node(state.clone(), pod, node_info, pdbs,
                                                                   groups=groups)
        if (status is None or status.is_success()) and pods:
            return Candidate(node_info.name, Victims(pods, num_violations))
        if status is None or status.is_success():
            status = Status.error(f"expected at least one victim pod on node {node_info.name!r}")
        return status

    # ---- extenders ------------------------------------------------------------
    async def call_extenders(self, pod: Pod, candidates: list[Candidate]
                             ) -> tuple[list[Candidate], Status | None]:
        """Let each extender that supports preemption (and is interested in the pod) drop
        candidates or change their victims, in turn (upstream's callExtenders). The wire
        protocol and the per-extender rules live in kubeberth.extender."""
        extenders = list(self.handle.extenders)
        if not extenders or not candidates:
            return candidates, None
        try:
            victims_map = await call_preempt_extenders(
                extenders, pod, candidates_to_victims_map(candidates), self.handle.snapshot)
        except Exception as exc:
            return [], Status.error(str(exc))
        return [Candidate(node, v) for node, v in victims_map.items()], None

    # ---- picking --------------------------------------------------------------
    def select_candidate(self, candidates: Sequence[Candidate]) -> Candidate | None:
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        victims_map = candidates_to_victims_map(candidates)
        node = pick_one_node_for_preemption(victims_map, self.handle.clock.now())
        if node in victims_map:
            return Candidate(node, victims_map[node])
        return candidates[0]

    # ---- acting ---------------------------------------------------------------
    def prepare_candidate(self, c: Candidate, pod: Pod) -> None:
        """Note the victims (metrics, the scheduler's records), then hand their preemption to the
        executor's background task; the scheduler nominates the preemptor from the result."""
        fw = self.handle
        fw.metrics.preemption_victims(len(c.victims.pods))
        if c.victims.num_pdb_violations > 0:  # counted where registered (GenericWorkload), as upstream
            fw.metrics.preemption_pdb_violations("pod", c.victims.num_pdb_violations)
        if fw.record_victims is not None:  # the scheduler notes the victims on the preemptor's record
            fw.record_victims(pod, list(c.victims.pods))
        self.executor.prepare_candidate_async(c, pod)


def _keep_candidate(candidate: Candidate, non_violating: list[Candidate], violating: list[Candidate],
                    num_candidates: int) -> bool:
    """Keep `candidate` in its bucket (while it has room); True once the dry run has enough."""
    bucket = non_violating if candidate.victims.num_pdb_violations == 0 else violating
    if len(bucket) < num_candidates:
        bucket.append(candidate)
    return bool(non_violating) and len(non_violating) + len(violating) >= num_candidates
