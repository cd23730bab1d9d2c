"""`kubeberth simulate ... -o html`: one self-contained page (inline CSS, SVG bars, a few lines of
script; nothing fetched): pods per outcome, each node's cpu / memory / pods before and after,
every pod with its outcome, preemption victims linked to their preemptors, the explanations
(collapsible) and the profiles in force. Input: simulate.report_data's dict."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from .suggestions import render_html as suggestions_html
from .text import render_attempt

OUTCOME_COLOURS = {"Scheduled": "#2e7d32", "Existing": "#607d8b", "Unschedulable": "#c62828",
                   "Evicted": "#ef6c00", "Ignored": "#9e9e9e"}
METRICS = (("cpu", "CPU"), ("memory", "Memory"), ("pods", "Pods"))
BAR_WIDTH = 220

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse}td,th{padding:3px 10px;text-align:left;border-bottom:1px solid #eee;
vertical-align:top}th{background:#f5f5f5}.outcome{display:inline-block;padding:0 6px;border-radius:3px;
color:#fff}pre{background:#fafafa;border:1px solid #eee;padding:8px;overflow-x:auto;font-size:12px}
details{margin:4px 0}summary{cursor:pointer}.legend span{margin-right:14px}.num{text-align:right}
.target{outline:2px solid #1565c0}#pods td:nth-child(-n+3){white-space:nowrap}
"""

SCRIPT = """
document.querySelectorAll('a.pod-link').forEach(function (a) {
  a.addEventListener('click', function () {
    var target = document.getElementById(a.getAttribute('href').slice(1));
    if (target && target.tagName === 'DETAILS') { target.open = true; }
  });
});
document.getElementById('expand-all').addEventListener('click', function () {
  document.querySelectorAll('details.explanation').forEach(function (d) { d.open = true; });
});
document.body.dataset.pods = String(document.querySelectorAll('tr.pod').length);
"""


def anchor(pod: str) -> str:
    return "pod-" + "".join(c if c.isalnum() or c in "-_" else "-" for c in pod)


def _pod_link(pod: str) -> str:
    return f'<a class="pod-link" href="#{anchor(pod)}">{escape(pod)}</a>'


def _amount(metric: str, value: int) -> str:
    if metric == "cpu":
        return f"{value / 1000:g}"
    if metric == "memory":
        return f"{value / 2**30:.1f}Gi"
    return str(value)


def _bar(metric: str, node: Mapping[str, Any]) -> str:
    """Before (light) and after (dark) as shares of allocatable, one SVG."""
    cap = node["allocatable"][metric]
    before, after = node["before"][metric], node["after"][metric]

    def width(v: int) -> float:
        return 0.0 if cap <= 0 else min(v / cap, 1.0) * BAR_WIDTH

    title = (f"{metric}: before {_amount(metric, before)}, after {_amount(metric, after)} "
             f"of {_amount(metric, cap)}")
    pct = f"{(after / cap * 100 if cap else 0):.0f}%"
    return (f'<svg class="bar" data-metric="{metric}" width="{BAR_WIDTH + 50}" height="18" role="img" '
            f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
            f'<rect x="0" y="2" width="{BAR_WIDTH}" height="14" fill="#eceff1"/>'
            f'<rect class="after" x="0" y="2" width="{width(after):.1f}" height="14" fill="#1565c0"/>'
            f'<rect class="before" x="0" y="6" width="{width(before):.1f}" height="6" fill="#90caf9"/>'
            f'<text x="{BAR_WIDTH + 6}" y="14" font-size="11">{pct}</text></svg>')


def _outcomes(pods: Sequence[Mapping[str, Any]]) -> str:
    counts = Counter(p["status"] for p in pods)
    total = sum(counts.values()) or 1
    x = 0.0
    rects, legend = [], []
    for status, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        colour = OUTCOME_COLOURS.get(status, "#000")
        w = n / total * 600
        rects.append(f'<rect x="{x:.1f}" y="0" width="{w:.1f}" height="22" fill="{colour}">'
                     f'<title>{escape(status)}: {n}</title></rect>')
        legend.append(f'<span class="count" data-status="{escape(status)}"><b style="color:{colour}">■</b> '
                      f'{escape(status)} {n}</span>')
        x += w
    return (f'<svg id="outcomes" width="600" height="22">{"".join(rects)}</svg>'
            f'<p class="legend">{"".join(legend)}</p>')


def _nodes(nodes: Sequence[Mapping[str, Any]]) -> str:
    head = "".join(f"<th>{label}</th>" for _, label in METRICS)
    rows = []
    for node in nodes:
        bars = "".join(f"<td>{_bar(metric, node)}</td>" for metric, _ in METRICS)
        rows.append(f'<tr class="node" data-node="{escape(node["node"])}"><td>{escape(node["node"])}</td>{bars}</tr>')
    return (f'<p class="legend"><span><b style="color:#90caf9">■</b> before</span>'
            f'<span><b style="color:#1565c0">■</b> after (share of allocatable)</span></p>'
            f'<table id="nodes"><tr><th>Node</th>{head}</tr>{"".join(rows)}</table>')


def _pods(pods: Sequence[Mapping[str, Any]], preempted_by: Mapping[str, str]) -> str:
    rows = []
    for p in pods:
        status = p["status"]
        colour = OUTCOME_COLOURS.get(status, "#000")
        notes = []
        if p.get("victims"):
            notes.append("preempted " + ", ".join(_pod_link(v) for v in p["victims"]))
        by = preempted_by.get(p["pod"])
        if status == "Evicted" and by:
            notes.append(f'preempted by <a class="pod-link preemptor" href="#{anchor(by)}">{escape(by)}</a>')
        elif p.get("message"):
            notes.append(escape(p["message"]))
        if p.get("nominatedNode") and status != "Scheduled":
            notes.append(f"nominated to {escape(p['nominatedNode'])}")
        rows.append(f'<tr class="pod" id="row-{anchor(p["pod"])}" data-status="{escape(status)}">'
                    f'<td>{escape(p["pod"])}</td><td><span class="outcome" style="background:{colour}">'
                    f'{escape(status)}</span></td><td>{escape(p.get("node") or "-")}</td>'
                    f'<td>{"; ".join(notes)}</td></tr>')
    return (f'<table id="pods"><tr><th>Pod</th><th>Outcome</th><th>Node</th><th>Why</th></tr>'
            f'{"".join(rows)}</table>')


def _suggestions(pods: Sequence[Mapping[str, Any]]) -> str:
    """simulate --suggest: each unschedulable pod's verified suggestions (report/suggestions.py)."""
    asked = [p for p in pods if p.get("suggestions") is not None and p["status"] == "Unschedulable"]
    if not asked:
        return ""
    return "<h2>Suggestions: what would place the unschedulable pods</h2>" + "".join(
        suggestions_html(p["pod"], p["suggestions"]) for p in asked)


def _explanations(pods: Sequence[Mapping[str, Any]], top_nodes: int) -> str:
    out = ['<p><button id="expand-all" type="button">Expand all</button></p>']
    for p in pods:
        attempts = p.get("explanations") or []
        last = p.get("node") or p.get("message") or ""
        body = "".join(f"<pre>{escape(chr(10).join(render_attempt(p['pod'], x, top_nodes)))}</pre>"
                       for x in attempts) or "<p>Not scheduled by this run (no attempt to explain).</p>"
        out.append(f'<details class="explanation" id="{anchor(p["pod"])}"><summary><b>{escape(p["pod"])}</b>: '
                   f'{escape(p["status"])} {escape(last[:120])} ({len(attempts)} attempt(s) explained)</summary>'
                   f'{body}</details>')
    return "".join(out)


def _profiles(profiles: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for pr in profiles:
        score = ", ".join(f"{s['name']} ({s['weight']})" for s in pr["score"])
        rows.append(f'<tr class="profile"><td>{escape(pr["schedulerName"])}</td>'
                    f'<td class="num">{pr["percentageOfNodesToScore"]}</td>'
                    f'<td>{escape(", ".join(pr["filter"]))}</td><td>{escape(score)}</td>'
                    f'<td>{escape(", ".join(pr["postFilter"]))}</td></tr>')
    return ('<table id="profiles"><tr><th>schedulerName</th><th>percentageOfNodesToScore</th><th>Filter</th>'
            f'<th>Score (weight)</th><th>PostFilter</th></tr>{"".join(rows)}</table>')


def _pod_groups(groups: Sequence[Mapping[str, Any]]) -> str:
    """One row per PodGroup: policy, pods (linked), scheduled, status and why; the last attempt pod by pod."""
    rows = []
    for g in groups:
        policy = f"gang, minCount {g['minCount']}" if g["policy"] == "gang" else (g["policy"] or "-")
        tried = []
        for p in (g.get("lastAttempt") or {}).get("pods") or []:
            what = (f"on {escape(p['node'])}" if p["node"] else
                    f"fits nowhere: {escape(p['message'])}" if p["tried"] else "not tried")
            tried.append(f"{_pod_link(p['pod'])} {what}")
        rows.append(f'<tr class="pod-group" data-status="{escape(g["status"])}"><td>{escape(g["podGroup"])}</td>'
                    f'<td>{escape(policy)}</td><td>{", ".join(_pod_link(p) for p in g["pods"])}</td>'
                    f'<td class="num">{g["scheduled"]}</td><td>{escape(g["status"])}</td>'
                    f'<td>{escape(g["message"])}</td><td>{"<br>".join(tried)}</td></tr>')
    return ('<table id="pod-groups"><tr><th>PodGroup</th><th>Policy</th><th>Pods</th><th>Scheduled</th>'
            f'<th>Status</th><th>Why</th><th>Last attempt</th></tr>{"".join(rows)}</table>')


def render_html(data: Mapping[str, Any], top_nodes: int = 10) -> str:
    pods = data["pods"]
    preempted_by = data.get("preemptedBy") or {}
    return "".join([
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        "<title>kubeberth simulate report</title>",
        f"<style>{CSS}</style></head><body>",
        f'<h1>kubeberth simulate: {len(pods)} pods, {len(data["nodes"])} nodes (seed {data["seed"]})</h1>',
        f'<h2>Pods per outcome</h2>{_outcomes(pods)}',
        f'<h2>Nodes: requested before and after</h2>{_nodes(data["nodes"])}',
        f'<h2>Pods</h2>{_pods(pods, preempted_by)}',
        f'<h2>Pod groups</h2>{_pod_groups(data["podGroups"])}' if data.get("podGroups") else "",
        f'<h2>Why: per-pod explanations</h2>{_explanations(pods, top_nodes)}',
        _suggestions(pods),
        f'<h2>Profiles in force</h2>{_profiles(data["profiles"])}',
        f"<script>{SCRIPT}</script></body></html>\n",
    ])
