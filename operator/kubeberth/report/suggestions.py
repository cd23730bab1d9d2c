"""Suggestions (whatif/suggest/) as people read them: one line each (simulate's table, `--explain`), the HTML
report's section, and the tenant scoping the in-cluster explanation applies (report/scope.py's
rules: pods of other namespaces are counted with their priorities, never named; with the
`counts` detail, no node is named either)."""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping, Sequence
from html import escape
from typing import Any

from .scope import COUNTS, hide_references


def _places(s: Mapping[str, Any]) -> str:
    where = ", ".join(f"{p['pod']}" + (f" on {p['node']}" if p.get("node") else "") for p in s.get("places") or ())
    extra = []
    if _some(s.get("displaced")):
        extra.append(f"displaces {_names(s['displaced'])}")
    if _some(s.get("alsoPlaces")):
        extra.append(f"also places {_names(s['alsoPlaces'])}")
    return f"places {where}" + (f" ({'; '.join(extra)})" if extra else "")


def _some(value: Any) -> bool:
    if isinstance(value, Mapping):  # scoped
        return bool(value.get("own") or value.get("otherNamespaces"))
    return bool(value)


def _names(value: Any) -> str:
    if isinstance(value, Mapping):  # scoped: {"own": [...], "otherNamespaces": n}
        own = list(value.get("own") or ())
        n = int(value.get("otherNamespaces") or 0)
        return ", ".join([*own, *([f"{n} pod(s) of other namespaces"] if n else [])]) or "none"
    return ", ".join(value)


def _term(t: Mapping[str, Any]) -> str:
    if t.get("to") is None:
        return f"remove {t['path']} ({t.get('from')})"
    if t.get("constraint") == "toleration":
        return f"tolerate the taint {t['to'].get('key')}" + (f"={t['to']['value']}" if t["to"].get("value") else "") + \
            f":{t['to'].get('effect')}"
    return f"{t['path']}: {t.get('from')} -> {t['to']}"


def describe(s: Mapping[str, Any]) -> str:
    """One line: the change, then what it places."""
    kind = s["kind"]
    if kind == "AddNodes":
        group = f"node {s['nodeGroup']}'s shape" if s.get("nodeGroup") else "an existing node shape"
        what = f"add {s['count']} node(s) of {group} (expander: {s['expander']})"
    elif kind == "Evict":
        own = [f"{e['pod']} (priority {e['priority']}" + (", a PDB blocks it" if e.get("pdbBlocks") else "") + ")"
               for e in s.get("evict") or ()]
        others = s.get("evictInOtherNamespaces") or []
        if others:
            own.append(f"{len(others)} pod(s) of other namespaces (priorities "
                       f"{', '.join(str(o['priority']) for o in others)})")
        what = "evict " + ", ".join(own)
    elif kind == "RaisePriority":
        pre = [f"{p['pod']} ({p['priority']})" for p in s.get("preempts") or ()]
        others = s.get("preemptsInOtherNamespaces") or []
        if others:
            pre.append(f"{len(others)} pod(s) of other namespaces")
        what = (f"priorityClassName {s['priorityClass']} (priority {s['from']} -> {s['priority']}), preempting "
                f"{', '.join(pre) or 'nothing'}")
    elif kind == "Relax":
        what = "relax: " + "; ".join(_term(t) for t in s.get("terms") or [s])
    elif kind == "LowerRequests":
        what = "lower requests: " + ", ".join(f"{r['resource']} {r['from']} -> {r['to']}" +
                                              (f" ({r['note']})" if r.get("note") else "") for r in s["requests"])
    elif kind == "Uncordon":
        what = f"uncordon node {s['node']}" if s.get("node") else "uncordon a cordoned node"
    elif kind == "RaiseVolumeLimit":
        where = f"node {s['node']}" if s.get("node") else "the node"
        what = f"raise {where}'s volume limit for {s['driver']} (CSINode count {s['from']} -> {s['to']}: {s['note']})"
    elif kind == "AddNodeResource":
        where = f"node {s['node']}" if s.get("node") else "the node"
        what = f"give {where} {s['to']} {s['resource']} (now {s['from']}: {s['note']})"
    elif kind == "RelaxProfile":
        what = f"remove the addedAffinity of profile(s) {', '.join(s['profiles'])} ({s['note']})"
    elif kind == "AddPods":
        what = (f"create {s['count']} more pod(s) of the gang {s['podGroup']} (minCount {s['minCount']}, "
                f"{s['existing']} exist), copies of {s['copyOf']}")
    elif kind == "Combined":
        what = " + ".join(describe(step).split("; places", 1)[0] for step in s.get("steps") or ())
    else:
        what = kind
    return f"{kind}: {what}; {_places(s)}"


def render_section(outcomes: Sequence[Any]) -> str:
    """simulate's table output with --suggest: a heading, then render_lines of every Unschedulable
    pod's suggestions (`outcomes`: simulate's PodOutcomes)."""
    found = {o.pod: o.suggestions or [] for o in outcomes if o.status == "Unschedulable"}
    body = "\n".join(render_lines(found)) if found else "  no unschedulable pod"
    return f"\nSuggestions (each verified by simulating the change; ranked, least disruption first):\n{body}"


def render_lines(suggestions: Mapping[str, Sequence[Mapping[str, Any]]], indent: str = "  ") -> list[str]:
    """The table's section: per pod with suggestions, one numbered line each."""
    out: list[str] = []
    for pod, found in suggestions.items():
        out.append(f"{indent}{pod}:" + ("" if found else " no verified suggestion"))
        out.extend(f"{indent}  {i}. {describe(s)}" for i, s in enumerate(found, 1))
    return out


def render_html(pod: str, found: Sequence[Mapping[str, Any]]) -> str:
    """The HTML report's section of one pod."""
    if not found:
        return "<p>Suggestions: none verified.</p>"
    items = "".join(f"<li>{escape(describe(s))}</li>" for s in found)
    return f'<div class="suggestions"><p>Suggestions for {escape(pod)} (each verified by re-simulation):</p>' \
           f"<ol>{items}</ol></div>"


def _split(keys: Sequence[str], namespace: str) -> dict[str, Any]:
    own = [k for k in keys if k.split("/", 1)[0] == namespace]
    return {"own": own, "otherNamespaces": len(keys) - len(own)}


def _scope_change(d: dict[str, Any], namespace: str, detail: str, others: set[str]) -> None:
    """One change (a suggestion, or a step of a Combined one) scoped in place; the namespaces it
    names are added to `others`."""
    if d.get("kind") == "Evict":
        mine = [e for e in d["evict"] if e["pod"].split("/", 1)[0] == namespace]
        d["evictInOtherNamespaces"] = [{"priority": e["priority"], "pdbBlocks": e["pdbBlocks"]}
                                       for e in d["evict"] if e not in mine]
        others.update(e["pod"].split("/", 1)[0] for e in d["evict"])
        d["evict"] = mine
    if d.get("kind") == "RaisePriority":
        mine = [p for p in d["preempts"] if p["pod"].split("/", 1)[0] == namespace]
        d["preemptsInOtherNamespaces"] = [{"priority": p["priority"]} for p in d["preempts"] if p not in mine]
        others.update(p["pod"].split("/", 1)[0] for p in d["preempts"])
        d["preempts"] = mine
    if detail == COUNTS:
        for p in d.get("places") or ():
            p.pop("node", None)
        for e in d.get("evict") or ():
            e.pop("node", None)
        d.pop("nodeGroup", None)
        if d.get("kind") in ("Uncordon", "RaiseVolumeLimit", "AddNodeResource"):
            d.pop("node", None)
        d.pop("newNodes", None)
    for step in d.get("steps") or ():
        _scope_change(step, namespace, detail, others)


def scoped(suggestions: Sequence[Mapping[str, Any]], namespace: str, detail: str,
           namespaces: Collection[str] = ()) -> list[dict[str, Any]]:
    """`suggestions` as they may be shown in `namespace`: pods of other namespaces counted (with
    their priorities where the suggestion gives them), never named; with `detail` COUNTS no node
    named (the nodes a change would place the pods on, the node group, the new nodes' names).
    A Combined suggestion's steps are scoped alike."""
    out = []
    others = {ns for ns in namespaces if ns != namespace}
    for s in suggestions:
        d = copy.deepcopy(dict(s))
        for name in ("displaced", "alsoPlaces"):
            keys = list(d.get(name) or ())
            others.update(k.split("/", 1)[0] for k in keys)
            d[name] = _split(keys, namespace)
        _scope_change(d, namespace, detail, others)
        others.discard(namespace)
        out.append(hide_references(d, others))
    return out
