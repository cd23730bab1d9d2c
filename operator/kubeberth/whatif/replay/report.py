"""Replay's HTML page: one self-contained file (inline CSS and SVG, nothing fetched) drawn from one
or more ReplayResult objects (the documented JSON, nothing else), the runs overlaid on every plot,
one line per run: each resource's allocation over time (% of capacity), pending pods over time,
allocation against the arrived workload (the FGD paper's Fig. 9a: x the arrived requests, y the
allocation, both % of capacity; GPU when the cluster has GPUs, else CPU), the queueing delay
(its distribution; over time, and the longest wait, from the series' `queueingDelay` and
`oldestPending`), each plugin metric over time, and a summary table, one row per run. Shares of
capacity are of the series' `capacity.<r>` at each sample when it has them (nodes come and go),
else of the summary's capacity.

Matplotlib draws the plots (a `Figure` of its own, never pyplot: no GUI backend, no global figure
state) and is imported when a page is drawn, not with this module: the command line loads it only
for the commands that draw. The SVG bytes are the same for the same results (a fixed
`svg.hashsalt`, no date in the metadata), so the page is too.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from ...report.html import CSS

GPU = "alibabacloud.com/gpu-milli"
SERIES_PREFIXES = ("allocated.", "capacity.", "arrivedRequests.")  # replay's own per-resource columns
# Points per line at most: a 149-day replay has a sample per instant; the plots need far fewer.
MAX_POINTS = 1500
HASH_SALT = "kubeberth-replay"
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf")
STYLES = ("-", "--", ":", "-.")
EXTRA_CSS = "svg.plot{max-width:100%;height:auto}.plot-box{margin:8px 0 20px}td.num{white-space:nowrap}"


@dataclass(frozen=True)
class Line:
    """One run's line on a plot."""

    label: str
    x: Sequence[float]
    y: Sequence[float]
    steps: bool = False  # a value that holds until the next sample (counts, allocation)
    colour: int | None = None  # an index into COLOURS (default: the line's position)
    dashed: bool = False


@dataclass(frozen=True)
class Plot:
    """One figure: its id (the SVG element's), title, axis labels and lines."""

    id: str
    title: str
    xlabel: str
    ylabel: str
    lines: Sequence[Line] = field(default_factory=tuple)


# ---- labels ------------------------------------------------------------------------------------

def _stem(path: str | None) -> str:
    if not path:
        return "default profile"
    name = Path(path).name
    for suffix in (".yaml", ".yml", ".csv", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _label_parts(result: Mapping[str, Any]) -> dict[str, str]:
    inp = result.get("input") or {}
    files = inp.get("files") or []
    options = ""
    if inp.get("protocol"):
        options = str(inp["protocol"]) + (f" tune {inp['tune']:g}" if inp.get("tune") is not None else "")
    elif inp.get("tune") is not None:
        options = f"tune {inp['tune']:g}"
    return {"trace": _stem(files[-1]) if files else "", "profile": _stem(inp.get("profile")),
            "seed": f"seed {inp.get('seed', 0)}", "options": options}


def run_labels(results: Sequence[Mapping[str, Any]]) -> list[str]:
    """A label per run: its profile and seed, with its trace and options (protocol, tune) when
    these differ between the runs."""
    parts = [_label_parts(r) for r in results]
    varying = {k for k in ("trace", "options") if len({p[k] for p in parts}) > 1}
    keys = [k for k in ("trace", "profile", "seed", "options") if k in {"profile", "seed"} | varying]
    return [" / ".join(p[k] for k in keys if p[k]) for p in parts]


# ---- the data of each plot ----------------------------------------------------------------------

def column(result: Mapping[str, Any], name: str) -> list[float] | None:
    """A series column as numbers (None when the result has no such column)."""
    series = result.get("series") or {}
    columns = list(series.get("columns") or [])
    if name not in columns:
        return None
    i = columns.index(name)
    return [float(row[i]) if row[i] is not None else math.nan for row in series.get("rows") or []]


def capacity(result: Mapping[str, Any], resource: str) -> float:
    return float(((result.get("summary") or {}).get("capacity") or {}).get(resource) or 0)


def share(result: Mapping[str, Any], name: str, resource: str) -> list[float] | None:
    """A column as % of the resource's capacity: of the `capacity.<r>` column's at each sample when
    the series has one (nodes come and go), else of the summary's; None without the column or a
    capacity."""
    values = column(result, name)
    if values is None:
        return None
    caps = column(result, f"capacity.{resource}")
    if caps is None:
        cap = capacity(result, resource)
        if cap <= 0:
            return None
        caps = [cap] * len(values)
    return [v / c * 100 if c and c > 0 else math.nan for v, c in zip(values, caps, strict=True)]


def _thin(x: Sequence[float], y: Sequence[float]) -> tuple[list[float], list[float]]:
    """At most about MAX_POINTS evenly spaced samples, the last one kept."""
    n = len(x)
    if n <= MAX_POINTS:
        return list(x), list(y)
    step = math.ceil(n / MAX_POINTS)
    keep = list(range(0, n, step))
    if keep[-1] != n - 1:
        keep.append(n - 1)
    return [x[i] for i in keep], [y[i] for i in keep]


def _time_axis(results: Sequence[Mapping[str, Any]]) -> tuple[str, float | None]:
    """The time axis' label and divisor; (sample, None) when no run's time moves (an arrival-only
    protocol samples every task at one instant): the sample's index is the x then."""
    longest = max((max(t, default=0.0) for t in (column(r, "time") or [] for r in results)), default=0.0)
    if longest <= 0:
        return "sample", None
    for unit, seconds in (("days", 86400.0), ("hours", 3600.0), ("minutes", 60.0)):
        if longest >= 2 * seconds:
            return f"time ({unit})", seconds
    return "time (s)", 1.0


def _over_time(results: Sequence[Mapping[str, Any]], labels: Sequence[str], name: str,
               scale: float | None, cap_of: str | None) -> list[Line]:
    lines = []
    for result, label in zip(results, labels, strict=True):
        y = column(result, name) if cap_of is None else share(result, name, cap_of)
        if y is None:
            continue
        t = column(result, "time") or []
        x = [v / scale for v in t] if scale else [float(i) for i in range(len(y))]
        lines.append(Line(label, *_thin(x, y), steps=True))
    return lines


def resources(results: Sequence[Mapping[str, Any]]) -> list[str]:
    """The resources with a capacity and an `allocated.` column in some run, sorted, but those no
    run ever allocated (a node's `gpu-count` beside the `gpu-milli` pods request, say)."""
    found = set()
    for r in results:
        cols = (r.get("series") or {}).get("columns") or []
        for c in cols:
            if not c.startswith("allocated."):
                continue
            res = c[len("allocated."):]
            if (capacity(r, res) > 0 or f"capacity.{res}" in cols) and any(v for v in column(r, c) or []):
                found.add(res)
    return sorted(found)


def plugin_metrics(results: Sequence[Mapping[str, Any]]) -> list[str]:
    """The `<Plugin>.<metric>` columns of every run, sorted."""
    found = set()
    for r in results:
        for c in (r.get("series") or {}).get("columns") or []:
            if "." in c and not c.startswith(SERIES_PREFIXES):
                found.add(c)
    return sorted(found)


def arrived_resource(result: Mapping[str, Any]) -> str:
    """GPU when the cluster has GPUs and the series counts them, else CPU."""
    has_gpu = capacity(result, GPU) > 0 and column(result, f"arrivedRequests.{GPU}") is not None
    return GPU if has_gpu else "cpu"


def _against_arrived(results: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> Plot:
    lines, used = [], set()
    for result, label in zip(results, labels, strict=True):
        res = arrived_resource(result)
        arrived, allocated = share(result, f"arrivedRequests.{res}", res), share(result, f"allocated.{res}", res)
        if arrived is None or allocated is None:
            continue
        used.add("GPU" if res == GPU else res.upper())
        lines.append(Line(label, *_thin(arrived, allocated)))
    what = "/".join(sorted(used)) or "GPU"
    return Plot("allocation-vs-arrived", f"{what} allocation against arrived workload",
                f"arrived {what} requests (% of capacity)", f"{what} allocation (%)", lines)


def _queueing_delay(results: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> Plot:
    """The distribution of each run's queueing delays (binding - arrival, bound pods): x the
    delay, y the share of bound pods that waited at most that long."""
    lines = []
    for result, label in zip(results, labels, strict=True):
        delays = sorted(float(p["bound"]) - float(p["arrival"]) for p in result.get("pods") or []
                        if p.get("bound") is not None and p.get("arrival") is not None)
        if delays:
            n = len(delays)
            lines.append(Line(label, *_thin(delays, [(i + 1) / n * 100 for i in range(n)]), steps=True))
    return Plot("queueing-delay", "Queueing delay (bound pods)", "delay (s)", "pods bound within (%)", lines)


def plots(results: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> list[Plot]:
    """Every plot of the page, in order: allocation per resource, pending, allocation against
    arrived, queueing delay (its distribution; over time and the longest wait when the series
    has them), plugin metrics."""
    xlabel, scale = _time_axis(results)
    out = [Plot(f"allocation-{_slug(res)}", f"{res} allocation over time", xlabel, f"{res} allocated (% of capacity)",
                _over_time(results, labels, f"allocated.{res}", scale, res)) for res in resources(results)]
    out.append(Plot("pending", "Pending pods over time", xlabel, "pending pods",
                    _over_time(results, labels, "pending", scale, None)))
    out.append(_against_arrived(results, labels))
    out.append(_queueing_delay(results, labels))
    for plot_id, name, title, ylabel in (
            ("queueing-delay-over-time", "queueingDelay", "Queueing delay over time (pods bound since the previous "
                                                          "sample)", "mean delay (s)"),
            ("oldest-pending", "oldestPending", "Longest wait of a pending pod", "waiting for (s)")):
        if any(column(r, name) is not None for r in results):
            out.append(Plot(plot_id, title, xlabel, ylabel, _over_time(results, labels, name, scale, None)))
    out += [Plot(f"metric-{_slug(m)}", f"{m} over time", xlabel, m, _over_time(results, labels, m, scale, None))
            for m in plugin_metrics(results)]
    return out


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text).strip("-").lower()


# ---- drawing -----------------------------------------------------------------------------------

def render_svg(plot: Plot) -> str:
    """The plot as an inline SVG element (`id="plot-<id>"`, class `plot`), the same bytes for the
    same plot."""
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    with rc_context({"svg.hashsalt": HASH_SALT, "svg.fonttype": "none", "svg.id": f"plot-{plot.id}"}):
        fig = Figure(figsize=(9, 3.8), layout="constrained")
        ax = fig.subplots()
        for i, line in enumerate(plot.lines):
            colour = i if line.colour is None else line.colour
            ax.plot(line.x, line.y, label=line.label, color=COLOURS[colour % len(COLOURS)],
                    linestyle="--" if line.dashed else STYLES[(colour // len(COLOURS)) % len(STYLES)], linewidth=1.2,
                    drawstyle="steps-post" if line.steps else "default")
        if plot.lines:
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
        else:
            ax.text(0.5, 0.5, "no data in these runs", transform=ax.transAxes, ha="center", va="center")
        ax.set_title(plot.title, fontsize=11)
        ax.set_xlabel(plot.xlabel)
        ax.set_ylabel(plot.ylabel)
        ax.grid(alpha=0.3)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg"):].replace("<svg ", '<svg class="plot" ', 1)


def _number(value: Any, digits: int = 2) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return escape(str(value))


def summary_table(results: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> str:
    """One row per run: counts, queueing delay, each resource's allocation, gpuAllocation at 100
    and 130 when the run has it."""
    res = resources(results)
    with_gpu_allocation = any(r.get("gpuAllocation") for r in results)
    head = ["Run", "arrived", "scheduled", "failed", "departed", "preemptions", "delay p50 (s)", "delay p99 (s)"]
    head += [f"{r} mean / max / final (%)" for r in res]
    if with_gpu_allocation:
        head += ["GPU alloc. at 100%", "GPU alloc. at 130%"]
    rows = []
    for result, label in zip(results, labels, strict=True):
        s = result.get("summary") or {}
        delay = s.get("queueingDelay") or {}
        cells = [escape(label)] + [_number(s.get(k)) for k in ("arrived", "scheduled", "failed", "departed",
                                                               "preemptions")]
        cells += [_number(delay.get("p50")), _number(delay.get("p99"))]
        for r in res:
            a = (s.get("allocation") or {}).get(r) or {}
            cells.append(" / ".join(_number(a.get(k)) for k in ("mean", "max", "final")))
        if with_gpu_allocation:
            g = result.get("gpuAllocation") or {}
            cells += [_number(g.get("100")), _number(g.get("130"))]
        rows.append('<tr class="run">' + "".join(
            f"<td>{c}</td>" if i == 0 else f'<td class="num">{c}</td>' for i, c in enumerate(cells)) + "</tr>")
    return ('<table id="runs"><tr>' + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>"
            + "".join(rows) + "</table>")


def _figures(items: Iterable[Plot]) -> str:
    return "".join(f'<div class="plot-box" id="box-{escape(p.id)}">{render_svg(p)}</div>' for p in items)


def render_report(results: Sequence[Mapping[str, Any]] | Mapping[str, Any], labels: Sequence[str] | None = None, *,
                  title: str = "kubeberth replay", heading: str | None = None,
                  sections: Sequence[tuple[str, str]] = ()) -> str:
    """The page for these runs (one line per run on each plot; `labels` default to run_labels);
    `results` may be one ReplayResult (`kubeberth replay --out DIR`'s page).
    `heading`: the page's h1 (default: the title and the number of runs). `sections`: (heading,
    HTML) pairs placed first (the sweep's tables and its plots of means), the HTML already
    escaped by the caller."""
    if isinstance(results, Mapping):
        results = [results]
    labels = list(labels) if labels is not None else run_labels(results)
    if len(labels) != len(results):
        raise ValueError(f"{len(labels)} labels for {len(results)} runs")
    every = plots(results, labels)
    over_time = [p for p in every if p.id.startswith("allocation-") and p.id != "allocation-vs-arrived"]
    metrics = [p for p in every if p.id.startswith("metric-")]
    by_id = {p.id: p for p in every}
    parts = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title><style>{CSS}{EXTRA_CSS}</style></head><body>",
        f"<h1>{escape(heading or f'{title}: {len(results)} run' + ('s' if len(results) != 1 else ''))}</h1>",
        "".join(f"<h2>{escape(h)}</h2>{body}" for h, body in sections),
        f"<h2>Runs</h2>{summary_table(results, labels)}",
        f"<h2>Allocation over time</h2>{_figures(over_time)}",
        f"<h2>Pending pods over time</h2>{_figures([by_id['pending']])}",
        f"<h2>Allocation against arrived workload</h2>{_figures([by_id['allocation-vs-arrived']])}",
        "<h2>Queueing delay</h2>" + _figures(by_id[i] for i in ("queueing-delay", "queueing-delay-over-time",
                                                                "oldest-pending") if i in by_id),
        f"<h2>Plugin metrics over time</h2>{_figures(metrics)}" if metrics else "",
        "</body></html>\n",
    ]
    return "".join(parts)


def write_report(results: Sequence[Mapping[str, Any]] | Mapping[str, Any], path: str | Path,
                 labels: Sequence[str] | None = None, *,
                 title: str = "kubeberth replay", heading: str | None = None,
                 sections: Sequence[tuple[str, str]] = ()) -> None:
    """render_report written to `path` (a temporary file renamed into place: never half a page)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(render_report(results, labels, title=title, heading=heading, sections=sections), encoding="utf-8")
    tmp.replace(path)
