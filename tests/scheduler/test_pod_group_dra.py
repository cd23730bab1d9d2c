"""A pod group whose pods' claims are allocated where none of its pods can go (a node that is
gone), through the whole scheduler (simulate), GenericWorkload on: DynamicResources'
PodGroupPostFilter deallocates the claim of each pod the attempt reached, the claims' updates
bring the group back, and it is scheduled on devices allocated anew. (Checked against
kube-scheduler v1.37.2 by tests/cluster/test_gang_preemption.py.)"""

from __future__ import annotations

import io
from typing import Any

from kubeberth import features
from kubeberth.features import FeatureGates
from kubeberth.whatif.engine import run_simulation
from tests.builders import node_dict, pod_dict

DRIVER = "gpu.example.com"
GONE = {"nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
    {"key": "metadata.name", "operator": "In", "values": ["gone"]}]}]},
    "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "gone", "device": "gpu-0"}]}}


def objects(claims: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        node_dict("n1"), node_dict("n2"),
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "n1-gpu"},
         "spec": {"driver": DRIVER, "nodeName": "n1", "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                  "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]}},
        {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
         "metadata": {"name": "g", "namespace": "default", "generation": 1},
         "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}]
    for i in range(claims):
        out.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                    "metadata": {"name": f"c{i}", "namespace": "default"},
                    "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
                    "status": {"allocation": GONE}})
        p = pod_dict(f"g-{i}", cpu="100m", resourceClaims=[{"name": "gpu", "resourceClaimName": f"c{i}"}])
        p["spec"]["schedulingGroup"] = {"podGroupName": "g"}
        out.append(p)
    return out


def test_claims_allocated_out_of_reach_are_deallocated_and_the_group_scheduled() -> None:
    with features.override(FeatureGates.parse("GenericWorkload=true")):
        outcomes, sched = run_simulation(objects(2), warn=io.StringIO())
    assert {o.pod: (o.status, o.node) for o in outcomes} == {
        "default/g-0": ("Scheduled", "n1"), "default/g-1": ("Scheduled", "n1")}
    devices = set()
    for name in ("c0", "c1"):
        claim = sched.ctx.objects.get("ResourceClaim", f"default/{name}")
        [result] = claim["status"]["allocation"]["devices"]["results"]
        assert result["pool"] == "n1"
        devices.add(result["device"])
    assert devices == {"gpu-0", "gpu-1"}
    pg = sched.ctx.objects.get("PodGroup", "default/g")
    [cond] = pg["status"]["conditions"]
    assert (cond["status"], cond["reason"]) == ("True", "Scheduled")
