"""A dry run without clones, for cycles whose filters only count resources.

When the filters active in a cycle are NodeResourcesFit and plugins that read nothing but the
node (NodeUnschedulable, NodeName, TaintToleration, NodeAffinity), and no active PreFilter plugin
has AddPod/RemovePod extensions, select_victims_on_node's removals, reprieves and two-pass
filters reduce to sums: the node-only plugins answer the same for every pod set, and
NodeResourcesFit compares the pods' summed requests with allocatable. The victims found are the
ones the clone-and-filter dry run finds, in the same order.

Whenever the node does not fit even with every evictable pod removed, the caller falls back to
the real dry run, which reports the status of the first failing plugin.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..cache.node_arrays import NodeArrays
from ..framework.cycle_state import CycleState
from ..framework.vector import AllNodes
from ..model import NodeInfo, Pod
from ..priority import HIGHEST_USER_PRIORITY
from .nominated import nominated_requests
from .pdb import PDB, filter_pods_with_pdb_violation

NODE_RESOURCES_FIT = "NodeResourcesFit"
# Filters whose verdict depends on the node and the preemptor alone, never on the node's pods.
NODE_ONLY_FILTERS = frozenset({"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity"})

# (cpu, memory, ephemeral storage, pod count) on the node
Usage = tuple[int, int, int, int]
_MEMO_LIMIT = 50_000
# (node generation, preemptor priority, cpu, memory, ephemeral storage, nominated requests)
#   -> (victims or None, PDB-violating victims, the time their order depends on or None)
_victims_memo: dict[tuple[Any, ...], tuple[tuple[Pod, ...] | None, int, float | None]] = {}


class ArithmeticDryRun:
    """Built per preemptor by `for_cycle`; `select_victims` per node."""

    __slots__ = ("_allowed", "_by_priority", "_cpu", "_eph", "_kept", "_mem", "_node_ok", "_node_only", "_nominator",
                 "_now", "_pod", "_state", "_usage")

    def __init__(self, state: CycleState, pod: Pod, node_only: Sequence[Any], nominator: Any,
                 is_preemption_allowed: Callable[[NodeInfo, Pod, Pod], bool], by_priority: bool = False) -> None:
        self._state = state
        self._pod = pod
        self._node_only = node_only
        self._nominator = nominator
        self._allowed = is_preemption_allowed
        req = pod.requests
        self._cpu, self._mem, self._eph = req.milli_cpu, req.memory, req.ephemeral_storage
        self._node_ok: list[bool] | None = None  # per row of the node arrays: the node-only filters pass
        self._kept: np.ndarray | None = None
        self._now: float | None = None
        self._by_priority = by_priority  # the eligibility hook is the default one (priorities only)
        self._usage: np.ndarray | None = None    # per row: what the nominated pods add

    def use_rows(self, arrays: NodeArrays, usage: np.ndarray | None, kept: np.ndarray | None = None,
                 now: float | None = None) -> None:
        """Answer `select_victims(..., row)` from the node arrays: the node-only filters' masks
        (their `filter_all`, which decides as `filter` does), the nominated pods' requests per
        row (nominated_usage) and, with the default eligibility, what each row keeps without
        its evictable pods (the prescreen's: cpu, memory, ephemeral storage, pods, ...).
        With those, and no PDB, the victims are memoised by node generation, preemptor
        priority and request, nominated requests (and `now`, the time of `key`, when the node
        has both started pods and pods not started): they depend on nothing else."""
        self._usage = usage
        self._kept = kept if self._by_priority and now is not None else None
        self._now = now
        if not self._node_only:
            self._node_ok = [True] * arrays.n
            return
        view = AllNodes(arrays.infos, arrays)
        ok = np.ones(arrays.n, dtype=bool)
        for p in self._node_only:
            mask = p.filter_all(self._state, self._pod, view)
            if mask is None:
                return
            ok &= mask
        self._node_ok = ok.tolist()

    @classmethod
    def for_cycle(cls, fw: Any, state: CycleState, pod: Pod,
                  is_preemption_allowed: Callable[[NodeInfo, Pod, Pod], bool],
                  by_priority: bool = False) -> ArithmeticDryRun | None:
        """The arithmetic dry run when this cycle's filters allow it, else None. Off with the
        framework's vectorised path, so that the per-node path stays the reference."""
        if not getattr(fw, "vectorise", True):
            return None
        if any(q for q in pod.requests.scalar.values()):
            return None
        skip = state.skip_filter_plugins
        node_only = []
        has_fit = False
        for p in fw.filter_plugins:
            if p.name in skip:
                continue
            if p.name == NODE_RESOURCES_FIT:
                has_fit = True
            elif p.name in NODE_ONLY_FILTERS:
                node_only.append(p)
            else:
                return None
        if not has_fit:
            return None
        for p in fw.pre_filter_plugins:
            if p.name not in skip and p.pre_filter_extensions() is not None:
                return None
        return cls(state, pod, node_only, fw.nominator, is_preemption_allowed, by_priority)

    def _fits(self, alloc: Any, cpu: int, mem: int, eph: int, count: int) -> bool:
        """NodeResourcesFit's verdict for the preemptor on a node using this much."""
        if count + 1 > alloc.allowed_pod_number:
            return False
        return not ((0 < self._cpu and self._cpu > alloc.milli_cpu - cpu)
                    or (0 < self._mem and self._mem > alloc.memory - mem)
                    or (0 < self._eph and self._eph > alloc.ephemeral_storage - eph))

    def _evictable(self, node_info: NodeInfo) -> list[Pod]:
        pod = self._pod
        if self._by_priority:  # the default eligibility, inlined
            prio = pod.priority
            return [p for p in node_info.pods if p.priority < prio and not (p.priority >= HIGHEST_USER_PRIORITY > prio)]
        allowed = self._allowed
        return [p for p in node_info.pods if allowed(node_info, p, pod)]

    def select_victims(self, node_info: NodeInfo, pdbs: Sequence[PDB],
                       key: Callable[[Pod], Any], row: int | None = None) -> tuple[list[Pod], int] | None:
        """(victims most important first, number violating a PDB), as select_victims_on_node
        finds them; None when the node does not fit with every evictable pod removed (the
        real dry run then reports why). `row`: the node's row in the arrays given to use_rows."""
        pod = self._pod
        by_row = row is not None and self._node_ok is not None
        if by_row:
            if not self._node_ok[row]:  # type: ignore[index]
                return None
        else:
            for p in self._node_only:
                s = p.filter(self._state, pod, node_info)
                if s is not None and not s.is_success():
                    return None
        memo_key: tuple[Any, ...] | None = None
        if by_row and self._kept is not None and self._usage is not None and not pdbs:
            nominated = tuple(self._usage[row].tolist())
            memo_key = (node_info.generation, pod.priority, self._cpu, self._mem, self._eph, nominated)
            hit = _victims_memo.get(memo_key)
            if hit is not None and (hit[2] is None or hit[2] == self._now):
                return (list(hit[0]), hit[1]) if hit[0] is not None else None
        found = self._select(node_info, pdbs, key, row if by_row else None)
        if memo_key is not None:
            # Pods that have not started sort as starting now: the order of the victims depends
            # on the time only when such pods and started ones are compared.
            started = {p.start_time is None for p in node_info.pods}
            when = self._now if len(started) > 1 else None
            if len(_victims_memo) >= _MEMO_LIMIT:
                _victims_memo.clear()
            _victims_memo[memo_key] = (tuple(found[0]), found[1], when) if found is not None else (None, 0, when)
        return found

    def _select(self, node_info: NodeInfo, pdbs: Sequence[PDB], key: Callable[[Pod], Any],
                row: int | None) -> tuple[list[Pod], int] | None:
        pod = self._pod
        potential = self._evictable(node_info)
        if not potential:
            return None
        if row is not None and self._kept is not None:
            cpu, mem, eph, count = self._kept[row][:4].tolist()
        else:
            used = node_info.requested
            cpu, mem, eph = used.milli_cpu, used.memory, used.ephemeral_storage
            count = len(node_info.pods) - len(potential)
            for p in potential:
                r = p.requests
                cpu -= r.milli_cpu
                mem -= r.memory
                eph -= r.ephemeral_storage
        if row is not None and self._usage is not None:
            n_cpu, n_mem, n_eph, n_count = self._usage[row].tolist()
        else:
            n_cpu, n_mem, n_eph, n_count = nominated_requests(self._nominator, pod, node_info.name)
        alloc = node_info.allocatable
        # NodeResourcesFit's test, `want > allocatable - used` fails, as `used <= allocatable - want`
        a_pods = alloc.allowed_pod_number
        w_cpu, w_mem, w_eph = self._cpu, self._mem, self._eph
        l_cpu, l_mem, l_eph = alloc.milli_cpu - w_cpu, alloc.memory - w_mem, alloc.ephemeral_storage - w_eph

        def fits(c: int, m: int, e: int, k: int) -> bool:
            # upstream's two passes: with the nominated pods, then (if there were any) without
            if not (k + n_count < a_pods and (w_cpu <= 0 or c + n_cpu <= l_cpu)
                    and (w_mem <= 0 or m + n_mem <= l_mem) and (w_eph <= 0 or e + n_eph <= l_eph)):
                return False
            return n_count == 0 or (k < a_pods and (w_cpu <= 0 or c <= l_cpu)
                                    and (w_mem <= 0 or m <= l_mem) and (w_eph <= 0 or e <= l_eph))

        if not fits(cpu, mem, eph, count):
            return None
        potential.sort(key=key)
        violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
        victims: list[Pod] = []
        num_violating = 0
        # Reprieve the PDB-violating pods first, then the others, each from the most important.
        for group, violates in ((violating, 1), (non_violating, 0)):
            for p in group:
                r = p.requests
                c, m, e, k = cpu + r.milli_cpu, mem + r.memory, eph + r.ephemeral_storage, count + 1
                if fits(c, m, e, k):
                    cpu, mem, eph, count = c, m, e, k
                else:
                    victims.append(p)
                    num_violating += violates
        if violating and non_violating:
            victims.sort(key=key)
        return victims, num_violating
