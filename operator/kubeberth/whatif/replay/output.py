"""The ReplayResult (spec of issue 40): the input's description, the summary, the time series and
each pod's record; written as one JSON object, the series as CSV, or a directory (result.json,
series.csv, summary.csv, and report.html when the report module is there). The same inputs and
seed give the same bytes: no wall-clock time, maps in a fixed order.

Percentiles are nearest-rank (the smallest delay with at least p% of the delays at or below
it). Allocation percentages are of the capacity present at each sample; `mean` weighs each
sample by how long it held (a plain mean when the replay lasts no time)."""

from __future__ import annotations

import csv
import importlib
import io
import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .ledger import Ledger

API_VERSION = "kubeberth.io/v1alpha1"
KIND = "ReplayResult"


def percentile(values: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile of `values` (None when empty)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100.0 * len(ordered)))
    return ordered[rank - 1]


def _round(x: float) -> float:
    return round(x, 6)


def allocation(ledger: Ledger, end: float) -> dict[str, dict[str, float | None]]:
    """Per resource: mean (time-weighted), max and final allocation, % of the capacity present."""
    cols = {c: i for i, c in enumerate(ledger.columns)}
    rows = ledger.rows
    out: dict[str, dict[str, float | None]] = {}
    for r in ledger.resources:
        a, c = cols[f"allocated.{r}"], cols[f"capacity.{r}"]
        pct = [(float(row[0] or 0.0), 100.0 * float(row[a] or 0) / float(row[c] or 0) if row[c] else None)
               for row in rows]
        known = [(t, v) for t, v in pct if v is not None]
        if not known:
            out[r] = {"mean": None, "max": None, "final": None}
            continue
        span = end - known[0][0]
        if span > 0:
            total = 0.0
            for (t, v), nxt in zip(known, [*(t for t, _ in known[1:]), end], strict=True):
                total += v * max(0.0, nxt - t)
            mean = total / span
        else:
            mean = sum(v for _, v in known) / len(known)
        out[r] = {"mean": _round(mean), "max": _round(max(v for _, v in known)), "final": _round(known[-1][1])}
    return out


def build_result(ledger: Ledger, end: float, input_info: Mapping[str, Any],
                 extend: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The ReplayResult object; `extend(result so far, without pods)` returns keys to add (a
    protocol's, e.g. gpuAllocation)."""
    delays = ledger.delays
    info = {"format": "yaml", "files": [], "profile": None, "seed": 0, "protocol": None, "tune": None,
            "tieBreak": "reservoir", **input_info}
    summary = {
        "arrived": ledger.arrived, "scheduled": ledger.scheduled, "failed": ledger.failed,
        "departed": ledger.departed, "preemptions": ledger.preemptions,
        "queueingDelay": {"p50": percentile(delays, 50), "p99": percentile(delays, 99),
                          "mean": _round(sum(delays) / len(delays)) if delays else None,
                          "max": max(delays) if delays else None},
        "unschedulableByReason": dict(sorted(ledger.reasons.items())),
        "duration": end,
        "capacity": dict(zip(ledger.resources, ledger.max_capacity, strict=True)),
        "allocation": allocation(ledger, end),
    }
    result: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND, "input": dict(sorted(info.items())),
                              "summary": summary,
                              "series": {"columns": list(ledger.columns), "rows": ledger.padded_rows()}}
    if extend is not None:
        result.update(extend(result))
    result["pods"] = [e.as_dict() for e in ledger.entries.values()]
    return result


def render_json(result: Mapping[str, Any]) -> str:
    return json.dumps(result, separators=(",", ":"), allow_nan=False) + "\n"


def _cell(v: Any) -> str:
    if v is None:
        return ""
    return repr(v) if isinstance(v, float) else str(v)


def render_series_csv(result: Mapping[str, Any]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(result["series"]["columns"])
    for row in result["series"]["rows"]:
        w.writerow([_cell(v) for v in row])
    return buf.getvalue()


def _flatten(prefix: str, value: Any, out: list[tuple[str, str]]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out.append((prefix, _cell(value)))


def render_summary_csv(result: Mapping[str, Any]) -> str:
    """`metric,value`, one line per number of the summary (nested keys joined with dots)."""
    rows: list[tuple[str, str]] = []
    _flatten("", result["summary"], rows)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["metric", "value"])
    w.writerows(rows)
    return buf.getvalue()


def write_dir(result: Mapping[str, Any], out: str | Path) -> list[Path]:
    """result.json, series.csv, summary.csv and (when `whatif.replay.report` is there)
    report.html in `out` (made if missing). Returns the files written."""
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in (("result.json", render_json(result)), ("series.csv", render_series_csv(result)),
                       ("summary.csv", render_summary_csv(result))):
        (d / name).write_text(text)
        written.append(d / name)
    try:
        report = importlib.import_module(f"{__package__}.report")
    except ImportError:
        return written  # no whatif/replay/report.py in this tree: no HTML page
    report.write_report(result, d / "report.html")
    written.append(d / "report.html")
    return written
