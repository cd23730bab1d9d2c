"""The reference NodeEvaluator: upstream's loops over the nodes as written (see __init__.py)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from collections.abc import Set as AbstractSet

from ...framework import CycleState, Diagnosis, Framework, Status
from ...framework.status import Code
from ...framework.vector import NodeView, ScoreTable
from ...model import NodeInfo, Pod
from ..errors import SchedulingError


def record_status(diagnosis: Diagnosis, name: str, status: Status) -> None:
    """A rejected node's status into the diagnosis, its plugin noted (upstream's
    NodeToStatus.Set and AddPluginStatus)."""
    diagnosis.node_to_status.set(name, status)
    diagnosis.add_plugin_status(status)


class PerNodeEvaluator:
    """One node, then one plugin, at a time."""

    name = "per-node"

    def nodes_allowed(self, fw: Framework, nodes: Sequence[NodeInfo], allowed: AbstractSet[str]
                      ) -> list[NodeInfo]:
        return [ni for ni in nodes if ni.name in allowed]

    def pass_filters(self, fw: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis,
                     nodes: Sequence[NodeInfo], to_find: int, start: int) -> tuple[list[NodeInfo], int]:
        """upstream's checkNode for each node from `start` round the list (in order: kubeberth
        walks the nodes one after the other), until `to_find` nodes fit."""
        n = len(nodes)
        feasible: list[NodeInfo] = []
        processed = 0
        for i in itertools.chain(range(start, n), range(start)):
            node_info = nodes[i]
            processed += 1
            status = fw.run_filter_with_nominated_pods(state, pod, node_info)
            if status is None or status.code == Code.SUCCESS:
                feasible.append(node_info)
                if len(feasible) >= to_find:
                    break
            elif status.code == Code.ERROR:
                raise SchedulingError(status)
            else:
                record_status(diagnosis, node_info.name, status)
        return feasible, processed

    def score(self, fw: Framework, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> ScoreTable:
        """The score runner per node (a plain list: no plugin's `score_all`)."""
        return fw.run_score(state, pod, list(nodes) if isinstance(nodes, NodeView) else nodes)
