"""PreScore, Score and NormalizeScore of InterPodAffinity (upstream's scoring.go).

PreScore sums, per topology pair, the weights of the preferred terms (both the incoming pod's
and the existing pods') and of existing pods' required affinity terms (times
`hardPodAffinityWeight`); Score adds them up for a node's labels and NormalizeScore rescales
min..max to 0..100. With the snapshot's node arrays the sums come from vector.py and
`score_all` reads them by label code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ...framework import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    NodeInfo,
    NodeScore,
    NsLabels,
    PluginError,
    Pod,
    PodAffinityTerms,
    PreScorePlugin,
    ScorePlugin,
    Status,
    pod_affinity_terms,
)
from ...framework.vector import snapshot_arrays
from .._pod_index import PodIndex, index_for
from .args import InterPodAffinityArgs
from .common import NAME, PRE_SCORE_KEY, SCORE_VECTOR_KEY, Counts, NamespaceLabels, constant, node_labels_of
from .rules import existing_contributions, incoming_preferred, sigs_matching_all
from .state import PreScoreState
from .vector import AffinityVectors, ScoreVectors, score_values


def _has_preferred_terms(pod: Pod) -> bool:
    aff = pod.affinity or {}
    return bool(((aff.get("podAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution"))
                or ((aff.get("podAntiAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution")))


class Scoring(PreScorePlugin, ScorePlugin):
    """InterPodAffinity's scoring half; plugin.py joins it with the filtering half."""

    args: InterPodAffinityArgs
    handle: Handle
    _index: PodIndex
    _vectors: AffinityVectors

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        has_constraints = _has_preferred_terms(pod)
        if self.args.ignorePreferredTermsOfExistingPods and not has_constraints:
            return Status.skip()
        terms = pod_affinity_terms(pod)
        if terms.error:
            return Status.error(f"failed to parse pod: {terms.error}")
        ns_labels = NamespaceLabels(self.handle.objects)
        const_ns = constant(ns_labels(pod.namespace))
        hard_weight = self.args.hardPodAffinityWeight
        # Replicas share one parsed set of terms: each set's contributions are worked out once.
        by_terms: dict[int, list[tuple[str, int]]] = {}

        def contributions(et: PodAffinityTerms) -> list[tuple[str, int]]:
            got = by_terms.get(id(et))
            if got is None:
                got = by_terms[id(et)] = existing_contributions(et, pod, const_ns, hard_weight)
            return got

        arrays = snapshot_arrays(self.handle)
        if arrays is not None:
            vector_topo, sums = self._vectors.pre_score_topology(
                arrays, terms, has_constraints, ns_labels, contributions,
                lambda: index_for(self.handle), self.handle.objects.generation)
            if not vector_topo:
                return Status.skip()
            ps = PreScoreState(vector_topo)
            state.write(PRE_SCORE_KEY, ps)
            state.write(SCORE_VECTOR_KEY, ScoreVectors(ps, sums))
            return None
        topo = self._topology_score(pod, terms, has_constraints, ns_labels, contributions)
        if not topo:
            return Status.skip()
        state.write(PRE_SCORE_KEY, PreScoreState(topo))
        return None

    def _topology_score(self, pod: Pod, terms: PodAffinityTerms, has_constraints: bool, ns_labels: NsLabels,
                        contributions: Callable[[PodAffinityTerms], list[tuple[str, int]]]) -> Counts:
        snapshot = self.handle.snapshot
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
            index = index_for(self.handle)
            for t, w in incoming_preferred(terms):
                for _sig, nodes in sigs_matching_all(index, [t], ns_labels):
                    for name, n in nodes.items():
                        node_labels = node_labels_of(snapshot, name)
                        if node_labels:
                            add(t.topology_key, node_labels, w * n)
        # Existing pods' own terms, against the incoming pod: only pods with affinity have any.
        for ni in snapshot.have_pods_with_affinity:
            node = ni.node
            if node is None or not node.labels:
                continue
            labels = node.labels
            for ep in ni.pods_with_affinity:
                for key, w in contributions(pod_affinity_terms(ep)):
                    add(key, labels, w)
        return topo

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        s: PreScoreState | None = state.get(PRE_SCORE_KEY)
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
        s: PreScoreState | None = state.get(PRE_SCORE_KEY)
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
        s: PreScoreState | None = state.get(PRE_SCORE_KEY)
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
