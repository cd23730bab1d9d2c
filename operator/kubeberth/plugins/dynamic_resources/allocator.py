"""Structured-parameters allocation (k8s.io/dynamic-resource-allocation `structured`): an
exhaustive search, claim after claim, request after request, device after device, in pool order,
that takes the first full solution. Errors that make any node fail (a broken selector, a missing
class) raise AllocationError; no solution on a node is `None`."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from ...model import Node
from . import capacity
from .capacity import Consumed
from .cel_env import CelError, compile_selector
from .constraints import Constraint, ConstraintError
from .devices import Device, DeviceID, Slice, tolerates
from .pools import Pool, SliceIndex, gather_pools
from .requests import ALL, EXACT_COUNT, RESULTS_MAX, Request, claim_requests


class AllocationError(Exception):
    """`on_node`: only this node fails (upstream's ErrFailedAllocationOnNode), others may do."""

    def __init__(self, message: str, on_node: bool = False) -> None:
        super().__init__(message)
        self.on_node = on_node


def kobj(claim: Mapping[str, Any]) -> str:
    meta = claim.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def did(device_id: DeviceID) -> str:
    return "/".join(device_id)


class _Req:
    """A request's data in one Allocate call (upstream's requestData)."""

    __slots__ = ("all_devices", "klass", "num", "req", "selected")

    def __init__(self, req: Request, klass: Mapping[str, Any]) -> None:
        self.req = req
        self.klass = klass
        self.num = req.count
        self.all_devices: list[Device] = []
        self.selected = 0


class Allocator:
    """Built once per pod (PreFilter) over the cluster's slices and allocated devices, used per node."""

    def __init__(self, classes: Callable[[str], Mapping[str, Any] | None], slices: Sequence[Slice],
                 allocated: Collection[DeviceID], consumed: Mapping[DeviceID, Device],
                 index: SliceIndex | None = None, shared: Mapping[DeviceID, Consumed] | None = None,
                 held_per_pool: Mapping[tuple[str, str], int] | None = None) -> None:
        self.classes = classes
        self.slices = slices
        self.index = index if index is not None else SliceIndex(slices)
        self.requests: dict[int, list[tuple[str, list[Request]]]] = {}  # by id(claim), for this pod
        self.validated: dict[tuple[int, str], Mapping[str, Any]] = {}  # (id(claim), request) -> class
        self.allocated = allocated
        self.shared = shared or {}  # capacity consumed on shared devices by allocations made
        # Devices held per pool: a pool whose every device is held is skipped without a scan.
        if held_per_pool is None:
            counted: dict[tuple[str, str], int] = {}
            for driver, pool, _ in allocated:
                counted[(driver, pool)] = counted.get((driver, pool), 0) + 1
            held_per_pool = counted
        self.held_per_pool = held_per_pool
        self.consumed = consumed  # allocated devices that consume counters, by id

    def allocate(self, node: Node, claims: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]] | None:
        if self._too_few_free(gather_pools(node, self.index), claims):
            return None
        return _Run(self, node, claims).run()

    def _parsed(self, claim: Mapping[str, Any]) -> list[tuple[str, list[Request]]]:
        parsed = self.requests.get(id(claim))
        if parsed is None:
            parsed = self.requests[id(claim)] = claim_requests(claim)
        return parsed

    def _too_few_free(self, pools: Sequence[Pool], claims: Sequence[Mapping[str, Any]]) -> bool:
        """Whether the node's pools surely lack the devices the claims need at least: the search
        would find nothing (so it is not run). Only for the plain case: exact counts without admin
        access, valid pools without shared devices."""
        free = 0
        for pool in pools:
            if pool.invalid or pool.shared:
                return False
            if not pool.incomplete:
                free += pool.size - self.held_per_pool.get((pool.driver, pool.name), 0)
        needed = 0
        for claim in claims:
            for _, alternatives in self._parsed(claim):
                if not alternatives or any(r.mode != EXACT_COUNT or r.admin_access for r in alternatives):
                    return False
                needed += min(r.count for r in alternatives)
        return needed > free


class _Run:
    def __init__(self, a: Allocator, node: Node, claims: Sequence[Mapping[str, Any]]) -> None:
        self.a = a
        self.node = node
        self.claims = claims
        self.pools: list[Pool] = gather_pools(node, a.index)
        self.requests: list[list[list[_Req]]] = []  # claim -> request -> alternatives
        self.constraints: list[list[Constraint]] = []
        self.in_use: dict[DeviceID, set[int]] = {}
        self.results: list[list[tuple[_Req, Device, Consumed | None]]] = [[] for _ in claims]
        self.allocating: dict[DeviceID, Consumed] = {}  # capacity consumed on shared devices here
        self.counters: dict[tuple[str, str], dict[str, dict[str, int]]] = {}

    # ---- setup --------------------------------------------------------------------------------
    def run(self) -> list[dict[str, Any]] | None:
        for ci, claim in enumerate(self.claims):
            reqs = []
            for name, alternatives in self.a._parsed(claim):
                if not alternatives:
                    raise AllocationError(f"claim {kobj(claim)}, request {name}: missing device class name "
                                          "(unsupported request type?)")
                reqs.append([self._validate(ci, claim, r) for r in alternatives])
            self.requests.append(reqs)
            try:
                self.constraints.append([Constraint.parse(claim, i, c) for i, c in enumerate(
                    ((claim.get("spec") or {}).get("devices") or {}).get("constraints") or ())])
            except ConstraintError as exc:
                raise AllocationError(f"claim {kobj(claim)}, {exc}") from exc
        if not self._one(0, 0, 0, (0, 0, 0)):
            if any(p.invalid for p in self.pools):
                raise AllocationError("invalid resource pools were encountered", True)
            return None
        return [self._result(ci) for ci in range(len(self.claims))]

    def _validate(self, ci: int, claim: Mapping[str, Any], req: Request) -> _Req:
        known = self.a.validated.get((id(claim), req.full_name))
        if known is not None and req.mode == EXACT_COUNT:
            return _Req(req, known)
        where = f"claim {kobj(claim)}, request {req.name}"
        for i, sel in enumerate(req.selectors):
            if not (sel.get("cel") or {}).get("expression"):
                raise AllocationError(f"{where}, selector #{i}: CEL expression empty (unsupported selector type?)")
        if not req.class_name:
            raise AllocationError(f"{where}: missing device class name (unsupported request type?)")
        klass = self.a.classes(req.class_name)
        if klass is None:
            raise AllocationError(f'{where}: could not retrieve device class {req.class_name}: '
                                  f'deviceclass.resource.k8s.io "{req.class_name}" not found')
        data = _Req(req, klass)
        self.a.validated[(id(claim), req.full_name)] = klass
        if req.mode == ALL:
            for pool in self.pools:
                if pool.incomplete:
                    raise AllocationError(f"{where}: asks for all devices, but resource pool "
                                          f"{pool.driver}/{pool.name} is currently being updated")
                if pool.invalid:
                    raise AllocationError(f"{where}: asks for all devices, but resource pool "
                                          f"{pool.driver}/{pool.name} is currently invalid")
                data.all_devices += [d for d in pool.devices() if self._selectable(ci, data, d)
                                     and self._capacity_fits(data.req, d, static=True)]
            data.num = len(data.all_devices)
        elif req.mode != EXACT_COUNT:
            raise AllocationError(f"{where}: unsupported count mode {req.mode}")
        return data

    # ---- selection ----------------------------------------------------------------------------
    def _selectable(self, ci: int, data: _Req, device: Device) -> bool:
        klass_spec = data.klass.get("spec") or {}
        for i, sel in enumerate(klass_spec.get("selectors") or ()):
            if not self._match(device, sel, i, f"class {(data.klass.get('metadata') or {}).get('name')}"):
                return False
        for i, sel in enumerate(data.req.selectors):
            if not self._match(device, sel, i, f"claim {kobj(self.claims[ci])}"):
                return False
        if device.slice.per_device and not device.placement.matches(self.node):
            return False
        return True

    def _match(self, device: Device, sel: Mapping[str, Any], i: int, who: str) -> bool:
        expr = str((sel.get("cel") or {}).get("expression") or "")
        known = device.matches.get(expr)
        if known is not None:
            return known
        compiled = compile_selector(expr)
        if isinstance(compiled, CelError):
            raise AllocationError(f"{who}: selector #{i}: CEL compile error: {compiled}")
        try:
            answer = compiled.matches(device.cel)
        except CelError as exc:
            raise AllocationError(f"{who}: selector #{i} on device {did(device.id)}: CEL runtime error: {exc}") from exc
        device.matches[expr] = answer
        return answer

    def _capacity_fits(self, req: Request, device: Device, static: bool = False) -> bool:
        try:
            if static:
                return capacity.fits(req.capacity, device, {}, {})
            return capacity.fits(req.capacity, device, self.a.shared, self.allocating)
        except capacity.CapacityError as exc:
            raise AllocationError(f"request {req.name}: checking capacity for device {did(device.id)}: {exc}") from exc

    def _device_in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.a.allocated or bool(self.in_use.get(device_id))

    # ---- search (allocateOne) -----------------------------------------------------------------
    def _one(self, ci: int, ri: int, di: int, start: tuple[int, int, int], sub: int = -1) -> bool:
        if ci >= len(self.claims):
            return True
        if ri >= len(self.requests[ci]):
            return self._one(ci + 1, 0, 0, (0, 0, 0))
        alternatives = self.requests[ci][ri]
        if sub < 0:
            if len(alternatives) > 1 or alternatives[0].req.parent:
                for si in range(len(alternatives)):
                    if self._one(ci, ri, di, start, si):
                        alternatives[0].selected = si
                        return True
                return False
            sub = 0
        data = alternatives[sub]
        req = data.req
        if req.mode == ALL and not data.all_devices:
            return False
        if di >= data.num:
            return self._one(ci, ri + 1, 0, (0, 0, 0))
        if data.num - di > RESULTS_MAX - len(self.results[ci]):
            return False
        if req.mode == ALL:
            device = data.all_devices[di]
            undo = self._take(ci, data, device, must=True)
            if undo is None:
                return False
            if self._one(ci, ri, di + 1, (0, 0, 0), sub):
                return True
            undo()
            return False
        for pi in range(start[0], len(self.pools)):
            pool = self.pools[pi]
            if pool.incomplete or pool.invalid:
                continue
            if not req.admin_access and self.a.held_per_pool.get((pool.driver, pool.name), 0) >= pool.size:
                continue
            for si in range(start[1] if pi == start[0] else 0, len(pool.slices)):
                devices = pool.slices[si].devices
                first = start[2] if (pi, si) == start[:2] else 0
                for dj in range(first, len(devices)):
                    device = devices[dj]
                    if req.admin_access:
                        if ci in self.in_use.get(device.id, ()):
                            continue
                    elif self._device_in_use(device.id):
                        continue
                    if not self._selectable(ci, data, device) or not self._capacity_fits(req, device):
                        continue
                    undo = self._take(ci, data, device, must=False)
                    if undo is None:
                        continue
                    if self._one(ci, ri, di + 1, (pi, si, dj + 1), sub):
                        return True
                    undo()
        return False

    def _take(self, ci: int, data: _Req, device: Device, must: bool) -> Callable[[], None] | None:
        """allocateDevice: counters, taints, constraints; returns how to roll it back."""
        req = data.req
        shared = device.allow_multiple
        if not shared and req.admin_access and ci in self.in_use.get(device.id, ()):
            return None
        if not req.admin_access and self._device_in_use(device.id):
            return None
        took_counters = False
        # A shared device's counters are consumed once, by its first allocation.
        if device.consumes_counters and not (shared and (device.id in self.a.shared or device.id in self.allocating)):
            if not self._reserve_counters(device):
                return None
            took_counters = True
        if any(t.prevents_allocation() and not any(tolerates(tol, t) for tol in req.tolerations)
               for t in device.taints):
            if took_counters:
                self._release_counters(device)
            return None
        base = req.parent or req.name
        sub = req.name if req.parent else ""
        added: list[Constraint] = []
        for c in self.constraints[ci]:
            if not c.add(base, sub, device):
                for done in reversed(added):
                    done.remove(base, sub)
                if took_counters:
                    self._release_counters(device)
                if must:
                    raise AllocationError(f"claim {kobj(self.claims[ci])}, request {req.name}: cannot add device "
                                          f"{did(device.id)} because a claim constraint would not be satisfied")
                return None
            added.append(c)
        consumed: Consumed | None = None
        if shared:
            if not self._capacity_fits(req, device):
                for done in reversed(added):
                    done.remove(base, sub)
                if took_counters:
                    self._release_counters(device)
                return None
            consumed = capacity.consumed_by(req.capacity, device) or {}
            capacity.add(self.allocating, device.id, consumed)
        else:
            self.in_use.setdefault(device.id, set()).add(ci)
        self.results[ci].append((data, device, consumed))

        def undo() -> None:
            self.results[ci].pop()
            if consumed is not None:
                capacity.add(self.allocating, device.id, consumed, -1)
            else:
                self.in_use[device.id].discard(ci)
            for done in reversed(added):
                done.remove(base, sub)
            if took_counters:
                self._release_counters(device)
        return undo

    # ---- partitionable devices: shared counters ------------------------------------------------
    def _available(self, device: Device) -> dict[str, dict[str, int]]:
        key = (device.slice.driver, device.slice.pool)
        if key not in self.counters:
            pool = next((p for p in self.pools if (p.driver, p.name) == key), None)
            sets = {n: dict(c) for n, c in (pool.counter_sets if pool else {}).items()}
            for used in self.a.consumed.values():
                if (used.slice.driver, used.slice.pool) == key:
                    _apply(sets, used, -1)
            self.counters[key] = sets
        return self.counters[key]

    def _reserve_counters(self, device: Device) -> bool:
        sets = self._available(device)
        for c in device.consumes_counters:
            have = sets.get(str(c.get("counterSet")))
            if have is None:
                return False
            for name, value in _counter_values(c).items():
                if name not in have or have[name] < value:
                    return False
        _apply(sets, device, -1)
        return True

    def _release_counters(self, device: Device) -> None:
        _apply(self._available(device), device, +1)

    # ---- result --------------------------------------------------------------------------------
    def _result(self, ci: int) -> dict[str, Any]:
        claim = self.claims[ci]
        results = []
        for data, device, consumed in self.results[ci]:
            entry: dict[str, Any] = {"request": data.req.full_name, "driver": device.slice.driver,
                                     "pool": device.slice.pool, "device": device.name}
            if consumed is not None:
                entry["shareID"] = str(uuid.uuid4())
                if consumed:
                    entry["consumedCapacity"] = {k: capacity.format_milli(v) for k, v in consumed.items()}
            if data.req.admin_access:
                entry["adminAccess"] = True
            if data.req.tolerations:
                entry["tolerations"] = [dict(t) for t in data.req.tolerations]
            if device.binding_conditions:
                entry["bindingConditions"] = list(device.binding_conditions)
                entry["bindingFailureConditions"] = list(device.binding_failure_conditions)
            results.append(entry)
        config: list[dict[str, Any]] = []
        seen: set[str] = set()
        for alternatives in self.requests[ci]:
            data = alternatives[alternatives[0].selected] if alternatives[0].req.parent else alternatives[0]
            name = str((data.klass.get("metadata") or {}).get("name"))
            for cfg in (data.klass.get("spec") or {}).get("config") or ():
                if name not in seen:
                    config.append({"source": "FromClass", "requests": [data.req.full_name], **dict(cfg)})
            seen.add(name)
        for cfg in ((claim.get("spec") or {}).get("devices") or {}).get("config") or ():
            config.append({"source": "FromClaim", **dict(cfg)})
        allocation: dict[str, Any] = {"devices": {"results": results}}
        if config:
            allocation["devices"]["config"] = config
        selector = self._node_selector([device for _, device, _ in self.results[ci]])
        if selector is not None:
            allocation["nodeSelector"] = selector
        return allocation

    def _node_selector(self, devices: list[Device]) -> dict[str, Any] | None:
        """Where the allocation can be used: this node for a node-local device; else the one node
        selector of the devices (several: this node, narrower than upstream's intersection)."""
        selectors = []
        for d in devices:
            placement = d.placement if d.slice.per_device else d.slice.placement
            if placement.node_name:
                return _field_selector(self.node.name)
            if placement.selector_raw is not None and placement.selector_raw not in selectors:
                selectors.append(placement.selector_raw)
        if len(selectors) > 1:
            return _field_selector(self.node.name)
        return dict(selectors[0]) if selectors else None


def _field_selector(node: str) -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}


def _counter_values(consumption: Mapping[str, Any]) -> dict[str, int]:
    from .devices import _milli
    return {str(k): _milli((v or {}).get("value")) for k, v in (consumption.get("counters") or {}).items()}


def _apply(sets: dict[str, dict[str, int]], device: Device, sign: int) -> None:
    for c in device.consumes_counters:
        have = sets.get(str(c.get("counterSet")))
        if have is None:
            continue
        for name, value in _counter_values(c).items():
            if name in have:
                have[name] += sign * value
