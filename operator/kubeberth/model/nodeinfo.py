"""NodeInfo: a node with the pods on it and their sums, as the cache keeps it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .node import Node
from .pod import HostPort, Pod
from .resources import Resource


def _has_affinity(pod: Pod) -> bool:
    aff = pod.affinity
    return bool(aff.get("podAffinity") or aff.get("podAntiAffinity"))


def _has_required_anti_affinity(pod: Pod) -> bool:
    anti = pod.affinity.get("podAntiAffinity") or {}
    return bool(anti.get("requiredDuringSchedulingIgnoredDuringExecution"))


_FLAGS_KEY = "NodeInfo.flags"


def _flags(pod: Pod) -> tuple[bool, bool, tuple[str, ...]]:
    """(has pod (anti-)affinity, has required anti-affinity, its PVC keys), parsed once per pod."""
    flags = pod.cache.get(_FLAGS_KEY)
    if flags is None:
        flags = pod.cache[_FLAGS_KEY] = (_has_affinity(pod), _has_required_anti_affinity(pod),
                                         tuple(_pvc_names(pod)))
    return flags


class NodeInfo:
    """Aggregate state of one node.

    `generation` grows on every change so snapshots copy only what changed.
    `image_num_nodes` is filled by the snapshot: for each image name on this
    node, on how many nodes of the cluster it is present.
    """

    __slots__ = (
        "generation",
        "image_num_nodes",
        "node",
        "non_zero_requested",
        "owner",
        "pods",
        "pods_with_affinity",
        "pods_with_required_anti_affinity",
        "pvc_ref_counts",
        "requested",
        "used_ports",
    )

    _next_generation = 0

    def __init__(self, node: Node | None = None, pods: Iterable[Pod] = ()) -> None:
        # The snapshot's node list holding this NodeInfo, told when it changes in place.
        self.owner: Any = None
        self.node = node
        self.pods: list[Pod] = []
        self.pods_with_affinity: list[Pod] = []
        self.pods_with_required_anti_affinity: list[Pod] = []
        self.requested = Resource()
        self.non_zero_requested = Resource()
        self.used_ports: list[HostPort] = []
        self.pvc_ref_counts: dict[str, int] = {}
        self.image_num_nodes: dict[str, int] = {}
        self.generation = self._bump()
        for p in pods:
            self.add_pod(p)

    @classmethod
    def _bump(cls) -> int:
        cls._next_generation += 1
        return cls._next_generation

    @property
    def name(self) -> str:
        return self.node.name if self.node else ""

    @property
    def allocatable(self) -> Resource:
        return self.node.allocatable if self.node else Resource()

    def set_node(self, node: Node) -> None:
        self.node = node
        self.generation = self._bump()
        if self.owner is not None:
            self.owner.touch(self)

    def add_pod(self, pod: Pod) -> None:
        self.pods.append(pod)
        affinity, anti, claims = _flags(pod)
        if affinity:
            self.pods_with_affinity.append(pod)
        if anti:
            self.pods_with_required_anti_affinity.append(pod)
        self.requested.add(pod.requests)
        nz = pod.non_zero_requests
        self.non_zero_requested.milli_cpu += nz.milli_cpu
        self.non_zero_requested.memory += nz.memory
        for hp in pod.host_ports:
            # A set, as upstream's HostPortInfo: a port two pods hold (bound there by nodeName) is
            # kept once, and the first of them to leave frees it.
            if not any((u.host_ip, u.protocol, u.port) == (hp.host_ip, hp.protocol, hp.port) for u in self.used_ports):
                self.used_ports.append(hp)
        for claim in claims:
            self.pvc_ref_counts[claim] = self.pvc_ref_counts.get(claim, 0) + 1
        self.generation = self._bump()
        if self.owner is not None:
            self.owner.touch(self)

    def remove_pod(self, pod: Pod) -> bool:
        """Remove the pod with the same uid; False when it is not here."""
        uid = pod.uid
        pods = self.pods
        # From the end: the pod removed is most often the last added (an assumed pod replaced by
        # its bound copy), and a node may hold tens of thousands of pods. Uids are unique on a node.
        index = next((i for i in range(len(pods) - 1, -1, -1) if pods[i].uid == uid), None)
        if index is None:
            return False
        p = self.pods.pop(index)
        affinity, anti, claims = _flags(p)
        if affinity:
            self.pods_with_affinity = [q for q in self.pods_with_affinity if q.uid != uid]
        if anti:
            self.pods_with_required_anti_affinity = [
                q for q in self.pods_with_required_anti_affinity if q.uid != uid]
        self.requested.sub(p.requests)
        nz = p.non_zero_requests
        self.non_zero_requested.milli_cpu -= nz.milli_cpu
        self.non_zero_requested.memory -= nz.memory
        for hp in p.host_ports:
            for j, used in enumerate(self.used_ports):
                if (used.host_ip, used.protocol, used.port) == (hp.host_ip, hp.protocol, hp.port):
                    del self.used_ports[j]
                    break
        for claim in claims:
            left = self.pvc_ref_counts.get(claim, 0) - 1
            if left > 0:
                self.pvc_ref_counts[claim] = left
            else:
                self.pvc_ref_counts.pop(claim, None)
        self.generation = self._bump()
        if self.owner is not None:
            self.owner.touch(self)
        return True

    def clone(self) -> NodeInfo:
        c = NodeInfo.__new__(NodeInfo)
        c.node = self.node
        c.pods = list(self.pods)
        c.pods_with_affinity = list(self.pods_with_affinity)
        c.pods_with_required_anti_affinity = list(self.pods_with_required_anti_affinity)
        c.requested = self.requested.clone()
        c.non_zero_requested = self.non_zero_requested.clone()
        c.used_ports = list(self.used_ports)
        c.pvc_ref_counts = dict(self.pvc_ref_counts)
        c.image_num_nodes = self.image_num_nodes
        c.generation = self.generation
        c.owner = None
        return c

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={len(self.pods)})"


def _pvc_names(pod: Pod) -> list[str]:
    out = []
    for v in pod.spec.get("volumes") or []:
        claim = (v.get("persistentVolumeClaim") or {}).get("claimName")
        if claim:
            out.append(f"{pod.namespace}/{claim}")
    return out
