"""Renderings of `simulate --compare`'s result (whatif/compare.py's compare()): a text table and an
HTML page (the compare sections, then each side's nodes, pods and profiles as in the report)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from .html import CSS, _nodes, _outcomes, _pods, _profiles

CHANGE_TITLES = (("moved", "Pods placed on another node"),
                 ("becameUnschedulable", "Placed under A, unschedulable under B"),
                 ("becameSchedulable", "Unschedulable under A, placed under B"),
                 ("evictedOnlyInA", "Evicted under A only"),
                 ("evictedOnlyInB", "Evicted under B only"))


def _side(entry: Mapping[str, Any]) -> str:
    return f"{entry['status']}" + (f" on {entry['node']}" if entry.get("node") else "")


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(f"{c:<{w}}" for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def _spread_rows(result: Mapping[str, Any], which: str) -> list[list[str]]:
    rows = [["", "A cpu", "B cpu", "A memory", "B memory"]]
    for stat in ("stddev", "max", "min"):
        row = [stat]
        for r in ("cpu", "memory"):
            for side in ("a", "b"):
                row.append(f"{result[side]['utilisation'][which][r][stat]:.2%}")
        rows.append([row[0], row[1], row[2], row[3], row[4]])
    return rows


def render_compare_text(result: Mapping[str, Any]) -> str:
    a, b = result["a"], result["b"]
    lines = [f"A: {a['label']}", f"B: {b['label']}", f"seed {result['seed']}", ""]
    counts = sorted(set(a["counts"]) | set(b["counts"]))
    lines += _table([["OUTCOME", "A", "B"]] + [[c, str(a["counts"].get(c, 0)), str(b["counts"].get(c, 0))]
                                               for c in counts])
    changes = result["changes"]
    total = sum(len(v) for v in changes.values())
    lines.append("")
    if not total:
        lines.append("No pod's outcome differs.")
    for key, title in CHANGE_TITLES:
        entries = changes[key]
        if not entries:
            continue
        lines += ["", f"{title} ({len(entries)}):"]
        rows = [["POD", "A", "B", "REASON"]]
        rows += [[e["pod"], _side(e["a"]), _side(e["b"]), e.get("message", "")] for e in entries]
        lines += ["  " + line for line in _table(rows)]
    lines += ["", "Requested share of allocatable, spread over the nodes:"]
    lines += ["  " + line for line in _table(_spread_rows(result, "nodeSpread"))]
    if a["utilisation"]["zones"] or b["utilisation"]["zones"]:
        lines += ["", "Spread over the zones:"]
        lines += ["  " + line for line in _table(_spread_rows(result, "zoneSpread"))]
    return "\n".join(lines)


def _changes_html(changes: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
    out = []
    for key, title in CHANGE_TITLES:
        entries = changes[key]
        rows = "".join(f'<tr class="change {key}"><td>{escape(e["pod"])}</td><td>{escape(_side(e["a"]))}</td>'
                       f'<td>{escape(_side(e["b"]))}</td><td>{escape(e.get("message", ""))}</td></tr>'
                       for e in entries)
        out.append(f"<h3>{escape(title)} ({len(entries)})</h3>")
        if rows:
            out.append(f"<table><tr><th>Pod</th><th>A</th><th>B</th><th>Reason</th></tr>{rows}</table>")
    return "".join(out)


def _spread_html(result: Mapping[str, Any], which: str) -> str:
    rows = _spread_rows(result, which)
    head = "".join(f"<th>{escape(c)}</th>" for c in rows[0])
    body = "".join("<tr>" + "".join(f'<td class="num">{escape(c)}</td>' for c in r) + "</tr>" for r in rows[1:])
    return f'<table class="spread {which}"><tr>{head}</tr>{body}</table>'


def render_compare_html(result: Mapping[str, Any]) -> str:
    a, b = result["a"], result["b"]
    parts = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
             "<title>kubeberth simulate --compare</title>", f"<style>{CSS}</style></head><body>",
             f"<h1>kubeberth simulate --compare (seed {result['seed']})</h1>",
             f"<p>A: {escape(a['label'])}<br>B: {escape(b['label'])}</p>",
             f"<h2>What changes from A to B</h2>{_changes_html(result['changes'])}",
             f"<h2>Spread of the requested share over the nodes</h2>{_spread_html(result, 'nodeSpread')}"]
    if a["utilisation"]["zones"] or b["utilisation"]["zones"]:
        parts.append(f"<h2>Spread over the zones</h2>{_spread_html(result, 'zoneSpread')}")
    for name, side in (("A", a), ("B", b)):
        rep = side["report"]
        parts += [f"<h2>{name}: pods per outcome</h2>{_outcomes(rep['pods'])}",
                  f"<h2>{name}: nodes, requested before and after</h2>{_nodes(rep['nodes'])}",
                  f"<h2>{name}: pods</h2>{_pods(rep['pods'], rep.get('preemptedBy') or {})}",
                  f"<h2>{name}: profiles in force</h2>{_profiles(rep['profiles'])}"]
    parts.append("</body></html>\n")
    return "".join(parts)
