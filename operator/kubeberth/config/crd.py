"""The SchedulingProfile CustomResourceDefinition, generated from the pydantic model.

The pydantic model (`SchedulingProfileSpec`) is the single source of truth: its JSON
schema is made *structural* as Kubernetes requires (no `$ref`, no `anyOf` carrying
types, `additionalProperties: false` dropped because the API server prunes unknown
fields anyway) and completed with what kubectl can check before the operator ever
sees the object: bounds, defaults, list keys and CEL rules mirroring the model's
cross-field validators. `tests/operator/test_crd.py` keeps the two in step.

Regenerate the committed YAML with::

    python -m kubeberth.config.crd > crds/schedulingprofile.yaml
"""

from __future__ import annotations

import copy
import sys
from typing import Any

import yaml

from .models import SchedulingProfileSpec
from .profile import GROUP, KIND, PLURAL, VERSION

Schema = dict[str, Any]

SINGULAR = "schedulingprofile"
SHORT_NAMES = ["sprof"]
CATEGORIES = ["kubeberth"]

# JSON-schema keywords Kubernetes has no use for (or rejects) in a CRD schema.
_DROP = {"title", "$defs", "additionalProperties", "examples", "discriminator"}

# Cross-field rules of the pydantic validators, as CEL, where the schema can say them.
# Keyed by the path of the schema node (dotted, `[]` for list items).
CEL_RULES: dict[str, list[dict[str, str]]] = {
    "": [{
        "rule": "self.podMaxBackoffSeconds >= self.podInitialBackoffSeconds",
        "message": "podMaxBackoffSeconds must be >= podInitialBackoffSeconds",
        "fieldPath": ".podMaxBackoffSeconds",
    }],
    "extenders[]": [{
        "rule": "self.prioritizeVerb == '' || self.weight > 0",
        "message": "weight must be a positive integer when prioritizeVerb is set",
        "fieldPath": ".weight",
    }],
}

# Bounds that model validators enforce and JSON schema does not show.
BOUNDS: dict[str, dict[str, int]] = {
    "extenders[].weight": {"minimum": 0},
}

# Field-validator constraints of the model that JSON schema cannot see.
PATTERNS: dict[str, str] = {
    "extenders[].urlPrefix": r"^https?://",
}

# Lists whose items are keyed (the API server then rejects duplicates).
LIST_MAP_KEYS: dict[str, list[str]] = {
    "pluginConfig": ["name"],
}

# Free-form maps: plugin arguments are validated by each plugin's args model.
PRESERVE_UNKNOWN: set[str] = {"pluginConfig[].args"}

DESCRIPTIONS: dict[str, str] = {
    "": "One profile of upstream's KubeSchedulerConfiguration: pods whose spec.schedulerName "
        "matches schedulerName are scheduled with these plugins.",
    "schedulerName": "Pods with this spec.schedulerName use this profile.",
    "percentageOfNodesToScore": "Share of feasible nodes to find before scoring; 0 or unset is "
                                "upstream's adaptive default.",
    "podInitialBackoffSeconds": "Initial backoff of an unschedulable pod, in seconds.",
    "podMaxBackoffSeconds": "Maximum backoff of an unschedulable pod, in seconds.",
    "plugins": "Plugins enabled and disabled per extension point; merged with the default "
               "plugin set as upstream does.",
    "pluginConfig": "Arguments of plugins, by plugin name.",
    "pluginConfig[].args": "The plugin's arguments (e.g. NodeResourcesFit's scoringStrategy); "
                           "validated by the plugin.",
    "extenders": "HTTP scheduler extenders, as upstream's Extender configuration.",
    "mode": "Active (default): schedule and bind the pods of schedulerName. Shadow: only evaluate the "
            "pending pods of shadow.schedulerNames, never bind, and compare with the node their own "
            "scheduler picks (kubeberth_shadow_decisions_total).",
    "shadow": "Shadow mode: the scheduler names whose pods to evaluate, and whether to annotate them.",
    "shadow.schedulerNames": "Evaluate pending pods with these spec.schedulerName values.",
    "shadow.annotate": "Write this profile's choice to the pod's annotation "
                       "shadow.kubeberth.io/<profile name> (needs the patch verb on pods).",
    "extenders[].httpTimeout": "Timeout of a call to the extender: a Go duration such as 5s.",
}


def _resolve(node: Any, defs: dict[str, Schema]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            merged = {**copy.deepcopy(defs[name]), **{k: v for k, v in node.items() if k != "$ref"}}
            return _resolve(merged, defs)
        return {k: _resolve(v, defs) for k, v in node.items()}
    if isinstance(node, list):
        return [_resolve(v, defs) for v in node]
    return node


def _join(path: str, part: str) -> str:
    return f"{path}.{part}" if path else part


def _structural(node: Schema, path: str) -> Schema:
    """Make one (already $ref-free) schema node structural, recursively."""
    node = dict(node)
    out: Schema = {}
    variants = node.pop("anyOf", None)
    if variants is not None:
        non_null = [v for v in variants if v.get("type") != "null"]
        nullable = len(non_null) != len(variants)
        types = {v.get("type") for v in non_null}
        if len(non_null) == 1:
            node = {**non_null[0], **node}
        elif types <= {"string", "integer", "number"} and "string" in types:
            # e.g. httpTimeout: "5s" or 5 -- what Kubernetes calls int-or-string.
            node = {**node, "x-kubernetes-int-or-string": True}
        else:
            raise ValueError(f"{path or 'spec'}: cannot express anyOf {variants!r} structurally")
        if nullable:
            out["nullable"] = True
            if node.get("default", 0) is None:
                node.pop("default")
    kind = node.get("type")
    if path in DESCRIPTIONS:
        out["description"] = DESCRIPTIONS[path]
    elif "description" in node:
        out["description"] = " ".join(str(node["description"]).split())
    if kind is not None:
        out["type"] = kind
    if node.get("x-kubernetes-int-or-string"):
        out["x-kubernetes-int-or-string"] = True
    if "enum" in node:
        out["enum"] = list(node["enum"])
    if "const" in node:
        out["enum"] = [node["const"]]
    for key in ("minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "pattern", "format"):
        if key in node:
            out[key] = node[key]
    for key, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if key in node and not isinstance(node[key], bool):
            if kind == "integer":  # clearer for kubectl users: >= 1 rather than > 0
                out[bound] = node[key] + (1 if bound == "minimum" else -1)
            else:
                out[bound] = node[key]
                out[key] = True
    if path in PATTERNS:
        out["pattern"] = PATTERNS[path]
    out.update(BOUNDS.get(path, {}))
    if "default" in node and node["default"] is not None:
        out["default"] = node["default"]
    if kind == "object":
        props = node.get("properties")
        if path in PRESERVE_UNKNOWN or (props is None and node.get("additionalProperties") not in (False, None)):
            out["x-kubernetes-preserve-unknown-fields"] = True
        if props:
            out["properties"] = {name: _structural(sub, _join(path, name)) for name, sub in props.items()}
        required = node.get("required")
        if required:
            out["required"] = list(required)
    elif kind == "array":
        out["items"] = _structural(node.get("items", {}), f"{path}[]")
        if path in LIST_MAP_KEYS:
            out["x-kubernetes-list-type"] = "map"
            out["x-kubernetes-list-map-keys"] = list(LIST_MAP_KEYS[path])
    if path in CEL_RULES:
        out["x-kubernetes-validations"] = copy.deepcopy(CEL_RULES[path])
    for key in node:
        if key not in _DROP and key not in out and key not in (
                "properties", "required", "items", "exclusiveMinimum", "exclusiveMaximum", "default",
                "description", "const"):
            raise ValueError(f"{path or 'spec'}: JSON-schema keyword {key!r} has no structural mapping")
    return out


def spec_schema() -> Schema:
    """The structural OpenAPI v3 schema of `.spec`."""
    raw = SchedulingProfileSpec.model_json_schema()
    resolved = _resolve({k: v for k, v in raw.items() if k != "$defs"}, raw.get("$defs", {}))
    return _structural(resolved, "")


def status_schema() -> Schema:
    condition: Schema = {
        "type": "object",
        "required": ["type", "status"],
        "properties": {
            "type": {"type": "string", "description": "Accepted: whether the spec is valid and running."},
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "reason": {"type": "string"},
            "message": {"type": "string", "description": "For Accepted=False: the field path and the error."},
            "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
            "lastTransitionTime": {"type": "string", "format": "date-time"},
        },
    }
    return {
        "type": "object",
        "description": "Written by the scheduler: which generation it has seen and whether it runs it.",
        "properties": {
            "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
            "conditions": {
                "type": "array",
                "items": condition,
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["type"],
            },
        },
    }


def crd() -> Schema:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{PLURAL}.{GROUP}",
            "labels": {"app.kubernetes.io/name": "kubeberth", "app.kubernetes.io/part-of": "kubeberth"},
        },
        "spec": {
            "group": GROUP,
            "scope": "Cluster",
            "names": {
                "kind": KIND,
                "listKind": f"{KIND}List",
                "plural": PLURAL,
                "singular": SINGULAR,
                "shortNames": list(SHORT_NAMES),
                "categories": list(CATEGORIES),
            },
            "versions": [{
                "name": VERSION,
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Scheduler", "type": "string", "jsonPath": ".spec.schedulerName",
                     "description": "Pods with this schedulerName use the profile."},
                    {"name": "Accepted", "type": "string",
                     "jsonPath": '.status.conditions[?(@.type=="Accepted")].status',
                     "description": "Whether the running scheduler accepted the latest spec."},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "description": f"{KIND} configures one kubeberth scheduling profile, live.",
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "metadata": {"type": "object"},
                        "spec": spec_schema(),
                        "status": status_schema(),
                    },
                }},
            }],
        },
    }


HEADER = ("# Generated by `python -m kubeberth.config.crd` from kubeberth.config.models.\n"
          "# Do not edit by hand: change the pydantic model and regenerate.\n")


def render() -> str:
    return HEADER + yaml.safe_dump(crd(), sort_keys=False, width=100, default_flow_style=False)


def main() -> int:
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
