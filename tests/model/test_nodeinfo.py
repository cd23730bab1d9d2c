"""NodeInfo add/remove/clone, and the Pod/Node views it aggregates."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth.model import ModelError, Node, NodeInfo, Pod, Resource
from tests.builders import make_node, make_pod, node_dict, pod_dict

MI = 1024 * 1024


def port(host_port: int, *, ip: str | None = None, protocol: str | None = None) -> dict[str, Any]:
    p: dict[str, Any] = {"containerPort": 80, "hostPort": host_port}
    if ip:
        p["hostIP"] = ip
    if protocol:
        p["protocol"] = protocol
    return p


def test_add_pod_updates_sums() -> None:
    ni = NodeInfo(make_node("n1"))
    gen = ni.generation
    p1 = make_pod("p1", cpu="500m", memory="1Gi", node="n1")
    p2 = make_pod("p2", node="n1", requests={"example.com/gpu": "1", "ephemeral-storage": "1Gi"})
    ni.add_pod(p1)
    assert ni.generation > gen
    ni.add_pod(p2)
    assert [p.name for p in ni.pods] == ["p1", "p2"]
    assert ni.requested == Resource(500, 1024 * MI, 1024 * MI, 0, {"example.com/gpu": 1})
    # p2 names no cpu/memory: the scoring defaults count in non_zero_requested.
    assert (ni.non_zero_requested.milli_cpu, ni.non_zero_requested.memory) == (600, 1224 * MI)


def test_remove_pod_reverses_add() -> None:
    aff = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {}, "topologyKey": "zone"}]}}
    p1 = make_pod("p1", cpu="1", node="n1", affinity=aff,
                  containers=[{"name": "c", "image": "a", "resources": {"requests": {"cpu": "1"}},
                               "ports": [port(8080)]}],
                  volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}])
    p2 = make_pod("p2", cpu="2", node="n1", volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}])
    ni = NodeInfo(make_node("n1"), [p1, p2])
    assert ni.pods_with_affinity == [p1]
    assert ni.pods_with_required_anti_affinity == [p1]
    assert ni.pvc_ref_counts == {"default/data": 2}
    assert [(u.host_ip, u.protocol, u.port) for u in ni.used_ports] == [("0.0.0.0", "TCP", 8080)]
    gen = ni.generation
    assert ni.remove_pod(p1)
    assert ni.generation > gen
    assert ni.pods == [p2]
    assert ni.pods_with_affinity == [] and ni.pods_with_required_anti_affinity == []
    assert ni.used_ports == []
    assert ni.pvc_ref_counts == {"default/data": 1}
    assert ni.requested.milli_cpu == 2000
    assert ni.non_zero_requested.milli_cpu == 2000
    assert ni.remove_pod(p2)
    assert ni.pvc_ref_counts == {}
    assert ni.requested.is_zero() and ni.non_zero_requested.is_zero()


def test_remove_unknown_pod() -> None:
    ni = NodeInfo(make_node("n1"), [make_pod("p1", node="n1")])
    gen = ni.generation
    assert not ni.remove_pod(make_pod("other"))
    assert ni.generation == gen and len(ni.pods) == 1


def test_remove_matches_by_uid() -> None:
    p = make_pod("p1", cpu="1", node="n1", uid="u1")
    same = make_pod("p1-renamed", cpu="1", node="n1", uid="u1")
    ni = NodeInfo(make_node("n1"), [p])
    assert ni.remove_pod(same) and ni.pods == []


def test_clone_is_independent() -> None:
    ni = NodeInfo(make_node("n1"), [make_pod("p1", cpu="1", node="n1")])
    ni.image_num_nodes = {"img:1": 3}
    c = ni.clone()
    assert c.generation == ni.generation and c.node is ni.node
    c.add_pod(make_pod("p2", cpu="2", node="n1"))
    assert len(ni.pods) == 1 and ni.requested.milli_cpu == 1000
    assert len(c.pods) == 2 and c.requested.milli_cpu == 3000
    assert c.image_num_nodes == {"img:1": 3}


def test_node_info_without_node() -> None:
    ni = NodeInfo()
    assert ni.name == "" and ni.allocatable == Resource()
    ni.set_node(make_node("n9", cpu="2"))
    assert ni.name == "n9" and ni.allocatable.milli_cpu == 2000


def test_host_ports_of_containers_and_sidecars_only() -> None:
    spec_containers = [{"name": "c", "image": "a", "ports": [port(80), port(53, protocol="UDP", ip="10.0.0.1"),
                                                             {"containerPort": 9090}]}]
    init = [
        {"name": "init", "image": "i", "ports": [port(1000)]},
        {"name": "side", "image": "s", "restartPolicy": "Always", "ports": [port(2000)]},
    ]
    p = Pod(pod_dict("p", containers=spec_containers, initContainers=init))
    assert [(h.host_ip, h.protocol, h.port) for h in p.host_ports] == [
        ("0.0.0.0", "TCP", 2000), ("0.0.0.0", "TCP", 80), ("10.0.0.1", "UDP", 53)]
    assert p.images == ["i", "s", "a"]


@pytest.mark.parametrize(("a", "b", "conflict"), [
    (("0.0.0.0", "TCP", 80), ("10.0.0.1", "TCP", 80), True),
    (("10.0.0.1", "TCP", 80), ("0.0.0.0", "TCP", 80), True),
    (("10.0.0.1", "TCP", 80), ("10.0.0.2", "TCP", 80), False),
    (("10.0.0.1", "TCP", 80), ("10.0.0.1", "TCP", 80), True),
    (("0.0.0.0", "TCP", 80), ("0.0.0.0", "UDP", 80), False),
    (("0.0.0.0", "TCP", 80), ("0.0.0.0", "TCP", 81), False),
])
def test_host_port_conflicts(a: tuple[str, str, int], b: tuple[str, str, int], conflict: bool) -> None:
    from kubeberth.model import HostPort

    assert HostPort(*a).conflicts(HostPort(*b)) is conflict


def test_pod_view_fields() -> None:
    raw = pod_dict("p", "ns", cpu="1", priority=7, scheduler="other",
                   nodeSelector={"zone": "a"}, tolerations=[{"key": "k", "operator": "Exists"}],
                   schedulingGates=[{"name": "a"}, {"name": "b"}])
    raw["metadata"]["creationTimestamp"] = "2024-01-01T00:00:00Z"
    p = Pod(raw)
    assert p.key == "ns/p" and p.priority == 7 and p.scheduler_name == "other"
    assert p.node_selector == {"zone": "a"} and p.scheduling_gates == ("a", "b")
    assert p.creation_timestamp == 1704067200.0
    assert p.tolerations[0].key == "k"
    assert not p.is_assigned and not p.is_terminal


@pytest.mark.parametrize("raw", [
    {"metadata": {}},
    pod_dict("p", priority="high"),  # type: ignore[arg-type]
    pod_dict("p", cpu="lots"),
    pod_dict("p", tolerations=[{"operator": "Sometimes"}]),
    pod_dict("p", affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1", "2"]}]}]}}}),
    "pod",
])
def test_invalid_pods(raw: Any) -> None:
    with pytest.raises(ModelError):
        Pod(raw)


def test_node_view() -> None:
    raw = node_dict("n", cpu="4", memory="8Gi", pods="10", taints=[{"key": "k", "effect": "NoSchedule"}],
                    unschedulable=True, extra={"example.com/gpu": "2", "foo": "1"},
                    images=[{"names": ["a:1", "docker.io/a:1"], "sizeBytes": 100}, {"names": [], "sizeBytes": 5}])
    n = Node(raw)
    assert n.unschedulable and n.taints[0].key == "k"
    assert n.allocatable == Resource(4000, 8192 * MI, 0, 10, {"example.com/gpu": 2})
    assert [(i.names, i.size) for i in n.images] == [(("a:1", "docker.io/a:1"), 100)]
    del raw["status"]["allocatable"]
    assert Node(raw).allocatable == Node(raw).capacity
    with pytest.raises(ModelError):
        Node({"metadata": {}})
    with pytest.raises(ModelError):
        Node(node_dict("n", cpu="x"))
