"""The ClusterRole in manifests/ grants exactly what the operator uses: observed against the emulator."""

from __future__ import annotations

import asyncio
import contextlib
import pathlib

import yaml

from kubeberth import features
from kubeberth.features import FeatureGates

from .conftest import wait_for
from .emulator import KINDS, Logged, events_for, make_node, make_pod, series_count

ROOT = pathlib.Path(__file__).resolve().parents[2]


def cluster_role() -> set[tuple[str, str, str]]:
    """The ClusterRole's and the leader-election Role's grants."""
    docs = [d for d in yaml.safe_load_all((ROOT / "manifests" / "rbac.yaml").read_text()) if d]
    roles = [d for d in docs if d["kind"] in ("ClusterRole", "Role")]
    return {(group, resource, verb) for role in roles for rule in role["rules"] for group in rule["apiGroups"]
            for resource in rule["resources"] for verb in rule["verbs"]}


def verb(r: Logged) -> str:
    if r.method == "GET":
        return "get" if r.name else ("watch" if r.watch else "list")
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[r.method]


# Grants the API server checks beyond the request's own: changing a ResourceClaim's allocation or
# reservedFor (in its status) also needs update on resourceclaims/binding.
IMPLIED = {("resource.k8s.io", "resourceclaims/status", "update"):
           ("resource.k8s.io", "resourceclaims/binding", "update")}


def used(log: list[Logged]) -> set[tuple[str, str, str]]:
    kinds = {k.store: k for k in KINDS}
    grants = {(kinds[r.plural].group, f"{kinds[r.plural].plural}/{r.subresource}" if r.subresource
               else kinds[r.plural].plural, verb(r)) for r in log}
    return grants | {IMPLIED[g] for g in grants if g in IMPLIED}


async def test_the_cluster_role_is_exactly_what_the_operator_uses(cluster, start_operator):
    # With GenericWorkload on (as `run --feature-gates GenericWorkload=true`): PodGroups are read too.
    with features.override(FeatureGates.parse("GenericWorkload=true")):
        await _exercise_every_grant(cluster, start_operator)


async def _exercise_every_grant(cluster, start_operator):
    api = cluster.api
    api.pod_grace_seconds = 0.1
    api.create("priorityclasses", {"metadata": {"name": "high"}, "value": 1000})
    api.create("nodes", make_node("n1", cpu="2"))
    api.create("pods", make_pod("low", cpu="2", node="n1"))
    api.create("schedulingprofiles", {"metadata": {"name": "bad"}, "spec": {"schedulerName": "x", "foo": 1}})
    api.inject(method="POST", plural="pods", subresource="binding", status=500, after_apply=True)  # read back
    api.create("namespaces", {"metadata": {"name": "kubeberth-system"}})
    await start_operator(leader_elect=True, lease_namespace="kubeberth-system", lease_duration=1.0,
                         renew_deadline=0.6, retry_period=0.1)
    api.create("pods", make_pod("huge", cpu="64"))  # FailedScheduling, again and again: an event patch
    vip = make_pod("vip", cpu="1", priority_class="high")  # preemption: a delete
    vip["metadata"]["annotations"] = {"kubeberth.io/explain": "true"}  # its explanation: a pod patch
    api.create("pods", vip)
    # DynamicResources: a claim allocated and reserved in PreBind (the finalizer, then the status).
    selector = {"cel": {"expression": 'device.driver == "gpu.example.com"'}}
    api.create("deviceclasses", {"metadata": {"name": "gpu"}, "spec": {"selectors": [selector]}})
    api.create("resourceslices", {"metadata": {"name": "n1-gpu"}, "spec": {
        "driver": "gpu.example.com", "nodeName": "n1", "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "gpu-0"}]}})
    api.create("resourceclaims", {"metadata": {"name": "gpu", "namespace": "default"}, "spec": {"devices": {
        "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}})
    api.create("pods", {**make_pod("trainer", cpu="0"), "spec": {
        **make_pod("trainer", cpu="0")["spec"], "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu"}]}})
    await wait_for(lambda: events_for(api, "trainer", "Scheduled"), timeout=15)
    # a gang of one: its PodGroup's PodGroupInitiallyScheduled condition, a podgroups/status patch
    api.create("podgroups", {"metadata": {"name": "gang", "namespace": "default"},
                             "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}}})
    gang = make_pod("gang-0", cpu="0")
    gang["spec"]["schedulingGroup"] = {"podGroupName": "gang"}
    api.create("pods", gang)
    # An extended resource a DeviceClass serves: the claim is created for the pod.
    api.create("deviceclasses", {"metadata": {"name": "ext"}, "spec": {"extendedResourceName": "example.com/gpu"}})
    api.create("resourceslices", {"metadata": {"name": "n1-ext"}, "spec": {
        "driver": "ext.example.com", "nodeName": "n1", "devices": [{"name": "ext-0"}],
        "pool": {"name": "ext", "generation": 1, "resourceSliceCount": 1}}})
    gpu = make_pod("ext-user", cpu="0")
    one = {"example.com/gpu": "1"}
    gpu["spec"]["containers"][0]["resources"] = {"requests": one, "limits": one}
    api.create("pods", gpu)
    await wait_for(lambda: events_for(api, "ext-user", "Scheduled"), timeout=15)
    await wait_for(lambda: events_for(api, "vip", "Scheduled"), timeout=15)
    await wait_for(lambda: ((api.get("podgroups", "gang", "default") or {}).get("status") or {}).get("conditions"),
                   timeout=15, message="the PodGroup's condition")
    # A repeated FailedScheduling (the pod at the same version, its condition unchanged) patches the
    # first Event's series: a bound pod's deletion tries "huge" again, until it has repeated.
    for i in range(6):
        if any(series_count(e) >= 2 for e in events_for(api, "huge", "FailedScheduling")):
            break
        attempts = len(events_for(api, "huge", "FailedScheduling")) + sum(
            series_count(e) - 1 for e in events_for(api, "huge", "FailedScheduling"))
        api.create("pods", make_pod(f"gone-{i}", cpu="0", node="n1"))
        await asyncio.sleep(0.1)  # seen bound before it goes
        api.delete("pods", f"gone-{i}", "default", grace=False)
        with contextlib.suppress(AssertionError):
            await wait_for(lambda a=attempts: len(events_for(api, "huge", "FailedScheduling")) + sum(
                series_count(e) - 1 for e in events_for(api, "huge", "FailedScheduling")) > a, timeout=10)
    assert any(series_count(e) >= 2 for e in events_for(api, "huge", "FailedScheduling")), "a repeated event"
    # VolumeBinding's PreBind: a PV's claimRef (static binding), a claim's selected node (provisioning).
    # No PV controller runs here: the pods stay in PreBind, the writes are what counts.
    for name, provisioner in (("local", "kubernetes.io/no-provisioner"), ("fast", "csi.example.com")):
        api.create("storageclasses", {"metadata": {"name": name}, "provisioner": provisioner,
                                      "volumeBindingMode": "WaitForFirstConsumer"})
        api.create("persistentvolumeclaims", {"metadata": {"name": name, "namespace": "default"},
                                              "spec": {"storageClassName": name, "accessModes": ["ReadWriteOnce"],
                                                       "resources": {"requests": {"storage": "1Gi"}}}})
    api.create("persistentvolumes", {"metadata": {"name": "pv"}, "spec": {
        "storageClassName": "local", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
        "hostPath": {"path": "/tmp/pv"}}, "status": {"phase": "Available"}})
    for name in ("local", "fast"):
        pod = make_pod(f"uses-{name}", cpu="0")
        pod["spec"]["volumes"] = [{"name": "v", "persistentVolumeClaim": {"claimName": name}}]
        api.create("pods", pod)
    await wait_for(lambda: (api.get("persistentvolumes", "pv") or {}).get("spec", {}).get("claimRef"),
                   timeout=15, message="the PV's claimRef")
    await wait_for(lambda: ((api.get("persistentvolumeclaims", "fast", "default") or {}).get("metadata", {})
                            .get("annotations") or {}).get("volume.kubernetes.io/selected-node"),
                   timeout=15, message="the claim's selected node")
    assert used(api.log) == cluster_role()
