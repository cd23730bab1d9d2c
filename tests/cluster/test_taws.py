"""Topology-aware placement (TopologyAwareWorkloadScheduling, KEP-5732) on the real kube-apiserver
v1.37.2 (GenericWorkload and TopologyAwareWorkloadScheduling on, scheduling.k8s.io/v1beta1 served),
kube-scheduler v1.37.2 with the same gates as the oracle, test_gangs.py's side-by-side pattern: the
same objects through kube-scheduler, then through `kubeberth run`.

Two racks of two nodes (label example.com/rack). A group goes whole into the fuller rack (not
spread as without the gate); a group with a pod already bound in one rack is pinned there; a group
that the cluster holds but no single rack does is unschedulable ("0/2 placements are available");
a group whose key no node has finds no placement. Every pod's node, every PodScheduled=False
message and every PodGroupInitiallyScheduled condition are compared, word for word.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio

from .conftest import OperatorProcess
from .control_plane import ADMIN_TOKEN, ControlPlane, kubectl
from .kube import Kube, node, pod
from .test_gangs import group_state, kubeberth_kubeconfig, reset, settled, start_kube_scheduler

pytestmark = pytest.mark.cluster

GATES = "GenericWorkload=true,TopologyAwareWorkloadScheduling=true"
RACK = "example.com/rack"
RACKS = {"n1": "a", "n2": "a", "n3": "b", "n4": "b"}


def pod_group(name: str, min_count: int, key: str = RACK) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}},
                     "schedulingConstraints": {"topology": [{"key": key}]}}}


def member(group: str, i: int, cpu: str, node_name: str | None = None) -> dict[str, Any]:
    return pod(f"{group}-{i}", cpu=cpu, memory="100Mi", node_name=node_name, schedulingGroup={"podGroupName": group})


async def placed(kube: Kube, names: list[str]) -> dict[str, tuple[str, str]]:
    """(node, "reason: message" of PodScheduled=False or "") per pod, once they have settled."""
    states = await settled(kube, names)
    nodes = {p["metadata"]["name"]: p["spec"].get("nodeName") or "" for p in await kube.list("pods", "default")}
    return {name: (nodes[name], message) for name, (_, message) in states.items()}


async def scenario(kube: Kube) -> dict[str, Any]:
    for n, rack in RACKS.items():
        await kube.create("nodes", node(n, cpu="2", memory="4Gi", labels={RACK: rack}))
    await kube.create("pods", pod("busy", cpu="1", memory="100Mi", node_name="n3"), "default")
    out: dict[str, Any] = {}
    # rack b is the fuller: the group goes there whole
    await kube.create("podgroups", pod_group("fuller", 2), "default")
    for i in range(2):
        await kube.create("pods", member("fuller", i, "500m"), "default")
    out["fuller"] = await placed(kube, [f"fuller-{i}" for i in range(2)])
    # a pod of the group already bound in rack a: the others follow it there
    await kube.create("podgroups", pod_group("pinned", 2), "default")
    await kube.create("pods", member("pinned", 0, "100m", node_name="n1"), "default")
    for i in (1, 2):
        await kube.create("pods", member("pinned", i, "500m"), "default")
    out["pinned"] = await placed(kube, [f"pinned-{i}" for i in (1, 2)])
    # each rack holds two 900m pods now, the cluster four: three need one rack
    await kube.create("podgroups", pod_group("nowhere", 3), "default")
    for i in range(3):
        await kube.create("pods", member("nowhere", i, "900m"), "default")
    out["nowhere"] = await placed(kube, [f"nowhere-{i}" for i in range(3)])
    # no node has the key
    await kube.create("podgroups", pod_group("nokey", 1, key="example.com/none"), "default")
    await kube.create("pods", member("nokey", 0, "100m"), "default")
    out["nokey"] = await placed(kube, ["nokey-0"])
    out["groups"] = {g["metadata"]["name"]: group_state(g) for g in await kube.list("podgroups", "default")}
    return out


@pytest.fixture(scope="module")
def taws_plane() -> Iterator[ControlPlane]:
    plane = ControlPlane(feature_gates=GATES).start()
    try:
        kubectl(plane, "apply", "-f", "crds/")
        kubectl(plane, "wait", "--for", "condition=established", "--timeout=60s",
                "crd/schedulingprofiles.kubeberth.io")
        kubectl(plane, "apply", "-k", "manifests/")
        yield plane
    finally:
        plane.stop()


@pytest_asyncio.fixture
async def taws_kube(taws_plane: ControlPlane) -> AsyncIterator[Kube]:
    async with Kube(taws_plane.url, ADMIN_TOKEN, taws_plane.ssl_context()) as client:
        await reset(client)
        yield client


async def test_topology_placement_as_kube_scheduler_does_it(taws_plane: ControlPlane, taws_kube: Kube) -> None:
    kube = taws_kube
    upstream = start_kube_scheduler(taws_plane, GATES)
    try:
        expected = await scenario(kube)
    finally:
        upstream.stop()
    await reset(kube)
    op = OperatorProcess(taws_plane, kubeberth_kubeconfig(taws_plane), [f"--feature-gates={GATES}"],
                         name="kubeberth-taws")
    try:
        op.wait_synced()
        got = await scenario(kube)
    finally:
        op.stop()

    # what kube-scheduler did, spelled out: the test would pass on no scheduler at all otherwise
    assert {RACKS[n] for n, _ in expected["fuller"].values()} == {"b"}
    assert {RACKS[n] for n, _ in expected["pinned"].values()} == {"a"}
    assert not any(n for n, _ in expected["nowhere"].values())
    assert all("0/2 placements are available" in m or "Insufficient cpu" in m for _, m in expected["nowhere"].values())
    assert expected["groups"]["fuller"] == ("True", "Scheduled", "")
    assert expected["groups"]["nowhere"][:2] == ("False", "Unschedulable")
    assert expected["nokey"]["nokey-0"][0] == ""

    assert got == expected  # every pod's node, every message, every PodGroup condition, word for word
