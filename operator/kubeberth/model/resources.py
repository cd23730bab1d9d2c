"""Resource arithmetic: what a pod requests and what a node offers.

cpu is kept in millicores, everything else in whole units (bytes, counts),
as upstream's framework.Resource does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from .errors import ModelError
from .quantity import QuantityError, milli_value, parse_quantity, value

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
HUGEPAGES_PREFIX = "hugepages-"

# Used for scoring only, when a container names no cpu/memory request.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
_DEFAULT_CPU = Decimal(DEFAULT_MILLI_CPU_REQUEST).scaleb(-3)
_DEFAULT_MEMORY = Decimal(DEFAULT_MEMORY_REQUEST)

ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"
_NATIVE_PREFIX = "kubernetes.io/"
_REQUESTS_PREFIX = "requests."


def is_extended_resource_name(name: str) -> bool:
    """Outside kubernetes.io/, with a domain prefix (v1helper.IsExtendedResourceName).

    The full qualified-name syntax check is left to API validation.
    """
    return "/" in name and _NATIVE_PREFIX not in name and not name.startswith(_REQUESTS_PREFIX)


def is_scalar_resource(name: str) -> bool:
    """Extended resources, hugepages, kubernetes.io/ prefixed and attachable-volume counts
    (schedutil.IsScalarResourceName). Other names are not tracked, as upstream."""
    return (is_extended_resource_name(name) or name.startswith(HUGEPAGES_PREFIX)
            or _NATIVE_PREFIX in name or name.startswith(ATTACHABLE_VOLUMES_PREFIX))


class Resource:
    """An amount of resources (upstream's framework.Resource): `milli_cpu`, `memory`,
    `ephemeral_storage` (bytes), `allowed_pod_number`, and `scalar` (extended resources,
    hugepages, ...: name -> integer amount); `get(name)`, `add`, `sub`, `from_list(dict)`."""

    __slots__ = ("allowed_pod_number", "ephemeral_storage", "memory", "milli_cpu", "scalar")

    def __init__(self, milli_cpu: int = 0, memory: int = 0, ephemeral_storage: int = 0,
                 allowed_pod_number: int = 0, scalar: Mapping[str, int] | None = None) -> None:
        self.milli_cpu = milli_cpu
        self.memory = memory
        self.ephemeral_storage = ephemeral_storage
        self.allowed_pod_number = allowed_pod_number
        self.scalar: dict[str, int] = dict(scalar) if scalar else {}

    @classmethod
    def from_list(cls, resources: Mapping[str, Any] | None, *, where: str = "") -> Resource:
        r = cls()
        if not resources:
            return r
        if not isinstance(resources, Mapping):
            raise ModelError(f"resource list {resources!r} is not a mapping", field=where)
        for name, q in resources.items():
            try:
                r.set(str(name), q)
            except QuantityError as exc:
                raise ModelError(f"resource {name}: {exc}", field=where) from exc
        return r

    def set(self, name: str, q: Any) -> None:
        if name == CPU:
            self.milli_cpu = milli_value(q)
        elif name == MEMORY:
            self.memory = value(q)
        elif name == EPHEMERAL_STORAGE:
            self.ephemeral_storage = value(q)
        elif name == PODS:
            self.allowed_pod_number = value(q)
        elif is_scalar_resource(name):
            self.scalar[name] = value(q)

    def get(self, name: str) -> int:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar.get(name, 0)

    def names(self) -> Iterable[str]:
        yield from (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)
        yield from self.scalar

    def add(self, other: Resource) -> None:
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.ephemeral_storage += other.ephemeral_storage
        self.allowed_pod_number += other.allowed_pod_number
        for k, v in other.scalar.items():
            self.scalar[k] = self.scalar.get(k, 0) + v

    def sub(self, other: Resource) -> None:
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        self.ephemeral_storage -= other.ephemeral_storage
        self.allowed_pod_number -= other.allowed_pod_number
        for k, v in other.scalar.items():
            self.scalar[k] = self.scalar.get(k, 0) - v

    def set_max(self, other: Resource) -> None:
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        self.ephemeral_storage = max(self.ephemeral_storage, other.ephemeral_storage)
        self.allowed_pod_number = max(self.allowed_pod_number, other.allowed_pod_number)
        for k, v in other.scalar.items():
            self.scalar[k] = max(self.scalar.get(k, 0), v)

    def clone(self) -> Resource:
        return Resource(self.milli_cpu, self.memory, self.ephemeral_storage, self.allowed_pod_number,
                        self.scalar)

    def is_zero(self) -> bool:
        return not (self.milli_cpu or self.memory or self.ephemeral_storage or self.allowed_pod_number
                    or any(self.scalar.values()))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Resource):
            return NotImplemented
        return (self.milli_cpu, self.memory, self.ephemeral_storage, self.allowed_pod_number) == (
            other.milli_cpu, other.memory, other.ephemeral_storage, other.allowed_pod_number
        ) and {k: v for k, v in self.scalar.items() if v} == {k: v for k, v in other.scalar.items() if v}

    def __repr__(self) -> str:
        return (f"Resource(milli_cpu={self.milli_cpu}, memory={self.memory}, "
                f"ephemeral_storage={self.ephemeral_storage}, pods={self.allowed_pod_number}, "
                f"scalar={self.scalar})")


def _resource_list(raw: Any, where: str) -> dict[str, Decimal]:
    if not raw:
        return {}
    if not isinstance(raw, Mapping):
        raise ModelError(f"resource list {raw!r} is not a mapping", field=where)
    out: dict[str, Decimal] = {}
    for name, q in raw.items():
        try:
            out[str(name)] = parse_quantity(q)
        except QuantityError as exc:
            raise ModelError(f"resource {name}: {exc}", field=where) from exc
        if out[str(name)] < 0:
            # The API server's own rule; a negative request would make room out of nothing.
            raise ModelError(f"resource {name}: quantity {q!r} must be greater than or equal to 0", field=where)
    return out


def _defaulted_requests(resources: Any, where: str) -> dict[str, Decimal]:
    """Requests, with each missing one defaulted to its limit as the API server does."""
    if not resources:
        return {}
    reqs = _resource_list(resources.get("requests"), f"{where}.requests")
    for name, q in _resource_list(resources.get("limits"), f"{where}.limits").items():
        reqs.setdefault(name, q)
    return reqs


def _add(acc: dict[str, Decimal], other: Mapping[str, Decimal]) -> None:
    for k, v in other.items():
        acc[k] = acc[k] + v if k in acc else v


def _max(acc: dict[str, Decimal], other: Mapping[str, Decimal]) -> None:
    for k, v in other.items():
        if k not in acc or v > acc[k]:
            acc[k] = v


def _container_requests(container: Mapping[str, Any], where: str, non_zero: bool) -> dict[str, Decimal]:
    reqs = _defaulted_requests(container.get("resources"), f"{where}.resources")
    if non_zero:
        # Only a request that is absent gets the default; an explicit zero stays zero.
        reqs.setdefault(CPU, _DEFAULT_CPU)
        reqs.setdefault(MEMORY, _DEFAULT_MEMORY)
    return reqs


def is_supported_pod_level_resource(name: str) -> bool:
    return name in (CPU, MEMORY) or name.startswith(HUGEPAGES_PREFIX)


def _aggregate_containers(spec: Mapping[str, Any], non_zero: bool) -> dict[str, Decimal]:
    total: dict[str, Decimal] = {}
    for i, c in enumerate(spec.get("containers") or []):
        _add(total, _container_requests(c, f"spec.containers[{i}]", non_zero))
    sidecars: dict[str, Decimal] = {}
    init_max: dict[str, Decimal] = {}
    for i, c in enumerate(spec.get("initContainers") or []):
        reqs = _container_requests(c, f"spec.initContainers[{i}]", non_zero)
        if c.get("restartPolicy") == "Always":
            # A sidecar runs alongside everything started after it.
            _add(total, reqs)
            _add(sidecars, reqs)
            _max(init_max, sidecars)
        else:
            _add(reqs, sidecars)
            _max(init_max, reqs)
    _max(total, init_max)
    return total


def _pod_level_requests(spec: Mapping[str, Any]) -> dict[str, Decimal]:
    """spec.resources requests of the supported kinds (cpu, memory, hugepages), with a
    missing request defaulted as the API server does: to the containers' aggregate when
    some container names the resource, else to the pod-level limit."""
    resources = spec.get("resources")
    if not resources or not isinstance(resources, Mapping):
        return {}
    reqs = _resource_list(resources.get("requests"), "spec.resources.requests")
    limits = _resource_list(resources.get("limits"), "spec.resources.limits")
    if limits:
        containers = _aggregate_containers(spec, False)
        for name, q in containers.items():
            if is_supported_pod_level_resource(name):
                reqs.setdefault(name, q)
        for name, q in limits.items():
            if is_supported_pod_level_resource(name):
                reqs.setdefault(name, q)
    return {k: v for k, v in reqs.items() if is_supported_pod_level_resource(k)}


def pod_requests(spec: Mapping[str, Any], *, non_zero: bool = False) -> Resource:
    """Effective requests of a pod, as upstream's resource.PodRequests computes them.

    Sum of the app containers and the restartable init containers (sidecars),
    raised to the largest single init container (plus the sidecars started
    before it); pod-level requests (spec.resources) replace that for cpu, memory
    and hugepages; plus the pod overhead. With `non_zero`, a container without a
    cpu or memory request counts the scoring defaults (100m, 200Mi). Quantities
    are summed exactly and rounded once at the end, as upstream does.
    """
    total = _aggregate_containers(spec, non_zero)
    total.update(_pod_level_requests(spec))
    _add(total, _resource_list(spec.get("overhead"), "spec.overhead"))
    r = Resource()
    for name, q in total.items():
        r.set(name, q)
    return r
