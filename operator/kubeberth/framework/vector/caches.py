"""Per-node values and masks kept across cycles, valid while the node arrays say so."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...cache.node_arrays import NodeArrays


class RowCache:
    """Per-node values of functions of one node's state (say, a plugin's score for a given pod
    request), for every row of a NodeArrays, kept current by recomputing only the rows updated
    since: `compute_all(arrays)` fills a whole column (vectorised), `compute_row(node_info)` one
    value (the per-node code). At most `limit` keys are kept."""

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
    """Masks keyed by a structural key, valid for one `label_version` of one NodeArrays."""

    __slots__ = ("_arrays", "_masks", "_version", "limit")

    def __init__(self, limit: int = 256) -> None:
        self._arrays: Any = None
        self._version = -1
        self._masks: dict[Any, np.ndarray] = {}
        self.limit = limit

    def get(self, arrays: NodeArrays, key: Any) -> np.ndarray | None:
        if self._arrays is not arrays or self._version != arrays.label_version:
            self._arrays = arrays
            self._version = arrays.label_version
            self._masks = {}
            return None
        return self._masks.get(key)

    def put(self, key: Any, mask: np.ndarray) -> np.ndarray:
        if len(self._masks) >= self.limit:
            self._masks.clear()
        mask.flags.writeable = False
        self._masks[key] = mask
        return mask
