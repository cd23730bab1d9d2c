"""PreFilter, AddPod / RemovePod and Filter of InterPodAffinity (upstream's filtering.go).

PreFilter counts, per topology pair, the existing pods that concern the incoming pod (see
`PreFilterState`); Filter is then a few dict lookups per node. Existing pods are matched
against the incoming pod's terms through the shared label index (`_pod_index`), so the work
follows the matching pods, not all pods; replicas share one parsed set of terms, evaluated
once per cycle. With the snapshot's node arrays, the counts come from vector.py instead and
`filter_all` decides for every node at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...framework import (
    CycleState,
    FilterPlugin,
    Handle,
    NodeInfo,
    Pod,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    Status,
    pod_affinity_terms,
)
from ...framework.vector import snapshot_arrays
from .._pod_index import PodIndex, index_for
from .common import (
    ERR_AFFINITY,
    ERR_ANTI_AFFINITY,
    ERR_EXISTING_ANTI_AFFINITY,
    NAME,
    PRE_FILTER_KEY,
    VECTOR_KEY,
    NamespaceLabels,
    constant,
    node_labels_of,
    update_counts,
)
from .rules import existing_anti_keys, first_of_group, sigs_matching_all
from .state import PreFilterState
from .vector import (
    AFFINITY_UNMET,
    ANTI_AFFINITY_UNMET,
    EXISTING_ANTI_AFFINITY_UNMET,
    PASSES,
    AffinityVectors,
    filter_mask,
    rejection_kinds,
)


class Filtering(PreFilterPlugin, FilterPlugin, PreFilterExtensions):
    """InterPodAffinity's filtering half; plugin.py joins it with the scoring half."""

    handle: Handle
    _index: PodIndex
    _vectors: AffinityVectors

    # ---- PreFilter ----------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        terms = pod_affinity_terms(pod)
        if terms.error:
            return None, Status.unresolvable(f"parsing pod: {terms.error}")
        ns_labels = NamespaceLabels(self.handle.objects)
        own_ns_labels = ns_labels(pod.namespace)
        s = PreFilterState(pod, terms, own_ns_labels, ns_labels)
        snapshot = self.handle.snapshot
        const_ns = constant(own_ns_labels)
        arrays = snapshot_arrays(self.handle)
        if arrays is not None:
            vec = self._vectors.pre_filter_counts(
                arrays, pod, s, ns_labels, const_ns, lambda: index_for(self.handle),
                self.handle.objects.generation)
            if s.nothing_to_check():
                return None, Status.skip()
            state.write(PRE_FILTER_KEY, s)
            state.write(VECTOR_KEY, vec)
            return None, None

        # Existing pods whose required anti-affinity matches the incoming pod, per distinct set
        # of terms (replicas share one): the topology keys whose term matches us.
        existing = s.existing_anti_affinity_counts
        memo: dict[int, list[str]] = {}
        for ni in snapshot.have_pods_with_required_anti_affinity:
            node = ni.node
            if node is None:
                continue
            for ep in ni.pods_with_required_anti_affinity:
                et = pod_affinity_terms(ep)
                keys = memo.get(id(et))
                if keys is None:
                    keys = memo[id(et)] = existing_anti_keys(et, pod, const_ns)
                for key in keys:
                    update_counts(existing, node.labels, key, 1)

        if terms.required_affinity or terms.required_anti:
            self._incoming_counts(s, index_for(self.handle), snapshot)

        if s.nothing_to_check():
            return None, Status.skip()
        state.write(PRE_FILTER_KEY, s)
        return None, None

    @staticmethod
    def _incoming_counts(s: PreFilterState, index: PodIndex, snapshot: Any) -> None:
        """Existing pods matching all the incoming pod's affinity terms / each anti-affinity term,
        counted per topology pair of their nodes (upstream's affinityCounts / antiAffinityCounts)."""
        ns_labels = s.ns_labels
        req_aff = s.terms.required_affinity
        if req_aff:
            keys = [t.topology_key for t in req_aff]
            for _sig, nodes in sigs_matching_all(index, req_aff, ns_labels):
                for name, n in nodes.items():
                    node_labels = node_labels_of(snapshot, name)
                    if node_labels is not None:
                        for key in keys:
                            update_counts(s.affinity_counts, node_labels, key, n)
        for t in s.terms.required_anti:
            for _sig, nodes in sigs_matching_all(index, [t], ns_labels):
                for name, n in nodes.items():
                    node_labels = node_labels_of(snapshot, name)
                    if node_labels is not None:
                        update_counts(s.anti_affinity_counts, node_labels, t.topology_key, n)

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
        s: PreFilterState | None = state.get(PRE_FILTER_KEY)
        if s is None:
            return Status.error(f"reading {PRE_FILTER_KEY!r} from cycleState: not found")
        node = node_info.node
        if node is None:
            return Status.error("node not found")
        labels = node.labels
        if not _satisfies_pod_affinity(s, labels):
            return _AFFINITY_UNMET
        anti = s.anti_affinity_counts
        if anti:
            for t in s.terms.required_anti:
                v = labels.get(t.topology_key)
                if v is not None and anti.get(t.topology_key, {}).get(v, 0) > 0:
                    return _ANTI_AFFINITY_UNMET
        existing = s.existing_anti_affinity_counts
        if existing:
            for key, by_value in existing.items():
                v = labels.get(key)
                if v is not None and by_value.get(v, 0) > 0:
                    return _EXISTING_ANTI_AFFINITY_UNMET
        return None

    def filter_all(self, state: CycleState, pod: Pod, nodes: Any) -> np.ndarray | None:
        """`filter` for every node of a NodeView, from what the vectorised PreFilter kept."""
        s = state.get(PRE_FILTER_KEY)
        vec = state.get(VECTOR_KEY)
        if s is None or vec is None or vec.state is not s:
            return None
        return nodes.take(filter_mask(nodes.arrays, s, vec))

    def filter_statuses(self, state: CycleState, pod: Pod, arrays: Any, rows: np.ndarray) -> list[Status] | None:
        """`filter`'s three rejections, one shared status each, for rows `filter_all` rejected."""
        s = state.get(PRE_FILTER_KEY)
        vec = state.get(VECTOR_KEY)
        if s is None or vec is None or vec.state is not s or arrays.missing[rows].any():
            return None
        kinds = rejection_kinds(arrays, s, vec, rows)
        if (kinds == PASSES).any():
            return None  # the mask and this disagree: `filter` row by row tells
        return [_BY_KIND[k] for k in kinds.tolist()]


# One status per reason, shared by every node that fails it (a node's status is never changed
# after Filter but for its plugin name, which is this plugin's in every case).
_AFFINITY_UNMET = Status.unresolvable(ERR_AFFINITY, plugin=NAME)
_ANTI_AFFINITY_UNMET = Status.unschedulable(ERR_ANTI_AFFINITY, plugin=NAME)
_EXISTING_ANTI_AFFINITY_UNMET = Status.unschedulable(ERR_EXISTING_ANTI_AFFINITY, plugin=NAME)
_BY_KIND = {AFFINITY_UNMET: _AFFINITY_UNMET, ANTI_AFFINITY_UNMET: _ANTI_AFFINITY_UNMET,
            EXISTING_ANTI_AFFINITY_UNMET: _EXISTING_ANTI_AFFINITY_UNMET}


def _satisfies_pod_affinity(s: PreFilterState, labels: Mapping[str, str]) -> bool:
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
    return pods_exist or first_of_group(counts, req, s.pod, s.ns_labels)
