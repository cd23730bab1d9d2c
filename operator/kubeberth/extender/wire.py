"""The scheduler extender wire format, as upstream's k8s.io/kube-scheduler/extender/v1.

Upstream's extender types carry no JSON tags, so their keys on the wire are the
Go field names ("Pod", "NodeNames", "FailedNodes", ...). Requests are built
here as plain dicts with exactly those keys (nil pointers and maps go out as
`null`, as Go's encoder writes them). Responses are decoded as Go's
encoding/json decodes them: keys match field names case-insensitively (the
last matching key wins), unknown keys are ignored, `null` leaves a scalar at
its zero value, and a value of the wrong type is an error.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime
from typing import Annotated, Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

# The range of scores an extender's prioritize verb returns (upstream extenderv1).
MIN_EXTENDER_PRIORITY = 0
MAX_EXTENDER_PRIORITY = 10

Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]


class WireError(ValueError):
    """A response body that Go's decoder would not accept."""


# ---- decoding -----------------------------------------------------------------------------------

class GoStruct(BaseModel):
    """A Go struct decoded with encoding/json rules: case-insensitive keys, strict types."""

    model_config = ConfigDict(strict=True, extra="ignore", populate_by_name=True)
    _folded_names: ClassVar[dict[str, str]] = {}

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls._folded_names = {name.casefold(): name for name in cls.model_fields}

    @model_validator(mode="before")
    @classmethod
    def _fold_keys(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data  # pydantic reports the type error
        fields = cls.model_fields
        out: dict[str, Any] = {}
        for key, val in data.items():
            if not isinstance(key, str):
                continue
            name = key if key in fields else cls._folded_names.get(key.casefold())
            if name is None:
                continue
            if val is None and fields[name].default is not None:
                # Go: null into a string or a number is a no-op.
                continue
            out[name] = val
        return out


class NodeList(GoStruct):
    """v1.NodeList; only the items are read (each a Node object, kept as received)."""

    items: list[dict[str, Any]] | None = None


class ExtenderFilterResult(GoStruct):
    Nodes: NodeList | None = None
    NodeNames: list[str] | None = None
    FailedNodes: dict[str, str | None] | None = None
    FailedAndUnresolvableNodes: dict[str, str | None] | None = None
    Error: str = ""


class HostPriority(GoStruct):
    Host: str = ""
    Score: Int64 = 0


class MetaPod(GoStruct):
    UID: str = ""


class MetaVictims(GoStruct):
    Pods: list[MetaPod | None] | None = None
    NumPDBViolations: Int64 = 0


class ExtenderPreemptionResult(GoStruct):
    NodeNameToMetaVictims: dict[str, MetaVictims | None] | None = None


class ExtenderBindingResult(GoStruct):
    Error: str = ""


# Request types, for extenders written in Python (and tests) that read what the scheduler sends.

class WireVictims(GoStruct):
    """extenderv1.Victims as sent on the wire: full pod objects."""

    Pods: list[dict[str, Any] | None] | None = None
    NumPDBViolations: Int64 = 0


class ExtenderArgs(GoStruct):
    Pod: dict[str, Any] | None = None
    Nodes: NodeList | None = None
    NodeNames: list[str] | None = None


class ExtenderPreemptionArgs(GoStruct):
    Pod: dict[str, Any] | None = None
    NodeNameToVictims: dict[str, WireVictims | None] | None = None
    NodeNameToMetaVictims: dict[str, MetaVictims | None] | None = None


class ExtenderBindingArgs(GoStruct):
    PodName: str = ""
    PodNamespace: str = ""
    PodUID: str = ""
    Node: str = ""


_HOST_PRIORITY_LIST: TypeAdapter[list[HostPriority | None] | None] = TypeAdapter(
    list[HostPriority | None] | None, config=ConfigDict(strict=True))


def _load(body: bytes | str) -> Any:
    """The first JSON value of the body, as Go's json.Decoder.Decode reads it."""
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes | bytearray) else body
    start = len(text) - len(text.lstrip(" \t\r\n"))
    if start == len(text):
        raise WireError("empty response body (EOF)")
    try:
        value, _ = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise WireError(f"invalid JSON: {exc}") from None
    return value


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        loc = ".".join(str(p) for p in err["loc"] if not str(p).startswith("function-"))
        parts.append(f"{loc or 'value'}: {err['msg']}")
    return "; ".join(parts)


def _validate(model: type[GoStruct], body: bytes | str) -> Any:
    data = _load(body)
    if data is None:
        return model()
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise WireError(f"cannot decode into {model.__name__}: {_describe(exc)}") from None


def decode_filter_result(body: bytes | str) -> ExtenderFilterResult:
    result: ExtenderFilterResult = _validate(ExtenderFilterResult, body)
    return result


def decode_host_priority_list(body: bytes | str) -> list[HostPriority]:
    data = _load(body)
    try:
        items = _HOST_PRIORITY_LIST.validate_python(data)
    except ValidationError as exc:
        raise WireError(f"cannot decode into HostPriorityList: {_describe(exc)}") from None
    # A null element decodes to the zero HostPriority{Host: "", Score: 0}.
    return [hp if hp is not None else HostPriority() for hp in items or ()]


def decode_preemption_result(body: bytes | str) -> ExtenderPreemptionResult:
    result: ExtenderPreemptionResult = _validate(ExtenderPreemptionResult, body)
    return result


def decode_binding_result(body: bytes | str) -> ExtenderBindingResult:
    result: ExtenderBindingResult = _validate(ExtenderBindingResult, body)
    return result


def get_folded(obj: Mapping[str, Any], key: str) -> Any:
    """obj[key] matched as Go matches a JSON key to a field: case-insensitively, the last match wins."""
    folded = key.casefold()
    found = None
    for k, v in obj.items():
        if k == key or (isinstance(k, str) and k.casefold() == folded):
            found = v
    return found


def node_name_of(item: Mapping[str, Any]) -> str:
    """metadata.name of a Node object as an extender returned it."""
    meta = get_folded(item, "metadata")
    if meta is None:
        return ""
    if not isinstance(meta, Mapping):
        raise WireError("Nodes.items[].metadata is not an object")
    name = get_folded(meta, "name")
    if name is None:
        return ""
    if not isinstance(name, str):
        raise WireError("Nodes.items[].metadata.name is not a string")
    return name


# ---- encoding -----------------------------------------------------------------------------------

class VictimsLike(Protocol):
    """What preemption passes as victims: `.pods` (model Pods) and `.num_pdb_violations`."""

    @property
    def pods(self) -> Sequence[Any]: ...

    @property
    def num_pdb_violations(self) -> int: ...


def node_list(nodes: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """A v1.NodeList as Go marshals it: an empty ListMeta, then the items."""
    return {"metadata": {}, "items": list(nodes)}


def extender_args(pod: Mapping[str, Any], *, nodes: Iterable[Mapping[str, Any]] | None = None,
                  node_names: Iterable[str] | None = None) -> dict[str, Any]:
    """ExtenderArgs: exactly one of Nodes (full objects) or NodeNames is set, the other is null."""
    return {
        "Pod": pod,
        "Nodes": node_list(nodes) if nodes is not None else None,
        "NodeNames": list(node_names) if node_names is not None else None,
    }


def victims_args(victims: VictimsLike) -> dict[str, Any]:
    return {"Pods": [p.raw for p in victims.pods], "NumPDBViolations": int(victims.num_pdb_violations)}


def meta_victims_args(victims: VictimsLike) -> dict[str, Any]:
    return {"Pods": [{"UID": p.uid} for p in victims.pods],
            "NumPDBViolations": int(victims.num_pdb_violations)}


def preemption_args(pod: Mapping[str, Any], node_to_victims: Mapping[str, VictimsLike], *,
                    meta: bool) -> dict[str, Any]:
    """ExtenderPreemptionArgs: NodeNameToMetaVictims (UIDs only) when meta, else NodeNameToVictims."""
    if meta:
        return {"Pod": pod, "NodeNameToVictims": None,
                "NodeNameToMetaVictims": {n: meta_victims_args(v) for n, v in node_to_victims.items()}}
    return {"Pod": pod, "NodeNameToVictims": {n: victims_args(v) for n, v in node_to_victims.items()},
            "NodeNameToMetaVictims": None}


def binding_args(pod_name: str, pod_namespace: str, pod_uid: str, node: str) -> dict[str, Any]:
    return {"PodName": pod_name, "PodNamespace": pod_namespace, "PodUID": pod_uid, "Node": node}


def _json_default(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return dict(obj)
    if isinstance(obj, datetime):
        if obj.tzinfo is not None:
            obj = obj.astimezone(UTC).replace(tzinfo=None)
        return obj.isoformat(timespec="seconds") + "Z"
    if isinstance(obj, date):
        return obj.isoformat()
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    if isinstance(obj, bytes):
        return base64.b64encode(obj).decode("ascii")
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")


def encode(payload: Any) -> bytes:
    """JSON bytes of a request. Objects as read from YAML (datetimes, Mapping views) encode too."""
    return json.dumps(payload, default=_json_default, separators=(",", ":"), ensure_ascii=False).encode()
