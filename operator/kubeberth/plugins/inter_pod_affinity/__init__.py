"""InterPodAffinity: required and preferred pod (anti-)affinity, as upstream.

Shaped as upstream's framework/plugins/interpodaffinity:
- plugin.py: the plugin class, joining filtering.py (PreFilter, AddPod/RemovePod, Filter) and
  scoring.py (PreScore, Score, NormalizeScore); args.py its arguments;
- state.py: what PreFilter / PreScore leave in CycleState;
- rules.py: which pods and terms count, for the per-node path and the vectorised one
  (vector.py, over the snapshot's node arrays) alike; common.py: names and counts.
A pod's terms are parsed once, in model/affinity_terms.py (the queue uses the same parse).

Where this differs from kube-scheduler, on purpose:
- matchLabelKeys / mismatchLabelKeys are folded into the selector (see model/affinity_terms.py).
- A namespaceSelector of the incoming pod is evaluated against each existing pod's namespace
  labels instead of being expanded to the listed Namespace objects first; the same pods match
  whenever their namespaces exist.
"""

from ...framework import AffinityTerm, NsLabels, PodAffinityTerms
from ...framework import pod_affinity_terms as pod_terms
from .args import InterPodAffinityArgs
from .common import (
    ERR_AFFINITY,
    ERR_ANTI_AFFINITY,
    ERR_EXISTING_ANTI_AFFINITY,
    NAME,
    PRE_FILTER_KEY,
    PRE_SCORE_KEY,
    SCORE_VECTOR_KEY,
    VECTOR_KEY,
    Counts,
)
from .plugin import InterPodAffinity

PLUGINS = [InterPodAffinity]

__all__ = [
    "ERR_AFFINITY", "ERR_ANTI_AFFINITY", "ERR_EXISTING_ANTI_AFFINITY", "NAME", "PLUGINS", "PRE_FILTER_KEY",
    "PRE_SCORE_KEY", "SCORE_VECTOR_KEY", "VECTOR_KEY", "AffinityTerm", "Counts", "InterPodAffinity",
    "InterPodAffinityArgs", "NsLabels", "PodAffinityTerms", "pod_terms",
]
