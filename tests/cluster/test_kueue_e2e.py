"""kubeberth's admission check with Kueue's own controller manager (v0.17, built by tools/kueue/build.sh
into .cache/kueue/bin/kueue) on the real API server: a ClusterQueue gated by our AdmissionCheck, a
LocalQueue, and Jobs. Kueue creates their Workloads, reserves quota, sets our check Pending;
kubeberth answers; Kueue admits (unsuspends the Job, with the flavour's node selector) or evicts
and requeues, then admits once a node is added.

What it takes to run Kueue's manager on this control plane (no cluster network, no cert-manager,
no kubelet): its internal certificate management on, with what its certificate rotator fills or
injects the CA into present: the namespace kueue-system, its (empty) Secret
kueue-webhook-server-cert, its (empty) Validating/MutatingWebhookConfigurations, and the
multi-version CRDs with a conversion webhook (`url` on loopback: never called, every client here
speaking v1beta2, the stored version); the Secret's certificates written into its certDir (as the
kubelet would mount the Secret); its webhooks not registered, so the Jobs are made as its
defaulting webhook would make them (suspended, with the queue-name label); the visibility API
server off (feature gate VisibilityOnDemand=false); the admin's credentials. No
kube-controller-manager runs: the Jobs' pods are never created, admission is what is checked."""

from __future__ import annotations

import base64
import copy
import json
import os
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeberth.kueue.api import CONTROLLER_NAME

from .conftest import Operators
from .control_plane import ROOT, ControlPlane, Process, free_port, kubectl
from .kube import Kube, eventually, node

pytestmark = pytest.mark.cluster

KUEUE_BIN = ROOT / ".cache" / "kueue" / "bin" / "kueue"
CRDS = ROOT / ".cache" / "kueue" / "crds"
NS = "team-a"
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
CONVERTED = {"localqueues", "clusterqueues", "workloads", "cohorts", "multikueueclusters"}  # its rotator's list


def _apply(plane: ControlPlane, objs: list[dict[str, Any]], where: Path) -> None:
    where.write_text(yaml.safe_dump_all(objs))
    kubectl(plane, "apply", "--server-side", "--force-conflicts", "-f", str(where))


@pytest.fixture(scope="module")
def kueue_manager(control_plane: ControlPlane) -> Iterator[Process]:
    if not KUEUE_BIN.exists() or not (CRDS / "kueue.x-k8s.io_workloads.yaml").exists():
        pytest.skip(f"Kueue's manager not built ({KUEUE_BIN}): run tools/kueue/build.sh")
    webhook_port, health_port = free_port(), free_port()
    crds = []
    for path in sorted(CRDS.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        if crd["spec"]["names"]["plural"] in CONVERTED:
            crd["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": {"url": f"https://127.0.0.1:{webhook_port}/convert"}}}
        crds.append(crd)
    work = control_plane.dir / "kueue"
    work.mkdir(exist_ok=True)
    _apply(control_plane, crds, work / "crds.yaml")
    kubectl(control_plane, "wait", "--for", "condition=established", "--timeout=60s", "-f", str(work / "crds.yaml"))
    kubectl(control_plane, "apply", "-f", str(ROOT / "manifests" / "kueue" / "rbac.yaml"))
    _apply(control_plane, [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kueue-system"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "kueue-webhook-server-cert",
                                                             "namespace": "kueue-system"}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
         "metadata": {"name": "kueue-validating-webhook-configuration"}, "webhooks": []},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
         "metadata": {"name": "kueue-mutating-webhook-configuration"}, "webhooks": []}], work / "system.yaml")
    config = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration", "namespace": "kueue-system",
              "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
              "metrics": {"bindAddress": "0"},
              "webhook": {"port": webhook_port, "host": "127.0.0.1", "certDir": str(work / "certs")},
              "leaderElection": {"leaderElect": False},
              "internalCertManagement": {"enable": True},
              "integrations": {"frameworks": ["batch/job"]}}
    (work / "config.yaml").write_text(yaml.safe_dump(config))
    proc = Process.start("kueue", [str(KUEUE_BIN), f"--config={work / 'config.yaml'}",
                                   "--feature-gates=VisibilityOnDemand=false",
                                   f"--kubeconfig={control_plane.admin_kubeconfig}"],
                         control_plane.dir, env={**os.environ, "KUBECONFIG": str(control_plane.admin_kubeconfig)})
    deadline = time.monotonic() + 90
    certs = work / "certs"
    while True:
        if not (certs / "tls.crt").exists():  # the kubelet's part: the Secret's keys as files in certDir
            secret = json.loads(kubectl(control_plane, "get", "secret", "-n", "kueue-system",
                                        "kueue-webhook-server-cert", "-o", "json").stdout)
            data = secret.get("data") or {}
            if data.get("tls.crt") and data.get("tls.key"):
                certs.mkdir(exist_ok=True)
                for name, value in data.items():
                    (certs / name).write_bytes(base64.b64decode(value))
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{health_port}/readyz", timeout=2) as resp:
                if resp.status == 200:
                    break
        except OSError:
            pass
        if not proc.alive() or time.monotonic() > deadline:
            log = proc.tail(60)
            proc.stop()
            raise AssertionError(f"Kueue's manager did not get ready:\n{log}")
        time.sleep(0.5)
    try:
        yield proc
    finally:
        proc.stop()
        # The session's later tests see Kueue's CRDs as shipped (no conversion webhook on a dead port), no Jobs.
        kubectl(control_plane, "delete", "jobs", "--all", "-n", NS, "--wait=false", check=False)
        kubectl(control_plane, "apply", "--server-side", "--force-conflicts", "-f", str(CRDS), check=False)


def job(name: str, count: int, cpu: str) -> dict[str, Any]:
    """A Job as Kueue's defaulting webhook leaves it: suspended, in LocalQueue lq."""
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": NS, "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"suspend": True, "parallelism": count, "completions": count, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                "resources": {"requests": {"cpu": cpu}}}]}}}}


async def workload_of(kube: Kube, job_name: str) -> dict[str, Any] | None:
    for wl in (await kube.request("GET", f"{KUEUE}/namespaces/{NS}/workloads")).get("items") or ():
        if any(o.get("kind") == "Job" and o.get("name") == job_name
               for o in wl["metadata"].get("ownerReferences") or ()):
            return dict(wl)
    return None


def admitted(wl: dict[str, Any] | None) -> bool:
    return wl is not None and any(c["type"] == "Admitted" and c["status"] == "True"
                                  for c in (wl.get("status") or {}).get("conditions") or ())


async def test_kueue_admits_what_fits_and_requeues_what_does_not(kueue_manager: Process, operators: Operators,
                                                                  kube: Kube) -> None:
    await kube.request("DELETE", f"/apis/batch/v1/namespaces/{NS}/jobs", body={"propagationPolicy": "Background"})
    await kube.create("nodes", node("n1", cpu="4", labels={"pool": "a"}))
    await kube.create("nodes", node("other", cpu="64", labels={"pool": "b"}))
    objects = [
        ("resourceflavors", {"kind": "ResourceFlavor", "metadata": {"name": "pool-a"},
                             "spec": {"nodeLabels": {"pool": "a"}}}),
        ("admissionchecks", {"kind": "AdmissionCheck", "metadata": {"name": "dry-run"},
                             "spec": {"controllerName": CONTROLLER_NAME}}),
        ("clusterqueues", {"kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {
            "namespaceSelector": {},
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "pool-a", "resources": [{"name": "cpu", "nominalQuota": "100"}]}]}],
            "admissionChecksStrategy": {"admissionChecks": [{"name": "dry-run"}]}}}),
    ]
    for plural, obj in objects:
        body = {"apiVersion": "kueue.x-k8s.io/v1beta2", **copy.deepcopy(obj)}
        await kube.request("POST", f"{KUEUE}/{plural}", body=body, ok=(201, 409))
    await kube.request("POST", f"{KUEUE}/namespaces/{NS}/localqueues", ok=(201, 409), body={
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": NS},
        "spec": {"clusterQueue": "cq"}})
    op = operators.start("--kueue-admission-check")

    await kube.request("POST", f"/apis/batch/v1/namespaces/{NS}/jobs", body=job("small", 2, "1"))
    wl = await eventually(lambda: _admitted(kube, "small"), timeout=60, what="Job small's Workload admitted")
    (entry,) = wl["status"]["admissionChecks"]
    assert entry["state"] == "Ready" and "all 2 pod(s) fit now: n1 x2" in entry["message"]
    small = await kube.request("GET", f"/apis/batch/v1/namespaces/{NS}/jobs/small")
    assert small["spec"]["suspend"] is False  # Kueue started it, on the flavour's nodes:
    assert small["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "a"}

    await kube.request("POST", f"/apis/batch/v1/namespaces/{NS}/jobs", body=job("big", 2, "3"))

    async def retried() -> bool:
        return "Workload team-a/" in op.log() and " Retry: kubeberth: 1 of 2 pod(s) fit now" in op.log()
    await eventually(retried, timeout=60, what="Job big's check answered Retry")
    assert not admitted(await workload_of(kube, "big"))
    big = await kube.request("GET", f"/apis/batch/v1/namespaces/{NS}/jobs/big")
    assert big["spec"]["suspend"] is True
    async def evicted() -> bool:  # Kueue released its quota and requeued it (its lasting record: the Evicted
        wl = await workload_of(kube, "big") or {}  # condition is reset at the next reservation)
        stats = ((wl.get("status") or {}).get("schedulingStats") or {}).get("evictions") or ()
        return any(e.get("reason") == "AdmissionCheck" and e.get("count", 0) >= 1 for e in stats)
    await eventually(evicted, timeout=30, what="Job big's Workload evicted by the admission check")

    # A node of the flavour's pool comes: at its next reservation Kueue sets our check Pending again.
    await kube.create("nodes", node("n2", cpu="4", labels={"pool": "a"}))
    try:
        wl = await eventually(lambda: _admitted(kube, "big"), timeout=120, interval=0.5,
                              what="Job big's Workload admitted once n2 is there")
    except AssertionError:
        print(json.dumps((await workload_of(kube, "big") or {}).get("status"), indent=1))
        print(kueue_manager.tail(30))
        raise
    (entry,) = wl["status"]["admissionChecks"]
    assert entry["state"] == "Ready" and "n1" in entry["message"] and "n2" in entry["message"]
    big = await kube.request("GET", f"/apis/batch/v1/namespaces/{NS}/jobs/big")
    assert big["spec"]["suspend"] is False


async def _admitted(kube: Kube, job_name: str) -> dict[str, Any] | None:
    wl = await workload_of(kube, job_name)
    return wl if admitted(wl) else None
