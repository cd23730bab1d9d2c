"""kubeberth as a Kueue admission check on the real API server, with Kueue v0.17's own CRDs (fetched
from its Go module by tools/kueue/build.sh into .cache/kueue/crds) and the optional RBAC of
manifests/kueue/: kubeberth runs with its ServiceAccount's token. Kueue's controller does not run
here: the test writes what it would (the quota reservation, our check Pending) and sees kubeberth
mark its AdmissionCheck Active and answer: Ready for a Workload that fits, Retry with upstream's
reason for one that does not, then Ready once a node is added and the check is Pending again (as
Kueue sets it when it reserves quota anew)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubeberth.kueue.api import CONTROLLER_NAME

from .conftest import Operators
from .control_plane import ROOT, ControlPlane, kubectl
from .kube import Kube, eventually, node, pod

pytestmark = pytest.mark.cluster

CRDS = ROOT / ".cache" / "kueue" / "crds"
NS = "team-a"
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
NOW = "2026-01-01T00:00:00Z"


@pytest.fixture(scope="module")
def kueue_crds(control_plane: ControlPlane) -> Path:
    if not (CRDS / "kueue.x-k8s.io_workloads.yaml").exists():
        pytest.skip(f"Kueue's CRDs not fetched into {CRDS}: run tools/kueue/build.sh (KUEUE_CRDS_ONLY=1 for "
                    f"the CRDs alone)")
    kubectl(control_plane, "apply", "--server-side", "-f", str(CRDS))
    kubectl(control_plane, "wait", "--for", "condition=established", "--timeout=60s", "-f", str(CRDS))
    kubectl(control_plane, "apply", "-f", str(ROOT / "manifests" / "kueue" / "rbac.yaml"))
    return CRDS


async def test_starts_without_kueue(control_plane: ControlPlane, operators: Operators, kube: Kube) -> None:
    """Before Kueue's CRDs are installed (the first test of the module): the flag costs nothing."""
    crd = await kube.get_or_none("customresourcedefinitions", "workloads.kueue.x-k8s.io")
    if crd is not None:
        pytest.skip("Kueue's CRDs are installed already in this control plane")
    await kube.create("nodes", node("n1"))
    op = operators.start("--kueue-admission-check")  # synced, alive
    await kube.create("pods", pod("after", namespace=NS))

    async def bound() -> bool:
        return bool((await kube.get("pods", "after", NS))["spec"].get("nodeName"))
    await eventually(bound, what="a pod bound by kubeberth started with --kueue-admission-check")
    assert op.process.alive()
    assert "Unresolved resources cannot be served" in op.log() and "kueue.x-k8s.io" in op.log()  # kopf's word


def podset(count: int, cpu: str) -> dict[str, Any]:
    return {"name": "main", "count": count, "template": {"spec": {
        "restartPolicy": "Never",
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": cpu}}}]}}}


async def reserve(kube: Kube, name: str, count: int, cpu: str) -> None:
    """What Kueue writes when it reserves quota in a ClusterQueue with our check: QuotaReserved,
    the admission (flavour `default`) and our check Pending."""
    cond = {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "reserved",
            "lastTransitionTime": NOW}
    status = {"conditions": [cond],
              "admission": {"clusterQueue": "cq", "podSetAssignments": [
                  {"name": "main", "count": count, "flavors": {"cpu": "default"},
                   "resourceUsage": {"cpu": str(int(cpu) * count)}}]},
              "admissionChecks": [{"name": "dry-run", "state": "Pending", "message": "", "lastTransitionTime": NOW}]}
    await kube.request("PATCH", f"{KUEUE}/namespaces/{NS}/workloads/{name}/status", body={"status": status},
                       content_type="application/merge-patch+json")


async def check_state(kube: Kube, name: str, state: str) -> dict[str, Any] | None:
    wl = await kube.request("GET", f"{KUEUE}/namespaces/{NS}/workloads/{name}")
    for c in (wl.get("status") or {}).get("admissionChecks") or ():
        if c["name"] == "dry-run" and c["state"] == state:
            return dict(c)
    return None


async def test_workloads_get_ready_or_retry(kueue_crds: Path, operators: Operators, kube: Kube) -> None:
    for kind in ("workloads",):
        await kube.request("DELETE", f"{KUEUE}/namespaces/{NS}/{kind}")
    for kind in ("admissionchecks", "resourceflavors"):
        await kube.request("DELETE", f"{KUEUE}/{kind}")
    await kube.create("nodes", node("n1", cpu="4", labels={"pool": "a"}))
    await kube.request("POST", f"{KUEUE}/resourceflavors", body={
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default"},
        "spec": {"nodeLabels": {"pool": "a"}}})
    await kube.request("POST", f"{KUEUE}/admissionchecks", body={
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": "dry-run"},
        "spec": {"controllerName": CONTROLLER_NAME}})
    await kube.request("POST", f"{KUEUE}/admissionchecks", body={
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": "someone-else"},
        "spec": {"controllerName": "example.com/other"}})
    for name, count, cpu in [("fits", 2, "1"), ("too-big", 2, "3")]:
        await kube.request("POST", f"{KUEUE}/namespaces/{NS}/workloads", body={
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": name, "namespace": NS},
            "spec": {"queueName": "lq", "podSets": [podset(count, cpu)]}})
    operators.start("--kueue-admission-check")

    async def active() -> bool:
        ac = await kube.request("GET", f"{KUEUE}/admissionchecks/dry-run")
        return any(c["type"] == "Active" and c["status"] == "True" for c in (ac.get("status") or {}).get("conditions")
                   or ())
    await eventually(active, what="our AdmissionCheck Active")
    other = await kube.request("GET", f"{KUEUE}/admissionchecks/someone-else")
    assert not (other.get("status") or {}).get("conditions"), "another controller's check was touched"

    await reserve(kube, "fits", 2, "1")
    await reserve(kube, "too-big", 2, "3")
    ready = await eventually(lambda: check_state(kube, "fits", "Ready"), what="fits: Ready")
    assert "all 2 pod(s) fit now: n1 x2" in ready["message"]
    retry = await eventually(lambda: check_state(kube, "too-big", "Retry"), what="too-big: Retry")
    assert "1 of 2 pod(s) fit now" in retry["message"] and "Insufficient cpu" in retry["message"]

    # A node of the flavour's pool is added; Kueue requeues the workload and sets the check Pending again.
    await kube.create("nodes", node("n2", cpu="4", labels={"pool": "a"}))
    await kube.create("nodes", node("elsewhere", cpu="64", labels={"pool": "b"}))  # not the flavour's

    async def retried_until_ready() -> dict[str, Any] | None:
        if await check_state(kube, "too-big", "Retry"):
            await reserve(kube, "too-big", 2, "3")
        return await check_state(kube, "too-big", "Ready")
    ready = await eventually(retried_until_ready, interval=1.0, what="too-big: Ready once n2 is there")
    assert "n1" in ready["message"] and "n2" in ready["message"] and "elsewhere" not in ready["message"]
