"""The shape of the fields the model reads, to name the one that is of the wrong type.

The parsers check the fields whose values they interpret; a field of the wrong kind altogether
(`containers: "x"`, the API server's schema would refuse it) surfaces as a Python error deep in a
parser. Only then is the object walked against its shape here (never on the hot path), so that
the error names the field: `spec.containers: expected a list, got 'x'`.

A shape is a dict (the value is a mapping; the keys listed are checked in turn, the others not)
or a one-item list (the value is a list whose items have that shape); None fits anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Shape = dict[str, Any] | list[Any] | None

MAP: dict[str, Any] = {}
_RESOURCES: dict[str, Any] = {"requests": MAP, "limits": MAP, "claims": [MAP]}
_CONTAINER: dict[str, Any] = {"resources": _RESOURCES, "ports": [MAP], "env": [MAP]}
_AFFINITY_TERMS: dict[str, Any] = {"requiredDuringSchedulingIgnoredDuringExecution": [MAP],
                                   "preferredDuringSchedulingIgnoredDuringExecution": [MAP]}
METADATA: dict[str, Any] = {"labels": MAP, "annotations": MAP, "ownerReferences": [MAP]}

POD_SHAPE: dict[str, Any] = {
    "metadata": METADATA,
    "spec": {
        "containers": [_CONTAINER], "initContainers": [_CONTAINER], "ephemeralContainers": [_CONTAINER],
        "tolerations": [MAP], "nodeSelector": MAP, "overhead": MAP, "resources": _RESOURCES,
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": MAP,
                                      "preferredDuringSchedulingIgnoredDuringExecution": [MAP]},
                     "podAffinity": _AFFINITY_TERMS, "podAntiAffinity": _AFFINITY_TERMS},
        "schedulingGates": [MAP], "volumes": [MAP], "topologySpreadConstraints": [MAP],
        "resourceClaims": [MAP], "schedulingGroup": MAP, "readinessGates": [MAP],
    },
    "status": {"conditions": [MAP]},
}

NODE_SHAPE: dict[str, Any] = {
    "metadata": METADATA,
    "spec": {"taints": [MAP]},
    "status": {"capacity": MAP, "allocatable": MAP, "conditions": [MAP], "images": [{"names": [None]}]},
}


def malformed_field(obj: Any, shape: Shape, path: str = "") -> str | None:
    """The first field of `obj` whose kind does not fit `shape`, as `path: expected ..., got ...`;
    None when every field listed in the shape fits (absent and null fields fit)."""
    if obj is None or shape is None:
        return None
    if isinstance(shape, list):
        if not isinstance(obj, list):
            return f"{path or 'object'}: expected a list, got {_short(obj)}"
        for i, item in enumerate(obj):
            problem = malformed_field(item, shape[0], f"{path}[{i}]")
            if problem:
                return problem
        return None
    if not isinstance(obj, Mapping):
        return f"{path or 'object'}: expected a mapping, got {_short(obj)}"
    for key, sub in shape.items():
        problem = malformed_field(obj.get(key), sub, f"{path}.{key}" if path else key)
        if problem:
            return problem
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
