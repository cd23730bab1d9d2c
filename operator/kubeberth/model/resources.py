"""Resource arithmetic: what a pod requests and what a node offers.

cpu is kept in millicores, everything else in whole units (bytes, counts),
as upstream's framework.Resource does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .errors import ModelError
from .quantity import QuantityError, milli_value, value

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
HUGEPAGES_PREFIX = "hugepages-"

# Used for scoring only, when a container names no cpu/memory request.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


def is_scalar_resource(name: str) -> bool:
    """Hugepages, extended resources and attachable-volume counts."""
    return name not in (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)


class Resource:
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
        else:
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


def _container_requests(container: Mapping[str, Any], where: str, non_zero: bool) -> Resource:
    resources = container.get("resources") or {}
    raw = resources.get("requests")
    limits = resources.get("limits")
    if limits and isinstance(limits, Mapping):
        # The API server defaults each missing request to its limit.
        raw = {**limits, **(raw or {})}
    r = Resource.from_list(raw, where=where)
    if non_zero:
        names = set(raw or {})
        if CPU not in names:
            r.milli_cpu += DEFAULT_MILLI_CPU_REQUEST
        if MEMORY not in names:
            r.memory += DEFAULT_MEMORY_REQUEST
    return r


def pod_requests(spec: Mapping[str, Any], *, non_zero: bool = False) -> Resource:
    """Effective requests of a pod, as upstream's resource.PodRequests computes them.

    Sum of the app containers and the restartable init containers (sidecars),
    raised to the largest single init container (plus the sidecars started
    before it), plus the pod overhead. With `non_zero`, a container without a
    cpu or memory request counts the scoring defaults (100m, 200Mi).
    """
    total = Resource()
    for i, c in enumerate(spec.get("containers") or []):
        total.add(_container_requests(c, f"spec.containers[{i}].resources", non_zero))
    sidecars = Resource()
    init_max = Resource()
    for i, c in enumerate(spec.get("initContainers") or []):
        reqs = _container_requests(c, f"spec.initContainers[{i}].resources", non_zero)
        if c.get("restartPolicy") == "Always":
            total.add(reqs)
            sidecars.add(reqs)
            init_max.set_max(sidecars)
        else:
            reqs.add(sidecars)
            init_max.set_max(reqs)
    total.set_max(init_max)
    overhead = spec.get("overhead")
    if overhead:
        total.add(Resource.from_list(overhead, where="spec.overhead"))
    return total
