"""The PodGroup of scheduler-plugins (`scheduling.x-k8s.io/v1alpha1`), read from its objects."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubeberth.framework import ObjectKind

from .quantity import GoQuantity, QuantityError, parse

GROUP = "scheduling.x-k8s.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
PLURAL = "podgroups"
KIND = "PodGroup"
# Pods join a group by naming it in this label (same namespace).
POD_GROUP_LABEL = f"{GROUP}/pod-group"
PODGROUP = ObjectKind(GROUP, VERSION, PLURAL, KIND, namespaced=True)

# Go's zero time.Time (January 1, year 1, UTC) as epoch seconds: a PodGroup without a
# creationTimestamp sorts first, as it does upstream.
GO_ZERO_TIME = -62135596800.0

# Phases (PodGroupPhase).
PENDING = "Pending"
SCHEDULING = "Scheduling"
RUNNING = "Running"
FINISHED = "Finished"
FAILED = "Failed"
UNKNOWN = "Unknown"


class PodGroupError(ValueError):
    """A PodGroup whose fields cannot be read; the message names the object and the field."""


def parse_time(raw: Any) -> float | None:
    if raw is None or raw == "":
        return None
    try:
        return datetime.fromisoformat(str(raw).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@dataclass(frozen=True)
class PodGroup:
    namespace: str
    name: str
    min_member: int
    min_resources: Mapping[str, Any] | None
    schedule_timeout_seconds: int | None
    creation_timestamp: float

    @property
    def full_name(self) -> str:
        return f"{self.namespace}/{self.name}"

    def min_resources_quantities(self) -> dict[str, GoQuantity]:
        out: dict[str, GoQuantity] = {}
        for name, raw in (self.min_resources or {}).items():
            try:
                out[str(name)] = parse(raw)
            except QuantityError as exc:
                raise PodGroupError(f"PodGroup {self.full_name}: spec.minResources.{name}: {exc}") from exc
        return out


def _int_field(spec: Mapping[str, Any], field: str, where: str, *, optional: bool) -> int | None:
    raw = spec.get(field)
    if raw is None:
        return None if optional else 0
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise PodGroupError(f"{where}: spec.{field} must be an integer, got {raw!r}")
    if not -(2**31) <= raw < 2**31:
        raise PodGroupError(f"{where}: spec.{field} {raw} does not fit an int32")
    return raw


def parse_pod_group(obj: Mapping[str, Any]) -> PodGroup:
    meta = obj.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    name = str(meta.get("name") or "")
    where = f"PodGroup {namespace}/{name}"
    spec = obj.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise PodGroupError(f"{where}: spec must be a mapping")
    min_member = _int_field(spec, "minMember", where, optional=False)
    timeout = _int_field(spec, "scheduleTimeoutSeconds", where, optional=True)
    min_resources = spec.get("minResources")
    if min_resources is not None and not isinstance(min_resources, Mapping):
        raise PodGroupError(f"{where}: spec.minResources must be a mapping of resource names to quantities")
    raw_created = meta.get("creationTimestamp")
    created = parse_time(raw_created)
    if created is None and raw_created not in (None, ""):
        raise PodGroupError(f"{where}: metadata.creationTimestamp {raw_created!r} is not an RFC 3339 time")
    pg = PodGroup(namespace, name, int(min_member or 0), min_resources or None, timeout,
                  created if created is not None else GO_ZERO_TIME)
    pg.min_resources_quantities()  # checked here, once
    return pg
