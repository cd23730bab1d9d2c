"""The reference NodeEvaluator: upstream's loops over the nodes as written (see __init__.py)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from collections.abc import Set as AbstractSet

from ...framework import CycleState, Diagnosis, Framework, Status
from ...framework.context import nominated_pods_added_for
from ...framework.status import Code
from ...framework.vector import NodeView
from ...framework.vector.views import ScoreTable
from ...model import NodeInfo, Pod
from ..errors import SchedulingError


def record_status(diagnosis: Diagnosis, name: str, status: Status) -> None:
    """A rejected node's status into the diagnosis, its plugin noted (upstream's
    NodeToStatus.Set and AddPluginStatus)."""
    diagnosis.node_to_status.set(name, status)
    diagnosis.add_plugin_status(status)


def nodes_with_nominated_pods(fw: Framework, pod: Pod, among: Sequence[NodeInfo] | None = None) -> set[str]:
    """The nodes where the two-pass filter adds nominated pods for `pod` (pods of equal or higher
    priority, not `pod` itself); only those `among` a few nodes if given."""
    nominator = fw.nominator
    names = nominator.nominated_node_names() if nominator is not None else None
    if not names:
        return set()
    if among is not None:
        return {ni.name for ni in among if nominated_pods_added_for(nominator, pod, ni.name)}
    return {name for name in names if nominated_pods_added_for(nominator, pod, name)}


class PerNodeEvaluator:
    """One node, then one plugin, at a time."""

    name = "per-node"

    def nodes_allowed(self, fw: Framework, nodes: Sequence[NodeInfo], allowed: AbstractSet[str]
                      ) -> list[NodeInfo]:
        return [ni for ni in nodes if ni.name in allowed]

    def pass_filters(self, fw: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis,
                     nodes: Sequence[NodeInfo], to_find: int, start: int) -> tuple[list[NodeInfo], int]:
        """upstream's checkNode for each node from `start` round the list (in order: kubeberth
        walks the nodes one after the other), until `to_find` nodes fit. A node with nominated
        pods to add goes through the two-pass filter (RunFilterPluginsWithNominatedPods, which
        counts its own Filter calls); any other through the filters once, as that does then."""
        n = len(nodes)
        skip = state.skip_filter_plugins
        plugins = [p for p in fw.filter_plugins if p.name not in skip]
        nominated = nodes_with_nominated_pods(fw, pod, nodes if n <= 8 else None)
        feasible: list[NodeInfo] = []
        processed = 0
        stops: dict[str, int] = {}  # Filter calls of the single-pass nodes: see PluginMetrics
        passed = 0
        for i in itertools.chain(range(start, n), range(start)):
            node_info = nodes[i]
            processed += 1
            two_pass = node_info.name in nominated
            if two_pass:
                status = fw.run_filter_with_nominated_pods(state, pod, node_info)
            else:
                status = fw.run_filter_plugins(plugins, state, pod, node_info)
            if status is None or status.code == Code.SUCCESS:
                feasible.append(node_info)
                passed += not two_pass
                if len(feasible) >= to_find:
                    break
            elif status.code == Code.ERROR:
                raise SchedulingError(status)
            else:
                record_status(diagnosis, node_info.name, status)
                if not two_pass:
                    stops[status.plugin] = stops.get(status.plugin, 0) + 1
        fw.plugin_metrics.count_filter_calls([p.name for p in plugins], stops, passed)
        return feasible, processed

    def score(self, fw: Framework, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> ScoreTable:
        """The score runner per node (a plain list: no plugin's `score_all`)."""
        return fw.run_score(state, pod, list(nodes) if isinstance(nodes, NodeView) else nodes)
