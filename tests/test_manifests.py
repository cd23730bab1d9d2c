"""manifests/ and crds/: valid Kubernetes objects (kubernetes-validate, offline) and a coherent install."""

from __future__ import annotations

import pathlib
from typing import Any

import kubernetes_validate
import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
K8S_VERSION = "1.30"
CUSTOM_KINDS = {"SchedulingProfile", "ClusterKopfPeering"}
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "SchedulingProfile", "ClusterKopfPeering",
                  "CustomResourceDefinition", "PriorityClass",
                  "WorkloadSummary"}  # checked against their CRDs in tests/operator


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
    assert dep["metadata"]["namespace"] == ns["metadata"]["name"]
    # Every namespaced object is in kubeberth's namespace but the binding that reads kube-system's ConfigMap.
    for _, doc in documents("manifests"):
        if doc["kind"] in CLUSTER_SCOPED:
            assert "namespace" not in doc["metadata"], doc["metadata"]["name"]
        elif doc["metadata"]["name"] == "kubeberth:extension-apiserver-authentication-reader":
            assert doc["metadata"]["namespace"] == "kube-system"
        else:
            assert doc["metadata"]["namespace"] == ns["metadata"]["name"], (doc["kind"], doc["metadata"]["name"])
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
    assert int(args["metrics-port"]) == ports["metrics"]
    assert {m["mountPath"] for m in c["volumeMounts"]} == {"/tmp"}


def test_the_probes_use_the_secure_ports_always_allowed_paths():
    """Liveness and readiness on 10259's /livez and /readyz over HTTPS: no token needed (upstream's
    --authorization-always-allow-paths), and the port is never plain HTTP nor open without authn."""
    from kubeberth.operator.serving_options import DEFAULT_ALWAYS_ALLOW_PATHS

    [dep] = by_kind("Deployment")
    [c] = dep["spec"]["template"]["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    probes = {kind: c[kind]["httpGet"] for kind in ("livenessProbe", "readinessProbe")}
    assert probes["livenessProbe"]["path"] == "/livez" and probes["readinessProbe"]["path"] == "/readyz"
    for probe in probes.values():
        assert probe["scheme"] == "HTTPS" and ports[probe["port"]] == 10259
        assert probe["path"] in DEFAULT_ALWAYS_ALLOW_PATHS
    assert "--metrics-insecure" not in c["args"] and not any(a.startswith("--liveness") for a in c["args"])
    assert not any(a.startswith(("--metrics-host", "--bind-address", "--authorization-always-allow-paths"))
                   for a in c["args"])


def named(kind: str, name: str) -> dict[str, Any]:
    [doc] = [d for d in by_kind(kind) if d["metadata"]["name"] == name]
    return doc


def test_rbac_binds_the_service_account():
    [sa] = by_kind("ServiceAccount")
    binding = named("ClusterRoleBinding", "kubeberth")
    role = named("ClusterRole", "kubeberth")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": role["metadata"]["name"]}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": sa["metadata"]["name"],
                                    "namespace": sa["metadata"]["namespace"]}]
    for role in by_kind("ClusterRole") + by_kind("Role"):
        for rule in role["rules"]:
            assert "*" not in rule["verbs"]
            assert "*" not in rule.get("resources", ()) and "*" not in rule.get("apiGroups", ())
            assert "*" not in rule.get("nonResourceURLs", ())


def test_rbac_grants_what_delegated_authn_and_authz_need():
    [sa] = by_kind("ServiceAccount")
    subject = {"kind": "ServiceAccount", "name": sa["metadata"]["name"], "namespace": sa["metadata"]["namespace"]}
    # TokenReview and SubjectAccessReview: the cluster's own system:auth-delegator.
    [delegator] = [b for b in by_kind("ClusterRoleBinding") if b["roleRef"]["name"] == "system:auth-delegator"]
    assert delegator["roleRef"]["kind"] == "ClusterRole" and delegator["subjects"] == [subject]
    # The client CAs: ConfigMap kube-system/extension-apiserver-authentication, by the cluster's own Role.
    [reader] = [b for b in by_kind("RoleBinding")
                if b["roleRef"]["name"] == "extension-apiserver-authentication-reader"]
    assert reader["metadata"]["namespace"] == "kube-system"
    assert reader["roleRef"]["kind"] == "Role" and reader["subjects"] == [subject]
    # What a Prometheus is bound to: get on /metrics, nothing else.
    metrics_reader = named("ClusterRole", "kubeberth-metrics-reader")
    assert metrics_reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    # What a caller of the dry runs is bound to: create on dryruns.kubeberth.io, nothing else.
    dry_runner = named("ClusterRole", "kubeberth-dryrun")
    assert dry_runner["rules"] == [{"apiGroups": ["kubeberth.io"], "resources": ["dryruns"], "verbs": ["create"]}]


def test_the_kustomization_keeps_the_kube_system_binding_in_kube_system():
    """`kubectl kustomize manifests/` (as `kubectl apply -k`) renders every object in kubeberth's namespace
    except the RoleBinding that must live beside the ConfigMap it reads."""
    import subprocess

    kubectl = ROOT / ".cache" / "k8s" / "bin" / "kubectl"
    if not kubectl.exists():
        pytest.skip("kubectl not built (make control-plane)")
    out = subprocess.run([str(kubectl), "kustomize", str(ROOT / "manifests")], check=True, capture_output=True,
                         text=True).stdout
    rendered = [d for d in yaml.safe_load_all(out) if d]
    namespaces = {(d["kind"], d["metadata"]["name"]): d["metadata"].get("namespace") for d in rendered}
    assert namespaces[("RoleBinding", "kubeberth:extension-apiserver-authentication-reader")] == "kube-system"
    assert namespaces[("Deployment", "kubeberth")] == namespaces[("Role", "kubeberth-leader-election")] \
        == namespaces[("Service", "kubeberth-metrics")] == "kubeberth-system"
    [dep] = [d for d in rendered if d["kind"] == "Deployment"]
    assert dep["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["scheme"] == "HTTPS"


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

    from kubeberth.operator.options import add_run_arguments

    [dep] = by_kind("Deployment")
    [c] = dep["spec"]["template"]["spec"]["containers"]
    parser = add_run_arguments(argparse.ArgumentParser())
    parser.parse_args(c["args"][1:])
    dockerfile = (ROOT / "Dockerfile").read_text()
    cmd = next(line for line in dockerfile.splitlines() if line.startswith("CMD "))
    parser.parse_args(yaml.safe_load(cmd.removeprefix("CMD "))[1:])
