"""More of upstream's scheduler_perf templates (test/integration/scheduler_perf/templates/), for
the workloads upstream's CI gates on: daemonset pods, preferred (anti-)affinity, preferred
topology spreading, node inclusion policies, namespace selectors. The older templates are in
workloads.py."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
DAEMONSET_NODE = "scheduler-perf-node"
NS_LABELS = {"team": "devops"}


def _container_100m() -> Obj:
    res = {"cpu": "100m", "memory": "500Mi"}
    return {"image": "registry.k8s.io/pause:3.10", "name": "pause", "ports": [{"containerPort": 80}],
            "resources": {"requests": dict(res), "limits": dict(res)}}


def _pod(name: str, namespace: str, spec: Obj, labels: dict[str, str] | None = None) -> Obj:
    meta: Obj = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"}
    if labels:
        meta["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def node_with_name() -> Obj:
    """templates/node-with-name.yaml: the one node every daemonset pod asks for (90000 pods)."""
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": DAEMONSET_NODE, "uid": f"uid-node-{DAEMONSET_NODE}",
                     "labels": {HOSTNAME: DAEMONSET_NODE}},
        "spec": {},
        "status": {"capacity": {"pods": "90000", "cpu": "4", "memory": "32Gi"},
                   "conditions": [{"type": "Ready", "status": "True"}], "phase": "Running"},
    }


def taint_node(node: Obj) -> Obj:
    """templates/node-with-taint.yaml: node-default with a foo:NoSchedule taint."""
    return {**node, "spec": {"taints": [{"effect": "NoSchedule", "key": "foo"}]}}


def daemonset_pod(name: str, namespace: str) -> Obj:
    """templates/daemonset-pod.yaml: required node affinity on metadata.name, no requests."""
    return _pod(name, namespace, {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [DAEMONSET_NODE]}]}]}}},
        "containers": [{"image": "registry.k8s.io/pause:3.10", "name": "pause"}],
    })


def _preferred_term(kind: str, color: str, **where: Any) -> Obj:
    return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [{
        "podAffinityTerm": {"labelSelector": {"matchLabels": {"color": color}},
                            "topologyKey": HOSTNAME, **where},
        "weight": 1}]}}


def pod_with_preferred_pod_affinity(name: str, namespace: str) -> Obj:
    """templates/pod-with-preferred-pod-affinity.yaml: color=red, preferred affinity per host."""
    return _pod(name, namespace, {
        "affinity": _preferred_term("podAffinity", "red", namespaces=["sched-1", "sched-0"]),
        "containers": [_container_100m()]}, {"color": "red"})


def pod_with_preferred_pod_anti_affinity(name: str, namespace: str) -> Obj:
    """templates/pod-with-preferred-pod-anti-affinity.yaml: color=yellow, preferred anti-affinity per host."""
    return _pod(name, namespace, {
        "affinity": _preferred_term("podAntiAffinity", "yellow", namespaces=["sched-1", "sched-0"]),
        "containers": [_container_100m()]}, {"color": "yellow"})


def pod_preferred_affinity_ns_selector(name: str, namespace: str) -> Obj:
    """templates/pod-preferred-affinity-ns-selector.yaml: color=red, namespaces by team=devops."""
    return _pod(name, namespace, {
        "affinity": _preferred_term("podAffinity", "red", namespaceSelector={"matchLabels": dict(NS_LABELS)}),
        "containers": [_container_100m()]}, {"color": "red"})


def pod_preferred_anti_affinity_ns_selector(name: str, namespace: str) -> Obj:
    """templates/pod-preferred-anti-affinity-ns-selector.yaml: color=green, namespaces by team=devops."""
    return _pod(name, namespace, {
        "affinity": _preferred_term("podAntiAffinity", "green", namespaceSelector={"matchLabels": dict(NS_LABELS)}),
        "containers": [_container_100m()]}, {"color": "green"})


def pod_with_preferred_topology_spreading(name: str, namespace: str) -> Obj:
    """templates/pod-with-preferred-topology-spreading.yaml: color=blue, maxSkew 5 per zone, ScheduleAnyway."""
    return _pod(name, namespace, {
        "topologySpreadConstraints": [{
            "maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"color": "blue"}}}],
        "containers": [_container_100m()]}, {"color": "blue"})


def pod_with_node_inclusion_policy(name: str, namespace: str) -> Obj:
    """templates/pod-with-node-inclusion-policy.yaml: foo=bar, maxSkew 1 per host, DoNotSchedule.
    Upstream's template spells the policies `NodeAffinityPolicy`/`NodeTaintsPolicy`, which the
    API server drops as unknown fields: the defaults (Honor, Ignore) apply, here as there."""
    return _pod(name, namespace, {
        "containers": [_container_100m()],
        "topologySpreadConstraints": [{
            "maxSkew": 1, "topologyKey": HOSTNAME, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"foo": "bar"}}}],
    }, {"foo": "bar"})
