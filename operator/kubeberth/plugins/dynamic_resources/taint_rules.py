"""DeviceTaintRules: taints added to the devices their selector names (driver, pool, device),
as upstream's ListWithDeviceTaintRules hands the allocator slices with those taints merged in."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from .devices import Device, DeviceTaint, Slice


def _selects(selector: Mapping[str, Any], device: Device) -> bool:
    for field, have in (("driver", device.slice.driver), ("pool", device.slice.pool), ("device", device.name)):
        want = selector.get(field)
        if want and want != have:
            return False
    return True


def apply_taint_rules(slices: Sequence[Slice], rules: Sequence[Mapping[str, Any]]) -> list[Slice]:
    """The slices with each rule's taint added to the devices it selects (copies: the parsed
    slices are shared)."""
    # Without a selector a rule selects no device; an empty one selects every device.
    parsed = [(spec["deviceSelector"], DeviceTaint(spec.get("taint") or {}))
              for spec in ((r.get("spec") or {}) for r in rules) if spec.get("deviceSelector") is not None]
    if not parsed:
        return list(slices)
    out = []
    for sl in slices:
        hits = {i: [t for sel, t in parsed if _selects(sel, d)] for i, d in enumerate(sl.devices)}
        if not any(hits.values()):
            out.append(sl)
            continue
        new = copy.copy(sl)
        new.devices = []
        for i, d in enumerate(sl.devices):
            if hits[i]:
                d = copy.copy(d)
                d.taints = [*d.taints, *hits[i]]
                d.slice = new
            new.devices.append(d)
        out.append(new)
    return out
