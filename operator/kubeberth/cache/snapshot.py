"""A consistent view of all NodeInfos for one scheduling cycle."""

from __future__ import annotations

from collections.abc import Iterable

from ..model import Node, NodeInfo, Pod


class Snapshot:
    __slots__ = ("by_name", "generation", "have_pods_with_affinity",
                 "have_pods_with_required_anti_affinity", "node_infos")

    def __init__(self, node_infos: Iterable[NodeInfo] = (), generation: int = 0) -> None:
        self.node_infos: list[NodeInfo] = list(node_infos)
        self.generation = generation
        self.refresh()

    def refresh(self) -> None:
        """Recompute the derived lists after node_infos changed."""
        self.by_name = {ni.name: ni for ni in self.node_infos}
        self.have_pods_with_affinity = [ni for ni in self.node_infos if ni.pods_with_affinity]
        self.have_pods_with_required_anti_affinity = [
            ni for ni in self.node_infos if ni.pods_with_required_anti_affinity]
        counts: dict[str, int] = {}
        for ni in self.node_infos:
            if ni.node is None:
                continue
            for name in {n for img in ni.node.images for n in img.names}:
                counts[name] = counts.get(name, 0) + 1
        for ni in self.node_infos:
            ni.image_num_nodes = counts

    @classmethod
    def from_objects(cls, nodes: Iterable[Node], pods: Iterable[Pod]) -> Snapshot:
        infos = {n.name: NodeInfo(n) for n in nodes}
        for p in pods:
            if p.node_name in infos:
                infos[p.node_name].add_pod(p)
        return cls(infos.values())

    def get(self, name: str) -> NodeInfo | None:
        return self.by_name.get(name)

    def __len__(self) -> int:
        return len(self.node_infos)
