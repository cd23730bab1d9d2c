"""The vectorised filter/score path: node views over the snapshot's arrays and shared helpers.

A plugin may implement, next to its per-node methods:

- `filter_all(state, pod, nodes: NodeView) -> np.ndarray | None`: a bool array, True where
  `filter` would return success, for every node of the view (None: not vectorisable for this
  pod; the runner then calls `filter` per node). Statuses are never built here: for the nodes
  that fail, the runner calls `filter` to get the exact status upstream reports.
- `score_all(state, pod, nodes: NodeView) -> np.ndarray | None`: the raw `score` of every node
  (int64), or None for the per-node path; `zero_scores(len(nodes))` when all are 0 for this
  pod (the runner then skips the plugin's column, after its `normalize_all` kept it as it is).
- `normalize_all(state, pod, nodes: NodeView, scores: np.ndarray) -> np.ndarray | None`: what
  `normalize_score` would make of `scores`, or None to go through `normalize_score`.

They must decide exactly as the per-node methods do; tests/framework/test_vectorised.py
compares both paths on random clusters and pods.

What they read: `nodes.arrays` (the snapshot's NodeArrays: resource columns, label and
annotation columns, taints; `nodes.take(column)` restricts a whole-snapshot column to the view),
masks built from those (`labels_mask`, `selector_mask`, `requirement_mask`, `annotations_mask`,
`annotation_requirement_mask`, ...), and columns of one's own: `node_column(nodes, key, fn)`
computes `fn(node)` once per Node object and keeps it with the snapshot across cycles;
`RowCache` does the same for functions of a NodeInfo (its pods too), `MaskCache` keeps masks
while no node's labels or annotations change.
"""

from .caches import MaskCache, RowCache, node_column
from .masks import (
    OBJECT_NAME_FIELD,
    annotation_requirement_mask,
    annotations_mask,
    label_selector_key,
    labels_mask,
    name_field_mask,
    required_node_affinity_mask,
    requirement_key,
    requirement_mask,
    selector_key,
    selector_mask,
    term_key,
    term_mask,
    untolerated_free_mask,
)
from .scores import default_normalize_all, is_zero_scores, select_index, zero_scores
from .views import AllNodes, NodeView, ScoreTable, arrays_for, snapshot_arrays

__all__ = [
    "OBJECT_NAME_FIELD",
    "AllNodes",
    "MaskCache",
    "NodeView",
    "RowCache",
    "ScoreTable",
    "annotation_requirement_mask",
    "annotations_mask",
    "arrays_for",
    "default_normalize_all",
    "is_zero_scores",
    "label_selector_key",
    "labels_mask",
    "name_field_mask",
    "node_column",
    "required_node_affinity_mask",
    "requirement_key",
    "requirement_mask",
    "select_index",
    "selector_key",
    "selector_mask",
    "snapshot_arrays",
    "term_key",
    "term_mask",
    "untolerated_free_mask",
    "zero_scores",
]
