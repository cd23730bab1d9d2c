"""InterPodAffinity: required and preferred pod (anti-)affinity, as upstream.

PreFilter counts, per topology pair (key, value):
- existing pods whose required anti-affinity terms match the incoming pod;
- existing pods that match all of the incoming pod's required affinity terms;
- existing pods that match each of the incoming pod's required anti-affinity terms.
Filter is then a few dict lookups per node. AddPod/RemovePod update the counts
so preemption and nominated pods can be simulated on a cloned state.

PreScore sums, per topology pair, the weights of the preferred terms (both the
incoming pod's and the existing pods') and of existing pods' required affinity
terms (times `hardPodAffinityWeight`); Score adds them up for a node's labels
and NormalizeScore rescales min..max to 0..100.

Speed: existing pods are matched against the incoming pod's terms through the
shared label index (`_pod_index`), so the work follows the matching pods, not
all pods; replicas share one parsed set of terms, evaluated once per cycle.

Where this differs from kube-scheduler, on purpose:
- matchLabelKeys / mismatchLabelKeys are folded into the selector here (the
  API server does it at pod creation upstream; doing it twice is harmless).
- A namespaceSelector of the incoming pod is evaluated against each existing
  pod's namespace labels instead of being expanded to the listed Namespace
  objects first; the same pods match whenever their namespaces exist.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, field_validator

from ..framework.cycle_state import CycleState
from ..framework.interfaces import (
    FilterPlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
)
from ..framework.status import PluginError, Status
from ..framework.types import MAX_NODE_SCORE, NodeScore, PreFilterResult
from ..framework.vector import snapshot_arrays
from ..model import LabelSelector, ModelError, NodeInfo, Pod, Requirement
from ._affinity_vector import VECTOR_KEY, AffinityVectors, _ScoreVectors, filter_mask, score_values
from ._labels import validate_selector
from ._pod_index import PodIndex, Sig, index_for

NAME = "InterPodAffinity"
PRE_FILTER_KEY = "PreFilter" + NAME
PRE_SCORE_KEY = "PreScore" + NAME
SCORE_VECTOR_KEY = PRE_SCORE_KEY + ".vector"

ERR_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"

_CACHE_KEY = NAME

NsLabels = Callable[[str], Mapping[str, str]]


class InterPodAffinityArgs(BaseModel):
    """Upstream's InterPodAffinityArgs (kubescheduler.config.k8s.io/v1)."""

    model_config = ConfigDict(extra="forbid")
    hardPodAffinityWeight: int = 1
    ignorePreferredTermsOfExistingPods: bool = False

    @field_validator("hardPodAffinityWeight")
    @classmethod
    def _weight_range(cls, v: int) -> int:
        if not 0 <= v <= 100:
            raise ValueError("not in valid range [0-100]")
        return v


# ---- parsed terms --------------------------------------------------------------


class AffinityTerm:
    """A parsed v1.PodAffinityTerm (upstream's framework.AffinityTerm).

    `selector` None is upstream's labels.Nothing() (a term without labelSelector
    matches no pod); an empty LabelSelector matches every pod. `ns_selector`
    None likewise matches no namespace; an empty one matches all namespaces.
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
        sel = self.selector
        if sel is None or not self.matches_ns(pod.namespace, ns_labels):
            return False
        return sel.matches(pod.labels)

    def matches_sig(self, sig: Sig, labels: Mapping[str, str], ns_labels: NsLabels) -> bool:
        sel = self.selector
        return sel is not None and self.matches_ns(sig[0], ns_labels) and sel.matches(labels)

    def __repr__(self) -> str:
        return f"AffinityTerm({self.topology_key}, ns={sorted(self.namespaces)}, w={self.weight})"


class PodAffinityTerms:
    """All pod (anti-)affinity terms of one pod, parsed once and kept on pod.cache."""

    __slots__ = ("__weakref__", "error", "preferred_affinity", "preferred_anti", "required_affinity",
                 "required_anti")

    def __init__(self) -> None:
        self.required_affinity: list[AffinityTerm] = []
        self.required_anti: list[AffinityTerm] = []
        self.preferred_affinity: list[AffinityTerm] = []
        self.preferred_anti: list[AffinityTerm] = []
        self.error = ""


def _selector(raw: Any, pod: Pod, match_keys: Sequence[str] = (),
              mismatch_keys: Sequence[str] = ()) -> LabelSelector | None:
    if raw is None:
        return None
    validate_selector(raw)
    sel = LabelSelector.from_dict(raw)
    # matchLabelKeys / mismatchLabelKeys: kube-apiserver folds them into the
    # selector when the pod is created; doing it here again is harmless (the
    # same requirement twice) and covers objects that never went through it.
    extra = [Requirement(k, "In", [pod.labels[k]]) for k in match_keys if k in pod.labels]
    extra += [Requirement(k, "NotIn", [pod.labels[k]]) for k in mismatch_keys if k in pod.labels]
    if extra:
        sel = LabelSelector(sel.match_labels, [*sel.requirements, *extra])
    return sel


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


def _weighted(pod: Pod, raws: Any) -> list[AffinityTerm]:
    out = []
    for w in raws or []:
        if not isinstance(w, Mapping):
            raise ModelError(f"weighted pod affinity term {w!r} is not a mapping")
        out.append(_term(pod, w.get("podAffinityTerm") or {}, int(w.get("weight") or 0)))
    return out


_NO_TERMS = PodAffinityTerms()
# Replicas share their affinity: one parsed PodAffinityTerms per (namespace, spec), so that
# PreFilter/PreScore evaluate each distinct set of terms against the incoming pod once.
_INTERNED: weakref.WeakValueDictionary[Any, PodAffinityTerms] = weakref.WeakValueDictionary()


def pod_terms(pod: Pod) -> PodAffinityTerms:
    """The pod's parsed terms, memoised. On a parse error `error` is set and the lists are empty."""
    cached = pod.cache.get(_CACHE_KEY)
    if cached is not None:
        return cached
    aff = pod.affinity or {}
    pa = aff.get("podAffinity") or {}
    paa = aff.get("podAntiAffinity") or {}
    if not pa and not paa:
        pod.cache[_CACHE_KEY] = _NO_TERMS
        return _NO_TERMS
    try:
        spec = json.dumps([pa, paa], sort_keys=True, default=str)
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
    terms = _parse_terms(pod, pa, paa)
    if key is not None:
        _INTERNED[key] = terms
    pod.cache[_CACHE_KEY] = terms
    return terms


def _parse_terms(pod: Pod, pa: Mapping[str, Any], paa: Mapping[str, Any]) -> PodAffinityTerms:
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


class _NamespaceLabels:
    """Namespace labels looked up once per cycle."""

    __slots__ = ("_memo", "_objects")

    def __init__(self, objects: Any) -> None:
        self._objects = objects
        self._memo: dict[str, Mapping[str, str]] = {}

    def __call__(self, namespace: str) -> Mapping[str, str]:
        labels = self._memo.get(namespace)
        if labels is None:
            if self._objects is None:
                labels = {"kubernetes.io/metadata.name": namespace}
            else:
                labels = self._objects.namespace_labels(namespace)
            self._memo[namespace] = labels
        return labels


# ---- topology counts -----------------------------------------------------------

Counts = dict[str, dict[str, int]]


def _update(counts: Counts, node_labels: Mapping[str, str], key: str, delta: int) -> None:
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


def _clone_counts(counts: Counts) -> Counts:
    return {k: dict(v) for k, v in counts.items()}


def _matches_all(terms: Sequence[AffinityTerm], pod: Pod, ns_labels: NsLabels) -> bool:
    if not terms:
        return False
    return all(t.matches(pod, ns_labels) for t in terms)


class _PreFilterState:
    __slots__ = ("affinity_counts", "anti_affinity_counts", "existing_anti_affinity_counts",
                 "namespace_labels", "ns_labels", "pod", "terms")

    def __init__(self, pod: Pod, terms: PodAffinityTerms, namespace_labels: Mapping[str, str],
                 ns_labels: NsLabels) -> None:
        self.pod = pod
        self.terms = terms
        self.namespace_labels = namespace_labels
        self.ns_labels = ns_labels
        self.existing_anti_affinity_counts: Counts = {}
        self.affinity_counts: Counts = {}
        self.anti_affinity_counts: Counts = {}

    def clone(self) -> _PreFilterState:
        c = _PreFilterState(self.pod, self.terms, self.namespace_labels, self.ns_labels)
        c.existing_anti_affinity_counts = _clone_counts(self.existing_anti_affinity_counts)
        c.affinity_counts = _clone_counts(self.affinity_counts)
        c.anti_affinity_counts = _clone_counts(self.anti_affinity_counts)
        return c

    def update_with_pod(self, other: Pod, node_labels: Mapping[str, str], delta: int) -> None:
        incoming_ns = self.namespace_labels
        for t in pod_terms(other).required_anti:
            if t.matches(self.pod, lambda _ns: incoming_ns):
                _update(self.existing_anti_affinity_counts, node_labels, t.topology_key, delta)
        req_aff = self.terms.required_affinity
        if req_aff and _matches_all(req_aff, other, self.ns_labels):
            for t in req_aff:
                _update(self.affinity_counts, node_labels, t.topology_key, delta)
        for t in self.terms.required_anti:
            if t.matches(other, self.ns_labels):
                _update(self.anti_affinity_counts, node_labels, t.topology_key, delta)


class _PreScoreState:
    __slots__ = ("topology_score",)

    def __init__(self, topology_score: Counts) -> None:
        self.topology_score = topology_score

    def clone(self) -> _PreScoreState:
        return self


class InterPodAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, PreFilterExtensions):
    name = NAME
    args_model = InterPodAffinityArgs
    has_normalize = True

    def __init__(self, args: InterPodAffinityArgs | None, handle: Any) -> None:
        self.args = args if args is not None else InterPodAffinityArgs()
        self.handle = handle
        self._index = PodIndex()
        self._vectors = AffinityVectors(pod_terms)  # the vectorised path's caches (_affinity_vector.py)

    def _objects(self) -> Any:
        return getattr(self.handle, "objects", None) if self.handle is not None else None

    # ---- PreFilter ----------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        terms = pod_terms(pod)
        if terms.error:
            return None, Status.unresolvable(f"parsing pod: {terms.error}")
        ns_labels = _NamespaceLabels(self._objects())
        own_ns_labels = ns_labels(pod.namespace)
        s = _PreFilterState(pod, terms, own_ns_labels, ns_labels)
        snapshot = self.handle.snapshot

        # Existing pods whose required anti-affinity matches the incoming pod.
        existing = s.existing_anti_affinity_counts
        const_ns: NsLabels = lambda _ns: own_ns_labels  # noqa: E731
        arrays = snapshot_arrays(self.handle)
        if arrays is not None:
            vec = self._vectors.pre_filter_counts(
                arrays, pod, s, ns_labels, const_ns, lambda: index_for(self.handle, self._index),
                getattr(self._objects(), "generation", 0))
            if not s.existing_anti_affinity_counts and not terms.required_affinity and not terms.required_anti:
                return None, Status.skip()
            state.write(PRE_FILTER_KEY, s)
            state.write(VECTOR_KEY, vec)
            return None, None
        # Per distinct set of terms (replicas share one): the topology keys whose term matches us.
        memo: dict[int, list[str]] = {}
        for ni in snapshot.have_pods_with_required_anti_affinity:
            node = ni.node
            if node is None:
                continue
            for ep in ni.pods_with_required_anti_affinity:
                et = pod_terms(ep)
                keys = memo.get(id(et))
                if keys is None:
                    keys = memo[id(et)] = [t.topology_key for t in et.required_anti if t.matches(pod, const_ns)]
                for key in keys:
                    _update(existing, node.labels, key, 1)

        req_aff = terms.required_affinity
        req_anti = terms.required_anti
        if req_aff or req_anti:
            self._incoming_counts(s, index_for(self.handle, self._index), snapshot)

        if not existing and not req_aff and not req_anti:
            return None, Status.skip()
        state.write(PRE_FILTER_KEY, s)
        return None, None

    @staticmethod
    def _incoming_counts(s: _PreFilterState, index: PodIndex, snapshot: Any) -> None:
        """Existing pods matching all the incoming pod's affinity terms / each anti-affinity term,
        counted per topology pair of their nodes (upstream's affinityCounts / antiAffinityCounts)."""
        ns_labels = s.ns_labels
        req_aff = s.terms.required_affinity
        first = req_aff[0] if req_aff else None
        if first is not None and first.selector is not None:
            keys = [t.topology_key for t in req_aff]
            for sig in index.matching(first.selector, _in_namespaces(first, ns_labels)):
                labels = index.labels(sig)
                if not all(t.matches_sig(sig, labels, ns_labels) for t in req_aff[1:]):
                    continue
                for name, n in index.nodes_of(sig).items():
                    node_labels = _node_labels(snapshot, name)
                    if node_labels is not None:
                        for key in keys:
                            _update(s.affinity_counts, node_labels, key, n)
        for t in s.terms.required_anti:
            sel = t.selector
            if sel is None:
                continue
            for sig in index.matching(sel, _in_namespaces(t, ns_labels)):
                for name, n in index.nodes_of(sig).items():
                    node_labels = _node_labels(snapshot, name)
                    if node_labels is not None:
                        _update(s.anti_affinity_counts, node_labels, t.topology_key, n)

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self

    def add_pod(self, state: CycleState, pod_to_schedule: Pod, pod_to_add: Pod,
                node_info: NodeInfo) -> Status | None:
        return self._update(state, pod_to_add, node_info, 1)

    def remove_pod(self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: Pod,
                   node_info: NodeInfo) -> Status | None:
        return self._update(state, pod_to_remove, node_info, -1)

    @staticmethod
    def _update(state: CycleState, other: Pod, node_info: NodeInfo, delta: int) -> Status | None:
        s = state.get(PRE_FILTER_KEY)
        if s is None:
            return Status.error(f"reading {PRE_FILTER_KEY!r} from cycleState: not found")
        if node_info.node is not None:
            s.update_with_pod(other, node_info.node.labels, delta)
        return None

    # ---- Filter -------------------------------------------------------------
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s: _PreFilterState | None = state.get(PRE_FILTER_KEY)
        if s is None:
            return Status.error(f"reading {PRE_FILTER_KEY!r} from cycleState: not found")
        node = node_info.node
        if node is None:
            return Status.error("node not found")
        labels = node.labels
        if not _satisfy_pod_affinity(s, labels):
            return Status.unresolvable(ERR_AFFINITY)
        anti = s.anti_affinity_counts
        if anti:
            for t in s.terms.required_anti:
                v = labels.get(t.topology_key)
                if v is not None and anti.get(t.topology_key, {}).get(v, 0) > 0:
                    return Status.unschedulable(ERR_ANTI_AFFINITY)
        existing = s.existing_anti_affinity_counts
        if existing:
            for key, by_value in existing.items():
                v = labels.get(key)
                if v is not None and by_value.get(v, 0) > 0:
                    return Status.unschedulable(ERR_EXISTING_ANTI_AFFINITY)
        return None

    def filter_all(self, state: CycleState, pod: Pod, nodes: Any) -> np.ndarray | None:
        """`filter` for every node of a NodeView, from what the vectorised PreFilter kept."""
        s = state.get(PRE_FILTER_KEY)
        vec = state.get(VECTOR_KEY)
        if s is None or vec is None or vec.state is not s:
            return None
        return nodes.take(filter_mask(nodes.arrays, pod, s, vec,
                                      lambda: _matches_all(s.terms.required_affinity, s.pod, s.ns_labels)))

    # ---- PreScore / Score -----------------------------------------------------
    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        aff = pod.affinity or {}
        has_constraints = bool(
            ((aff.get("podAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution"))
            or ((aff.get("podAntiAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution")))
        if self.args.ignorePreferredTermsOfExistingPods and not has_constraints:
            return Status.skip()
        terms = pod_terms(pod)
        if terms.error:
            return Status.error(f"failed to parse pod: {terms.error}")
        snapshot = self.handle.snapshot
        ns_labels = _NamespaceLabels(self._objects())
        own_ns_labels = ns_labels(pod.namespace)
        const_ns: NsLabels = lambda _ns: own_ns_labels  # noqa: E731
        arrays = snapshot_arrays(self.handle)
        if arrays is not None:
            by_terms: dict[int, list[tuple[str, int]]] = {}

            def contributions(et: PodAffinityTerms) -> list[tuple[str, int]]:
                got = by_terms.get(id(et))
                if got is None:
                    got = by_terms[id(et)] = self._existing_contributions(et, pod, const_ns)
                return got

            vector_topo, sums = self._vectors.pre_score_topology(
                arrays, pod, terms, has_constraints, ns_labels, contributions,
                lambda: index_for(self.handle, self._index), getattr(self._objects(), "generation", 0))
            if not vector_topo:
                return Status.skip()
            ps = _PreScoreState(vector_topo)
            state.write(PRE_SCORE_KEY, ps)
            state.write(SCORE_VECTOR_KEY, _ScoreVectors(ps, sums))
            return None
        topo: Counts = {}

        def add(key: str, node_labels: Mapping[str, str], w: int) -> None:
            v = node_labels.get(key)
            if v is None:
                return
            by_value = topo.get(key)
            if by_value is None:
                by_value = topo[key] = {}
            by_value[v] = by_value.get(v, 0) + w

        if has_constraints:
            # The incoming pod's preferred terms, against every existing pod (through the index).
            index = index_for(self.handle, self._index)
            for sign, pref in ((1, terms.preferred_affinity), (-1, terms.preferred_anti)):
                for t in pref:
                    sel = t.selector
                    if sel is None:
                        continue
                    w = sign * t.weight
                    for sig in index.matching(sel, _in_namespaces(t, ns_labels)):
                        for name, n in index.nodes_of(sig).items():
                            node_labels = _node_labels(snapshot, name)
                            if node_labels:
                                add(t.topology_key, node_labels, w * n)
        # Existing pods' own terms, against the incoming pod: only pods with affinity have any.
        # Replicas share one parsed set of terms, evaluated once.
        memo: dict[int, list[tuple[str, int]]] = {}
        for ni in snapshot.have_pods_with_affinity:
            node = ni.node
            if node is None or not node.labels:
                continue
            labels = node.labels
            for ep in ni.pods_with_affinity:
                et = pod_terms(ep)
                contrib = memo.get(id(et))
                if contrib is None:
                    contrib = memo[id(et)] = self._existing_contributions(et, pod, const_ns)
                for key, w in contrib:
                    add(key, labels, w)
        if not topo:
            return Status.skip()
        state.write(PRE_SCORE_KEY, _PreScoreState(topo))
        return None

    def _existing_contributions(self, et: PodAffinityTerms, pod: Pod, ns: NsLabels) -> list[tuple[str, int]]:
        """(topology key, signed weight) of an existing pod's terms that the incoming pod matches."""
        out = []
        hard_weight = self.args.hardPodAffinityWeight
        if hard_weight > 0:
            out += [(t.topology_key, hard_weight) for t in et.required_affinity if t.matches(pod, ns)]
        out += [(t.topology_key, t.weight) for t in et.preferred_affinity if t.matches(pod, ns)]
        out += [(t.topology_key, -t.weight) for t in et.preferred_anti if t.matches(pod, ns)]
        return out

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        s: _PreScoreState | None = state.get(PRE_SCORE_KEY)
        if s is None:
            raise PluginError(f"failed to read {PRE_SCORE_KEY!r} from cycleState", NAME)
        node = node_info.node
        if node is None:
            return 0
        labels = node.labels
        total = 0
        for key, by_value in s.topology_score.items():
            v = labels.get(key)
            if v is not None:
                total += by_value.get(v, 0)
        return total

    def score_all(self, state: CycleState, pod: Pod, nodes: Any) -> np.ndarray | None:
        s = state.get(PRE_SCORE_KEY)
        vec = state.get(SCORE_VECTOR_KEY)
        if s is None or vec is None or vec.state is not s:
            return None
        return nodes.take(score_values(nodes.arrays, vec.sums))

    def normalize_all(self, state: CycleState, pod: Pod, nodes: Any, scores: np.ndarray) -> np.ndarray | None:
        s: _PreScoreState | None = state.get(PRE_SCORE_KEY)
        if s is None:
            return None
        if not s.topology_score or not scores.size:
            return scores
        lo, hi = int(scores.min()), int(scores.max())
        diff = hi - lo
        if diff <= 0:
            return np.zeros(scores.shape, dtype=np.int64)
        return np.trunc(MAX_NODE_SCORE * ((scores - lo) / diff)).astype(np.int64)

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        s: _PreScoreState | None = state.get(PRE_SCORE_KEY)
        if s is None:
            return Status.error(f"failed to read {PRE_SCORE_KEY!r} from cycleState")
        if not s.topology_score or not scores:
            return None
        lo = min(ns.score for ns in scores)
        hi = max(ns.score for ns in scores)
        diff = hi - lo
        for ns in scores:
            ns.score = int(MAX_NODE_SCORE * ((ns.score - lo) / diff)) if diff > 0 else 0
        return None


def _in_namespaces(term: AffinityTerm, ns_labels: NsLabels) -> Callable[[Sig], bool]:
    """The index's filter on pod signatures: those in the namespaces `term` selects."""
    return lambda sig: term.matches_ns(sig[0], ns_labels)


def _node_labels(snapshot: Any, name: str) -> Mapping[str, str] | None:
    ni = snapshot.get(name)
    node = ni.node if ni is not None else None
    return node.labels if node is not None else None


def _satisfy_pod_affinity(s: _PreFilterState, labels: Mapping[str, str]) -> bool:
    req = s.terms.required_affinity
    if not req:
        return True
    counts = s.affinity_counts
    pods_exist = True
    for t in req:
        v = labels.get(t.topology_key)
        if v is None:
            # All topology labels must exist on the node.
            return False
        if counts.get(t.topology_key, {}).get(v, 0) <= 0:
            pods_exist = False
    if pods_exist:
        return True
    # The first pod of a group whose affinity selects itself: allowed when no
    # pod anywhere matches the terms and the pod matches all of them.
    return not counts and _matches_all(req, s.pod, s.ns_labels)


PLUGINS = [InterPodAffinity]
