"""The SchedulingProfile CRD: generated from the pydantic model, structural, valid, in step."""

from __future__ import annotations

import copy
import pathlib
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from kubeberth.config import ConfigError, parse_spec
from kubeberth.config.crd import CEL_RULES, crd, render, spec_schema

ROOT = pathlib.Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "crds" / "schedulingprofile.yaml"
K8S_VERSION = "1.30"


def test_committed_crd_matches_the_model():
    assert CRD_FILE.read_text() == render(), (
        "crds/schedulingprofile.yaml is stale: run `python -m kubeberth.config.crd > crds/schedulingprofile.yaml`")


def test_crd_validates_against_the_kubernetes_schema():
    kubernetes_validate.validate(yaml.safe_load(CRD_FILE.read_text()), K8S_VERSION, strict=True)


def _structural_errors(node: Any, path: str = "") -> list[str]:
    """Kubernetes' structural-schema rules (apiextensions-apiserver's NewStructural + validation)."""
    errors: list[str] = []
    if not isinstance(node, dict):
        return [f"{path}: not a schema"]
    for bad in ("$ref", "definitions", "$defs", "additionalItems", "patternProperties", "dependencies", "const",
                "oneOf", "allOf", "not", "title"):
        if bad in node:
            errors.append(f"{path}: {bad} is not allowed")
    if "anyOf" in node:
        for sub in node["anyOf"]:
            if "type" in sub or "nullable" in sub or "default" in sub:
                errors.append(f"{path}: anyOf branches must not specify type/nullable/default")
    if "type" not in node and not node.get("x-kubernetes-int-or-string") and not node.get(
            "x-kubernetes-preserve-unknown-fields"):
        errors.append(f"{path}: type is required")
    if "properties" in node and "additionalProperties" in node:
        errors.append(f"{path}: properties and additionalProperties are mutually exclusive")
    if node.get("type") == "array" and "items" not in node:
        errors.append(f"{path}: an array needs items")
    for name, sub in (node.get("properties") or {}).items():
        errors += _structural_errors(sub, f"{path}.{name}")
    if "items" in node:
        errors += _structural_errors(node["items"], f"{path}[]")
    return errors


def test_schema_is_structural():
    [version] = crd()["spec"]["versions"]
    assert _structural_errors(version["schema"]["openAPIV3Schema"]) == []


def test_crd_shape():
    obj = crd()
    assert obj["spec"]["group"] == "kubeberth.io"
    assert obj["spec"]["scope"] == "Cluster"
    [version] = obj["spec"]["versions"]
    assert version["name"] == "v1alpha1" and version["subresources"] == {"status": {}}
    columns = {c["name"]: c["jsonPath"] for c in version["additionalPrinterColumns"]}
    assert columns == {"Scheduler": ".spec.schedulerName",
                       "Accepted": '.status.conditions[?(@.type=="Accepted")].status',
                       "Age": ".metadata.creationTimestamp"}
    status = version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
    assert set(status) == {"observedGeneration", "conditions"}
    args = spec_schema()["properties"]["pluginConfig"]["items"]["properties"]["args"]
    assert args == {"description": args["description"], "type": "object", "x-kubernetes-preserve-unknown-fields": True}


def to_jsonschema(node: dict[str, Any]) -> dict[str, Any]:
    """What the API server checks with an OpenAPI schema, as a JSON schema (CEL rules aside);
    unknown fields are errors, as with kubectl's strict field validation."""
    out: dict[str, Any] = {}
    if node.get("x-kubernetes-int-or-string"):
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    elif "type" in node:
        out["type"] = [node["type"], "null"] if node.get("nullable") else node["type"]
    for key in ("minimum", "maximum", "minLength", "maxLength", "pattern", "enum", "minItems", "maxItems",
                "required"):
        if key in node:
            out[key] = node[key]
    if "properties" in node:
        out["properties"] = {k: to_jsonschema(v) for k, v in node["properties"].items()}
        if not node.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
    if "items" in node:
        out["items"] = to_jsonschema(node["items"])
    return out


def schema_errors(spec: Any) -> list[str]:
    validator = jsonschema.Draft202012Validator(to_jsonschema(spec_schema()))
    return [".".join(str(p) for p in e.absolute_path) or "spec" for e in validator.iter_errors(spec)]


def model_error(spec: Any) -> str | None:
    try:
        parse_spec(spec)
    except ConfigError as exc:
        return exc.path
    return None


EXTENDER = {"urlPrefix": "http://127.0.0.1:12345/api/scheduler", "filterVerb": "filter",
            "prioritizeVerb": "prioritize", "weight": 1, "httpTimeout": "5s",
            "managedResources": [{"name": "example.com/foo", "ignoredByScheduler": True}]}

VALID = {
    "empty": {},
    "upstream-shape": {
        "schedulerName": "default-scheduler", "percentageOfNodesToScore": 0, "podInitialBackoffSeconds": 1,
        "podMaxBackoffSeconds": 10,
        "plugins": {"multiPoint": {"enabled": [], "disabled": []},
                    "filter": {"enabled": [], "disabled": [{"name": "TaintToleration"}]},
                    "score": {"enabled": [{"name": "NodeResourcesFit", "weight": 2}], "disabled": [{"name": "*"}]}},
        "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
            "type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1}]}}}],
        "extenders": [EXTENDER]},
    "nulls": {"percentageOfNodesToScore": None, "plugins": {"score": {"enabled": [{"name": "X", "weight": None}]}}},
    "bounds": {"percentageOfNodesToScore": 100, "plugins": {"score": {"enabled": [{"name": "X", "weight": 0}]}}},
    "numeric-timeout": {"extenders": [{**EXTENDER, "httpTimeout": 5}]},
}

# (spec, the field the model names) -- the schema must reject it too, at that field.
INVALID = {
    "percentage-too-high": ({"percentageOfNodesToScore": 101}, "spec.percentageOfNodesToScore"),
    "percentage-negative": ({"percentageOfNodesToScore": -1}, "spec.percentageOfNodesToScore"),
    "backoff-zero": ({"podInitialBackoffSeconds": 0}, "spec.podInitialBackoffSeconds"),
    "unknown-field": ({"percentOfNodes": 5}, "spec.percentOfNodes"),
    "empty-scheduler-name": ({"schedulerName": ""}, "spec.schedulerName"),
    "negative-weight": ({"plugins": {"score": {"enabled": [{"name": "X", "weight": -1}]}}},
                        "spec.plugins.score.enabled[0].weight"),
    "unknown-extension-point": ({"plugins": {"scores": {}}}, "spec.plugins.scores"),
    "plugin-without-name": ({"pluginConfig": [{"args": {}}]}, "spec.pluginConfig[0].name"),
    "extender-url": ({"extenders": [{**EXTENDER, "urlPrefix": "ftp://x"}]}, "spec.extenders[0].urlPrefix"),
    "extender-negative-weight": ({"extenders": [{**EXTENDER, "prioritizeVerb": "", "weight": -1}]},
                                 "spec.extenders[0].weight"),
    "tls-not-an-object": ({"extenders": [{**EXTENDER, "tlsConfig": "yes"}]}, "spec.extenders[0].tlsConfig"),
}


@pytest.mark.parametrize("spec", VALID.values(), ids=VALID.keys())
def test_valid_specs_pass_both(spec):
    assert model_error(spec) is None
    assert schema_errors(spec) == []


@pytest.mark.parametrize("spec, field", INVALID.values(), ids=INVALID.keys())
def test_invalid_specs_fail_both(spec, field):
    assert model_error(spec) == field
    errors = schema_errors(spec)
    assert errors, "kubectl would accept what the operator refuses"
    expected = field.removeprefix("spec").lstrip(".").replace("[", ".").replace("]", "")
    assert any(expected.startswith(e) or e.startswith(expected) or e == "spec" for e in errors), errors


CEL_CASES = [
    ("", {"podInitialBackoffSeconds": 20, "podMaxBackoffSeconds": 10}),
    ("extenders[]", {"extenders": [{**EXTENDER, "weight": 0}]}),
]


@pytest.mark.parametrize("path, spec", CEL_CASES, ids=[p or "spec" for p, _ in CEL_CASES])
def test_cel_rules_say_what_the_model_says(path, spec):
    """The cross-field rules the schema checks with CEL give the model's own message."""
    with pytest.raises(ConfigError) as exc:
        parse_spec(spec)
    messages = [r["message"] for r in CEL_RULES[path]]
    assert any(m in str(exc.value) for m in messages)
    node = spec_schema()
    if path:
        node = node["properties"][path.removesuffix("[]")]["items"]
    assert node["x-kubernetes-validations"] == CEL_RULES[path]


def test_plugin_config_names_are_list_map_keys():
    """Duplicate pluginConfig names: the API server rejects them (list-map keys), as the model does."""
    pc = spec_schema()["properties"]["pluginConfig"]
    assert pc["x-kubernetes-list-type"] == "map" and pc["x-kubernetes-list-map-keys"] == ["name"]
    assert model_error({"pluginConfig": [{"name": "A"}, {"name": "A"}]}) == "spec"


def test_samples_and_manifest_profiles_are_valid():
    files = [ROOT / "manifests" / "profile-default.yaml", *sorted((ROOT / "manifests" / "samples").glob("*.yaml"))]
    seen = 0
    for path in files:
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc or doc.get("kind") != "SchedulingProfile":
                continue
            seen += 1
            assert model_error(doc["spec"]) is None, path
            assert schema_errors(copy.deepcopy(doc["spec"])) == [], path
    assert seen >= 3
