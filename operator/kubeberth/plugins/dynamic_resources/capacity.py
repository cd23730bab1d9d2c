"""Consumable capacity: devices with `allowMultipleAllocations` shared by several claims, each
consuming part of the device's capacity (upstream's consumable_capacity.go). Values are in milli
units (Python ints: no overflow to guard against)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...model.quantity import QuantityError
from .cel_env import quantity_value
from .devices import Device, DeviceID

Consumed = dict[str, int]  # capacity name -> milli-units


def milli(raw: Any) -> int:
    return next(iter(quantity_value(raw if raw is not None else 0).values()))


class CapacityError(Exception):
    pass


def _opt(raw: Any) -> int | None:
    return None if raw is None else milli(raw)


def _consumed_one(requested: int | None, cap: Mapping[str, Any]) -> int:
    """calculateConsumedCapacity: the request rounded up by the capacity's policy; none asked:
    the policy's default, else the whole capacity."""
    policy = cap.get("requestPolicy") or None
    if requested is None:
        default = _opt((policy or {}).get("default"))
        return default if default is not None else milli(cap.get("value"))
    if policy is None:
        return requested
    valid_range = policy.get("validRange")
    if valid_range is not None and valid_range.get("min") is not None:
        low = milli(valid_range["min"])
        if requested < low:
            return low
        step = _opt(valid_range.get("step"))
        if not step:
            return requested
        return low + -(-(requested - low) // step) * step
    values = policy.get("validValues")
    if values is not None:
        for v in values:
            if requested <= milli(v):
                return milli(v)
    return requested


def _violates(value: int, cap: Mapping[str, Any]) -> bool:
    policy = cap.get("requestPolicy") or None
    if policy is None:
        return False
    default = _opt(policy.get("default"))
    if default is not None and value == default:
        return False
    valid_range = policy.get("validRange")
    if valid_range is not None:
        high = _opt(valid_range.get("max"))
        if high is not None and value > high:
            return True
        step = _opt(valid_range.get("step"))
        return step is not None and step != 0 and (value - milli(valid_range.get("min"))) % step != 0
    values = policy.get("validValues")
    if values:
        return value not in {milli(v) for v in values}
    return False


def consumed_by(request_capacity: Any, device: Device) -> Consumed | None:
    """What a request would consume of the device (GetConsumedCapacityFromRequest), or None when it
    asks for a capacity the device does not have."""
    requests = (request_capacity or {}).get("requests") or {}
    if any(name not in device.capacity for name in requests):
        return None
    try:
        return {name: _consumed_one(milli(requests[name]) if name in requests else None, cap or {})
                for name, cap in device.capacity.items()}
    except QuantityError as exc:
        raise CapacityError(str(exc)) from exc


def fits(request_capacity: Any, device: Device, allocated: Mapping[DeviceID, Consumed],
         allocating: Mapping[DeviceID, Consumed]) -> bool:
    """CmpRequestOverCapacity: the request's consumption, within the policy, on top of what the
    device's other allocations (made and being made) consume, stays within each capacity."""
    want = consumed_by(request_capacity, device)
    if want is None:
        return False
    before = allocated.get(device.id, {})
    now = allocating.get(device.id, {})
    for name, cap in device.capacity.items():
        value = want[name]
        if value < 0 or _violates(value, cap or {}):
            return False
        if before.get(name, 0) + value + now.get(name, 0) > milli((cap or {}).get("value")):
            return False
    return True


def add(into: dict[DeviceID, Consumed], device_id: DeviceID, consumed: Mapping[str, int], sign: int = 1) -> None:
    have = into.setdefault(device_id, {})
    for name, value in consumed.items():
        have[name] = have.get(name, 0) + sign * value


def format_milli(value: int) -> str:
    return str(value // 1000) if value % 1000 == 0 else f"{value}m"


def shared_consumption(alloc: Mapping[str, Any]) -> list[tuple[DeviceID, Consumed]]:
    """The capacity an allocation's shared devices (results with a shareID) consume."""
    out = []
    for r in (alloc.get("devices") or {}).get("results") or ():
        if not r.get("shareID") or r.get("adminAccess"):
            continue
        device_id = (str(r.get("driver")), str(r.get("pool")), str(r.get("device")))
        out.append((device_id, {str(k): milli(v) for k, v in (r.get("consumedCapacity") or {}).items()}))
    return out
