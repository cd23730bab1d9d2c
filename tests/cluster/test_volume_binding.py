"""VolumeBinding against a real API server: kubeberth (with its ServiceAccount's token, so the
ClusterRole is what allows the writes) makes the writes kube-scheduler's volume binder makes,
then waits in PreBind until the claims are bound.

No kube-controller-manager runs here, so no PV controller and no provisioner: the test checks
the scheduler's own writes (the PV's claimRef for a static binding, the claim's selected-node
annotation for provisioning) and, in the audit log, that the ClusterRole allowed them (the
permissions test_rbac.py leaves to this file, its VOLUME_WRITES); then it plays the
controller's part itself (a PV's Available phase, the claim's binding, a provisioned PV) and
sees the pod bound only after that.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from .conftest import Operators
from .control_plane import ControlPlane
from .kube import Kube, eventually, node, pod
from .test_rbac import Permission, used

pytestmark = pytest.mark.cluster

SELECTED_NODE = "volume.kubernetes.io/selected-node"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
DRIVER = "csi.kubeberth.test"


@pytest_asyncio.fixture
async def storage(kube: Kube) -> AsyncIterator[None]:
    """The storage objects of these tests, removed afterwards (the suite's reset keeps PVs)."""
    yield
    await kube.delete_all("pods", "default", grace_period=0)
    for kind in ("persistentvolumeclaims", "csistoragecapacities"):
        await kube.delete_all(kind, "default")
    for kind in ("persistentvolumes", "storageclasses", "csidrivers"):
        await kube.delete_all(kind)


def storage_class(name: str, provisioner: str) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": provisioner, "volumeBindingMode": "WaitForFirstConsumer"}


def claim(name: str, storage_class_name: str, size: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default"},
            "spec": {"storageClassName": storage_class_name, "accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": size}}}}


def with_claim(name: str, claim_name: str) -> dict[str, Any]:
    return pod(name, volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}])


async def bound_node(kube: Kube, name: str) -> str | None:
    return (await kube.get("pods", name, "default"))["spec"].get("nodeName")


async def complete_binding(kube: Kube, pv_name: str, claim_name: str) -> None:
    """The PV controller's part: the claim points at the PV, both are Bound."""
    await kube.patch("persistentvolumeclaims", claim_name, {
        "metadata": {"annotations": {BIND_COMPLETED: "yes", BOUND_BY_CONTROLLER: "yes"}},
        "spec": {"volumeName": pv_name}}, "default")
    await kube.patch("persistentvolumeclaims", claim_name, {"status": {"phase": "Bound"}}, "default",
                     subresource="status")
    await kube.patch("persistentvolumes", pv_name, {"status": {"phase": "Bound"}}, subresource="status")


async def audited(control_plane: ControlPlane, permission: Permission, since: float) -> None:
    """The ServiceAccount made this request (the ClusterRole allowed it) and was refused nothing."""
    async def seen() -> bool | None:
        asked, refused = used(control_plane.audit_events(), since)
        assert refused == [], "refused by RBAC:\n" + "\n".join(refused)
        return True if permission in asked else None

    await eventually(seen, timeout=15, what=f"{permission} in the audit log")


async def test_static_binding_writes_the_claim_ref_and_waits_for_the_pv_controller(
        kube: Kube, operators: Operators, storage: None, control_plane: ControlPlane) -> None:
    started = time.time()
    await kube.create("nodes", node("n1"))
    await kube.create("nodes", node("n2"))
    await kube.create("storageclasses", storage_class("local-wait", "kubernetes.io/no-provisioner"))
    await kube.create("persistentvolumes", {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "local-n2"},
        "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"],
                 "storageClassName": "local-wait", "persistentVolumeReclaimPolicy": "Retain",
                 "local": {"path": "/mnt/disks/a"},
                 "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                     {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n2"]}]}]}}}})
    # A new PV is Pending until the PV controller sees it: it would make it Available at once.
    await kube.patch("persistentvolumes", "local-n2", {"status": {"phase": "Available"}}, subresource="status")
    pvc = await kube.create("persistentvolumeclaims", claim("data", "local-wait", "1Gi"))
    operators.start()
    await kube.create("pods", with_claim("app", "data"))

    async def claimed() -> dict[str, Any] | None:
        pv = await kube.get("persistentvolumes", "local-n2")
        return pv if pv["spec"].get("claimRef") else None

    pv = await eventually(claimed, what="the PV's claimRef")
    ref = pv["spec"]["claimRef"]
    assert {k: ref.get(k) for k in ("kind", "apiVersion", "namespace", "name", "uid")} == {
        "kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": "default", "name": "data",
        "uid": pvc["metadata"]["uid"]}
    assert pv["metadata"]["annotations"][BOUND_BY_CONTROLLER] == "yes"
    # The claim is the PV controller's to write in a static binding, and the pod waits in PreBind.
    after = await kube.get("persistentvolumeclaims", "data", "default")
    assert SELECTED_NODE not in (after["metadata"].get("annotations") or {})
    assert not after["spec"].get("volumeName")
    assert await bound_node(kube, "app") is None

    await complete_binding(kube, "local-n2", "data")
    assert await eventually(lambda: bound_node(kube, "app"), what="app bound") == "n2"
    await audited(control_plane, ("", "persistentvolumes", "update"), started)


async def test_provisioning_follows_storage_capacity_and_writes_the_selected_node(
        kube: Kube, operators: Operators, storage: None, control_plane: ControlPlane) -> None:
    started = time.time()
    await kube.create("nodes", node("n1"))
    await kube.create("nodes", node("n2"))
    await kube.create("csidrivers", {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                                     "metadata": {"name": DRIVER}, "spec": {"storageCapacity": True}})
    await kube.create("storageclasses", storage_class("fast", DRIVER))
    for host, size in (("n1", "2Gi"), ("n2", "20Gi")):
        await kube.create("csistoragecapacities", {
            "apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
            "metadata": {"name": f"fast-{host}", "namespace": "default"}, "storageClassName": "fast",
            "nodeTopology": {"matchLabels": {"kubernetes.io/hostname": host}}, "capacity": size})
    await kube.create("persistentvolumeclaims", claim("scratch", "fast", "5Gi"))
    operators.start()
    await kube.create("pods", with_claim("app", "scratch"))

    async def selected() -> str | None:
        c = await kube.get("persistentvolumeclaims", "scratch", "default")
        return (c["metadata"].get("annotations") or {}).get(SELECTED_NODE)

    # Only n2's pool has room for 5Gi.
    assert await eventually(selected, what="the selected-node annotation") == "n2"
    assert await bound_node(kube, "app") is None

    # The provisioner's part: a PV for the claim, then the PV controller binds them.
    scratch = await kube.get("persistentvolumeclaims", "scratch", "default")
    await kube.create("persistentvolumes", {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pvc-scratch"},
        "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
                 "csi": {"driver": DRIVER, "volumeHandle": "scratch"},
                 "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": "default",
                              "name": "scratch", "uid": scratch["metadata"]["uid"]}}})
    await complete_binding(kube, "pvc-scratch", "scratch")
    assert await eventually(lambda: bound_node(kube, "app"), what="app bound") == "n2"
    await audited(control_plane, ("", "persistentvolumeclaims", "update"), started)


async def test_prebind_gives_up_after_bind_timeout_seconds(kube: Kube, operators: Operators, storage: None) -> None:
    await kube.create("nodes", node("n1"))
    await kube.create("storageclasses", storage_class("fast", DRIVER))
    await kube.create("persistentvolumeclaims", claim("scratch", "fast", "1Gi"))
    await kube.create("schedulingprofiles", {
        "apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": "quick"},
        "spec": {"schedulerName": "quick", "pluginConfig": [
            {"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 2}}]}})
    operators.start()
    await kube.create("pods", {**with_claim("app", "scratch"),
                               "spec": {**with_claim("app", "scratch")["spec"], "schedulerName": "quick"}})

    async def failed() -> str | None:
        events = await kube.list("events", "default", fieldSelector="involvedObject.name=app")
        return next((e["message"] for e in events if e["reason"] == "FailedScheduling"), None)

    message = await eventually(failed, timeout=30, what="a FailedScheduling event after the timeout")
    assert message.endswith("binding volumes: context deadline exceeded")
    assert await bound_node(kube, "app") is None
