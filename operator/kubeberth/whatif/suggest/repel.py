"""The placed pods whose required pod anti-affinity keeps a pod off a node: the term selects the
pod (its labels, its namespace) and the two nodes share the term's topology domain. Evicting them
answers InterPodAffinity's "didn't satisfy existing pods anti-affinity rules" there, which
evicting the node's own pods does not when the domain is wider (a zone)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...model import ModelError
from ...model.selectors import LabelSelector


def _selects(term: Mapping[str, Any], owner_ns: str, pod: Mapping[str, Any]) -> bool:
    meta = pod.get("metadata") or {}
    ns = str(meta.get("namespace") or "default")
    namespaces = term.get("namespaces") or []
    if namespaces and ns not in namespaces:
        return False
    if not namespaces and term.get("namespaceSelector") is None and ns != owner_ns:
        return False
    try:
        return LabelSelector.from_dict(term.get("labelSelector")).matches(meta.get("labels") or {}) \
            if term.get("labelSelector") is not None else False
    except ModelError:
        return False


def repelling(pod: Mapping[str, Any], placed: Mapping[str, tuple[Mapping[str, Any], str]],
              nodes: Mapping[str, Mapping[str, Any]], on: str) -> list[str]:
    """The keys of the placed pods (key -> (pod, node)) whose required anti-affinity rejects `pod`
    on node `on`."""
    here = ((nodes.get(on) or {}).get("metadata") or {}).get("labels") or {}
    out = []
    for key, (other, node) in placed.items():
        there = ((nodes.get(node) or {}).get("metadata") or {}).get("labels") or {}
        owner_ns = str((other.get("metadata") or {}).get("namespace") or "default")
        terms = (((other.get("spec") or {}).get("affinity") or {}).get("podAntiAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution") or []
        for t in terms:
            k = str((t or {}).get("topologyKey") or "")
            if k and k in here and here.get(k) == there.get(k) and _selects(t, owner_ns, pod):
                out.append(key)
                break
    return out
