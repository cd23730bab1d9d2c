"""The sweep's table: one row per run (its parameters, status and the numbers of its result), the
mean and standard deviation over seeds per trace, policy and options, and beside them a
reference's means (the FGD artifact's `expected_gpu_allocation.csv` format) with the difference.

Standard deviations are the sample's (n - 1 in the denominator; empty for a single seed).
"""

from __future__ import annotations

import csv
import io
import math
import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

POINTS = ("100", "130")  # the arrived percentages of gpuAllocation the table shows
KEY_COLUMNS = ("trace", "policy", "options", "seed", "status")
GROUP_KEY = ("trace", "policy", "options")
SUMMARY_COUNTS = ("arrived", "scheduled", "failed", "departed", "preemptions", "duration")
REFERENCE_HEAD = ("workload", "sc_policy", "tune", "seed", "total_gpus")


def result_fields(result: Mapping[str, Any]) -> dict[str, float]:
    """The numbers of a ReplayResult the table keeps: gpuAllocation at 100 and 130 (when present),
    the summary's counts, queueing delay and each resource's allocation (mean, max, final)."""
    out: dict[str, float] = {}
    gpu = result.get("gpuAllocation") or {}
    for k in POINTS:
        if gpu.get(k) is not None:
            out[f"gpuAllocation.{k}"] = gpu[k]
    summary = result.get("summary") or {}
    for k in SUMMARY_COUNTS:
        if summary.get(k) is not None:
            out[k] = summary[k]
    for k, v in sorted((summary.get("queueingDelay") or {}).items()):
        if v is not None:
            out[f"queueingDelay.{k}"] = v
    for res, stats in sorted((summary.get("allocation") or {}).items()):
        for k, v in sorted(stats.items()):
            if v is not None:
                out[f"allocation.{res}.{k}"] = v
    return out


def _numeric_columns(rows: Sequence[Mapping[str, Any]], skip: Sequence[str]) -> list[str]:
    """Every numeric column of the rows but `skip`: gpuAllocation first, then by name."""
    names = {k for r in rows for k, v in r.items() if k not in skip and isinstance(v, (int, float))
             and not isinstance(v, bool)}
    return sorted(names, key=lambda n: (not n.startswith("gpuAllocation."), n))


def group_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per trace x policy x options (in the rows' order): runs, failed, and for every number of
    the successful runs `<name>.mean` and `<name>.std`."""
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in GROUP_KEY), []).append(r)
    out = []
    for key, members in groups.items():
        ok = [m for m in members if m["status"] == "ok"]
        g: dict[str, Any] = dict(zip(GROUP_KEY, key, strict=True))
        g |= {"runs": len(members), "failed": sum(m["status"] != "ok" for m in members),
              "tune": members[0].get("tune")}
        for name in _numeric_columns(ok, (*KEY_COLUMNS, "tune")):
            values = [float(m[name]) for m in ok if m.get(name) is not None]
            if values:
                g[f"{name}.mean"] = statistics.fmean(values)
                g[f"{name}.std"] = statistics.stdev(values) if len(values) > 1 else None
        out.append(g)
    return out


def _policy_name(sc_policy: str) -> str:
    """The artifact's `06-FGD` is kubeberth's `FGD`."""
    return re.sub(r"^\d+-", "", sc_policy)


def read_reference(path: str, warn: Callable[[str], None]) -> dict[tuple[str, str, float | None], dict[str, Any]]:
    """(workload, policy, tune) -> {"n": seeds, "points": {"<k>": [one value per seed]}} for every
    arrived percentage k, from a CSV in the artifact's format. A malformed cell is reported through
    `warn` (file, line, column) and left out; a bad header is a ValueError."""
    out: dict[tuple[str, str, float | None], dict[str, Any]] = {}
    with open(path, newline="") as f:
        reader = csv.reader(f)
        head = next(reader, None)
        if head is None or tuple(head[:len(REFERENCE_HEAD)]) != REFERENCE_HEAD:
            raise ValueError(f"{path}: line 1: expected the columns {','.join(REFERENCE_HEAD)},0,1,...")
        points = [(i, name) for i, name in enumerate(head) if i >= len(REFERENCE_HEAD)]
        for line, row in enumerate(reader, start=2):
            if not row:
                continue
            try:
                tune = float(row[2]) if len(row) > 2 and row[2] else None
            except ValueError:
                warn(f"{path}: line {line}: column tune: not a number: {row[2]!r}")
                continue
            entry = out.setdefault((row[0], _policy_name(row[1]), tune), {"n": 0, "points": {}})
            entry["n"] += 1
            for i, name in points:
                if i >= len(row) or row[i] == "":
                    continue
                try:
                    entry["points"].setdefault(name, []).append(float(row[i]))
                except ValueError:
                    warn(f"{path}: line {line}: column {name}: not a number: {row[i]!r}")
    return out


def find_reference(reference: Mapping[tuple[str, str, float | None], Mapping[str, Any]], trace: str, policy: str,
                   tune: float | None) -> Mapping[str, Any] | None:
    """The reference's entry for a trace, policy and tune (any tune when the runs have none)."""
    match = reference.get((trace, policy, tune))
    if match is None and tune is None:
        match = next((v for (w, p, _), v in sorted(reference.items(), key=lambda kv: str(kv[0]))
                      if (w, p) == (trace, policy)), None)
    return match


def add_reference(groups: Sequence[dict[str, Any]],
                  reference: Mapping[tuple[str, str, float | None], Mapping[str, Any]]) -> None:
    """Beside each group the reference's mean (and std) at 100 and 130 and `diff.<k>` = ours - its.
    A reference row matches on the trace's name (the artifact's `workload`), the policy and, when
    the runs have one, tune."""
    for g in groups:
        match = find_reference(reference, g["trace"], g["policy"], g.get("tune"))
        if match is None:
            continue
        for k in POINTS:
            values = match["points"].get(k)
            if not values:
                continue
            g[f"reference.{k}.mean"] = statistics.fmean(values)
            g[f"reference.{k}.std"] = statistics.stdev(values) if len(values) > 1 else None
            ours = g.get(f"gpuAllocation.{k}.mean")
            g[f"diff.{k}"] = ours - g[f"reference.{k}.mean"] if ours is not None else None


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(round(value, 6)) if math.isfinite(value) else str(value)
    return str(value)


def to_csv(rows: Sequence[Mapping[str, Any]], first: Sequence[str], last: Sequence[str] = ()) -> str:
    """The rows as CSV: the `first` columns, the numeric ones by name, the `last` ones."""
    middle = [c for c in _numeric_columns(rows, (*first, *last))]
    columns = [*first, *middle, *last]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([_cell(r.get(c)) for c in columns])
    return buf.getvalue()


def runs_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    return to_csv(rows, (*KEY_COLUMNS, "tune"), ("name", "error"))


def groups_csv(groups: Sequence[Mapping[str, Any]]) -> str:
    return to_csv(groups, (*GROUP_KEY, "tune", "runs", "failed"))


def text_table(groups: Sequence[Mapping[str, Any]]) -> str:
    """The groups for a terminal: GPU allocation at 100 and 130 (mean ± std), the reference and
    the difference when there is one, failures."""
    with_ref = any(k.startswith("reference.") for g in groups for k in g)
    head = ["trace", "policy", "options", "runs", "failed"]
    for k in POINTS:
        head += [f"alloc@{k}"] + ([f"ref@{k}", f"diff@{k}"] if with_ref else [])
    lines = [head]

    def num(v: Any, sign: bool = False) -> str:
        return "-" if v is None else (f"{v:+.2f}" if sign else f"{v:.2f}")

    for g in groups:
        row = [str(g["trace"]), str(g["policy"]), str(g["options"] or "-"), str(g["runs"]), str(g["failed"])]
        for k in POINTS:
            mean, std = g.get(f"gpuAllocation.{k}.mean"), g.get(f"gpuAllocation.{k}.std")
            row.append(num(mean) + (f" ± {std:.2f}" if std is not None else ""))
            if with_ref:
                row += [num(g.get(f"reference.{k}.mean")), num(g.get(f"diff.{k}"), sign=True)]
        lines.append(row)
    widths = [max(len(r[i]) for r in lines) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in lines) + "\n"
