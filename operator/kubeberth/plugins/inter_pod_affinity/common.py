"""Names, the counts per topology pair, and the per-cycle lookups both halves of the plugin use."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...framework import AffinityTerm, NsLabels, ObjectStore
from .._pod_index import Sig

NAME = "InterPodAffinity"
PRE_FILTER_KEY = "PreFilter" + NAME
PRE_SCORE_KEY = "PreScore" + NAME
# Where the vectorised PreFilter / PreScore leave their arrays for filter_all / score_all.
VECTOR_KEY = NAME + ".vector"
SCORE_VECTOR_KEY = PRE_SCORE_KEY + ".vector"

ERR_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"

Counts = dict[str, dict[str, int]]
"""topology key -> label value -> count (or summed weight); no zero entries."""


def update_counts(counts: Counts, node_labels: Mapping[str, str], key: str, delta: int) -> None:
    """Add `delta` to the pair (key, the node's value for key); nothing when the node lacks key."""
    value = node_labels.get(key)
    if value is None:
        return
    by_value = counts.get(key)
    if by_value is None:
        by_value = counts[key] = {}
    n = by_value.get(value, 0) + delta
    if n == 0:
        by_value.pop(value, None)
        if not by_value:
            del counts[key]
    else:
        by_value[value] = n


def clone_counts(counts: Counts) -> Counts:
    return {k: dict(v) for k, v in counts.items()}


class NamespaceLabels:
    """Namespace labels looked up once per cycle."""

    __slots__ = ("_memo", "_objects")

    def __init__(self, objects: ObjectStore) -> None:
        self._objects = objects
        self._memo: dict[str, Mapping[str, str]] = {}

    def __call__(self, namespace: str) -> Mapping[str, str]:
        labels = self._memo.get(namespace)
        if labels is None:
            labels = self._memo[namespace] = self._objects.namespace_labels(namespace)
        return labels


def constant(labels: Mapping[str, str]) -> NsLabels:
    """The same labels for every namespace: existing pods' terms are matched against the
    incoming pod only, so its namespace's labels are the only ones they need."""
    return lambda _ns: labels


def in_namespaces(term: AffinityTerm, ns_labels: NsLabels) -> Callable[[Sig], bool]:
    """The index's filter on pod signatures: those in the namespaces `term` selects."""
    return lambda sig: term.matches_ns(sig[0], ns_labels)


def node_labels_of(snapshot: Any, name: str) -> Mapping[str, str] | None:
    ni = snapshot.get(name)
    node = ni.node if ni is not None else None
    return node.labels if node is not None else None
