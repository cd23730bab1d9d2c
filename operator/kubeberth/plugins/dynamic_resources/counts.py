"""Free devices per node as arrays: DynamicResources' `filter_all`.

The allocator's search (allocator.py) is exhaustive, so on a node it fails exactly when no
assignment of devices to the pod's requests exists. For the common claims (exact counts, no admin
access, no capacity requests, no constraints, no firstAvailable) a device either suits a request
or not whatever else is allocated, save for being held already: a request's "eligibility" is a
fixed predicate per device (class and request selectors, taints against the request's
tolerations, the static capacity check). When every request of the pod has the same predicate,
the search succeeds iff the node's free eligible devices are at least the devices asked for;
with several predicates, enough free devices for each is necessary, and the full allocator
decides the nodes that pass that test.

Nodes whose devices step outside that model (shared devices, devices consuming counters,
per-device node selection, a device the predicate cannot be evaluated on, capacity shared by
existing allocations) are decided by the per-node `filter` itself. Counts are kept per
ResourceSlice index (the same slice versions) and predicate; the held devices are subtracted per
pod.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ...model import Node, NodeInfo
from . import capacity
from .allocator import Allocator
from .cel_env import CelError, compile_selector
from .devices import Device, DeviceID, tolerates
from .pools import SliceIndex, gather_pools
from .requests import EXACT_COUNT, RESULTS_MAX, Request
from .tracker import HeldDevices

# A predicate: class name, the class object's identity, the class's and the request's selector
# expressions, and the request's tolerations.
PredicateKey = tuple[Any, ...]

COMPLEX = -1  # a node the counts do not describe: per-node filter


class Predicate:
    __slots__ = ("expressions", "key", "klass", "tolerations")

    def __init__(self, klass: Mapping[str, Any], req: Request) -> None:
        self.klass = klass
        class_exprs = [str((sel.get("cel") or {}).get("expression") or "")
                       for sel in (klass.get("spec") or {}).get("selectors") or ()]
        req_exprs = [str((sel.get("cel") or {}).get("expression") or "") for sel in req.selectors]
        self.expressions = (*class_exprs, *req_exprs)
        self.tolerations = list(req.tolerations)
        self.key: PredicateKey = (req.class_name, id(klass), self.expressions, repr(self.tolerations))

    def eligible(self, device: Device) -> bool | None:
        """Whether the device suits the request when free; None: cannot tell (an error the
        per-node search may or may not meet)."""
        for expr in self.expressions:
            known = device.matches.get(expr)
            if known is None:
                compiled = compile_selector(expr)
                if isinstance(compiled, CelError):
                    return None
                try:
                    known = compiled.matches(device.cel)
                except CelError:
                    return None
                device.matches[expr] = known
            if not known:
                return False
        try:
            if not capacity.fits(None, device, {}, {}):
                return False
        except capacity.CapacityError:
            return None
        return not any(t.prevents_allocation() and not any(tolerates(tol, t) for tol in self.tolerations)
                       for t in device.taints)


class _Table:
    """One predicate's eligible devices per node, over one SliceIndex."""

    __slots__ = ("by_node", "held", "invalid", "node_of", "rows")

    def __init__(self) -> None:
        self.by_node: dict[str, int] = {}  # node -> eligible devices (COMPLEX: not described)
        self.node_of: dict[DeviceID, str] = {}  # eligible device -> its node
        self.invalid: set[str] = set()  # nodes with an invalid pool (a failed search says so)
        # the tracker, its log position and the devices held per row then
        self.held: tuple[object, int, np.ndarray] | None = None
        # the rows' names list, its version, static counts per row, eligible device -> row, and
        # the rows with an invalid pool
        self.rows: tuple[list[str], Any, np.ndarray, dict[DeviceID, int], np.ndarray] | None = None

    def node(self, node: Node, index: SliceIndex, pred: Predicate) -> int:
        hit = self.by_node.get(node.name)
        if hit is not None:
            return hit
        count = 0
        found: list[DeviceID] = []
        pools = gather_pools(node, index)
        if any(pool.invalid for pool in pools):
            self.invalid.add(node.name)
        for pool in pools:
            if pool.incomplete or pool.invalid:
                continue  # never searched (an invalid one only changes the failure's wording)
            for sl in pool.slices:
                if sl.per_device or sl.placement.node_name != node.name:  # devices other nodes reach too
                    count = COMPLEX
                    break
                for d in sl.devices:
                    if d.allow_multiple or d.consumes_counters:
                        count = COMPLEX
                        break
                    ok = pred.eligible(d)
                    if ok is None:
                        count = COMPLEX
                        break
                    if ok:
                        count += 1
                        found.append(d.id)
                if count == COMPLEX:
                    break
            if count == COMPLEX:
                break
        self.by_node[node.name] = count
        if count != COMPLEX:
            for device_id in found:
                self.node_of[device_id] = node.name
        return count


class CountIndex:
    """The tables of one SliceIndex (cached on it: they live as long as those slice versions)."""

    def __init__(self) -> None:
        self.tables: dict[PredicateKey, tuple[Predicate, _Table]] = {}

    def table(self, pred: Predicate) -> _Table:
        hit = self.tables.get(pred.key)
        if hit is None or hit[0].klass is not pred.klass:
            hit = self.tables[pred.key] = (pred, _Table())
        return hit[1]


def plain_requests(allocator: Allocator, claims: Sequence[Mapping[str, Any]],
                   classes: Callable[[str], Mapping[str, Any] | None]) -> list[tuple[Predicate, int]] | None:
    """The pod's requests as (predicate, devices asked) when every claim to allocate is of the
    plain kind the counts describe exactly and the allocator cannot fail on it; else None."""
    wanted: dict[PredicateKey, tuple[Predicate, int]] = {}
    for claim in claims:
        devices = (claim.get("spec") or {}).get("devices") or {}
        if devices.get("constraints"):
            return None
        total = 0
        for _, alternatives in allocator._parsed(claim):
            if len(alternatives) != 1:
                return None
            req = alternatives[0]
            if (req.parent or req.mode != EXACT_COUNT or req.admin_access or req.capacity is not None
                    or req.count < 1 or not req.class_name):
                return None
            klass = classes(req.class_name)
            if klass is None:
                return None
            pred = Predicate(klass, req)
            if any(not e or isinstance(compile_selector(e), CelError) for e in pred.expressions):
                return None
            total += req.count
            have = wanted.get(pred.key)
            wanted[pred.key] = (pred, req.count + (have[1] if have else 0))
        if total > RESULTS_MAX:
            return None
    return list(wanted.values())


def free_counts(index: SliceIndex, pred: Predicate, nodes: Iterable[NodeInfo], names: list[str],
                version: Any, allocated: Collection[DeviceID], shared: Iterable[DeviceID]
                ) -> tuple[np.ndarray, np.ndarray]:
    """Free eligible devices per row (COMPLEX for rows the counts do not describe): `nodes` (the
    NodeInfos) and `names` are the snapshot's rows, `version` changes whenever they do;
    `allocated` are the devices held (a tracker's HeldDevices: counted from its log of changes
    since the last pod), `shared` those whose capacity allocations consume (rows holding one are
    COMPLEX: their capacity check depends on it). Also returns the rows with an invalid pool."""
    cache: CountIndex | None = index.counts
    if cache is None:
        cache = index.counts = CountIndex()
    table = cache.table(pred)
    rows = table.rows
    if rows is None or rows[0] is not names or rows[1] != version:
        static = np.zeros(len(names), dtype=np.int64)
        for i, ni in enumerate(nodes):
            if ni.node is not None:
                static[i] = table.node(ni.node, index, pred)
        pos = {name: i for i, name in enumerate(names)}
        device_rows = {d: pos[n] for d, n in table.node_of.items() if n in pos}
        invalid = np.fromiter((name in table.invalid for name in names), dtype=bool, count=len(names))
        rows = table.rows = (names, version, static, device_rows, invalid)
        table.held = None
    static, device_rows, invalid = rows[2], rows[3], rows[4]
    get = device_rows.get
    if isinstance(allocated, HeldDevices):
        held = _held_rows(table, allocated, len(static))
        extra = [r for r in map(get, (d for d in allocated.extra if d not in allocated.held)) if r is not None]
    else:
        held = np.bincount(np.asarray([r for r in map(get, allocated) if r is not None], dtype=np.intp),
                           minlength=len(static))
        extra = []
    complex_rows = [r for r in map(get, shared) if r is not None]
    out = static - held
    if extra:
        out -= np.bincount(np.asarray(extra, dtype=np.intp), minlength=len(static))
    out[static == COMPLEX] = COMPLEX
    if complex_rows:
        out[complex_rows] = COMPLEX
    return out, invalid


def _held_rows(table: _Table, allocated: HeldDevices, n: int) -> np.ndarray:
    """The devices held per row by the claims in the store, kept from pod to pod by the held
    set's log of changes."""
    rows = table.rows
    assert rows is not None
    get = rows[3].get
    end = allocated.log_base + len(allocated.log)
    have = table.held
    if have is None or have[0] is not allocated.source or not allocated.log_base <= have[1] <= end:
        counted = np.bincount(np.asarray([r for r in map(get, allocated.held) if r is not None], dtype=np.intp),
                              minlength=n)
    else:
        counted = have[2]
        for device, sign in allocated.log[have[1] - allocated.log_base:]:
            r = get(device)
            if r is not None:
                counted[r] += sign
    table.held = (allocated.source, end, counted)
    return counted
