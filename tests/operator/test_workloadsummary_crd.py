"""The WorkloadSummary CRD (crds/workloadsummary.yaml): valid, structural, the kind the gpushare
plugins declare, and its schema accepts what replay publishes and refuses malformed specs."""

from __future__ import annotations

import pathlib
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from kubeberth.whatif.replay.workload import workload_summary

from .test_crd import K8S_VERSION, _structural_errors

ROOT = pathlib.Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "crds" / "workloadsummary.yaml"
GPU = "alibabacloud.com/gpu-milli"


def crd() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(CRD_FILE.read_text())
    return loaded


def schema() -> dict[str, Any]:
    [version] = crd()["spec"]["versions"]
    found: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return found


def test_crd_validates_and_is_structural() -> None:
    kubernetes_validate.validate(crd(), K8S_VERSION, strict=True)
    assert _structural_errors(schema()) == []


def test_crd_names_the_kind_the_plugins_read() -> None:
    typical = pytest.importorskip("kubeberth_gpushare.typical")
    kind = typical.WORKLOAD_SUMMARY
    spec = crd()["spec"]
    assert (spec["group"], spec["names"]["plural"], spec["names"]["kind"]) == (kind.group, kind.resource, kind.kind)
    assert spec["scope"] == ("Namespaced" if kind.namespaced else "Cluster")
    assert [v["name"] for v in spec["versions"]] == [kind.version]
    assert crd()["metadata"]["name"] == f"{kind.resource}.{kind.group}"


def test_the_gpushare_distribution_lets_kubeberth_list_and_watch_it() -> None:
    docs = [d for d in yaml.safe_load_all((ROOT / "examples/plugins/gpushare/manifests/rbac.yaml").read_text()) if d]
    for doc in docs:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    [binding] = [d for d in docs if d["kind"] == "ClusterRoleBinding"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "kubeberth", "namespace": "kubeberth-system"}]
    rules = [r for doc in docs if doc["kind"] == "ClusterRole" for r in doc.get("rules", [])]
    allowed = {v for r in rules if "kubeberth.io" in r["apiGroups"] and "workloadsummaries" in r["resources"]
               for v in r["verbs"]}
    assert {"list", "watch"} <= allowed


def _pod(name: str, cpu: str, gpu: int | None) -> dict[str, Any]:
    requests = {"cpu": cpu, "memory": "1Gi", **({GPU: str(gpu)} if gpu else {})}
    ann = {GPU: str(gpu), "alibabacloud.com/gpu-count": "1"} if gpu else {}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "annotations": ann},
            "spec": {"containers": [{"name": "c", "resources": {"requests": requests}}]}}


def to_jsonschema(node: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI schema as a JSON schema (as the API server checks it; unknown fields refused)."""
    out: dict[str, Any] = {}
    if node.get("x-kubernetes-int-or-string"):
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    elif "type" in node:
        out["type"] = node["type"]
    out |= {k: node[k] for k in ("minimum", "required") if k in node}
    if "properties" in node:
        out["properties"] = {k: to_jsonschema(v) for k, v in node["properties"].items()}
        out["additionalProperties"] = False
    if "additionalProperties" in node:
        out["additionalProperties"] = to_jsonschema(node["additionalProperties"])
    if "items" in node:
        out["items"] = to_jsonschema(node["items"])
    return out


def errors(obj: Any) -> list[str]:
    validator = jsonschema.Draft202012Validator(to_jsonschema(schema()))
    return sorted(".".join(str(p) for p in e.absolute_path) or "<root>" for e in validator.iter_errors(obj))


def test_schema_accepts_what_replay_publishes() -> None:
    pods = [_pod(f"p{i}", ["500m", "2"][i % 2], [None, 250, 1000][i % 3]) for i in range(12)]
    summary = workload_summary(pods)
    assert summary["spec"]["total"] == 12 and len(summary["spec"]["shapes"]) == 6
    assert errors(summary) == []


BASE = {"apiVersion": "kubeberth.io/v1alpha1", "kind": "WorkloadSummary", "metadata": {"name": "w"}}
REFUSED: list[tuple[str, dict[str, Any], str]] = [
    ("no spec", {}, "<root>"),
    ("no total", {"spec": {"shapes": []}}, "spec"),
    ("negative total", {"spec": {"total": -1, "shapes": []}}, "spec.total"),
    ("a shape without count", {"spec": {"total": 1, "shapes": [{"requests": {}}]}}, "spec.shapes.0"),
    ("a request of a list", {"spec": {"total": 1, "shapes": [{"count": 1, "requests": {"cpu": [1]}}]}},
     "spec.shapes.0.requests.cpu"),
    ("an annotation of a number",
     {"spec": {"total": 1, "shapes": [{"count": 1, "requests": {}, "annotations": {"a": 1}}]}},
     "spec.shapes.0.annotations.a"),
    ("an unknown field", {"spec": {"total": 1, "shapes": [], "extra": 1}}, "spec"),
]


@pytest.mark.parametrize(("body", "path"), [(b, p) for _, b, p in REFUSED], ids=[c for c, _, _ in REFUSED])
def test_schema_refuses_malformed_specs(body: dict[str, Any], path: str) -> None:
    assert path in errors({**BASE, **body})
