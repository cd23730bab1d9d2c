"""What the operator publishes for a pod annotated `kubeberth.io/explain: "true"`, from the same
explanation structure simulate prints (scheduler/explain.py's Explanation.to_dict):

- a compact summary, JSON in the annotation `kubeberth.io/explanation` (at most SUMMARY_LIMIT
  bytes): the result, node counts, the top nodes with each plugin's weighted score, the filter
  reasons with how many nodes each, the preemption decision;
- the full explanation as text, the message of a `SchedulingExplained` Event (at most
  EVENT_LIMIT characters), the same section `simulate --explain` prints plus each filtered-out
  node's failing plugins.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from .scope import COUNTS
from .suggestions import describe
from .text import count, render_attempt

SUMMARY_ANNOTATION = "kubeberth.io/explanation"
SUMMARY_LIMIT = 4096
SUMMARY_TOP_NODES = 5
EVENT_REASON = "SchedulingExplained"
EVENT_LIMIT = 16384
EVENT_TOP_NODES = 10
REASON_LIMIT = 200


def _short(text: str, limit: int = REASON_LIMIT) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def summary(x: Mapping[str, Any], limit: int = SUMMARY_LIMIT, top: int = SUMMARY_TOP_NODES) -> str:
    """Compact JSON of one attempt, at most `limit` bytes: fewer top nodes and filter reasons
    (the ones covering the fewest nodes first) are kept until it fits."""
    res = x["result"]
    score = x["score"]
    counts_only = x.get("scope", {}).get("detail") == COUNTS  # report/scope.py left the per-node parts out
    nodes = score["nodes"] if score is not None and not counts_only else []
    top_nodes = [{"node": n["node"], "total": n["total"],
                  "scores": {name: s["weighted"] for name, s in n["plugins"].items()}} for n in nodes[:top]]
    filtered = [[_short(g["reason"]), count(g["nodes"])] for g in x["filter"]["filteredOut"]]
    out: dict[str, Any] = {
        "attempt": x["attempt"], "result": res["status"], "node": res["node"] or None,
        "message": _short(res["message"], 512) or None, "nodes": x["nodes"],
        "top": top_nodes, "tied": count(x["selection"]["tied"]), "filtered": filtered,
        "details": f"Event {EVENT_REASON}",
    }
    if counts_only:
        del out["top"]
    if x.get("suggestions") is not None:  # their kinds; the Event has them in full
        out["suggestions"] = [s["kind"] for s in x["suggestions"]]
    if "scope" in x:
        out["detail"] = x["scope"]["detail"]
    pf = x["postFilter"]
    if pf is not None:
        chosen = pf["chosen"]
        out["preemption"] = ({"node": chosen["node"], "victims": chosen["victims"][:10]} if chosen is not None
                             else {"node": None, "message": _short(pf["message"])})
        if chosen is not None and "victimsInOtherNamespaces" in chosen:
            out["preemption"]["victimsInOtherNamespaces"] = chosen["victimsInOtherNamespaces"]
    text = json.dumps(out, separators=(",", ":"))
    while len(text.encode()) > limit and (out.get("top") or out["filtered"]):
        if len(out["filtered"]) > len(out.get("top", ())):
            out["filtered"].pop()
        else:
            out["top"].pop()
        out["truncated"] = True
        text = json.dumps(out, separators=(",", ":"))
    if len(text.encode()) > limit:  # the message alone is too long: keep the result and the counts
        text = json.dumps({"attempt": x["attempt"], "result": res["status"], "node": res["node"] or None,
                           "nodes": x["nodes"], "truncated": True}, separators=(",", ":"))
    return text


def event_message(pod: str, x: Mapping[str, Any], limit: int = EVENT_LIMIT, top: int = EVENT_TOP_NODES) -> str:
    lines = render_attempt(pod, x, top)
    failing = [(n["node"], {p: v for p, v in n["plugins"].items() if v != "pass"})
               for n in x["filter"].get("nodes", ()) if n["verdict"] == "Filtered"]
    if failing:
        lines.append("  Every failing Filter plugin per filtered-out node:")
        lines.extend(f"    {node}: " + "; ".join(f"{p}: {v}" for p, v in verdicts.items())
                     for node, verdicts in failing)
    if x.get("suggestions") is not None:  # kubeberth.io/suggest: scoped already (report/suggestions.py)
        lines.append("  Suggestions (each verified by simulating the change):")
        lines.extend(f"    {i}. {describe(s)}" for i, s in enumerate(x["suggestions"], 1))
        if not x["suggestions"]:
            lines.append("    none verified")
    text = "\n".join(line.strip("\n") for line in lines)
    if len(text) <= limit:
        return text
    marker = f"\n... ({len(text) - limit} more characters; simulate --explain shows all)"
    return text[:limit - len(marker)] + marker


def digest(x: Mapping[str, Any]) -> str:
    """Equal for two attempts that explain the same (a pod retried in an unchanged cluster)."""
    body = json.dumps({k: v for k, v in x.items() if k != "attempt"}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(body.encode()).hexdigest()
