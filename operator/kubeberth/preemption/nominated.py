"""What the pods nominated to a node ask for, as the two-pass filter adds them for a pod."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol, cast

import numpy as np

from ..cache.node_arrays import NodeArrays
from ..framework.context import Nominator, nominated_pods_added_for
from ..model import Pod


def nominated_requests(nominator: Nominator | None, pod: Pod, node_name: str) -> tuple[int, int, int, int]:
    """(milli-CPU, memory, ephemeral storage, pods) of the pods nominated to `node_name` that
    run_filter_with_nominated_pods would add for `pod`: equal or higher priority, not `pod`."""
    return _summed_requests(nominated_pods_added_for(nominator, pod, node_name))


def _summed_requests(pods: Iterable[Pod]) -> tuple[int, int, int, int]:
    """(milli-CPU, memory, ephemeral storage, count) of the pods' requests."""
    cpu = mem = eph = count = 0
    for p in pods:
        r = p.requests
        cpu += r.milli_cpu
        mem += r.memory
        eph += r.ephemeral_storage
        count += 1
    return cpu, mem, eph, count


def nominated_rows(nominator: Nominator | None, pod: Pod, pos: Mapping[str, int]
                   ) -> tuple[list[int], list[tuple[int, int, int, int]]]:
    """nominated_requests for every row of the node arrays (`pos`: node name -> row) where the
    two-pass filter adds some pod for `pod`: the rows, in the nominator's order, and their
    (milli-CPU, memory, ephemeral storage, pods). Nodes outside `pos` are left out."""
    rows: list[int] = []
    usage: list[tuple[int, int, int, int]] = []
    if nominator is None:
        return rows, usage
    seen: set[int] = set()
    for name in nominator.nominated_node_names():
        row = pos.get(name)
        if row is None or row in seen:
            continue
        seen.add(row)
        noms = nominated_pods_added_for(nominator, pod, name)
        if not noms:
            continue
        cpu = mem = eph = 0
        for nom in noms:
            r = nom.requests
            cpu += r.milli_cpu
            mem += r.memory
            eph += r.ephemeral_storage
        rows.append(row)
        usage.append((cpu, mem, eph, len(noms)))
    return rows, usage


class ChangeLog(Protocol):
    """A nominator noting the node of every change (scheduler/nominations.LoggedNominator)."""

    change_epoch: int
    changed_nodes: list[str]

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]: ...

    def nominated_node_names(self) -> list[str]: ...

    def nominated_node_for(self, pod: Pod) -> str: ...


# preemptor priority -> [nominator, arrays, arrays epoch, log epoch, log entries seen, usage]
_usage_cache: dict[int, list[Any]] = {}
_CACHE_LIMIT = 8


def _node_usage(nominator: ChangeLog, priority: int, node_name: str) -> tuple[int, int, int, int]:
    return _summed_requests(nom for nom in nominator.nominated_pods_for_node(node_name) if nom.priority >= priority)


def _usage_at_priority(nominator: ChangeLog, priority: int, arrays: NodeArrays) -> np.ndarray:
    """Per row, the requests of the pods of at least `priority` nominated there, kept across
    cycles: only the rows of the nodes the nominator's log names are recomputed."""
    pos = arrays.pos
    log = nominator.changed_nodes
    entry = _usage_cache.get(priority)
    if (entry is not None and entry[0] is nominator and entry[1] is arrays and entry[2] == arrays.epoch
            and entry[3] == nominator.change_epoch and entry[4] <= len(log)):
        usage: np.ndarray = entry[5]
        if entry[4] < len(log):
            for name in set(log[entry[4]:]):
                row = pos.get(name)
                if row is not None:
                    usage[row] = _node_usage(nominator, priority, name)
            entry[4] = len(log)
        return usage
    usage = np.zeros((arrays.n, 4), dtype=np.int64)
    for name in nominator.nominated_node_names():
        row = pos.get(name)
        if row is not None:
            usage[row] = _node_usage(nominator, priority, name)
    if priority not in _usage_cache and len(_usage_cache) >= _CACHE_LIMIT:
        _usage_cache.pop(next(iter(_usage_cache)))
    _usage_cache[priority] = [nominator, arrays, arrays.epoch, nominator.change_epoch, len(log), usage]
    return usage


def nominated_usage(nominator: Nominator | None, pod: Pod, arrays: NodeArrays) -> np.ndarray | None:
    """nominated_requests for every row of `arrays` at once: an (n, 4) int64 array of milli-CPU,
    memory, ephemeral storage and pods (read-only; valid until the next call). None when the
    nominator keeps no change log (the callers then ask nominated_requests per node)."""
    if nominator is None or getattr(nominator, "changed_nodes", None) is None:
        return None
    log = cast(ChangeLog, nominator)
    usage = _usage_at_priority(log, pod.priority, arrays)
    own = log.nominated_node_for(pod)
    row = arrays.pos.get(own) if own else None
    if row is not None:
        mine = [nom for nom in log.nominated_pods_for_node(own) if nom.uid == pod.uid and nom.priority >= pod.priority]
        if mine:
            usage = usage.copy()
            for nom in mine:
                r = nom.requests
                usage[row] -= (r.milli_cpu, r.memory, r.ephemeral_storage, 1)
    return usage
