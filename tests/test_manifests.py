"""manifests/ and crds/: valid Kubernetes objects (kubernetes-validate, offline) and a coherent install."""

from __future__ import annotations

import pathlib
from typing import Any

import kubernetes_validate
import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
K8S_VERSION = "1.30"
CUSTOM_KINDS = {"SchedulingProfile", "ClusterKopfPeering"}  # checked against their CRDs in tests/operator


def documents(*dirs: str) -> list[tuple[pathlib.Path, dict[str, Any]]]:
    out = []
    for d in dirs:
        for path in sorted((ROOT / d).rglob("*.yaml")):
            if path.name == "kustomization.yaml":
                continue
            out += [(path, doc) for doc in yaml.safe_load_all(path.read_text()) if doc]
    return out


DOCS = documents("manifests", "crds")


@pytest.mark.parametrize("path, doc", DOCS, ids=[f"{p.relative_to(ROOT)}:{d['kind']}/{d['metadata']['name']}"
                                                  for p, d in DOCS])
def test_every_manifest_validates(path, doc):
    if doc["kind"] in CUSTOM_KINDS:
        assert doc["apiVersion"] == "kubeberth.io/v1alpha1"
        return
    kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def kustomization(d: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / d / "kustomization.yaml").read_text())


@pytest.mark.parametrize("d", ["manifests", "manifests/samples"])
def test_kustomizations_list_their_files(d):
    k = kustomization(d)
    assert k["apiVersion"] == "kustomize.config.k8s.io/v1beta1" and k["kind"] == "Kustomization"
    listed = set(k["resources"])
    present = {p.name for p in (ROOT / d).glob("*.yaml") if p.name != "kustomization.yaml"}
    assert listed == present


def by_kind(kind: str) -> list[dict[str, Any]]:
    return [doc for _, doc in documents("manifests") if doc["kind"] == kind]


def test_deployment_is_ha_probed_and_locked_down():
    [dep] = by_kind("Deployment")
    [sa] = by_kind("ServiceAccount")
    [ns] = by_kind("Namespace")
    assert kustomization("manifests")["namespace"] == ns["metadata"]["name"] == dep["metadata"]["namespace"]
    spec = dep["spec"]
    assert spec["replicas"] == 2
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == sa["metadata"]["name"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    [c] = pod["containers"]
    args = dict(a.removeprefix("--").split("=", 1) for a in c["args"] if a.startswith("--") and "=" in a)
    assert c["args"][0] == "run"
    assert "--leader-elect" in c["args"]  # the Lease is in the pod's own namespace:
    assert {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}} in c["env"]
    [role] = [r for r in by_kind("Role") if r["metadata"]["name"] == "kubeberth-leader-election"]
    assert role["metadata"]["namespace"] == dep["metadata"]["namespace"]
    assert role["rules"] == [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                              "verbs": ["get", "create", "update"]}]
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert c["resources"]["requests"]["cpu"] and c["resources"]["requests"]["memory"]
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    probe = c["livenessProbe"]["httpGet"]
    assert args["liveness"] == f"http://0.0.0.0:{ports[probe['port']]}{probe['path']}"
    assert int(args["metrics-port"]) == ports["metrics"]
    assert {m["mountPath"] for m in c["volumeMounts"]} == {"/tmp"}


def test_rbac_binds_the_service_account():
    [sa] = by_kind("ServiceAccount")
    [binding] = by_kind("ClusterRoleBinding")
    [role] = by_kind("ClusterRole")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": role["metadata"]["name"]}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": sa["metadata"]["name"],
                                    "namespace": sa["metadata"]["namespace"]}]
    for rule in role["rules"]:
        assert "*" not in rule["verbs"] and "*" not in rule["resources"] and "*" not in rule["apiGroups"]


def test_the_dockerfile_runs_the_operator_as_the_deployment_expects():
    text = (ROOT / "Dockerfile").read_text()
    [dep] = by_kind("Deployment")
    [c] = dep["spec"]["template"]["spec"]["containers"]
    user = dep["spec"]["template"]["spec"]["securityContext"]["runAsUser"]
    assert f"USER {user}:" in text
    assert 'ENTRYPOINT ["kubeberth"]' in text
    assert c["args"][0] == "run"


def test_the_run_options_used_in_manifests_exist():
    import argparse

    from kubeberth.operator.run import add_run_arguments

    [dep] = by_kind("Deployment")
    [c] = dep["spec"]["template"]["spec"]["containers"]
    parser = add_run_arguments(argparse.ArgumentParser())
    parser.parse_args(c["args"][1:])
    dockerfile = (ROOT / "Dockerfile").read_text()
    cmd = next(line for line in dockerfile.splitlines() if line.startswith("CMD "))
    parser.parse_args(yaml.safe_load(cmd.removeprefix("CMD "))[1:])
