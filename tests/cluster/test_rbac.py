"""The ClusterRole in manifests/rbac.yaml, judged by the API server's audit log.

A full scheduling run (leader election, profiles with a refused edit, binding, a repeated failure,
preemption with a PodDisruptionBudget in the cluster) made with the kubeberth ServiceAccount's
own token: no request may be refused (403), and every permission the role grants must have
been used, so that it is no wider than needed.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import NAMESPACE, SERVICE_ACCOUNT, Operators
from .control_plane import ROOT, ControlPlane
from .kube import EVENTS_V1, Kube, eventually, node, pod

pytestmark = pytest.mark.cluster

USER = f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"
Permission = tuple[str, str, str]  # (apiGroup, resource[/subresource], verb)
# Granted for paths a healthy run does not take; the emulator suite takes them (tests/operator).
FAULT_PATHS: dict[Permission, str] = {
    ("", "pods", "get"): "a binding that failed or timed out: was the pod bound anyway? (api_client._bound_to)",
}
# Checked by the API server beyond the request's own permission: a change of a ResourceClaim's
# allocation or reservedFor (an update of its status) also needs update on resourceclaims/binding.
IMPLIED: dict[Permission, Permission] = {
    ("resource.k8s.io", "resourceclaims/status", "update"): ("resource.k8s.io", "resourceclaims/binding", "update"),
}

# Granted for VolumeBinding's PreBind; the run that uses them, and their audit, is in test_volume_binding.py.
VOLUME_WRITES: set[Permission] = {("", "persistentvolumes", "update"), ("", "persistentvolumeclaims", "update")}
# Granted for PodGroups (with --feature-gates GenericWorkload=true, on an API server serving
# scheduling.k8s.io/v1beta1); the run that uses them, and their audit, is in test_gangs.py.
POD_GROUP_GRANTS: set[Permission] = {("scheduling.k8s.io", "podgroups", "list"),
                                     ("scheduling.k8s.io", "podgroups", "watch"),
                                     ("scheduling.k8s.io", "podgroups/status", "patch")}

# Plugin distributions installed beside kubeberth (`make install` adds Coscheduling's) are enabled by
# no profile of this run: they cost nothing, so their grants (conftest.py installs them) are not used
# here and anything of theirs asked for would be "used without being granted" below. Coscheduling's
# RBAC is audited where a profile enables it (test_coscheduling.py).


def granted(path: Path = ROOT / "manifests" / "rbac.yaml") -> set[Permission]:
    """The ClusterRole's grants and the leader-election Role's (in kubeberth-system)."""
    roles = [d for d in yaml.safe_load_all(path.read_text()) if d and d["kind"] in ("ClusterRole", "Role")]
    return {(group, resource, verb) for role in roles for rule in role["rules"] for group in rule["apiGroups"]
            for resource in rule["resources"] for verb in rule["verbs"]}


def used(events: list[dict[str, Any]], since: float) -> tuple[set[Permission], list[str]]:
    """What the ServiceAccount asked for after `since`, and every refusal."""
    asked: set[Permission] = set()
    refused = []
    for e in events:
        if e.get("user", {}).get("username") != USER or e.get("stage") != "ResponseComplete":
            continue
        received = e.get("requestReceivedTimestamp")
        if received and datetime.fromisoformat(received.replace("Z", "+00:00")).timestamp() < since:
            continue  # an earlier test's requests
        ref = e.get("objectRef") or {}
        if not ref.get("resource"):
            continue  # discovery (/api, /apis, /version)
        resource = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        perm = (ref.get("apiGroup", ""), resource, e["verb"])
        code = (e.get("responseStatus") or {}).get("code", 0)
        if code == 403:
            refused.append(f"{perm}: {e['requestURI']}")
        asked.add(perm)
        if perm in IMPLIED and code < 400:
            asked.add(IMPLIED[perm])
    return asked, refused


async def test_least_privilege_role_is_enough_and_all_used(control_plane: ControlPlane, kube: Kube,
                                                          operators: Operators) -> None:
    started = time.time()
    await kube.create("priorityclasses", {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                          "metadata": {"name": "high"}, "value": 1000})
    await kube.create("poddisruptionbudgets", {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "db", "namespace": "default"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}}})
    await kube.create("nodes", node("n1", cpu="2"))
    await kube.create("pods", pod("victim", cpu="2", node_name="n1"))
    # DynamicResources: a device allocated to a claim (the claim's finalizer, then its status).
    await kube.create("nodes", node("gpu", cpu="100m"))
    await kube.create("deviceclasses", {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                        "metadata": {"name": "gpu"}, "spec": {}})
    await kube.create("resourceslices", {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                                         "metadata": {"name": "gpu"}, "spec": {
                                             "driver": "gpu.example.com", "nodeName": "gpu",
                                             "devices": [{"name": "d"}, {"name": "e"}],
                                             "pool": {"name": "gpu", "generation": 1, "resourceSliceCount": 1}}})
    await kube.create("resourceclaims", {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                         "metadata": {"name": "gpu", "namespace": "default"}, "spec": {"devices": {
                                             "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}})
    trainer = pod("trainer", cpu="100m")
    trainer["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "gpu"}]
    operators.start("--leader-elect")
    await kube.create("pods", trainer)
    await eventually(lambda: _bound(kube, "trainer"), what="trainer bound")
    # An extended resource a DeviceClass serves: DynamicResources creates the pod's claim.
    await kube.create("deviceclasses", {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                        "metadata": {"name": "ext"},
                                        "spec": {"extendedResourceName": "example.com/gpu"}})
    ext_user = pod("ext-user", cpu="0")
    ext_user["spec"]["containers"][0]["resources"]["requests"]["example.com/gpu"] = "1"
    ext_user["spec"]["containers"][0]["resources"].setdefault("limits", {})["example.com/gpu"] = "1"
    await kube.create("pods", ext_user)
    await eventually(lambda: _bound(kube, "ext-user"), what="ext-user bound")
    await kube.create("schedulingprofiles", {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile",
                                             "metadata": {"name": "bad"},
                                             "spec": {"schedulerName": "other",
                                                      "plugins": {"score": {"enabled": [{"name": "Nope"}]}}}})
    await kube.create("pods", pod("never", cpu="64"))
    preemptor = pod("preemptor", cpu="2", priority_class="high")
    preemptor["metadata"]["annotations"] = {"kubeberth.io/explain": "true"}  # its explanation: a pod patch
    await kube.create("pods", preemptor)

    async def preempted() -> bool:
        v = await kube.get("pods", "victim", "default")
        return bool(v["metadata"].get("deletionTimestamp"))

    await eventually(preempted, what="victim preempted")
    await kube.delete("pods", "victim", "default", grace_period=0)
    await eventually(lambda: _bound(kube, "preemptor"), what="preemptor bound")

    async def repeated() -> bool:  # a repeat of "never"'s FailedScheduling patches its Event's series
        events = await kube.list(EVENTS_V1, "default", fieldSelector="regarding.name=never")
        return any((e.get("series") or {}).get("count", 1) > 1 for e in events)

    # A bound pod's deletion tries "never" again (NodeResourcesFit); its condition unchanged, the
    # failure regards the pod at the same version as the one before: a repeat (as kube-scheduler's,
    # tests/cluster/test_events_as_upstream.py). Again until it has repeated.
    for i in range(6):
        if await repeated():
            break
        await kube.create("pods", pod(f"gone-{i}", cpu="0", node_name="n1"))
        await asyncio.sleep(0.2)
        await kube.delete("pods", f"gone-{i}", "default", grace_period=0)
        with contextlib.suppress(AssertionError):
            await eventually(repeated, timeout=2 ** (i + 1) + 2, what="a repeated FailedScheduling event")
    await eventually(repeated, timeout=5, what="a repeated FailedScheduling event")
    await eventually(lambda: _status_written(kube, "bad"), what="profile status")

    async def profile_refused() -> list[dict[str, Any]]:  # about a cluster-scoped object: in default
        return [e for e in await kube.list(EVENTS_V1, "default", fieldSelector="regarding.name=bad")
                if e["reason"] == "ProfileRefused"]

    [refusal] = await eventually(profile_refused, what="the ProfileRefused event")
    assert (refusal["regarding"]["kind"], refusal["reportingController"], refusal["type"]) == (
        "SchedulingProfile", "kubeberth", "Warning")
    operators.stop_all()

    grants = granted()

    def audited() -> tuple[set[Permission], list[str], list[Permission]]:
        asked, refused = used(control_plane.audit_events(), started)
        # "create" of events is counted as used when a patch of them is seen too, and vice versa.
        unused = sorted(grants - asked - set(FAULT_PATHS) - VOLUME_WRITES - POD_GROUP_GRANTS)
        return asked, refused, unused

    # The audit backend writes in batches: the last requests of the run may reach the log a
    # little after the operator stopped. Read it again until every grant is seen, or 10 s.
    deadline = time.monotonic() + 10
    asked, refused, unused = audited()
    while unused and time.monotonic() < deadline:
        time.sleep(0.5)
        asked, refused, unused = audited()
    assert ("", "pods/binding", "create") in asked, "no binding in the audit log"
    assert refused == [], "refused by RBAC:\n" + "\n".join(refused)
    assert unused == [], f"granted but never used in a full run: {unused}"
    beyond = sorted(asked - grants)
    assert beyond == [], f"used without being granted (should have been refused): {beyond}"


async def _bound(kube: Kube, name: str) -> str | None:
    return (await kube.get("pods", name, "default"))["spec"].get("nodeName")


async def _status_written(kube: Kube, name: str) -> bool:
    return bool(((await kube.get("schedulingprofiles", name)).get("status") or {}).get("conditions"))
