"""Which candidate node preemption goes with (upstream's pickOneNodeForPreemption and the
ordering helpers it uses)."""

from __future__ import annotations

from collections.abc import Callable

from ..framework.victims import Victims
from ..model import Pod

MAX_INT32 = 2**31 - 1


def pod_start_time(pod: Pod, now: float) -> float:
    """status.startTime; pods that have not started count as starting now (upstream's GetPodStartTime)."""
    return pod.start_time if pod.start_time is not None else now


def more_important_key(now: float) -> Callable[[Pod], tuple[int, float]]:
    """Sort key, most important first: higher priority, then earlier start (upstream's MoreImportantPod)."""
    return lambda p: (-p.priority, pod_start_time(p, now))


def earliest_start_time_of_highest_priority(victims: Victims, now: float) -> float | None:
    """The earliest start time among the victims of the highest priority (GetEarliestPodStartTime)."""
    if not victims.pods:
        return None
    top = max(p.priority for p in victims.pods)
    return min(pod_start_time(p, now) for p in victims.pods if p.priority == top)


def _rank(victims: Victims, now: float) -> tuple[int, int, int, int, float]:
    """A node's scores under the rules of pick_one_node_for_preemption, in one pass over its
    victims: the rules' successive tie-breaks are the lexicographic order of these tuples."""
    top: int | None = None
    total = 0
    earliest = float("-inf")
    for p in victims.pods:
        pr = p.priority
        total += pr + MAX_INT32 + 1
        if top is None or pr > top:
            top, earliest = pr, pod_start_time(p, now)
        elif pr == top:
            earliest = min(earliest, pod_start_time(p, now))
    # rule 2 reads the first victim's own priority (upstream assumes the most important first; with
    # victim units the first is the most important unit's, which need not be the highest pod's)
    first = victims.pods[0].priority if victims.pods else -(MAX_INT32 + 1)
    return (-victims.num_pdb_violations, -first, -total, -len(victims.pods), earliest)


def pick_one_node_for_preemption(nodes_to_victims: dict[str, Victims], now: float) -> str:
    """Upstream's order; each rule runs only on the nodes tied under the ones before it:
    1. fewest PDB violations; 2. lowest priority of the first victim (the most important one);
    3. smallest sum of victim priorities (each shifted by MaxInt32+1 so negatives count);
    4. fewest victims; 5. latest start time of the highest-priority victims; 6. the first.
    The nodes left after every rule are those with the greatest `_rank`; max keeps the first.
    """
    if not nodes_to_victims:
        return ""
    return max(nodes_to_victims, key=lambda node: _rank(nodes_to_victims[node], now))
