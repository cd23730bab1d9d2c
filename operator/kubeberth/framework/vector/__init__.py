"""The vectorised filter/score path's plugin API: node views over the snapshot's arrays, masks,
keys, caches and score helpers. Provisional, versioned apart from `kubeberth.framework`.

`kubeberth.framework` is the stable contract a plugin is written against (extension points,
Status, CycleState, Handle, the views of Pod, Node and NodeInfo, events and hints, the model's
helpers, Registry). This package is the fast path's: what a plugin needs only for its optional
`filter_all` / `filter_statuses` / `score_all` / `normalize_all` hooks. Those hooks are an
optimisation over per-node methods a plugin always has, so their surface is allowed to follow
the vectorised path as it changes.

Stability (`VECTOR_API_VERSION`, "major.minor", apart from the core's `API_VERSION`):

- names added to this package's `__all__` bump the minor number; a name that changes (its
  signature, its meaning, a column's dtype or layout) or goes bumps the major number;
- unlike the core, a major bump of this surface may come in any kubeberth release, one that
  bumps only the core's minor number or leaves it as it is: the core's `API_VERSION` never moves
  for a change here, and no deprecation period is promised (changes are listed in the README's
  plugin API section);
- a plugin that uses this package pins it as it pins the core: `requires_vector_api = ">=1.0,<2"`
  (a PEP 440 specifier of `VECTOR_API_VERSION`s; a plugin whose pin does not fit is refused when
  it is loaded, with both versions named, as `requires_api` is).

Vector API 1.0 is what core API 1.3 exported of the vectorised path, unchanged: those names
moved here in core API 1.4 and stay importable from `kubeberth.framework` under 1.x as
deprecated aliases (a DeprecationWarning names this package).

The hooks (the bases in `kubeberth.framework` declare them; a plugin overrides those it can):

- `filter_all(state, pod, nodes: NodeView | AllNodes) -> np.ndarray | None`: a bool array, True
  where `filter` would return success, for every node of the view (None: not vectorisable for
  this pod; the runner then calls `filter` per node). Statuses are never built here: for the
  nodes that fail, the runner calls `filter` (or `filter_statuses(state, pod, arrays, rows)`,
  the statuses of the rejected rows at once) to get the exact status upstream reports.
- `score_all(state, pod, nodes: NodeView) -> np.ndarray | None`: the raw `score` of every node
  (int64), or None for the per-node path; `zero_scores(len(nodes))` when all are 0 for this
  pod (the runner then skips the plugin's column, after its `normalize_all` kept it as it is).
- `normalize_all(state, pod, nodes: NodeView, scores: np.ndarray) -> np.ndarray | None`: what
  `normalize_score` would make of `scores`, or None to go through `normalize_score`.

They must decide exactly as the per-node methods do; tests/framework/test_vectorised.py
compares both paths on random clusters and pods. The runner takes the vectorised path on
clusters of 64 nodes or more.

What they read: `nodes.arrays` (the snapshot's `NodeArrays`: resource columns, label and
annotation columns, taints; `nodes.take(column)` restricts a whole-snapshot column to the view;
`snapshot_arrays(handle)` and `arrays_for(handle, nodes)` give the arrays to PreFilter/PreScore
when the cycle vectorises), masks built from those (`labels_mask`, `selector_mask`,
`requirement_mask`, `annotations_mask`, `annotation_requirement_mask`, ...), and columns of
one's own: `node_column(nodes, key, fn)` computes `fn(node)` once per Node object and keeps it
with the snapshot across cycles; `RowCache` does the same for functions of a NodeInfo (its pods
too), `MaskCache` keeps masks while no node's labels or annotations change.

Constants (names without a docstring of their own):

- `VECTOR_API_VERSION`: this surface's version, "major.minor" (a plugin pins it with
  `requires_vector_api`).
- Resource columns of `NodeArrays.alloc` / `req` (int64, one row per node): `COL_CPU` (milli-CPU),
  `COL_MEM` (bytes), `COL_EPH` (ephemeral storage, bytes), `COL_PODS` (allowed pods in `alloc`,
  pods on the node in `req`); `nz[:, COL_CPU]`, `nz[:, COL_MEM]` are the non-zero requests.
"""

from ...cache.node_arrays import CPU as COL_CPU
from ...cache.node_arrays import EPH as COL_EPH
from ...cache.node_arrays import MEM as COL_MEM
from ...cache.node_arrays import PODS as COL_PODS
from ...cache.node_arrays import NodeArrays
from ..plugin_api import VECTOR_API_VERSION
from .caches import MaskCache, RowCache, node_column
from .masks import (
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
from .scores import default_normalize_all, is_zero_scores, zero_scores
from .views import AllNodes, NodeView, arrays_for, snapshot_arrays

# Vector API 1.0: what core API 1.3 exported of the vectorised path.
__all__ = [
    "COL_CPU", "COL_EPH", "COL_MEM", "COL_PODS", "VECTOR_API_VERSION", "AllNodes", "MaskCache", "NodeArrays",
    "NodeView", "RowCache", "annotation_requirement_mask", "annotations_mask", "arrays_for", "default_normalize_all",
    "is_zero_scores", "label_selector_key", "labels_mask", "name_field_mask", "node_column",
    "required_node_affinity_mask", "requirement_key", "requirement_mask", "selector_key", "selector_mask",
    "snapshot_arrays", "term_key", "term_mask", "untolerated_free_mask", "zero_scores",
]
