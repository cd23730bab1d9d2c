"""simulate's PV controller and provisioner (whatif/volumes.py): what they write once the volume
binder has written its part, and through simulate, pods whose claims they bind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kubeberth.whatif.simulate import simulate
from kubeberth.whatif.volumes import bind_claimed_volume, provision_claim
from tests.doubles import store_of
from tests.plugins._volume_helpers import csi_node, pv, pvc, storage_class

CASES = Path(__file__).parent / "conformance" / "cases"
SELECTED = {"volume.kubernetes.io/selected-node": "n1"}


def test_the_pv_controller_binds_the_claim_the_pv_points_at() -> None:
    claim = pvc("c", uid="u-c", storage_class="local")
    volume = pv("pv", storage_class="local", claim=("default", "c"), claim_uid="u-c", capacity="3Gi")
    [(_, new_pv), (_, new_pvc)] = bind_claimed_volume(store_of(claim, volume), volume)
    assert new_pv["status"]["phase"] == "Bound"
    assert new_pvc["spec"]["volumeName"] == "pv" and new_pvc["status"]["capacity"] == {"storage": "3Gi"}
    assert new_pvc["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
    # A claimRef naming another claim of the same name (another uid) binds nothing.
    other = pv("pv", claim=("default", "c"), claim_uid="u-old")
    assert bind_claimed_volume(store_of(claim, other), other) == []


def test_the_provisioner_makes_a_pv_where_the_driver_topology_says() -> None:
    sc = storage_class("fast", wait=True, provisioner="csi.example.com")
    node = csi_node("n1", {"csi.example.com": None})
    node["spec"]["drivers"][0]["topologyKeys"] = ["topology.kubernetes.io/zone"]
    claim = pvc("c", uid="u-c", storage_class="fast", request="2Gi", annotations=SELECTED)
    [(_, new_pv), (_, new_pvc)] = provision_claim(store_of(sc, node, claim), claim,
                                                  {"topology.kubernetes.io/zone": "z1", "kubernetes.io/hostname": "n1"})
    assert new_pv["metadata"]["name"] == "pvc-u-c" and new_pvc["spec"]["volumeName"] == "pvc-u-c"
    assert new_pv["spec"]["csi"] == {"driver": "csi.example.com", "volumeHandle": "pvc-u-c"}
    assert new_pv["spec"]["nodeAffinity"] == {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["z1"]}]}]}}
    assert new_pv["spec"]["capacity"] == {"storage": "2Gi"}


def test_in_tree_provisioners_and_claims_nobody_provisions() -> None:
    ebs = storage_class("ebs", wait=True, provisioner="kubernetes.io/aws-ebs")
    claim = pvc("c", uid="u-c", storage_class="ebs", request="1Gi", annotations=SELECTED)
    [(_, new_pv), _] = provision_claim(store_of(ebs, claim), claim, {})
    assert new_pv["spec"]["awsElasticBlockStore"] == {"volumeID": "pvc-u-c"}
    local = storage_class("local", wait=True)
    claim = pvc("c", uid="u-c", storage_class="local", annotations=SELECTED)
    assert provision_claim(store_of(local, claim), claim, {}) == []
    unselected = pvc("c", uid="u-c", storage_class="ebs")
    assert provision_claim(store_of(ebs, unselected), unselected, {}) == []


def test_simulate_binds_a_provisioned_claim_and_its_next_pod_follows_the_volume() -> None:
    case = yaml.safe_load((CASES / "volume-binding-storage-capacity-scoring.yaml").read_text())
    objects: list[dict[str, Any]] = [o for o in case["objects"] if o["kind"] != "Pod"]
    # The driver's topology is the hostname: the provisioned PV pins the claim's next pod to n2, which
    # it would otherwise leave for an emptier node.
    objects.append(csi_node("n2", {"csi.example.com": None}))
    objects[-1]["spec"]["drivers"][0]["topologyKeys"] = ["kubernetes.io/hostname"]
    pods = [p for p in case["objects"] if p["kind"] == "Pod" and p["metadata"]["name"] == "writer"]
    reader = yaml.safe_load(yaml.safe_dump(pods[0]))
    reader["metadata"]["name"] = "reader"
    reader["metadata"]["creationTimestamp"] = "2030-01-01T00:00:00Z"
    outcomes = simulate([*objects, *pods, reader], seed=5)
    assert [(o.pod, o.node) for o in outcomes] == [("default/writer", "n2"), ("default/reader", "n2")]
