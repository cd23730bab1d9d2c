"""An explanation as the operator may publish it into one namespace (scheduler/explain.py's
Explanation.to_dict, scoped): what the pod's author may read there.

Always: no object of another namespace is named. Preemption victims of other namespaces become a
count (`victimsInOtherNamespaces`), and any `namespace/name` of another namespace in a reason or
message becomes `<another namespace>`.

With `detail` COUNTS (the default): nothing per node beyond what the pod's FailedScheduling
message says, that is aggregate counts. Per-node records (`filter.nodes`, `score.nodes`,
`postFilter.candidates` and `.rejected`) are dropped, and lists of node names become their
length (`preFilter.nodes`, `filter.filteredOut[].nodes`, `selection.tied`, and the candidates
and rejected nodes of `postFilter` as counts). The pod's own node (`result.node`, `selection.selected`,
the nominated node) stays: the pod's status already shows it.

With `detail` FULL: everything per node stays, other namespaces still counted, never named.

`simulate --explain` does not scope: whoever runs it holds the whole cluster dump.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any

FULL = "full"
COUNTS = "counts"
DETAILS = (COUNTS, FULL)
OTHER_NAMESPACE = "<another namespace>"

# `namespace/name` as it appears in a message: a DNS label, a slash, an object name; not part of a
# longer path or of a label key such as topology.kubernetes.io/zone.
_KEY = re.compile(r"(?<![\w./-])([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)/([a-z0-9](?:[-a-z0-9.]*[a-z0-9])?)(?![\w/-])")


def scoped(x: Mapping[str, Any], namespace: str, detail: str, namespaces: Collection[str] = ()) -> dict[str, Any]:
    """`x` as it may be published in `namespace`. `namespaces`: the cluster's namespaces, whose
    `namespace/name` references in free text are hidden when not `namespace`."""
    if detail not in DETAILS:
        raise ValueError(f"explanation detail {detail!r}: expected one of {', '.join(DETAILS)}")
    out = copy.deepcopy(dict(x))
    others = {ns for ns in namespaces if ns != namespace}
    pf = out.get("postFilter")
    if pf is not None:
        victims_of = [*(c["victims"] for c in pf["candidates"])]
        others.update(_namespace(k) for vs in victims_of for k in vs)
        if pf["chosen"] is not None:
            others.update(_namespace(k) for k in pf["chosen"]["victims"])
        others.discard(namespace)
        for c in pf["candidates"]:
            c["victims"], c["victimsInOtherNamespaces"] = _split(c["victims"], namespace)
        if pf["chosen"] is not None:
            chosen = pf["chosen"]
            chosen["victims"], chosen["victimsInOtherNamespaces"] = _split(chosen["victims"], namespace)
    out = _hide(out, others)
    if detail == COUNTS:
        _counts_only(out)
    out["scope"] = {"namespace": namespace, "detail": detail}
    return out


def _namespace(key: str) -> str:
    return key.split("/", 1)[0]


def _split(keys: Iterable[str], namespace: str) -> tuple[list[str], int]:
    own: list[str] = []
    other = 0
    for k in keys:
        if _namespace(k) == namespace:
            own.append(k)
        else:
            other += 1
    return own, other


def hide_references(value: Any, others: set[str]) -> Any:
    """Every string in `value` with the `namespace/name` references of the namespaces `others`
    replaced by OTHER_NAMESPACE (for other structures published beside an explanation)."""
    return _hide(value, others)


def _hide(value: Any, others: set[str]) -> Any:
    """Every string in `value` with the `namespace/name` references of `others` hidden."""
    if not others:
        return value
    if isinstance(value, str):
        if "/" not in value:
            return value
        return _KEY.sub(lambda m: OTHER_NAMESPACE if m.group(1) in others else m.group(0), value)
    if isinstance(value, list):
        return [_hide(v, others) for v in value]
    if isinstance(value, dict):
        return {k: _hide(v, others) for k, v in value.items()}
    return value


def _counts_only(out: dict[str, Any]) -> None:
    pre = out["preFilter"]
    if pre["nodes"] is not None:
        pre["nodes"] = len(pre["nodes"])
    flt = out["filter"]
    del flt["nodes"]
    for group in flt["filteredOut"]:
        group["nodes"] = len(group["nodes"])
    if out["score"] is not None:
        del out["score"]["nodes"]
    out["selection"]["tied"] = len(out["selection"]["tied"])
    pf = out["postFilter"]
    if pf is not None:
        pf["candidates"] = len(pf["candidates"])
        pf["rejected"] = len(pf["rejected"])
    group = out.get("podGroup")
    if group is not None:  # where the attempt placed the group's pods: per node, not published
        for p in group["pods"]:
            p["node"] = None
