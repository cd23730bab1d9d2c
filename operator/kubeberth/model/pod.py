"""A read-only view of a Pod, parsed once, shared by every plugin."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import orjson

from .errors import ModelError
from .resources import Resource, pod_requests
from .selectors import NodeSelector, PreferredTerm
from .shape import POD_SHAPE, malformed_field
from .taints import Toleration

DEFAULT_SCHEDULER = "default-scheduler"


def parse_time(raw: Any) -> float | None:
    """RFC 3339 timestamp to epoch seconds; None when absent."""
    if raw is None or raw == "":
        return None
    if isinstance(raw, datetime):
        return raw.timestamp()
    if isinstance(raw, int | float):
        return float(raw)
    try:
        return datetime.fromisoformat(str(raw).replace("Z", "+00:00")).timestamp()
    except ValueError as exc:
        raise ModelError(f"invalid timestamp {raw!r}") from exc


def string_map(raw: Mapping[Any, Any] | None) -> dict[str, str]:
    """A metadata map (labels, annotations) as str -> str; {} for None."""
    return {str(k): str(v) for k, v in raw.items()} if raw else {}


_REQUESTS_MEMO: dict[bytes, tuple[Resource, Resource]] = {}
_REQUESTS_MEMO_LIMIT = 4096


def _requests(spec: Mapping[str, Any]) -> tuple[Resource, Resource]:
    """(pod_requests(spec), pod_requests(spec, non_zero=True)), memoised by what they depend on.

    Replicas share their containers' resources; the key is the JSON of those fields (equal
    JSON means equal values, so a hit computes the same result: a fifth of repr's cost), the
    results are cloned."""
    try:
        key = orjson.dumps((
            [(c.get("resources"), c.get("restartPolicy")) for c in spec.get("initContainers") or ()],
            [c.get("resources") for c in spec.get("containers") or ()],
            spec.get("overhead"), spec.get("resources")))
    except (AttributeError, TypeError, orjson.JSONEncodeError):
        return pod_requests(spec), pod_requests(spec, non_zero=True)
    hit = _REQUESTS_MEMO.get(key)
    if hit is None:
        hit = (pod_requests(spec), pod_requests(spec, non_zero=True))
        if len(_REQUESTS_MEMO) >= _REQUESTS_MEMO_LIMIT:
            _REQUESTS_MEMO.clear()
        _REQUESTS_MEMO[key] = hit
    return hit[0].clone(), hit[1].clone()


class HostPort:
    """A host port a container of the pod uses: `host_ip` ("0.0.0.0" when none is given),
    `protocol` ("TCP" by default) and `port`; `conflicts(other)` as upstream's HostPortInfo."""

    __slots__ = ("host_ip", "port", "protocol")

    def __init__(self, host_ip: str, protocol: str, port: int) -> None:
        self.host_ip = host_ip
        self.protocol = protocol
        self.port = port

    def conflicts(self, other: HostPort) -> bool:
        if self.port != other.port or self.protocol != other.protocol:
            return False
        return self.host_ip == other.host_ip or "0.0.0.0" in (self.host_ip, other.host_ip)

    def __repr__(self) -> str:
        return f"{self.host_ip}/{self.protocol}/{self.port}"


class Pod:
    """Everything the scheduler reads from a Pod object, parsed once and shared by every plugin
    (read-only: nothing may change it).

    Identity `name`, `namespace`, `key` ("namespace/name"), `uid`; `labels` and `annotations`
    (metadata's, str -> str; the annotations are read on first use); `priority`, `requests` and
    `non_zero_requests` (`Resource`), `tolerations`, `node_selector`, `required_node_selector`,
    `preferred_node_terms`, `affinity`, `host_ports`, `images`, `node_name`, `phase`,
    `scheduling_gates`, `pod_group_name`, and the rest of the slots below.

    `raw` is the escape hatch: the object as received (a mapping, read-only: never change it, it
    is shared with the cache and the other plugins), for fields no attribute carries. A plugin
    that parses something of it keeps the result in `cache` (a dict, keyed by the plugin's name),
    so that it is parsed once per pod, not once per node.
    """

    __slots__ = (
        "_annotations", "affinity", "cache", "creation_timestamp", "deletion_timestamp", "generation", "host_ports",
        "images", "key", "labels", "name", "namespace", "node_name", "node_selector", "nominated_node_name",
        "non_zero_requests", "owner_kinds", "phase", "pod_group_key", "pod_group_name", "preemption_policy",
        "preferred_node_terms", "priority", "priority_class_name", "raw", "requests", "required_node_selector",
        "scheduler_name", "scheduling_gates", "seq", "spec", "start_time", "tolerations", "uid",
    )

    def __init__(self, raw: Mapping[str, Any], *, seq: int = 0) -> None:
        if not isinstance(raw, Mapping):
            raise ModelError(f"pod {raw!r} is not a mapping")
        try:
            self._parse(raw, seq)
        except ModelError:
            raise
        except (AttributeError, TypeError, ValueError, KeyError) as exc:
            # A field of an unexpected type the parse does not check itself (the API server's
            # schema would have refused it): named, so that this pod is skipped and the others go on.
            meta = raw.get("metadata")
            name = meta.get("name") if isinstance(meta, Mapping) else None
            namespace = (meta.get("namespace") if isinstance(meta, Mapping) else None) or "default"
            raise ModelError(malformed_field(raw, POD_SHAPE) or f"malformed ({type(exc).__name__}: {exc})",
                             obj=f"pod {namespace}/{name}") from exc

    def _parse(self, raw: Mapping[str, Any], seq: int) -> None:
        meta = raw.get("metadata") or {}
        self.name = str(meta.get("name") or "")
        self.namespace = str(meta.get("namespace") or "default")
        self.key = f"{self.namespace}/{self.name}"
        where = f"pod {self.key}"
        if not self.name:
            raise ModelError("pod has no metadata.name")
        spec = raw.get("spec") or {}
        status = raw.get("status") or {}
        if not isinstance(spec, Mapping) or not isinstance(status, Mapping):
            raise ModelError("spec and status must be mappings", obj=where)
        self.raw = raw
        self.spec = spec
        self.seq = seq
        self.cache: dict[str, Any] = {}
        self.uid = str(meta.get("uid") or self.key)
        # metadata.generation (the API server counts spec changes from 1): what the conditions the
        # scheduler writes carry as their observedGeneration. 0 when the object has none.
        generation = meta.get("generation") or 0
        if isinstance(generation, bool) or not isinstance(generation, int) or generation < 0:
            raise ModelError(f"metadata.generation {generation!r} is not a non-negative integer", obj=where)
        self.generation: int = generation
        self.labels: dict[str, str] = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        annotations = meta.get("annotations")
        if annotations is not None and type(annotations) is not dict and not isinstance(annotations, Mapping):
            raise ModelError("metadata.annotations must be a mapping", obj=where)
        self._annotations: dict[str, str] | None = None
        self.owner_kinds = tuple(str(o.get("kind", "")) for o in meta.get("ownerReferences") or [])
        try:
            self.creation_timestamp = parse_time(meta.get("creationTimestamp"))
            self.deletion_timestamp = parse_time(meta.get("deletionTimestamp"))
            self.start_time = parse_time(status.get("startTime"))
            self.requests, self.non_zero_requests = _requests(spec)
            self.tolerations = [Toleration.from_dict(t) for t in spec.get("tolerations") or []]
            self._parse_node_affinity(spec)
        except ModelError as exc:
            raise ModelError(str(exc), obj=where) from exc
        self.node_name = str(spec.get("nodeName") or "")
        self.scheduler_name = str(spec.get("schedulerName") or DEFAULT_SCHEDULER)
        prio = spec.get("priority")
        if prio is not None and (isinstance(prio, bool) or not isinstance(prio, int)):
            raise ModelError(f"spec.priority {prio!r} is not an integer", obj=where)
        self.priority: int = prio if prio is not None else 0
        self.priority_class_name = str(spec.get("priorityClassName") or "")
        self.preemption_policy = str(spec.get("preemptionPolicy") or "PreemptLowerPriority")
        self.nominated_node_name = str(status.get("nominatedNodeName") or "")
        self.phase = str(status.get("phase") or "Pending")
        self.scheduling_gates = tuple(str(g.get("name", "")) for g in spec.get("schedulingGates") or [])
        # spec.schedulingGroup.podGroupName: the scheduling.k8s.io/v1beta1 PodGroup it belongs to ("": none)
        group = spec.get("schedulingGroup")
        self.pod_group_name = str(group.get("podGroupName") or "") if isinstance(group, Mapping) else ""
        # "namespace/podGroupName" of its PodGroup; "" when it names none.
        self.pod_group_key = f"{self.namespace}/{self.pod_group_name}" if self.pod_group_name else ""
        self.affinity = spec.get("affinity") or {}
        self.host_ports = []
        self.images = []
        for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
            if c.get("image"):
                self.images.append(str(c["image"]))
        # Host ports of the containers and of the init containers that keep running
        # (restartPolicy Always), as upstream's GetHostPorts. With hostNetwork the API server
        # defaults a missing hostPort to the containerPort.
        host_network = bool(spec.get("hostNetwork"))
        sidecars = [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
        for c in [*sidecars, *(spec.get("containers") or [])]:
            for p in c.get("ports") or []:
                hp = p.get("hostPort")
                if not hp and host_network:
                    hp = p.get("containerPort")
                if hp and int(hp) > 0:
                    self.host_ports.append(
                        HostPort(str(p.get("hostIP") or "0.0.0.0"), str(p.get("protocol") or "TCP"), int(hp)))

    def _parse_node_affinity(self, spec: Mapping[str, Any]) -> None:
        selector = spec.get("nodeSelector") or {}
        if not isinstance(selector, Mapping):
            raise ModelError("spec.nodeSelector must be a mapping")
        self.node_selector: dict[str, str] = {str(k): str(v) for k, v in selector.items()}
        node_aff = (spec.get("affinity") or {}).get("nodeAffinity") or {}
        required = node_aff.get("requiredDuringSchedulingIgnoredDuringExecution")
        try:
            self.required_node_selector: NodeSelector | None = (
                NodeSelector.from_dict(required) if required is not None else None)
            self.preferred_node_terms = [
                PreferredTerm.from_dict(t)
                for t in node_aff.get("preferredDuringSchedulingIgnoredDuringExecution") or []]
        except ModelError as exc:
            raise ModelError(str(exc), field="spec.affinity.nodeAffinity") from exc

    @property
    def annotations(self) -> dict[str, str]:
        """metadata.annotations (str -> str; empty when none), parsed on first read: most pods'
        annotations are never asked for. Read-only, as `labels`."""
        parsed = self._annotations
        if parsed is None:
            parsed = self._annotations = string_map((self.raw.get("metadata") or {}).get("annotations"))
        return parsed

    @property
    def is_assigned(self) -> bool:
        return bool(self.node_name)

    @property
    def is_terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    def with_priority(self, priority: int) -> Pod:
        self.priority = priority
        return self

    def __repr__(self) -> str:
        return f"Pod({self.key})"


def pod_key(raw: Mapping[str, Any]) -> str:
    meta = raw.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


def placeholder_pod(raw: Any) -> Pod | None:
    """A Pod of only the identity, node, scheduler name and status of `raw`, for reporting on a pod
    whose spec cannot be read; None when even those cannot."""
    if not isinstance(raw, Mapping):
        return None
    meta, spec, status = raw.get("metadata"), raw.get("spec"), raw.get("status")
    if not isinstance(meta, Mapping):
        return None
    spec = spec if isinstance(spec, Mapping) else {}
    kept_spec = {k: spec[k] for k in ("nodeName", "schedulerName") if isinstance(spec.get(k), str)}
    try:
        return Pod({"apiVersion": "v1", "kind": "Pod", "metadata": dict(meta), "spec": kept_spec,
                    "status": status if isinstance(status, Mapping) else {}})
    except ModelError:
        return None
