"""Builders for test objects: raw Kubernetes dicts and their model views."""

from __future__ import annotations

from typing import Any

from kubeberth.cache.snapshot import Snapshot
from kubeberth.framework import CycleState
from kubeberth.model import Node, NodeInfo, Pod

_SEQ = [0]


def pod_dict(name: str = "p", namespace: str = "default", *, cpu: str | None = None,
             memory: str | None = None, requests: dict[str, Any] | None = None, node: str = "",
             labels: dict[str, str] | None = None, priority: int | None = None,
             scheduler: str | None = None, containers: list[dict[str, Any]] | None = None,
             uid: str | None = None, **spec: Any) -> dict[str, Any]:
    """A pod dict. Extra keyword args go into spec verbatim (camelCase keys)."""
    reqs = dict(requests or {})
    if cpu is not None:
        reqs["cpu"] = cpu
    if memory is not None:
        reqs["memory"] = memory
    if containers is None:
        container: dict[str, Any] = {"name": "c", "image": "app:1"}
        if reqs:
            container["resources"] = {"requests": reqs}
        containers = [container]
    body: dict[str, Any] = {"containers": containers, **spec}
    if node:
        body["nodeName"] = node
    if priority is not None:
        body["priority"] = priority
    if scheduler:
        body["schedulerName"] = scheduler
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid or f"uid-{namespace}-{name}"}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body,
            "status": {"phase": "Running" if node else "Pending"}}


def make_pod(name: str = "p", namespace: str = "default", **kw: Any) -> Pod:
    _SEQ[0] += 1
    return Pod(pod_dict(name, namespace, **kw), seq=_SEQ[0])


def node_dict(name: str = "n", *, cpu: str = "4", memory: str = "32Gi", pods: str = "110",
              labels: dict[str, str] | None = None, taints: list[dict[str, Any]] | None = None,
              unschedulable: bool = False, extra: dict[str, Any] | None = None,
              images: list[dict[str, Any]] | None = None,
              conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    alloc: dict[str, Any] = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    status: dict[str, Any] = {"capacity": dict(alloc), "allocatable": alloc,
                              "conditions": conditions or [{"type": "Ready", "status": "True"}]}
    if images:
        status["images"] = images
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": spec, "status": status}


def make_node(name: str = "n", **kw: Any) -> Node:
    return Node(node_dict(name, **kw))


def node_info(node: Node | str, *pods: Pod) -> NodeInfo:
    if isinstance(node, str):
        node = make_node(node)
    return NodeInfo(node, pods)


def snapshot(nodes: list[Node], pods: list[Pod] = ()) -> Snapshot:  # type: ignore[assignment]
    return Snapshot.from_objects(nodes, pods)


def new_state() -> CycleState:
    return CycleState()
