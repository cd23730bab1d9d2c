"""The one seam between upstream's algorithm (scheduler/algorithm.py) and how nodes are evaluated.

algorithm.py reads as upstream's schedulePod; wherever upstream loops over nodes it asks a
`NodeEvaluator` instead:

- `nodes_allowed(fw, nodes, allowed)`: the nodes a PreFilterResult allows, in node order
  (findNodesThatFitPod's list of preRes.NodeNames).
- `pass_filters(fw, state, pod, diagnosis, nodes, to_find, start) -> (feasible, processed)`:
  findNodesThatPassFilters' walk. From `start` round `nodes`, each node through the Filter
  plugins with the nominated pods of equal or higher priority added first
  (RunFilterPluginsWithNominatedPods), until `to_find` nodes fit (percentageOfNodesToScore);
  the feasible nodes in walk order, how many nodes the walk took (for the next cycle's start
  index), every rejected node's status in `diagnosis` (node_to_status, its plugin noted). A
  status with code Error raises SchedulingError.
- `score(fw, state, pod, nodes) -> ScoreTable`: RunScorePlugins over the feasible nodes
  (PreScore has run): normalised and weighted per plugin, and the totals.

The caller keeps everything else: PreFilter, the nominated node first, the start index and
`to_find`, the extenders, PreScore, select_host.

Two implementations, interchangeable: the same feasible nodes in the same order, the same
statuses (code, reasons, plugin), the same scores (tests/scheduler/test_evaluators.py runs both
over the conformance cases and the fuzzer's clusters):

- `PER_NODE` (per_node.py): upstream's loops as written, one node and one plugin at a time;
  the reference.
- `VECTORISED` (vectorised.py): over the snapshot's node arrays (cache/node_arrays.py): the
  plugins' `filter_all` masks, the statuses of rejected rows in bulk (fit_statuses.py), the
  nominated pods' first pass over the arrays (nominated_rows.py) or row by row
  (nominated_pass.py), the plugins' `score_all` columns. A node list the arrays do not describe
  (too few nodes, a PreFilter subset, a placement's nodes, the nominated node alone) takes the
  per-node walk.

`node_evaluator(fw)` is the one place that chooses: VECTORISED when the framework vectorises
(`Framework.vectorise`), else PER_NODE.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import Protocol

from ...framework import CycleState, Diagnosis, Framework
from ...framework.vector.views import ScoreTable
from ...model import NodeInfo, Pod
from .per_node import PerNodeEvaluator
from .vectorised import VectorisedEvaluator


class NodeEvaluator(Protocol):
    """Which of these nodes pass, with which statuses, and their scores (see the module)."""

    name: str

    def nodes_allowed(self, fw: Framework, nodes: Sequence[NodeInfo], allowed: AbstractSet[str]
                      ) -> list[NodeInfo]: ...

    def pass_filters(self, fw: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis,
                     nodes: Sequence[NodeInfo], to_find: int, start: int) -> tuple[list[NodeInfo], int]: ...

    def score(self, fw: Framework, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> ScoreTable: ...


PER_NODE: NodeEvaluator = PerNodeEvaluator()
VECTORISED: NodeEvaluator = VectorisedEvaluator()


def node_evaluator(fw: Framework) -> NodeEvaluator:
    """The evaluator of fw's cycles."""
    return VECTORISED if fw.vectorise else PER_NODE


__all__ = ["PER_NODE", "VECTORISED", "NodeEvaluator", "node_evaluator"]
