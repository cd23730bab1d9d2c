"""How long after its binding a pod's Scheduled event was written, from the API server's own audit
log (tests/cluster/control_plane.py audits every request at the Metadata level, with microsecond
timestamps): per pod, the time its `pods/binding` create completed and the time the first Event
about it sent after that was created (both schedulers write events.k8s.io/v1 Events named
`<pod name>.<hex>`, client-go's name, and send the Scheduled event once the binding has answered;
the audit log's Metadata level has no reason, so an earlier FailedScheduling event is told apart
by having been received before the binding completed). Measured on the server, so neither the
harness' own watches nor the load on this machine skew it.
"""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson


def _time(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def audit_times(audit_log: Path, namespace: str, prefix: str
                ) -> tuple[dict[str, float], dict[str, tuple[float, float]]]:
    """Per pod named `prefix*` in `namespace`: when its binding was created, and when the server
    received and when it created the first Event about it received after that (successful creates
    only)."""
    bound: dict[str, float] = {}
    events: dict[str, list[tuple[float, float]]] = {}  # per pod: (received, created)
    with open(audit_log, "rb") as f:
        for line in f:
            if b'"create"' not in line:
                continue
            try:
                e = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # a line the batch backend is still writing
            ref = e.get("objectRef") or {}
            code = (e.get("responseStatus") or {}).get("code", 0)
            if e.get("verb") != "create" or ref.get("namespace") != namespace or not 200 <= code < 300:
                continue
            name = str(ref.get("name") or "")
            if ref.get("resource") == "pods" and ref.get("subresource") == "binding" and name.startswith(prefix):
                bound.setdefault(name, _time(e["stageTimestamp"]))
            elif ref.get("resource") == "events" and not ref.get("subresource") and name.startswith(prefix):
                events.setdefault(name.rsplit(".", 1)[0], []).append(
                    (_time(e["requestReceivedTimestamp"]), _time(e["stageTimestamp"])))
    evented: dict[str, tuple[float, float]] = {}
    for pod, t in bound.items():
        after = [ev for ev in events.get(pod, ()) if ev[0] >= t]
        if after:
            evented[pod] = min(after, key=lambda ev: ev[1])
    return bound, evented


def quantile(values: list[float], q: float) -> float:
    """The nearest-rank quantile of sorted `values`."""
    return values[max(0, min(len(values) - 1, math.ceil(q * len(values)) - 1))]


def lag_summary(audit_log: Path, namespace: str, prefix: str) -> dict[str, Any]:
    """p50/p99/max of event time minus binding time over the pods named `prefix*`, how many events
    were written within 1 s of their binding, and how many bound pods have none. The lag splits
    in two, each with its p50/p99/max: `event_sent` (the binding's answer to the event's request
    reaching the server: the scheduler's part) and `event_served` (the server's part)."""
    bound, evented = audit_times(audit_log, namespace, prefix)
    names = [name for name in bound if name in evented]
    lags = sorted(evented[name][1] - bound[name] for name in names)
    missing = sum(1 for name in bound if name not in evented)
    if not lags:
        return {"event_lag_missing": missing}
    out: dict[str, Any] = {"event_lag_p50_ms": round(quantile(lags, 0.5) * 1000, 1),
                           "event_lag_p99_ms": round(quantile(lags, 0.99) * 1000, 1),
                           "event_lag_max_ms": round(lags[-1] * 1000, 1),
                           "events_within_1s": sum(1 for lag in lags if lag <= 1.0),
                           "event_lag_missing": missing}
    for part, values in (("event_sent", [evented[n][0] - bound[n] for n in names]),
                         ("event_served", [evented[n][1] - evented[n][0] for n in names])):
        values.sort()
        out[f"{part}_ms"] = [round(quantile(values, q) * 1000, 1) for q in (0.5, 0.99, 1.0)]
    return out
