"""ResourceSlices parsed once for the allocator: pools, slices and their devices.

A parsed slice is memoised by object identity (the store replaces an object on every change), so a
device's CEL view and the selector answers it memoises live as long as that version of the slice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ...model import Node
from ...model.errors import ModelError
from ...model.selectors import NodeSelector
from ...model.taints import NO_EXECUTE, NO_SCHEDULE
from .cel_env import cel_device

DeviceID = tuple[str, str, str]  # driver, pool, device


class DeviceTaint:
    __slots__ = ("effect", "key", "value")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.key = str(raw.get("key") or "")
        self.value = str(raw.get("value") or "")
        self.effect = str(raw.get("effect") or "")

    def prevents_allocation(self) -> bool:
        return self.effect in (NO_SCHEDULE, NO_EXECUTE)


def tolerates(toleration: Mapping[str, Any], taint: DeviceTaint) -> bool:
    """resourceclaim.ToleratesTaint: as a pod toleration, an empty operator meaning Equal."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.effect:
        return False
    key = toleration.get("key") or ""
    if key and key != taint.key:
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Equal":
        return str(toleration.get("value") or "") == taint.value
    return op == "Exists"


def _node_selector(raw: Any, where: str) -> NodeSelector | None:
    if raw is None:
        return None
    try:
        return NodeSelector.from_dict(raw)
    except ModelError as exc:
        raise ModelError(f"{where}: invalid nodeSelector: {exc}") from exc


class NodePlacement:
    """Where a slice's (or, with perDeviceNodeSelection, a device's) devices are reachable."""

    __slots__ = ("all_nodes", "node_name", "selector", "selector_raw")

    def __init__(self, raw: Mapping[str, Any], where: str) -> None:
        self.node_name = str(raw.get("nodeName") or "")
        self.all_nodes = bool(raw.get("allNodes"))
        self.selector_raw = raw.get("nodeSelector")
        self.selector = _node_selector(self.selector_raw, where)

    def set(self) -> bool:
        return bool(self.node_name or self.all_nodes or self.selector is not None)

    def matches(self, node: Node) -> bool:
        if self.node_name:
            return node.name == self.node_name
        if self.all_nodes:
            return True
        if self.selector is not None:
            return self.selector.matches(node.name, node.labels)
        return False


class Device:
    __slots__ = ("allow_multiple", "attributes", "binding_conditions", "binding_failure_conditions",
                 "capacity", "cel", "consumes_counters", "id", "matches", "name", "placement", "slice", "taints")

    def __init__(self, raw: Mapping[str, Any], slice_: Slice) -> None:
        self.name = str(raw.get("name") or "")
        if not self.name:
            raise ModelError(f"ResourceSlice {slice_.name}: a device has no name")
        self.slice = slice_
        self.id: DeviceID = (slice_.driver, slice_.pool, self.name)
        self.attributes: Mapping[str, Any] = raw.get("attributes") or {}
        self.capacity: Mapping[str, Any] = raw.get("capacity") or {}
        self.allow_multiple = bool(raw.get("allowMultipleAllocations"))
        self.taints = [DeviceTaint(t) for t in raw.get("taints") or ()]
        self.consumes_counters: list[Mapping[str, Any]] = list(raw.get("consumesCounters") or ())
        self.binding_conditions: list[str] = list(raw.get("bindingConditions") or ())
        self.binding_failure_conditions: list[str] = list(raw.get("bindingFailureConditions") or ())
        self.placement = NodePlacement(raw, f"ResourceSlice {slice_.name}, device {self.name}")
        try:
            self.cel = cel_device(slice_.driver, self.attributes, self.capacity, self.allow_multiple)
        except ValueError as exc:
            raise ModelError(f"ResourceSlice {slice_.name}, device {self.name}: {exc}") from exc
        self.matches: dict[str, bool] = {}  # expression -> answer, for this version of the slice

    def attribute(self, qualified: str) -> Mapping[str, Any] | None:
        """lookupAttribute: the full name, or the driver's own domain given without it."""
        if qualified in self.attributes:
            return self.attributes[qualified]
        domain, sep, ident = qualified.partition("/")
        if sep and domain == self.slice.driver:
            return self.attributes.get(ident)
        return None


class Slice:
    __slots__ = ("counter_sets", "devices", "driver", "generation", "name", "per_device", "placement",
                 "pool", "slice_count")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        meta = raw.get("metadata") or {}
        spec = raw.get("spec") or {}
        self.name = str(meta.get("name") or "")
        self.driver = str(spec.get("driver") or "")
        pool = spec.get("pool") or {}
        self.pool = str(pool.get("name") or "")
        if not self.driver or not self.pool:
            raise ModelError(f"ResourceSlice {self.name}: spec.driver and spec.pool.name are required")
        self.generation = int(pool.get("generation") or 0)
        self.slice_count = int(pool.get("resourceSliceCount") or 1)
        self.per_device = bool(spec.get("perDeviceNodeSelection"))
        self.placement = NodePlacement(spec, f"ResourceSlice {self.name}")
        self.counter_sets: dict[str, dict[str, int]] = {}
        for cs in spec.get("sharedCounters") or ():
            self.counter_sets[str(cs.get("name"))] = {
                str(k): _milli((v or {}).get("value")) for k, v in (cs.get("counters") or {}).items()}
        self.devices = [Device(d, self) for d in spec.get("devices") or ()]

    def relevant_for(self, node: Node) -> bool:
        if self.placement.set():
            return self.placement.matches(node)
        if self.per_device:
            return any(d.placement.matches(node) for d in self.devices)
        return False


def _milli(raw: Any) -> int:
    from .cel_env import quantity_value
    return next(iter(quantity_value(raw if raw is not None else 0).values()))


_PARSED: dict[int, tuple[Mapping[str, Any], Slice]] = {}


def parse_slices(objects: Iterable[Mapping[str, Any]]) -> tuple[list[Slice], list[str]]:
    """The parsed slices and, for the ones that cannot be parsed, what is wrong with them."""
    out: list[Slice] = []
    errors: list[str] = []
    live: set[int] = set()
    for obj in objects:
        live.add(id(obj))
        hit = _PARSED.get(id(obj))
        if hit is not None and hit[0] is obj:
            out.append(hit[1])
            continue
        try:
            parsed = Slice(obj)
        except (ModelError, ValueError, TypeError) as exc:
            errors.append(str(exc))
            continue
        _PARSED[id(obj)] = (obj, parsed)
        out.append(parsed)
    if len(_PARSED) > 2 * len(live) + 64:
        for key in [k for k in _PARSED if k not in live]:
            del _PARSED[key]
    return out, errors
