"""Per-node values and masks kept across cycles, valid while the node arrays say so."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import DTypeLike

from ...cache.node_arrays import NodeArrays
from ...model import Node

if TYPE_CHECKING:
    from .views import AllNodes, NodeView


class RowCache:
    """Per-node values of functions of one node's state (say, a plugin's score for a given pod
    request), for every row of a NodeArrays, kept current by recomputing only the rows updated
    since: `compute_all(arrays)` fills a whole column (vectorised), `compute_row(node_info)` one
    value (the per-node code). At most `limit` keys are kept.

    `get(arrays, key, compute_all, compute_row)` returns the column (one entry per snapshot
    node; None when `compute_all` returned None). The column is updated in place when rows
    change: read it, never write to it. A plugin holds its RowCache (an attribute set in
    `__init__`); for a function of the Node object alone, `node_column` is simpler."""

    __slots__ = ("_arrays", "_entries", "limit")

    def __init__(self, limit: int = 16) -> None:
        self._arrays: Any = None
        self._entries: dict[Any, list[Any]] = {}  # key -> [values, epoch, seen]
        self.limit = limit

    def get(self, arrays: NodeArrays, key: Any, compute_all: Any, compute_row: Any) -> np.ndarray | None:
        if self._arrays is not arrays:
            self._arrays = arrays
            self._entries = {}
        entry = self._entries.get(key)
        if entry is not None:
            rows = arrays.changed_since(entry[1], entry[2])
            if rows is not None:
                values = entry[0]
                if rows:
                    infos = arrays.infos
                    for i in set(rows):
                        values[i] = compute_row(infos[i])
                    entry[2] = len(arrays.changes)
                return values  # type: ignore[no-any-return]
        values = compute_all(arrays)
        if values is None:
            return None
        if len(self._entries) >= self.limit:
            self._entries.pop(next(iter(self._entries)))
        self._entries[key] = [values, arrays.epoch, len(arrays.changes)]
        return values  # type: ignore[no-any-return]


# ---- scores --------------------------------------------------------------------------------


class MaskCache:
    """Masks (or any arrays) computed from the label and annotation columns, keyed by a
    structural key (`selector_key`, `term_key`, ...), valid for one `label_version` and
    `annotation_version` of one NodeArrays: `get(arrays, key)` is the array `put(key, mask)`
    stored while no node's labels or annotations (nor the node list) changed since, else None.
    `put` makes the array read-only and returns it. At most `limit` masks are kept."""

    __slots__ = ("_arrays", "_masks", "_version", "limit")

    def __init__(self, limit: int = 256) -> None:
        self._arrays: Any = None
        self._version = (-1, -1)
        self._masks: dict[Any, np.ndarray] = {}
        self.limit = limit

    def get(self, arrays: NodeArrays, key: Any) -> np.ndarray | None:
        version = (arrays.label_version, arrays.annotation_version)
        if self._arrays is not arrays or self._version != version:
            self._arrays = arrays
            self._version = version
            self._masks = {}
            return None
        return self._masks.get(key)

    def put(self, key: Any, mask: np.ndarray) -> np.ndarray:
        if len(self._masks) >= self.limit:
            self._masks.clear()
        mask.flags.writeable = False
        self._masks[key] = mask
        return mask


# ---- columns of one's own --------------------------------------------------------------------


class _Column:
    __slots__ = ("epoch", "nodes", "seen", "values")

    def __init__(self, values: np.ndarray, nodes: list[Node | None], epoch: int, seen: int) -> None:
        self.values = values
        self.nodes = nodes  # the Node each value was computed from
        self.epoch = epoch
        self.seen = seen


class _Columns:
    """node_column's entries for one NodeArrays (kept in its `memo`)."""

    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: dict[Hashable, _Column] = {}


NODE_COLUMNS_LIMIT = 64


def node_column(nodes: NodeArrays | NodeView | AllNodes, key: Hashable, fn: Callable[[Node], Any], *,
                dtype: DTypeLike = np.int64, missing: Any = 0) -> np.ndarray:
    """`fn(node)` for every node as a numpy column, computed once per node object and kept with
    the snapshot's NodeArrays across cycles: a plugin's own column for `filter_all` / `score_all`
    (an annotation parsed into a number, a label turned into a cost, anything of `node.raw`).

    `nodes` is what `filter_all` / `score_all` receive (a NodeView or AllNodes: the column comes
    back restricted to it, in its order) or a NodeArrays (`snapshot_arrays(handle)`,
    `nodes.arrays`: one entry per snapshot node). `key` names the column (hashable, say
    `(self.name, "cost")`): one key, one `fn` and `missing`, whichever plugin asks; `dtype` is
    the column's numpy dtype, `missing` the value for a row whose NodeInfo has no Node.

    When the snapshot changes, only the rows whose Node object was replaced are computed again
    (a changed node is a new Node; pods coming and going leave the column as it is); a new node
    list computes the column again. `fn` must depend on the Node alone (not on the pods, the
    pod being scheduled or the time): what depends on the pod goes into the key, or into
    a RowCache. The column is read-only; at most 64 keys are kept per snapshot."""
    arrays = nodes if isinstance(nodes, NodeArrays) else nodes.arrays
    memo = arrays.memo.get(_Columns)
    if not isinstance(memo, _Columns):
        memo = arrays.memo[_Columns] = _Columns()
    ckey = (key, np.dtype(dtype))
    entry = memo.entries.get(ckey)
    if entry is not None:
        rows = arrays.changed_since(entry.epoch, entry.seen)
        if rows is None:
            entry = None
        elif rows:
            values, had, now = entry.values, entry.nodes, arrays.nodes
            values.flags.writeable = True
            try:
                for i in set(rows):
                    node = now[i]
                    if node is not had[i]:
                        values[i] = missing if node is None else fn(node)
                        had[i] = node
            finally:
                values.flags.writeable = False
            entry.seen = len(arrays.changes)
    if entry is None:
        row_nodes = list(arrays.nodes)
        values = np.array([missing if node is None else fn(node) for node in row_nodes], dtype=dtype)
        if values.shape != (arrays.n,):
            raise ValueError(f"node_column {key!r}: fn must return one scalar per node for dtype {np.dtype(dtype)}")
        values.flags.writeable = False
        if len(memo.entries) >= NODE_COLUMNS_LIMIT:
            memo.entries.pop(next(iter(memo.entries)))
        entry = memo.entries[ckey] = _Column(values, row_nodes, arrays.epoch, len(arrays.changes))
    if isinstance(nodes, NodeArrays):
        return entry.values
    return nodes.take(entry.values)
