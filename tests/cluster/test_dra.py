"""DynamicResources against a real API server: devices allocated from ResourceSlices, the
allocation and reservedFor written to the claims' status by kubeberth (with its ServiceAccount's
RBAC), a shared claim followed to its node, and the reason a pod without devices waits."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import Operators
from .differential import play_claim_controller
from .kube import Kube, eventually, node, pod

pytestmark = pytest.mark.cluster
DRIVER = "gpu.example.com"


def rslice(node_name: str, *devices: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node_name}-gpu"},
            "spec": {"driver": DRIVER, "nodeName": node_name,
                     "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": d, "attributes": {"model": {"string": "a100"}}} for d in devices]}}


def with_claim(p: dict[str, Any], **source: str) -> dict[str, Any]:
    p["spec"]["resourceClaims"] = [{"name": "gpu", **source}]
    return p


async def bound_node(kube: Kube, name: str) -> str | None:
    return (await kube.get("pods", name, "default"))["spec"].get("nodeName")


async def unschedulable_message(kube: Kube, name: str) -> str | None:
    p = await kube.get("pods", name, "default")
    for c in (p.get("status") or {}).get("conditions") or []:
        if c["type"] == "PodScheduled" and c["status"] == "False":
            return str(c.get("message"))
    return None


async def test_devices_are_allocated_and_written_to_the_claims(kube: Kube, operators: Operators) -> None:
    for name in ("g1", "g2"):
        await kube.create("nodes", node(name))
    await kube.create("deviceclasses", {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                        "metadata": {"name": "gpu"}, "spec": {"selectors": [
                                            {"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    await kube.create("resourceslices", rslice("g1", "gpu-0", "gpu-1"))
    await kube.create("resourceclaimtemplates", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-gpu", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}})
    await kube.create("resourceclaims", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "shared", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}})
    operators.start()

    for name in ("a", "b", "c"):
        created = await kube.create("pods", with_claim(pod(name, cpu="100m"), resourceClaimTemplateName="one-gpu"))
        await play_claim_controller(kube, created)
    assert await eventually(lambda: bound_node(kube, "a"), what="a bound") == "g1"
    assert await eventually(lambda: bound_node(kube, "b"), what="b bound") == "g1"
    message = await eventually(lambda: unschedulable_message(kube, "c"), what="c unschedulable")
    assert message == ("0/2 nodes are available: 2 cannot allocate all claims. preemption: 0/2 nodes are "
                       "available: 2 Preemption is not helpful for scheduling.")

    claims = {c["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"] + "/" +
              c["metadata"]["ownerReferences"][0]["name"]: c for c in await kube.list("resourceclaims", "default")
              if c["metadata"].get("ownerReferences")}
    devices = set()
    for owner in ("a", "b"):
        claim = claims[f"gpu/{owner}"]
        assert claim["metadata"]["finalizers"] == ["resource.kubernetes.io/delete-protection"]
        [reserved] = claim["status"]["reservedFor"]
        assert (reserved["resource"], reserved["name"]) == ("pods", owner)
        [result] = claim["status"]["allocation"]["devices"]["results"]
        assert (result["request"], result["driver"], result["pool"]) == ("gpu", DRIVER, "g1")
        devices.add(result["device"])
    assert devices == {"gpu-0", "gpu-1"}  # never the same device twice
    assert "allocation" not in (claims["gpu/c"].get("status") or {})

    # The devices come free: c gets one (the claim of a is deallocated, as its pod is gone).
    await kube.delete("pods", "a", "default", grace_period=0)
    a_claim = claims["gpu/a"]["metadata"]
    await kube.patch("resourceclaims", a_claim["name"], {"status": {"allocation": None, "reservedFor": None}},
                     "default", subresource="status")
    assert await eventually(lambda: bound_node(kube, "c"), what="c bound", timeout=60) == "g1"


async def test_a_shared_claim_takes_its_pods_to_its_devices(kube: Kube, operators: Operators) -> None:
    for name in ("g1", "g2"):
        await kube.create("nodes", node(name))
    await kube.create("deviceclasses", {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                        "metadata": {"name": "gpu"}, "spec": {}})
    await kube.create("resourceslices", rslice("g2", "gpu-0"))
    await kube.create("resourceclaims", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "shared", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}})
    operators.start()
    await kube.create("pods", with_claim(pod("writer"), resourceClaimName="shared"))
    assert await eventually(lambda: bound_node(kube, "writer"), what="writer bound") == "g2"
    await kube.create("pods", with_claim(pod("reader"), resourceClaimName="shared"))
    assert await eventually(lambda: bound_node(kube, "reader"), what="reader bound") == "g2"
    claim = await kube.get("resourceclaims", "shared", "default")
    assert sorted(r["name"] for r in claim["status"]["reservedFor"]) == ["reader", "writer"]


async def test_an_extended_resource_is_served_by_devices(kube: Kube, operators: Operators) -> None:
    await kube.create("nodes", node("g1"))
    await kube.create("deviceclasses", {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                        "metadata": {"name": "gpu"},
                                        "spec": {"extendedResourceName": "example.com/gpu"}})
    await kube.create("resourceslices", rslice("g1", "gpu-0", "gpu-1"))
    operators.start()
    p = pod("trainer")
    p["spec"]["containers"][0]["resources"] = {"requests": {"example.com/gpu": "2"}, "limits": {"example.com/gpu": "2"}}
    await kube.create("pods", p)
    assert await eventually(lambda: bound_node(kube, "trainer"), what="trainer bound") == "g1"
    status = (await kube.get("pods", "trainer", "default"))["status"]["extendedResourceClaimStatus"]
    claim = await kube.get("resourceclaims", status["resourceClaimName"], "default")
    assert claim["metadata"]["annotations"]["resource.kubernetes.io/extended-resource-claim"] == "true"
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["trainer"]
    assert sorted(r["device"] for r in claim["status"]["allocation"]["devices"]["results"]) == ["gpu-0", "gpu-1"]
    container = p["spec"]["containers"][0]["name"]
    assert status["requestMappings"] == [{"containerName": container, "resourceName": "example.com/gpu",
                                          "requestName": "container-0-request-0"}]
