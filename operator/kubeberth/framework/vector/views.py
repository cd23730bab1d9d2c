"""Node views over the snapshot's arrays, the score table, and when a framework takes the
vectorised path."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol

import numpy as np

from ...cache.node_arrays import NodeArrays
from ...cache.snapshot import Snapshot
from ...model import NodeInfo
from ..types import NodePluginScores


class VectorHandle(Protocol):
    """What `arrays_for` and `snapshot_arrays` read of a plugin's Handle (every
    `kubeberth.framework.Handle` is one): the cycle's snapshot and whether the framework takes
    the vectorised path, from how many nodes on. Declared here so that the vectorised path does
    not depend on the Handle, which depends on the extension points, which take its views."""

    @property
    def snapshot(self) -> Snapshot: ...

    @property
    def vectorise(self) -> bool: ...

    @property
    def vector_min_nodes(self) -> int: ...


class NodeView(list):
    """NodeInfos (a list, as the per-node methods expect) that also know their rows in the
    snapshot's NodeArrays: `idx[k]` is the row of `self[k]`, or `idx` is None when the view is
    the whole snapshot in order."""

    __slots__ = ("_taken", "arrays", "idx")

    def __init__(self, items: Iterable[NodeInfo], arrays: NodeArrays, idx: np.ndarray | None = None) -> None:
        super().__init__(items)
        self.arrays = arrays
        self.idx = idx
        self._taken: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def take(self, column: np.ndarray) -> np.ndarray:
        """`column` (one entry per snapshot node) restricted to this view, in its order
        (taken once per column: plugins share it and must not write to it)."""
        if self.idx is None:
            return column
        got = self._taken.get(id(column))
        if got is None or got[0] is not column:
            # The entry holds the column itself, so that its id cannot be reused meanwhile.
            got = self._taken[id(column)] = (column, column[self.idx])
        return got[1]


class AllNodes:
    """The whole snapshot, in order, as filter_all sees it: like a NodeView with `idx` None,
    without copying the node list (len, indexing and iteration go to the snapshot's list)."""

    __slots__ = ("arrays", "idx", "items")

    def __init__(self, items: Sequence[NodeInfo], arrays: NodeArrays) -> None:
        self.items = items
        self.arrays = arrays
        self.idx = None

    def take(self, column: np.ndarray) -> np.ndarray:
        return column

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, k: int) -> NodeInfo:
        return self.items[k]

    def __iter__(self) -> Iterator[NodeInfo]:
        return iter(self.items)


class ScoreTable:
    """The scores of a vectorised Score phase: totals and weighted per-plugin arrays, aligned
    with `nodes`. `to_list()` gives the NodePluginScores the per-node path returns."""

    __slots__ = ("_list", "nodes", "per_plugin", "totals")

    def __init__(self, nodes: Sequence[NodeInfo], totals: np.ndarray, per_plugin: dict[str, np.ndarray]) -> None:
        self.nodes = nodes
        self.totals = totals
        self.per_plugin = per_plugin
        self._list: list[NodePluginScores] | None = None

    def name(self, k: int) -> str:
        return self.nodes[k].name

    def to_list(self) -> list[NodePluginScores]:
        if self._list is None:
            cols = {name: arr.tolist() for name, arr in self.per_plugin.items()}
            totals = self.totals.tolist()
            out = []
            for k, ni in enumerate(self.nodes):
                out.append(NodePluginScores(ni.name, {p: col[k] for p, col in cols.items()}, totals[k]))
            self._list = out
        return self._list

    def __len__(self) -> int:
        return len(self.nodes)


def arrays_for(handle: VectorHandle | None, nodes: Sequence[NodeInfo]) -> NodeArrays | None:
    """The snapshot's NodeArrays when a plugin may take its vectorised path over `nodes` (the
    whole snapshot, on a framework that vectorises), else None."""
    if handle is None or not handle.vectorise or len(nodes) < handle.vector_min_nodes:
        return None
    snapshot = handle.snapshot
    if snapshot.node_infos is not nodes:
        return None
    return snapshot.arrays()


def snapshot_arrays(handle: VectorHandle | None) -> NodeArrays | None:
    """The snapshot's NodeArrays when the framework vectorises this cycle, else None (for
    plugins whose PreFilter/PreScore read the whole snapshot whatever nodes they are given)."""
    if handle is None or not handle.vectorise or len(handle.snapshot) < handle.vector_min_nodes:
        return None
    return handle.snapshot.arrays()
