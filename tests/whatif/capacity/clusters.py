"""Small hand-made clusters for the capacity tests: nodes, running pods and templates."""

from __future__ import annotations

from typing import Any

NEVER = "preemption: not eligible due to preemptionPolicy=Never."


def node(name: str, cpu: str = "4", *, pods: str = "110", labels: dict[str, str] | None = None,
         taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"taints": taints} if taints else {}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": spec, "status": {"allocatable": {"cpu": cpu, "memory": "32Gi", "pods": pods}}}


def pod(name: str, cpu: str = "100m", *, node_name: str = "", labels: dict[str, str] | None = None,
        **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu}}}
    ports = spec.pop("hostPorts", None)
    if ports:
        container["ports"] = [{"containerPort": p, "hostPort": p} for p in ports]
    body: dict[str, Any] = {"containers": [container], **spec}
    if node_name:
        body["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": labels or {"app": name}}, "spec": body}


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def gang(name: str, members: int, cpu: str) -> list[dict[str, Any]]:
    """A PodGroup (gang of all its members) and its pods."""
    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
             "metadata": {"name": name, "namespace": "default"},
             "spec": {"schedulingPolicy": {"gang": {"minCount": members}}}}
    return [group] + [pod(f"{name}-{k}", cpu, labels={"group": name}, schedulingGroup={"podGroupName": name})
                      for k in range(members)]


def anti_affinity(label: str) -> dict[str, Any]:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": label}}, "topologyKey": "kubernetes.io/hostname"}]}}


def zone_spread(label: str, max_skew: int = 1) -> list[dict[str, Any]]:
    return [{"maxSkew": max_skew, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": label}}}]
