"""NodePorts: the pod's host ports must not conflict with those in use on the node."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth.framework import Code, CycleState, Status
from kubeberth.model import NodeInfo, Pod
from kubeberth.plugins.node_ports import NodePorts, fits
from tests.builders import make_node, make_pod

REASON = "node(s) didn't have free ports for the requested pod ports"
CONFLICT = Status.unschedulable(REASON)


def ports_pod(name: str, *specs: str, node: str = "") -> Pod:
    """A pod with host ports given as "PROTO/IP/PORT" (upstream's newPod)."""
    ports: list[dict[str, Any]] = []
    for spec in specs:
        proto, ip, port = spec.split("/")
        ports.append({"protocol": proto, "hostIP": ip, "hostPort": int(port), "containerPort": int(port)})
    return make_pod(name, node=node, containers=[{"name": "c", "image": "i", "ports": ports}])


# (id, pod ports, ports used by the pod already on the node, want)
CASES: list[tuple[str, list[str], list[str], Status | None]] = [
    ("nothing running", ["UDP/127.0.0.1/8080"], [], None),
    ("other port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/9090"], None),
    ("same udp port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], CONFLICT),
    ("same tcp port", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], CONFLICT),
    ("different host ip", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.2/8080"], None),
    ("different protocol", ["UDP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], None),
    ("second udp port conflict", ["UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"],
     ["UDP/127.0.0.1/8080"], CONFLICT),
    ("first tcp port conflict", ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"],
     ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"], CONFLICT),
    ("first tcp port conflict due to 0.0.0.0 hostIP", ["TCP/0.0.0.0/8001"], ["TCP/127.0.0.1/8001"], CONFLICT),
    ("TCP hostPort conflict due to 0.0.0.0 hostIP", ["TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"],
     ["TCP/127.0.0.1/8001"], CONFLICT),
    ("second tcp port conflict to 0.0.0.0 hostIP", ["TCP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], CONFLICT),
    ("second different protocol", ["UDP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], None),
    ("UDP hostPort conflict due to 0.0.0.0 hostIP", ["UDP/127.0.0.1/8001"],
     ["TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"], CONFLICT),
]


@pytest.mark.parametrize(("pod_ports", "used", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_filter(pod_ports: list[str], used: list[str], want: Status | None) -> None:
    ni = NodeInfo(make_node("n1"), [ports_pod("existing", *used, node="n1")] if used else [])
    pod = ports_pod("p", *pod_ports)
    state = CycleState()
    pl = NodePorts(None, None)
    assert pl.pre_filter(state, pod, [ni]) == (None, None)
    assert pl.filter(state, pod, ni) == want
    assert fits(pod, ni) is (want is None)


def test_pod_without_host_ports_skips() -> None:
    pod = make_pod("p", containers=[{"name": "c", "image": "i", "ports": [{"containerPort": 80}]}])
    _, status = NodePorts(None, None).pre_filter(CycleState(), pod, [])
    assert status is not None and status.is_skip()


def test_default_host_ip_and_protocol() -> None:
    # hostIP defaults to 0.0.0.0 and protocol to TCP.
    existing = make_pod("e", node="n1", containers=[{"name": "c", "image": "i", "ports": [{"hostPort": 80}]}])
    ni = NodeInfo(make_node("n1"), [existing])
    assert not fits(ports_pod("p", "TCP/10.0.0.1/80"), ni)
    assert fits(ports_pod("p", "UDP/10.0.0.1/80"), ni)


def sidecar_pod(name: str, port: int, *, restart: str | None, node: str = "") -> Pod:
    init: dict[str, Any] = {"name": "init", "image": "i", "ports": [{"hostPort": port, "containerPort": port}]}
    if restart:
        init["restartPolicy"] = restart
    return make_pod(name, node=node, initContainers=[init])


@pytest.mark.parametrize(("restart", "conflict"), [("Always", True), (None, False)],
                         ids=["sidecar ports are held", "init container ports are released"])
def test_init_container_ports(restart: str | None, conflict: bool) -> None:
    ni = NodeInfo(make_node("n1"), [sidecar_pod("e", 8080, restart=restart, node="n1")])
    assert fits(ports_pod("p", "TCP/0.0.0.0/8080"), ni) is not conflict
    # The incoming pod's own sidecar ports are wanted too.
    incoming = sidecar_pod("q", 9090, restart=restart)
    ni2 = NodeInfo(make_node("n2"), [ports_pod("e2", "TCP/0.0.0.0/9090", node="n2")])
    state = CycleState()
    _, s = NodePorts(None, None).pre_filter(state, incoming, [ni2])
    if conflict:
        assert NodePorts(None, None).filter(state, incoming, ni2) == CONFLICT
    else:
        assert s is not None and s.is_skip()


def test_pre_filter_disabled_is_an_error() -> None:
    got = NodePorts(None, None).filter(CycleState(), ports_pod("p", "TCP/0.0.0.0/80"), NodeInfo(make_node("n")))
    assert got is not None and got.code == Code.ERROR


def test_host_network_defaults_host_port_to_container_port() -> None:
    """With hostNetwork the API server sets a missing hostPort to the containerPort, so two
    hostNetwork pods exposing the same containerPort conflict; without hostNetwork they do not."""
    def pod(name: str, host_network: bool, node: str = "") -> Pod:
        spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 9100}]}]}
        if host_network:
            spec["hostNetwork"] = True
        return make_pod(name, node=node, **spec)

    assert [(p.protocol, p.port) for p in pod("p", True).host_ports] == [("TCP", 9100)]
    assert pod("p", False).host_ports == []
    ni = NodeInfo(make_node("n1"), [pod("existing", True, node="n1")])
    assert not fits(pod("p", True), ni)
    assert fits(pod("p", False), ni)
