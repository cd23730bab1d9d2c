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


def pick_one_node_for_preemption(nodes_to_victims: dict[str, Victims], now: float) -> str:
    """Upstream's order; each rule runs only on the nodes tied under the ones before it:
    1. fewest PDB violations; 2. lowest priority of the highest-priority victim;
    3. smallest sum of victim priorities (each shifted by MaxInt32+1 so negatives count);
    4. fewest victims; 5. latest start time of the highest-priority victims; 6. the first.
    """
    if not nodes_to_victims:
        return ""

    def latest_start(node: str) -> float:
        t = earliest_start_time_of_highest_priority(nodes_to_victims[node], now)
        return t if t is not None else float("-inf")

    score_funcs: list[Callable[[str], float]] = [
        lambda n: -nodes_to_victims[n].num_pdb_violations,
        lambda n: -max((p.priority for p in nodes_to_victims[n].pods), default=-(MAX_INT32 + 1)),
        lambda n: -sum(p.priority + MAX_INT32 + 1 for p in nodes_to_victims[n].pods),
        lambda n: -len(nodes_to_victims[n].pods),
        latest_start,
    ]
    nodes = list(nodes_to_victims)
    for f in score_funcs:
        scores = [f(n) for n in nodes]
        best = max(scores)
        nodes = [n for n, s in zip(nodes, scores) if s == best]
        if len(nodes) == 1:
            break
    return nodes[0]
