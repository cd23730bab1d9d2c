"""Which pods and terms count, and for what: the rules the per-node path (filtering.py,
scoring.py) and the vectorised path (vector.py) both follow, so that they cannot drift apart.
The paths differ only in how they add up what these rules select."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from ...framework import AffinityTerm, NsLabels, Pod, PodAffinityTerms
from .._pod_index import PodIndex, Sig
from .common import Counts, in_namespaces


def matches_all(terms: Sequence[AffinityTerm], pod: Pod, ns_labels: NsLabels) -> bool:
    """An existing pod counts for the incoming pod's required affinity when it matches every
    term (upstream's podMatchesAllAffinityTerms); no terms match no pod."""
    if not terms:
        return False
    return all(t.matches(pod, ns_labels) for t in terms)


def existing_anti_keys(existing: PodAffinityTerms, incoming: Pod, incoming_ns: NsLabels) -> list[str]:
    """Topology keys of an existing pod's required anti-affinity terms that select the incoming
    pod: the domains of those keys on the existing pod's node are closed to the incoming pod."""
    return [t.topology_key for t in existing.required_anti if t.matches(incoming, incoming_ns)]


def sigs_matching_all(index: PodIndex, terms: Sequence[AffinityTerm],
                      ns_labels: NsLabels) -> Iterator[tuple[Sig, Mapping[str, int]]]:
    """The pods (terminating ones too) that every one of `terms` selects, by label signature,
    with their counts per node name; none when the first term has no selector."""
    first = terms[0]
    if first.selector is None:
        return
    rest = terms[1:]
    for sig in index.matching(first.selector, in_namespaces(first, ns_labels)):
        if rest:
            labels = index.labels(sig)
            if not all(t.matches_labels(sig[0], labels, ns_labels) for t in rest):
                continue
        yield sig, index.nodes_of(sig)


def first_of_group(affinity_counts: Counts, required: Sequence[AffinityTerm], pod: Pod,
                   ns_labels: NsLabels) -> bool:
    """The exception to required affinity: no pod anywhere matches the terms and the incoming
    pod matches all of them itself (the first pod of a group whose affinity selects itself)."""
    return not affinity_counts and matches_all(required, pod, ns_labels)


def incoming_preferred(terms: PodAffinityTerms) -> list[tuple[AffinityTerm, int]]:
    """The incoming pod's preferred terms that can select pods, with their signed weights
    (affinity adds, anti-affinity subtracts)."""
    out = [(t, t.weight) for t in terms.preferred_affinity if t.selector is not None]
    out += [(t, -t.weight) for t in terms.preferred_anti if t.selector is not None]
    return out


def existing_contributions(existing: PodAffinityTerms, incoming: Pod, incoming_ns: NsLabels,
                           hard_weight: int) -> list[tuple[str, int]]:
    """(topology key, signed weight) of an existing pod's terms that select the incoming pod:
    its required affinity (times hardPodAffinityWeight, when > 0) and its preferred terms."""
    out = []
    if hard_weight > 0:
        out += [(t.topology_key, hard_weight) for t in existing.required_affinity if t.matches(incoming, incoming_ns)]
    out += [(t.topology_key, t.weight) for t in existing.preferred_affinity if t.matches(incoming, incoming_ns)]
    out += [(t.topology_key, -t.weight) for t in existing.preferred_anti if t.matches(incoming, incoming_ns)]
    return out
