"""simulate's table output of explanations: one readable section per explained pod, read from
the same structure `-o json` prints (scheduler/explain.py's Explanation.to_dict)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .scope import COUNTS

DEFAULT_EXPLAIN_NODES = 10


def count(names: Sequence[str] | int) -> int:
    """A list of node names, or its length where a scoped explanation (report/scope.py) kept only that."""
    return names if isinstance(names, int) else len(names)


def abbreviation(name: str, taken: set[str]) -> str:
    """NodeResourcesFit -> NRF; a clash takes the next letters of the name."""
    caps = "".join(c for c in name if c.isupper()) or name[:3]
    short = caps
    extra = 0
    while short in taken:
        extra += 1
        short = caps + name[len(caps):len(caps) + extra].lower() if extra < len(name) else f"{caps}{extra}"
    taken.add(short)
    return short


def render_explanations(pods: Sequence[tuple[str, Sequence[Mapping[str, Any]]]], top_nodes: int) -> str:
    """`pods`: (pod key, its explanations, oldest first)."""
    out: list[str] = []
    for key, attempts in pods:
        for x in attempts:
            out.append("")
            out.extend(render_attempt(key, x, top_nodes))
    return "\n".join(out)


def render_attempt(key: str, x: Mapping[str, Any], top_nodes: int) -> list[str]:
    res = x["result"]
    where = f" on {res['node']}" if res.get("node") else ""
    lines = [f"=== {key}: {res['status']}{where} (attempt {x['attempt']}, profile {x['profile']})"]
    if res.get("message"):
        lines.append(f"  why: {res['message']}")
    if x.get("podGroup"):
        lines.extend(_pod_group(x["podGroup"]))
    n = x["nodes"]
    lines.append(f"  nodes: {n['total']} total, {n['feasible']} feasible, {n['filtered']} filtered out, "
                 f"{n['excludedByPreFilter']} excluded by PreFilter, {n['notEvaluated']} not evaluated")
    lines.extend(_pre_filter(x["preFilter"]))
    flt = x["filter"]
    nominated_first = flt.get("nominatedNodeFirst")
    if nominated_first:
        lines.append(f"  Filter: the nominated node {nominated_first} fits; no other node was evaluated")
    if flt["filteredOut"]:
        lines.append("  Filtered out, by reason [plugin]:")
        for group in flt["filteredOut"]:
            nodes = group["nodes"]
            if isinstance(nodes, int):
                lines.append(f"    {nodes} node(s): {group['reason']}")
            else:
                lines.append(f"    {len(nodes)} node(s): {group['reason']}: {', '.join(nodes)}")
    detailed = [nd for nd in flt.get("nodes", ()) if nd.get("detail")]
    if detailed:
        lines.append("  Details (Status.detail, not part of the reason):")
        lines.extend(f"    {nd['node']}: {nd['detail']}" + (f" [{nd['plugin']}]" if nd["plugin"] else "")
                     for nd in detailed[:top_nodes])
        if len(detailed) > top_nodes:
            lines.append(f"    (+{len(detailed) - top_nodes} more)")
    not_evaluated = [nd["node"] for nd in flt.get("nodes", ()) if nd["verdict"] == "NotEvaluated"]
    if not_evaluated:
        why = "the nominated node fits" if nominated_first else "enough feasible nodes found: percentageOfNodesToScore"
        lines.append(f"  Not evaluated ({why}): {_names(not_evaluated, top_nodes)}")
    if x["score"] is not None:
        lines.extend(_score(x["score"], top_nodes))
    sel = x["selection"]
    if isinstance(sel["tied"], int) and sel["tied"] > 1:
        lines.append(f"  Tied at the top: {sel['tied']} nodes; drawn at random: {sel['selected']}")
    elif not isinstance(sel["tied"], int) and len(sel["tied"]) > 1:
        lines.append(f"  Tied at the top: {_names(sel['tied'], top_nodes)}; drawn at random: {sel['selected']}")
    elif sel.get("selected"):
        lines.append(f"  Selected: {sel['selected']}" + ("" if x["score"] is not None else " (the only feasible node)"))
    if x["postFilter"] is not None:
        lines.extend(_post_filter(x["postFilter"], top_nodes))
    scope = x.get("scope")
    if scope is not None and scope["detail"] == COUNTS:
        lines.append(f"  Per-node detail: not shown in namespace {scope['namespace']} (counts only; "
                     "a cluster administrator may allow it)")
    return lines


def _pod_group(g: Mapping[str, Any]) -> list[str]:
    """The group's part of a pod's attempt: the quorum, every pod of the attempt, where it went."""
    quorum = f"gang, minCount {g['minCount']}" if g["policy"] == "gang" else "basic, no quorum"
    placed = sum(1 for p in g["pods"] if p["node"] or (p["tried"] and not p["message"]))
    lines = [f"  pod group {g['name']} ({quorum}): attempt {g['attempt']} placed {placed} of {len(g['pods'])} "
             f"queued pod(s), {g['scheduledBefore']} scheduled before: {g['result']}"
             + (f": {g['message']}" if g["message"] else "")]
    for p in g["pods"]:
        if p["node"]:
            what = f"placed on {p['node']}"
        elif p["tried"] and not p["message"]:
            what = "placed"  # on a node not shown (the namespace's explanations are counts only)
        elif p["tried"]:
            what = f"fits nowhere: {p['message']}"
        else:
            what = "not tried (the attempt stopped before it)"
        lines.append(f"    {p['pod']}: {what}")
    return lines


def _names(names: Sequence[str], limit: int) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" (+{len(names) - limit} more)" if len(names) > limit else "")


def _pre_filter(pf: Mapping[str, Any]) -> list[str]:
    lines = []
    if pf["status"] is not None:
        st = pf["status"]
        lines.append(f"  PreFilter: {st['plugin'] or 'a plugin'} rejected the pod ({st['code']}): {st['reason']}")
    if pf["skipped"]:
        lines.append(f"  PreFilter: Skip from {', '.join(pf['skipped'])} (their Filter does not run)")
    if pf["nodes"] is not None:
        lines.append(f"  PreFilter: {', '.join(pf['restrictedBy'])} restricted Filter to "
                     f"{count(pf['nodes'])} node(s)")
    return lines


def _score(score: Mapping[str, Any], top_nodes: int) -> list[str]:
    taken: set[str] = set()
    plugins = [(p["name"], p["weight"], abbreviation(p["name"], taken)) for p in score["plugins"]]
    if "nodes" not in score:  # scoped to counts (report/scope.py)
        legend = ", ".join(f"{name} (weight {weight})" for name, weight, _ in plugins)
        lines = [f"  Score: {legend or 'no plugin'}"]
        if score["skipped"]:
            lines.append(f"    skipped (PreScore said Skip): {', '.join(score['skipped'])}")
        return lines
    nodes = score["nodes"]
    shown = nodes[:top_nodes]
    lines = [f"  Score (top {len(shown)} of {len(nodes)} feasible; weighted score per plugin, raw in brackets):"]
    legend = ", ".join(f"{short}={name} (weight {weight})" for name, weight, short in plugins)
    if legend:
        lines.append(f"    {legend}")
    if score["skipped"]:
        lines.append(f"    skipped (PreScore said Skip): {', '.join(score['skipped'])}")
    extenders = any(nd["extenders"] for nd in nodes)
    header = ["NODE", "TOTAL"] + [short for _, _, short in plugins] + (["EXT"] if extenders else [])
    rows = [header]
    for nd in shown:
        row = [nd["node"], str(nd["total"])]
        for name, _, _ in plugins:
            s = nd["plugins"][name]
            raw = "" if s["raw"] is None or s["raw"] == s["normalized"] else f" [{s['raw']}]"
            row.append(f"{s['weighted']}{raw}")
        if extenders:
            row.append(str(nd["extenders"]))
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines.extend("    " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)
    return lines


def _post_filter(pf: Mapping[str, Any], top_nodes: int) -> list[str]:
    lines = ["  PostFilter (preemption):"]
    chosen = pf["chosen"]
    if chosen is not None:
        lines.append(f"    nominated to {chosen['node']}, evicting {_victims(chosen)}")
    elif pf["nominatedNode"]:
        lines.append(f"    nominated to {pf['nominatedNode']}")
    if pf["message"]:
        lines.append(f"    {pf['message']}")
    if isinstance(pf["candidates"], int):  # scoped to counts (report/scope.py)
        lines.append(f"    {pf['candidates']} candidate node(s), {pf['rejected']} node(s) not candidates")
        return lines
    for c in pf["candidates"][:top_nodes]:
        pdb = f", {c['pdbViolations']} PDB violation(s)" if c["pdbViolations"] else ""
        lines.append(f"    candidate {c['node']}: victims {_victims(c)}{pdb}")
    for r in pf["rejected"][:top_nodes]:
        lines.append(f"    not a candidate {r['node']}: {r['reason']}")
    return lines


def _victims(v: Mapping[str, Any]) -> str:
    """`victims`, and those of other namespaces counted where a scoped explanation counts them."""
    names = list(v["victims"])
    others = v.get("victimsInOtherNamespaces", 0)
    if others:
        names.append("1 pod in another namespace" if others == 1 else f"{others} pods in other namespaces")
    return ", ".join(names) or "nothing"
