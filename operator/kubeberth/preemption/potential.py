"""The nodes preemption may help, over the node arrays: those whose filter status is
Unschedulable (not UnschedulableAndUnresolvable), in the snapshot's order, with their rows.

Evaluator.find_candidates' per-node test, made over the distinct statuses (the vectorised
filter shares one Status among many nodes) and the arrays' node names.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat

import numpy as np

from ..framework.interfaces import Handle
from ..framework.status import Code
from ..framework.types import NodeToStatus
from ..framework.vector import snapshot_arrays
from ..model import NodeInfo


def potential_rows(handle: Handle, all_nodes: Sequence[NodeInfo], statuses: NodeToStatus
                   ) -> tuple[list[NodeInfo], list[int]] | None:
    """(the nodes whose status is Unschedulable, their rows), or None when the snapshot's arrays
    do not describe `all_nodes` (the caller then tests node by node)."""
    arrays = snapshot_arrays(handle)
    if arrays is None or arrays.n != len(all_nodes) or arrays.infos != list(all_nodes):
        return None
    found = list(map(statuses.statuses.get, arrays.names, repeat(statuses.absent)))
    distinct = dict(zip(map(id, found), found))
    wanted = [key for key, s in distinct.items() if s is not None and s.code == Code.UNSCHEDULABLE]
    if not wanted:
        return [], []
    ids = np.fromiter(map(id, found), dtype=np.uint64, count=len(found))
    rows: list[int] = np.flatnonzero(np.isin(ids, np.asarray(wanted, dtype=np.uint64))).tolist()
    return [all_nodes[i] for i in rows], rows
