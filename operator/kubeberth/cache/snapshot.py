"""A consistent view of all NodeInfos for one scheduling cycle."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, SupportsIndex

from ..model import Node, NodeInfo, Pod
from .node_arrays import NodeArrays


class _TrackedList(list):
    """The snapshot's node list. Replacing one entry (what the cache does for a changed node)
    and changing a NodeInfo of the list in place (tests do) are remembered, so that the node
    arrays update those rows only; any other change to the list makes them re-read it."""

    __slots__ = ("dirty", "reordered", "touched")

    def __init__(self, items: Iterable[NodeInfo] = ()) -> None:
        super().__init__(items)
        self.dirty: set[int] = set()
        self.touched: list[NodeInfo] = []
        self.reordered = True
        for ni in self:
            ni.owner = self

    def touch(self, ni: NodeInfo) -> None:
        """`ni` changed in place (NodeInfo calls this)."""
        self.touched.append(ni)

    def __setitem__(self, index: Any, value: Any) -> None:
        super().__setitem__(index, value)
        if isinstance(index, int):
            self.dirty.add(index if index >= 0 else index + len(self))
            value.owner = self
        else:
            self._own()

    def _own(self) -> None:
        self.reordered = True
        for ni in self:
            ni.owner = self

    def append(self, value: Any) -> None:
        super().append(value)
        self._own()

    def extend(self, values: Iterable[Any]) -> None:
        super().extend(values)
        self._own()

    def insert(self, index: SupportsIndex, value: Any) -> None:
        super().insert(index, value)
        self._own()

    def pop(self, index: SupportsIndex = -1) -> Any:
        self.reordered = True
        return super().pop(index)

    def remove(self, value: Any) -> None:
        super().remove(value)
        self.reordered = True

    def clear(self) -> None:
        super().clear()
        self.reordered = True

    def sort(self, *args: Any, **kwargs: Any) -> None:
        super().sort(*args, **kwargs)
        self.reordered = True

    def reverse(self) -> None:
        super().reverse()
        self.reordered = True

    def __delitem__(self, index: Any) -> None:
        super().__delitem__(index)
        self.reordered = True

    def __iadd__(self, values: Iterable[Any]) -> _TrackedList:  # type: ignore[misc]
        super().__iadd__(values)
        self._own()
        return self


class Snapshot:
    """The cycle's NodeInfos (`handle.snapshot`): `node_infos` in the scheduler's order,
    `get(name)`, `len()`, the lists of nodes with pods that have (anti-)affinity, and
    `arrays()`, the NodeArrays of the vectorised path. Read-only for plugins: the cache replaces
    a changed NodeInfo instead of changing it."""

    __slots__ = ("_arrays", "_have_anti", "_have_pods_with_affinity", "_node_infos", "by_name", "generation",
                 "placement")

    def __init__(self, node_infos: Iterable[NodeInfo] = (), generation: int = 0) -> None:
        self._arrays: NodeArrays | None = None
        # The names of the nodes of the placement a pod group is being tried in (upstream's
        # AssumePlacement); None: every node. Pods of the group see only these nodes.
        self.placement: frozenset[str] | None = None
        self._have_pods_with_affinity: list[NodeInfo] | None = None
        self._have_anti: list[NodeInfo] | None = None
        self.node_infos = list(node_infos)
        self.generation = generation
        self.refresh()

    @property
    def have_pods_with_affinity(self) -> list[NodeInfo]:
        """The NodeInfos with pods that have pod affinity or anti-affinity (built on first use)."""
        if self._have_pods_with_affinity is None:
            self._have_pods_with_affinity = [ni for ni in self._node_infos if ni.pods_with_affinity]
        return self._have_pods_with_affinity

    @have_pods_with_affinity.setter
    def have_pods_with_affinity(self, infos: list[NodeInfo] | None) -> None:
        self._have_pods_with_affinity = infos

    @property
    def have_pods_with_required_anti_affinity(self) -> list[NodeInfo]:
        """The NodeInfos with pods that have required anti-affinity (built on first use)."""
        if self._have_anti is None:
            self._have_anti = [ni for ni in self._node_infos if ni.pods_with_required_anti_affinity]
        return self._have_anti

    @have_pods_with_required_anti_affinity.setter
    def have_pods_with_required_anti_affinity(self, infos: list[NodeInfo] | None) -> None:
        self._have_anti = infos

    def affinity_lists_changed(self) -> None:
        """A NodeInfo entering or in have_pods_with_(required_anti_)affinity changed."""
        self._have_pods_with_affinity = None
        self._have_anti = None

    @property
    def node_infos(self) -> list[NodeInfo]:
        return self._node_infos

    @node_infos.setter
    def node_infos(self, infos: Iterable[NodeInfo]) -> None:
        self._node_infos = _TrackedList(infos)

    def refresh(self) -> None:
        """Recompute the derived lists after node_infos changed."""
        self.by_name = {ni.name: ni for ni in self.node_infos}
        self.affinity_lists_changed()
        counts: dict[str, int] = {}
        for ni in self.node_infos:
            if ni.node is None:
                continue
            for name in {n for img in ni.node.images for n in img.names}:
                counts[name] = counts.get(name, 0) + 1
        for ni in self.node_infos:
            ni.image_num_nodes = counts
        self._node_infos.reordered = True

    def arrays(self) -> NodeArrays:
        """The node arrays of this snapshot, brought up to date with its node list: replaced
        entries, NodeInfos changed in place (they tell their list) and reorders."""
        infos = self._node_infos
        arrays = self._arrays
        if arrays is None:
            arrays = self._arrays = NodeArrays(infos)
        elif infos.reordered:
            arrays.rebuild(infos)
        elif infos.dirty:
            for i in infos.dirty:
                arrays.update(i, infos[i])
        if infos.touched:
            # Changed in place: same object, so rebuild() kept its row as it was.
            pos = arrays.pos
            for ni in dict.fromkeys(infos.touched):
                row = pos.get(ni.name)
                if row is not None and infos[row] is ni:
                    arrays.update(row, ni)
            infos.touched.clear()
        infos.dirty.clear()
        infos.reordered = False
        return arrays

    @classmethod
    def from_objects(cls, nodes: Iterable[Node], pods: Iterable[Pod]) -> Snapshot:
        infos = {n.name: NodeInfo(n) for n in nodes}
        for p in pods:
            if p.node_name in infos:
                infos[p.node_name].add_pod(p)
        return cls(infos.values())

    def get(self, name: str) -> NodeInfo | None:
        return self.by_name.get(name)

    def assume_placement(self, names: Iterable[str] | None) -> None:
        """Restrict the nodes a pod sees to `names` (None: all); a placement of every node is none,
        as upstream's."""
        if names is None:
            self.placement = None
            return
        chosen = frozenset(names)
        missing = sorted(chosen - self.by_name.keys())
        if missing:
            raise KeyError(f"node {missing[0]} in placement is not present in snapshot")
        self.placement = None if len(chosen) == len(self.node_infos) else chosen

    def nodes_in_placement(self) -> list[NodeInfo]:
        """The nodes of the assumed placement in the snapshot's order (all of them when none)."""
        if self.placement is None:
            return self.node_infos
        chosen = self.placement
        return [ni for ni in self.node_infos if ni.name in chosen]

    def num_nodes_in_placement(self) -> int:
        return len(self.node_infos) if self.placement is None else len(self.placement)

    def __len__(self) -> int:
        return len(self.node_infos)
