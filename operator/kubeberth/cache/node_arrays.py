"""Column arrays of a snapshot's node state, for the vectorised filter/score path.

Position i of every array is `snapshot.node_infos[i]`. The snapshot keeps them current
incrementally: a replaced NodeInfo updates its row (a pod added or removed touches a few
integers; a changed Node also its allocatable, taints, labels), a reordered node list permutes
the rows and re-reads only the NodeInfos that are new. Nothing here decides anything: plugins
read the columns in their `filter_all` / `score_all` and must agree with their per-node code.

Columns
- resources: `alloc[:, r]`, `req[:, r]` (requested), `nz[:, r]` (non-zero requested; cpu and
  memory only) for r in CPU, MEM, EPH, PODS (allowed pods for alloc; pod count for req);
- `scalar`: the node allocates or has requested some scalar resource (extended, hugepages...);
- `ports`: some host port is in use; `images`: the node lists images;
- `unschedulable`, `missing` (NodeInfo without node);
- `taint_id`: interned taint list (0 = no taints), `taint_sets[id]` the taints; `hard_taints`
  (some NoSchedule/NoExecute taint), `prefer_taints` (some PreferNoSchedule taint);
- labels, per key on first use: `label_codes(key)` (value code + 1 per node, 0 = absent) with
  `label_values(key)` (code -> value); `label_version` changes whenever any node's labels
  (or the node list) change, so matches cached under it stay valid while it does not;
- annotations, the same way: `annotation_codes(key)`, `annotation_values(key)`,
  `annotation_code_of(key, value)`; `annotation_version` changes whenever the node list
  changes or, once some annotation column was asked for, any node's annotations change;
- `memo`: a dict the framework's helpers keep their own per-arrays caches in (`node_column`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..model import Node, NodeInfo
from ..model.taints import NO_EXECUTE, NO_SCHEDULE, PREFER_NO_SCHEDULE

CPU, MEM, EPH, PODS = range(4)
NUM_RES = 4

_HARD = (NO_SCHEDULE, NO_EXECUTE)


class _LabelColumn:
    __slots__ = ("codes", "index", "values")

    def __init__(self, n: int) -> None:
        self.codes = np.zeros(n, dtype=np.int32)
        self.values: list[str] = [""]          # code 0: absent
        self.index: dict[str, int] = {}

    def code(self, value: str | None) -> int:
        if value is None:
            return 0
        c = self.index.get(value)
        if c is None:
            c = self.index[value] = len(self.values)
            self.values.append(value)
        return c


class NodeArrays:
    """The snapshot's node state as columns, one row per node (row i is `infos[i]`; `nodes[i]` its
    Node or None, `names`, `pos` name -> row, `n` rows): see the module docstring for the columns.
    Read-only for plugins; the snapshot keeps it current."""

    __slots__ = ("_annotations", "_exact", "_labels", "_taint_index", "alloc", "annotation_version", "changes",
                 "epoch", "generation", "hard_taints", "images", "infos", "label_version", "memo", "missing", "n",
                 "names", "node_version", "nodes", "nz", "ports", "pos", "prefer_taints", "req", "scalar",
                 "taint_id", "taint_sets", "unschedulable")

    _versions = 0

    def __init__(self, infos: Sequence[NodeInfo] = ()) -> None:
        self._taint_index: dict[tuple[Any, ...], int] = {(): 0}
        self.taint_sets: list[tuple[Any, ...]] = [()]
        self._labels: dict[str, _LabelColumn] = {}
        self._annotations: dict[str, _LabelColumn] = {}
        self.memo: dict[Any, Any] = {}
        self.label_version = self._bump()
        self.annotation_version = self.label_version
        self.node_version = self.label_version
        self.generation = 0  # bumped on every change (rows or order)
        # Rows updated since the node list was last (re)ordered; a new epoch starts with each
        # reorder. Caches of per-node values recompute only these rows (see RowCache).
        self.epoch = 0
        self.changes: list[int] = []
        self._exact = (-1, False)
        self._alloc_columns(0)
        self.rebuild(infos)

    @classmethod
    def _bump(cls) -> int:
        cls._versions += 1
        return cls._versions

    def _alloc_columns(self, n: int) -> None:
        self.n = n
        self.infos: list[NodeInfo] = []
        self.nodes: list[Node | None] = []
        self.names: list[str] = []
        self.pos: dict[str, int] = {}
        self.alloc = np.zeros((n, NUM_RES), dtype=np.int64)
        self.req = np.zeros((n, NUM_RES), dtype=np.int64)
        self.nz = np.zeros((n, 2), dtype=np.int64)
        self.scalar = np.zeros(n, dtype=bool)
        self.ports = np.zeros(n, dtype=bool)
        self.images = np.zeros(n, dtype=bool)
        self.unschedulable = np.zeros(n, dtype=bool)
        self.missing = np.zeros(n, dtype=bool)
        self.taint_id = np.zeros(n, dtype=np.int32)
        self.hard_taints = np.zeros(n, dtype=bool)
        self.prefer_taints = np.zeros(n, dtype=bool)

    # ---- maintenance ---------------------------------------------------------------------
    def rebuild(self, infos: Sequence[NodeInfo]) -> None:
        """Take a new node list. Rows of NodeInfos already held (the same objects) are moved,
        the others read."""
        old_pos, old_infos = self.pos, self.infos
        n = len(infos)
        perm = np.empty(n, dtype=np.intp)
        fresh: list[int] = []
        for i, ni in enumerate(infos):
            j = old_pos.get(ni.name)
            if j is not None and old_infos[j] is ni:
                perm[i] = j
            else:
                perm[i] = -1
                fresh.append(i)
        keep = perm >= 0
        same_order = n == len(old_infos) and not fresh and bool(np.all(perm == np.arange(n)))
        if same_order:
            return
        old_nodes = self.nodes
        old: tuple[np.ndarray, ...] = (
            self.alloc, self.req, self.nz, self.scalar, self.ports, self.images, self.unschedulable,
            self.missing, self.taint_id, self.hard_taints, self.prefer_taints)
        old_labels = {k: col.codes for k, col in self._labels.items()}
        old_annotations = {k: col.codes for k, col in self._annotations.items()}
        self._alloc_columns(n)
        new: tuple[np.ndarray, ...] = (
            self.alloc, self.req, self.nz, self.scalar, self.ports, self.images, self.unschedulable,
            self.missing, self.taint_id, self.hard_taints, self.prefer_taints)
        src = perm[keep]
        for o, a in zip(old, new):
            a[keep] = o[src]
        self.infos = list(infos)
        self.names = [ni.name for ni in infos]
        self.pos = {name: i for i, name in enumerate(self.names)}
        self.nodes = [old_nodes[j] if j >= 0 else None for j in perm.tolist()]
        for columns, old_codes in ((self._labels, old_labels), (self._annotations, old_annotations)):
            for key, col in columns.items():
                codes = np.zeros(n, dtype=np.int32)
                codes[keep] = old_codes[key][src]
                col.codes = codes
        for i in fresh:
            self._read(i, infos[i], force_node=True)
        self.label_version = self._bump()
        self.annotation_version = self.label_version
        self.node_version = self.label_version
        self.generation += 1
        self.epoch = self._bump()
        self.changes = []

    def update(self, i: int, ni: NodeInfo) -> None:
        """NodeInfo `ni` replaced the one at position i."""
        self.infos[i] = ni
        name = ni.name
        if name != self.names[i]:  # not expected (a node keeps its place), but keep names/pos true
            if self.pos.get(self.names[i]) == i:
                del self.pos[self.names[i]]
            self.names[i] = name
            self.pos[name] = i
        self._read(i, ni, force_node=False)
        self.generation += 1
        changes = self.changes
        if len(changes) > 4 * self.n + 1024:
            # Nobody needs that much history: start a new epoch (caches recompute everything).
            self.epoch = self._bump()
            changes.clear()
        changes.append(i)

    def _read(self, i: int, ni: NodeInfo, *, force_node: bool) -> None:
        req = ni.requested
        nz = ni.non_zero_requested
        self.req[i] = (req.milli_cpu, req.memory, req.ephemeral_storage, len(ni.pods))
        self.nz[i] = (nz.milli_cpu, nz.memory)
        self.ports[i] = bool(ni.used_ports)
        node = ni.node
        old = self.nodes[i]
        if node is not old or force_node:
            self.nodes[i] = node
            self._read_node(i, node, old)
        self.scalar[i] = bool(req.scalar) or (node is not None and bool(node.allocatable.scalar))

    def _read_node(self, i: int, node: Node | None, old: Node | None) -> None:
        self.node_version = self._bump()
        if node is None:
            self.alloc[i] = 0
            self.missing[i] = True
            self.unschedulable[i] = False
            self.images[i] = False
            self.taint_id[i] = 0
            self.hard_taints[i] = False
            self.prefer_taints[i] = False
            labels: dict[str, str] = {}
        else:
            a = node.allocatable
            self.alloc[i] = (a.milli_cpu, a.memory, a.ephemeral_storage, a.allowed_pod_number)
            self.missing[i] = False
            self.unschedulable[i] = node.unschedulable
            self.images[i] = bool(node.images)
            taints = node.taints
            if taints:
                taint_key = tuple((t.key, t.value, t.effect) for t in taints)
                tid = self._taint_index.get(taint_key)
                if tid is None:
                    tid = self._taint_index[taint_key] = len(self.taint_sets)
                    self.taint_sets.append(tuple(taints))
                self.taint_id[i] = tid
                self.hard_taints[i] = any(t.effect in _HARD for t in taints)
                self.prefer_taints[i] = any(t.effect == PREFER_NO_SCHEDULE for t in taints)
            else:
                self.taint_id[i] = 0
                self.hard_taints[i] = False
                self.prefer_taints[i] = False
            labels = node.labels
        if old is None or old.labels != labels or (node is None) != (old is None):
            for key, col in self._labels.items():
                col.codes[i] = col.code(labels.get(key))
            self.label_version = self._bump()
        if self._annotations:
            # Only once some plugin reads annotation columns: the annotations are parsed lazily.
            annotations = node.annotations if node is not None else {}
            if old is None or (node is None) != (old is None) or old.annotations != annotations:
                for key, col in self._annotations.items():
                    col.codes[i] = col.code(annotations.get(key))
                self.annotation_version = self._bump()

    def small_values(self, limit: int) -> bool:
        """Every allocatable and requested amount is below `limit` (checked once per generation)."""
        gen, ok = self._exact
        if gen != self.generation:
            ok = self.n == 0 or bool(max(int(self.alloc.max()), int(self.req.max()), int(self.nz.max())) < limit)
            self._exact = (self.generation, ok)
        return ok

    def changed_since(self, epoch: int, seen: int) -> list[int] | None:
        """Rows updated since a cache saw `seen` changes of `epoch`; None: everything may have."""
        if epoch != self.epoch or seen > len(self.changes):
            return None
        return self.changes[seen:]

    # ---- labels ----------------------------------------------------------------------------
    def _column(self, key: str) -> _LabelColumn:
        col = self._labels.get(key)
        if col is None:
            col = _LabelColumn(self.n)
            codes = col.codes
            for i, node in enumerate(self.nodes):
                if node is not None:
                    v = node.labels.get(key)
                    if v is not None:
                        codes[i] = col.code(v)
            self._labels[key] = col
        return col

    def label_codes(self, key: str) -> np.ndarray:
        """Per node, the code of its value for `key` (0: no such label)."""
        return self._column(key).codes

    def label_values(self, key: str) -> list[str]:
        """code -> value for `key` (index 0 is the absent value)."""
        return self._column(key).values

    def label_code_of(self, key: str, value: str) -> int:
        """The code of `value` for `key`, 0 when no node has it."""
        return self._column(key).index.get(value, 0)

    # ---- annotations -----------------------------------------------------------------------
    def _annotation_column(self, key: str) -> _LabelColumn:
        col = self._annotations.get(key)
        if col is None:
            col = _LabelColumn(self.n)
            codes = col.codes
            for i, node in enumerate(self.nodes):
                if node is not None:
                    v = node.annotations.get(key)
                    if v is not None:
                        codes[i] = col.code(v)
            self._annotations[key] = col
        return col

    def annotation_codes(self, key: str) -> np.ndarray:
        """Per node, the code of its annotation `key`'s value (0: no such annotation)."""
        return self._annotation_column(key).codes

    def annotation_values(self, key: str) -> list[str]:
        """code -> value for annotation `key` (index 0 is the absent value)."""
        return self._annotation_column(key).values

    def annotation_code_of(self, key: str, value: str) -> int:
        """The code of `value` for annotation `key`, 0 when no node has it."""
        return self._annotation_column(key).index.get(value, 0)
