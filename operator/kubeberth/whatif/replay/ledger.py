"""A replay's books: each pod's compact record (arrival, binding, node, departure, status, the
annotations written at binding), the running counts and resource sums, the time series (one row
per sample) and the summary made from them. Nothing of a departed pod is kept but its record.

Series columns, in order: `time`, `arrived` (pods arrived so far, dropped ones included),
`scheduled` (pods bound so far), `pending` (arrived, not bound, still there), `running` (bound
and still there), `failed` (pods that left without ever being bound: departed while pending, or
dropped), `preemptions` (pods evicted so far), `queueingDelay` (mean queueing delay of the pods
bound since the previous sample, 0 when none), `oldestPending` (how long the longest-waiting
pending pod has waited), then per resource `allocated.<r>` (requests of running pods),
`capacity.<r>` (allocatable of the nodes present), `arrivedRequests.<r>` (requests of the pods
arrived so far) in absolute units (millicores, bytes, extended resources' own units), and last
the plugins' `<Plugin>.<metric>` columns in the order they first appear (empty before).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ...model.resources import Resource

PENDING = "Pending"
SCHEDULED = "Scheduled"
UNSCHEDULABLE = "Unschedulable"
PREEMPTED = "Preempted"
DROPPED = "Dropped"
ORPHANED = "Orphaned"    # bound to a node that left the cluster: deleted with it
IGNORED = "Ignored"      # no profile serves its schedulerName, or it could not be read

FIXED_COLUMNS = ("time", "arrived", "scheduled", "pending", "running", "failed", "preemptions",
                 "queueingDelay", "oldestPending")
_COUNTS = re.compile(r", (?=\d+ )")


def resource_names(resources: Iterable[Resource]) -> list[str]:
    """cpu and memory, then ephemeral-storage and the extended resources any of them has."""
    names: set[str] = set()
    storage = False
    for r in resources:
        storage = storage or bool(r.ephemeral_storage)
        names.update(k for k, v in r.scalar.items() if v)
    return ["cpu", "memory", *(["ephemeral-storage"] if storage else []), *sorted(names)]


def failure_reasons(message: str) -> list[str]:
    """The reasons of a FailedScheduling message (`0/3 nodes are available: 1 Insufficient cpu,
    2 node(s) didn't match ... preemption: ...`), without their counts; a message of another form
    is its own reason."""
    _, sep, rest = message.partition("nodes are available: ")
    if not sep:
        return [message.strip().rstrip(".")] if message.strip() else []
    body = rest.split(" preemption: ", 1)[0].strip().rstrip(".")
    out = []
    for part in _COUNTS.split(body):
        count, _, reason = part.partition(" ")
        out.append(reason.strip() if count.isdigit() and reason else part.strip())
    return sorted(set(out))


class PodEntry:
    """One pod's record; `requests` in the ledger's resource order."""

    __slots__ = ("annotations", "arrival", "bound", "departure", "duration", "key", "last_message",
                 "node", "requests", "status")

    def __init__(self, key: str, arrival: float, requests: tuple[int, ...], duration: float | None) -> None:
        self.key = key
        self.arrival = arrival
        self.requests = requests
        self.duration = duration
        self.bound: float | None = None
        self.node: str | None = None
        self.departure: float | None = None
        self.status = PENDING
        self.annotations: dict[str, str] = {}
        self.last_message = ""

    def as_dict(self) -> dict[str, Any]:
        return {"pod": self.key, "arrival": self.arrival, "bound": self.bound, "node": self.node,
                "departure": self.departure, "status": self.status,
                "annotations": dict(sorted(self.annotations.items()))}


class Ledger:
    """The counts, sums and records of one replay (the engine calls it as things happen)."""

    def __init__(self, resources: list[str]) -> None:
        self.resources = resources
        self.entries: dict[str, PodEntry] = {}
        self.arrived = self.scheduled = self.pending = self.running = self.failed = self.preemptions = 0
        self.departed = 0
        self.allocated = [0] * len(resources)
        self.capacity = [0] * len(resources)
        self.max_capacity = [0] * len(resources)
        self.arrived_requests = [0] * len(resources)
        self.delays: list[float] = []
        self._delays_since_sample: list[float] = []
        self._waiting: dict[str, float] = {}  # pending pod -> arrival, oldest first
        self.reasons: dict[str, int] = {}
        self.columns: list[str] = [*FIXED_COLUMNS, *(f"{c}.{r}" for c in ("allocated", "capacity", "arrivedRequests")
                                                     for r in resources)]
        self._fixed = len(self.columns)
        self._plugin_index: dict[str, int] = {}
        self.rows: list[list[float | int | None]] = []

    def vector(self, r: Resource) -> tuple[int, ...]:
        out = []
        for name in self.resources:
            if name == "cpu":
                out.append(r.milli_cpu)
            elif name == "memory":
                out.append(r.memory)
            elif name == "ephemeral-storage":
                out.append(r.ephemeral_storage)
            else:
                out.append(r.scalar.get(name, 0))
        return tuple(out)

    # ---- nodes ---------------------------------------------------------------------------------
    def node_added(self, allocatable: tuple[int, ...]) -> None:
        for i, v in enumerate(allocatable):
            self.capacity[i] += v
            self.max_capacity[i] = max(self.max_capacity[i], self.capacity[i])

    def node_removed(self, allocatable: tuple[int, ...]) -> None:
        for i, v in enumerate(allocatable):
            self.capacity[i] -= v

    # ---- pods ----------------------------------------------------------------------------------
    def arrive(self, key: str, t: float, requests: tuple[int, ...], duration: float | None) -> PodEntry:
        e = self.entries[key] = PodEntry(key, t, requests, duration)
        self.arrived += 1
        self.pending += 1
        self._waiting[key] = t
        for i, v in enumerate(requests):
            self.arrived_requests[i] += v
        return e

    def bind(self, e: PodEntry, t: float, node: str, annotations: Mapping[str, str]) -> None:
        if e.status != PENDING:
            return
        e.status, e.bound, e.node = SCHEDULED, t, node
        e.annotations = dict(annotations)
        self.scheduled += 1
        self.pending -= 1
        self.running += 1
        self._waiting.pop(e.key, None)
        delay = t - e.arrival
        self.delays.append(delay)
        self._delays_since_sample.append(delay)
        for i, v in enumerate(e.requests):
            self.allocated[i] += v
        self._finish_reasons(e)

    def failed_attempt(self, e: PodEntry, message: str) -> None:
        if e.status == PENDING:
            e.last_message = message

    def leave(self, e: PodEntry, t: float, status: str | None = None) -> None:
        """The pod is gone (departed, evicted, dropped, its node removed): `status` replaces
        its own (None: it keeps Scheduled or becomes Unschedulable)."""
        if e.departure is not None:
            return
        e.departure = t
        self.departed += 1
        if e.status == SCHEDULED:
            self.running -= 1
            for i, v in enumerate(e.requests):
                self.allocated[i] -= v
        elif e.status == PENDING:
            self.pending -= 1
            self.failed += 1
            self._waiting.pop(e.key, None)
            e.status = UNSCHEDULABLE if e.last_message else PENDING
        if status is not None:
            e.status = status
        if status == PREEMPTED:
            self.preemptions += 1
        self._finish_reasons(e)

    def _finish_reasons(self, e: PodEntry) -> None:
        for reason in failure_reasons(e.last_message):
            self.reasons[reason] = self.reasons.get(reason, 0) + 1
        e.last_message = ""

    def finish(self, t: float) -> None:
        """The end of the replay: pods still pending are Unschedulable (if tried) and counted."""
        for e in self.entries.values():
            if e.status == PENDING and e.departure is None:
                if e.last_message:
                    e.status = UNSCHEDULABLE
                self._finish_reasons(e)

    # ---- samples -------------------------------------------------------------------------------
    def sample(self, t: float, plugin_metrics: Mapping[str, float]) -> list[float | int | None]:
        delays = self._delays_since_sample
        oldest = next(iter(self._waiting.values()), None)
        row: list[float | int | None] = [
            t, self.arrived, self.scheduled, self.pending, self.running, self.failed, self.preemptions,
            sum(delays) / len(delays) if delays else 0.0, t - oldest if oldest is not None else 0.0,
            *self.allocated, *self.capacity, *self.arrived_requests]
        self._delays_since_sample = []
        extra: list[float | int | None] = [None] * (len(self.columns) - self._fixed)
        for name, value in plugin_metrics.items():
            if name not in self._plugin_index:
                self._plugin_index[name] = len(self.columns)
                self.columns.append(name)
                extra.append(None)
            extra[self._plugin_index[name] - self._fixed] = float(value)
        row.extend(extra)
        self.rows.append(row)
        return row

    def padded_rows(self) -> list[list[float | int | None]]:
        width = len(self.columns)
        return [r + [None] * (width - len(r)) for r in self.rows]
