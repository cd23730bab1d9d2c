"""What PreFilter and PreScore leave in CycleState for Filter and Score."""

from __future__ import annotations

from collections.abc import Mapping

from ...framework import NsLabels, Pod, PodAffinityTerms, pod_affinity_terms
from .common import Counts, clone_counts, constant, update_counts
from .rules import existing_anti_keys, matches_all


class PreFilterState:
    """Counts per topology pair (upstream's preFilterState):
    - `existing_anti_affinity_counts`: existing pods whose required anti-affinity terms select
      the incoming pod, by those terms' topology keys;
    - `affinity_counts`: existing pods that match all the incoming pod's required affinity terms;
    - `anti_affinity_counts`: existing pods matching each of its required anti-affinity terms.
    AddPod / RemovePod change them on a clone (nominated pods, preemption)."""

    __slots__ = ("affinity_counts", "anti_affinity_counts", "existing_anti_affinity_counts",
                 "namespace_labels", "ns_labels", "pod", "terms")

    def __init__(self, pod: Pod, terms: PodAffinityTerms, namespace_labels: Mapping[str, str],
                 ns_labels: NsLabels) -> None:
        self.pod = pod
        self.terms = terms
        self.namespace_labels = namespace_labels  # the incoming pod's namespace's
        self.ns_labels = ns_labels
        self.existing_anti_affinity_counts: Counts = {}
        self.affinity_counts: Counts = {}
        self.anti_affinity_counts: Counts = {}

    def nothing_to_check(self) -> bool:
        """No existing pod's anti-affinity concerns the pod and it has no required terms: Skip."""
        return not self.existing_anti_affinity_counts and not self.terms.required_affinity \
            and not self.terms.required_anti

    def clone(self) -> PreFilterState:
        c = PreFilterState(self.pod, self.terms, self.namespace_labels, self.ns_labels)
        c.existing_anti_affinity_counts = clone_counts(self.existing_anti_affinity_counts)
        c.affinity_counts = clone_counts(self.affinity_counts)
        c.anti_affinity_counts = clone_counts(self.anti_affinity_counts)
        return c

    def update_with_pod(self, other: Pod, node_labels: Mapping[str, str], delta: int) -> None:
        """Count `other` on a node with `node_labels` in (delta 1) or out (delta -1)."""
        for key in existing_anti_keys(pod_affinity_terms(other), self.pod, constant(self.namespace_labels)):
            update_counts(self.existing_anti_affinity_counts, node_labels, key, delta)
        req_aff = self.terms.required_affinity
        if req_aff and matches_all(req_aff, other, self.ns_labels):
            for t in req_aff:
                update_counts(self.affinity_counts, node_labels, t.topology_key, delta)
        for t in self.terms.required_anti:
            if t.matches(other, self.ns_labels):
                update_counts(self.anti_affinity_counts, node_labels, t.topology_key, delta)


class PreScoreState:
    """topology key -> label value -> summed weight (upstream's preScoreState.topologyScore)."""

    __slots__ = ("topology_score",)

    def __init__(self, topology_score: Counts) -> None:
        self.topology_score = topology_score

    def clone(self) -> PreScoreState:
        return self
