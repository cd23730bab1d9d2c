"""A pod's pod affinity and anti-affinity terms, parsed once (upstream's PodInfo terms).

`pod_affinity_terms(pod)` is the one parse, used by the InterPodAffinity plugin and by the
scheduling queue; it is memoised on `pod.cache`, and replicas (same namespace, same terms)
share one `PodAffinityTerms` object, so that what is computed per set of terms is computed once.

Where this differs from kube-scheduler, on purpose:
- matchLabelKeys / mismatchLabelKeys are folded into the label selector here (the API server
  does it at pod creation upstream; doing it twice is harmless: the same requirement twice)
  so objects that never went through an API server (simulate) get them too.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .errors import ModelError
from .label_validation import validate_selector
from .pod import Pod
from .selectors import LabelSelector, Requirement

NsLabels = Callable[[str], Mapping[str, str]]
"""A namespace's labels by name."""

_CACHE_KEY = "model.PodAffinityTerms"


def default_namespace_labels(namespace: str) -> Mapping[str, str]:
    """The labels every namespace has (what is known of a namespace without its object)."""
    return {"kubernetes.io/metadata.name": namespace}


class AffinityTerm:
    """A parsed v1.PodAffinityTerm (upstream's framework.AffinityTerm).

    `selector` None is upstream's labels.Nothing() (a term without labelSelector matches no
    pod); an empty LabelSelector matches every pod. `ns_selector` None likewise matches no
    namespace; an empty one matches all namespaces. `weight` is 0 for a required term.
    """

    __slots__ = ("namespaces", "ns_selector", "selector", "topology_key", "weight")

    def __init__(self, namespaces: frozenset[str], ns_selector: LabelSelector | None,
                 selector: LabelSelector | None, topology_key: str, weight: int = 0) -> None:
        self.namespaces = namespaces
        self.ns_selector = ns_selector
        self.selector = selector
        self.topology_key = topology_key
        self.weight = weight

    def matches_ns(self, namespace: str, ns_labels: NsLabels) -> bool:
        if namespace in self.namespaces:
            return True
        sel = self.ns_selector
        if sel is None:
            return False
        return sel.is_empty() or sel.matches(ns_labels(namespace))

    def matches(self, pod: Pod, ns_labels: NsLabels) -> bool:
        """Whether `pod` is one of the pods this term selects."""
        sel = self.selector
        if sel is None or not self.matches_ns(pod.namespace, ns_labels):
            return False
        return sel.matches(pod.labels)

    def matches_labels(self, namespace: str, labels: Mapping[str, str], ns_labels: NsLabels) -> bool:
        """`matches` for a pod known by its namespace and labels only."""
        sel = self.selector
        return sel is not None and self.matches_ns(namespace, ns_labels) and sel.matches(labels)

    def __repr__(self) -> str:
        return f"AffinityTerm({self.topology_key}, ns={sorted(self.namespaces)}, w={self.weight})"


class PodAffinityTerms:
    """All pod (anti-)affinity terms of one pod.

    On a parse error `error` says where and what (upstream's NewPodInfo error, e.g.
    "requiredAffinityTerms: ...") and every list is empty.
    """

    __slots__ = ("__weakref__", "error", "preferred_affinity", "preferred_anti", "required_affinity",
                 "required_anti")

    def __init__(self) -> None:
        self.required_affinity: list[AffinityTerm] = []
        self.required_anti: list[AffinityTerm] = []
        self.preferred_affinity: list[AffinityTerm] = []
        self.preferred_anti: list[AffinityTerm] = []
        self.error = ""


_NO_TERMS = PodAffinityTerms()
# Replicas share their affinity: one parsed PodAffinityTerms per (namespace, spec).
_INTERNED: weakref.WeakValueDictionary[Any, PodAffinityTerms] = weakref.WeakValueDictionary()


def pod_affinity_terms(pod: Pod) -> PodAffinityTerms:
    """The pod's parsed terms, memoised on the pod."""
    cached: PodAffinityTerms | None = pod.cache.get(_CACHE_KEY)
    if cached is not None:
        return cached
    aff = pod.affinity or {}
    pa = aff.get("podAffinity") or {}
    paa = aff.get("podAntiAffinity") or {}
    if not pa and not paa:
        pod.cache[_CACHE_KEY] = _NO_TERMS
        return _NO_TERMS
    try:
        spec: str | None = json.dumps([pa, paa], sort_keys=True, default=str)
    except (TypeError, ValueError):
        spec = None
    key: Any = None
    if spec is not None:
        # matchLabelKeys / mismatchLabelKeys make the terms depend on the pod's own labels.
        key = (pod.namespace, spec, frozenset(pod.labels.items()) if "LabelKeys" in spec else None)
        terms = _INTERNED.get(key)
        if terms is not None:
            pod.cache[_CACHE_KEY] = terms
            return terms
    terms = _parse(pod, pa, paa)
    if key is not None:
        _INTERNED[key] = terms
    pod.cache[_CACHE_KEY] = terms
    return terms


def _parse(pod: Pod, pa: Any, paa: Any) -> PodAffinityTerms:
    terms = PodAffinityTerms()
    where = "requiredAffinityTerms"
    try:
        terms.required_affinity = [_term(pod, t) for t in
                                   pa.get("requiredDuringSchedulingIgnoredDuringExecution") or []]
        where = "requiredAntiAffinityTerms"
        terms.required_anti = [_term(pod, t) for t in
                               paa.get("requiredDuringSchedulingIgnoredDuringExecution") or []]
        where = "preferredAffinityTerms"
        terms.preferred_affinity = _weighted(pod, pa.get("preferredDuringSchedulingIgnoredDuringExecution"))
        where = "preferredAntiAffinityTerms"
        terms.preferred_anti = _weighted(pod, paa.get("preferredDuringSchedulingIgnoredDuringExecution"))
    except (ModelError, AttributeError, TypeError, ValueError) as exc:
        terms.error = f"{where}: {exc}"
        terms.required_affinity, terms.required_anti = [], []
        terms.preferred_affinity, terms.preferred_anti = [], []
    return terms


def _weighted(pod: Pod, raws: Any) -> list[AffinityTerm]:
    out = []
    for w in raws or []:
        if not isinstance(w, Mapping):
            raise ModelError(f"weighted pod affinity term {w!r} is not a mapping")
        out.append(_term(pod, w.get("podAffinityTerm") or {}, int(w.get("weight") or 0)))
    return out


def _term(pod: Pod, raw: Any, weight: int = 0) -> AffinityTerm:
    if not isinstance(raw, Mapping):
        raise ModelError(f"pod affinity term {raw!r} is not a mapping")
    namespaces = [str(n) for n in raw.get("namespaces") or []]
    ns_sel_raw = raw.get("namespaceSelector")
    if not namespaces and ns_sel_raw is None:
        namespaces = [pod.namespace]
    validate_selector(ns_sel_raw)
    ns_selector = LabelSelector.from_dict(ns_sel_raw) if ns_sel_raw is not None else None
    selector = _selector(raw.get("labelSelector"), pod, raw.get("matchLabelKeys") or (),
                         raw.get("mismatchLabelKeys") or ())
    return AffinityTerm(frozenset(namespaces), ns_selector, selector, str(raw.get("topologyKey") or ""), weight)


def _selector(raw: Any, pod: Pod, match_keys: Sequence[str], mismatch_keys: Sequence[str]) -> LabelSelector | None:
    if raw is None:
        return None
    validate_selector(raw)
    sel = LabelSelector.from_dict(raw)
    extra = [Requirement(k, "In", [pod.labels[k]]) for k in match_keys if k in pod.labels]
    extra += [Requirement(k, "NotIn", [pod.labels[k]]) for k in mismatch_keys if k in pod.labels]
    if extra:
        sel = LabelSelector(sel.match_labels, [*sel.requirements, *extra])
    return sel
