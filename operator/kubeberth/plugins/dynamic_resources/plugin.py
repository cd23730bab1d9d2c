"""DynamicResources (DRA): devices for pods from ResourceSlices, as kube-scheduler v1.37 does it.

PreEnqueue holds a pod back until the claims it names exist; PreFilter reads the claims and
classes and sets up an allocator over the cluster's slices and the devices already allocated
(in the API or in flight between Reserve and PreBind); Filter allocates on the node; Score favours
the earlier firstAvailable subrequests; Reserve keeps the node's allocation in flight, so that no
other pod gets the same devices; PreBind writes the allocation and `reservedFor` to the claims'
status through the ClusterClient; PostFilter deallocates a claim that keeps the pod off every node,
and PodGroupPostFilter does it for each pod of a pod group that could not be placed.
Reasons are upstream's, word for word. The writes (PreBind, PostFilter, PodGroupPostFilter,
Unreserve's) are binding.py's, the base of the plugin class; its CycleState is state.py's.

Upstream's PostFilter runs before DefaultPreemption and reads the PreFilter state; when an earlier
PreFilter rejected the pod the state was never written, and the read's error ends upstream's
FailedScheduling message ("... not found") with no preemption part: so here.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...framework.cycle_state import CycleState
from ...framework.events import ClusterEvent, ClusterEventWithHint
from ...framework.interfaces import (
    FilterPlugin,
    Handle,
    PreEnqueuePlugin,
    PreFilterPlugin,
    ReservePlugin,
    ScorePlugin,
)
from ...framework.status import Status
from ...framework.types import NodeScore, PreFilterResult
from ...framework.vector import AllNodes, NodeView, default_normalize_all, zero_scores
from ...model import NodeInfo, Pod
from .._helper import default_normalize_score
from . import counts, extended, queueing_hints
from .allocator import AllocationError, Allocator, kobj
from .binding import ClaimBinding
from .claims import (
    DEVICE_CLASS,
    FINALIZER,
    RESOURCE_CLAIM,
    ClaimRefError,
    allocation,
    allocation_selector,
    check_for_pod,
    claim_uid,
    is_reserved_for_pod,
    pod_claim_refs,
)
from .requests import FIRST_AVAILABLE_MAX, claim_requests
from .state import NAME, NO_CLAIMS, STATE_KEY, STATE_NOT_FOUND, State
from .tracker import AllocationTracker


class DynamicResources(PreEnqueuePlugin, PreFilterPlugin, FilterPlugin, ScorePlugin, ReservePlugin, ClaimBinding):
    name = NAME
    has_normalize = True

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self.handle = handle
        # Claims allocated in Reserve whose allocation is not in the API yet (upstream's
        # inFlightAllocations), by claim UID.
        self.in_flight: dict[str, dict[str, Any]] = {}
        self.tracker = AllocationTracker()
        self._tasks: set[asyncio.Task[None]] = set()

    def events_to_register(self) -> list[ClusterEvent | ClusterEventWithHint]:
        return queueing_hints.registrations(self._pod_claims)

    # ---- the claims a pod names -----------------------------------------------------------------
    def _claim(self, namespace: str, name: str) -> Mapping[str, Any]:
        claim = self._objects().get(RESOURCE_CLAIM, f"{namespace}/{name}")
        if claim is None:
            raise ClaimRefError(f'could not find ResourceClaim "{namespace}/{name}"')
        return claim

    def _pod_claims(self, pod: Pod) -> list[Mapping[str, Any]]:
        out = []
        for _, name, must_check_owner in pod_claim_refs(pod):
            if name is None:
                continue
            claim = self._claim(pod.namespace, name)
            if (claim.get("metadata") or {}).get("deletionTimestamp"):
                raise ClaimRefError(f'resourceclaim "{name}" is being deleted')
            if must_check_owner:
                check_for_pod(claim, pod)
            out.append(claim)
        return out

    def pre_enqueue_scope(self, pod: Pod) -> str:
        # without claims it lets the pod through whatever the cluster holds; with them, it reads the claims
        return self.SCOPE_ANY if pod.spec.get("resourceClaims") else self.SCOPE_POD

    def pre_enqueue(self, pod: Pod) -> Status | None:
        if not pod.spec.get("resourceClaims"):
            return None
        try:
            self._pod_claims(pod)
        except ClaimRefError as exc:
            return Status.unresolvable(str(exc))
        return None

    # ---- PreFilter ------------------------------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        objects = self._objects() if self.handle is not None and pod.requests.scalar else None
        delegated = extended.delegated_resources(objects, pod)
        if not delegated and not pod.spec.get("resourceClaims"):
            state.write(STATE_KEY, NO_CLAIMS)  # what the later points read: nothing to do
            return None, Status.skip()
        objects = self._objects() if self.handle is not None else None
        s = State()
        state.write(STATE_KEY, s)
        s.extended = delegated
        try:
            claims = self._pod_claims(pod)
        except ClaimRefError as exc:
            return None, Status.unresolvable(str(exc))
        if s.extended:
            made = extended.find_claim(objects, pod)
            if made is None:
                s.extended_index = len(claims)
            claims.append(made or extended.special_claim(pod))
        if not claims:
            return None, Status.skip()
        s.claims = claims
        for index, claim in enumerate(claims):
            requests = claim_requests(claim)
            if any(r.parent for _, alternatives in requests for r in alternatives):
                s.prioritized[index] = requests
        for index, claim in enumerate(claims):
            alloc = allocation(claim)
            if alloc is not None:
                try:
                    s.available_on.append(allocation_selector(alloc))
                except ClaimRefError as exc:
                    return None, Status.error(str(exc))
                continue
            s.available_on.append(None)
            s.to_allocate.append(index)
            if claim_uid(claim) in self.in_flight:
                return None, Status.unresolvable(f"resource claim {kobj(claim)} is in the process of being allocated")
            if index == s.extended_index:
                continue  # its requests depend on the node: Filter makes them
            for name, alternatives in claim_requests(claim):
                if not alternatives:
                    return None, Status.unresolvable(
                        f"resource claim {kobj(claim)}, request {name}: unknown request type")
                for req in alternatives:
                    status = self._validate_class(req.class_name, req.full_name)
                    if status is not None:
                        return None, status
        if s.to_allocate:
            s.allocator = self._allocator()
        return None, None

    def _validate_class(self, class_name: str, request: str) -> Status | None:
        if not class_name:
            return Status.error(f"request {request}: unsupported request type")
        if self._objects().get(DEVICE_CLASS, class_name) is None:
            return Status.unresolvable(f"request {request}: device class {class_name} does not exist")
        return None

    def _allocator(self) -> Allocator:
        return self.tracker.allocator(self._objects(), self.in_flight)

    # ---- Filter ---------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = state.get(STATE_KEY)
        if not isinstance(s, State):
            return Status.error(STATE_NOT_FOUND)
        if not s.claims:
            return None
        node = node_info.node
        if node is None:
            return Status.error("node not found")
        to_allocate = {i: s.claims[i] for i in s.to_allocate}
        if s.extended_index is not None:
            built = extended.node_requests(self._objects(), pod, node_info, s.extended)
            if isinstance(built, str):
                return Status.unresolvable(built)
            if built[0]:
                made = {**s.claims[s.extended_index], "spec": {"devices": {"requests": built[0]}}}
                to_allocate[s.extended_index] = made
                s.node_extended[node.name] = (made, built[1])
            else:  # the node's device plugins serve them all
                del to_allocate[s.extended_index]
                if len(s.claims) == 1:
                    return None
        unavailable = [i for i, sel in enumerate(s.available_on)
                       if sel is not None and not sel.matches(node.name, node.labels)]
        allocations: dict[int, dict[str, Any]] = {}
        if s.allocator is not None and to_allocate:
            try:
                result = s.allocator.allocate(node, list(to_allocate.values()))
            except AllocationError as exc:
                return Status.unresolvable(str(exc)) if exc.on_node else Status.error(str(exc))
            if result is None or len(result) != len(to_allocate):
                return Status.unresolvable("cannot allocate all claims")
            allocations = dict(zip(to_allocate, result, strict=True))
        if unavailable:
            s.unavailable.update(unavailable)
            return Status.unresolvable("resourceclaim not available on the node")
        if s.allocator is not None:
            s.node_allocations[node.name] = allocations
        return None

    def filter_all(self, state: CycleState, pod: Pod, nodes: NodeView | AllNodes) -> np.ndarray | None:
        """Filter over every node at once where the free devices per node decide it (counts.py):
        the nodes whose free eligible devices are too few fail (their status comes from
        `filter`), the others pass without a search; Reserve then allocates on its node only.
        None (the per-node path) for claims or nodes the counts do not describe exactly."""
        s = state.get(STATE_KEY)
        if not isinstance(s, State) or not s.claims or s.extended_index is not None or nodes.idx is not None:
            return None
        n = len(nodes)
        arrays = nodes.arrays
        ok = ~arrays.missing
        for sel in s.available_on:
            if sel is not None:
                ok &= np.fromiter((ni.node is not None and sel.matches(ni.node.name, ni.node.labels)
                                   for ni in nodes), dtype=bool, count=n)
        allocator = s.allocator
        if allocator is None or not s.to_allocate:
            return ok
        if allocator.index.label_dependent:
            return None
        if s.plain is None:
            plain = counts.plain_requests(allocator, [s.claims[i] for i in s.to_allocate],
                                          lambda name: self._objects().get(DEVICE_CLASS, name))
            if plain is None or len(plain) != 1:
                return None
            s.plain = plain
        pred, want = s.plain[0]
        free, invalid = counts.free_counts(allocator.index, pred, nodes, arrays.names, arrays.node_version,
                                           allocator.allocated, allocator.shared)
        undecided = ok & (free == counts.COMPLEX)
        s.count_rejects = ok & ~undecided & (free < want)
        s.invalid_rows = invalid
        ok &= free >= want
        if undecided.any():
            rows = np.flatnonzero(undecided)
            if len(rows) > max(8, n // 4):
                return None  # the per-node walk may stop well before all of them
            for i in rows.tolist():
                ok[i] = self.filter(state, pod, nodes[i]) is None
        s.lazy_nodes = (nodes, arrays.pos)
        return ok

    def filter_statuses(self, state: CycleState, pod: Pod, arrays: Any, rows: np.ndarray) -> list[Status] | None:
        """The statuses of rows filter_all rejected on the counts alone: the search would have
        failed there, naming the invalid pools when the node has some (as `filter`)."""
        s = state.get(STATE_KEY)
        if not isinstance(s, State) or s.count_rejects is None or s.invalid_rows is None:
            return None
        if not s.count_rejects[rows].all():
            return None
        fail = Status.unresolvable("cannot allocate all claims")
        bad = s.invalid_rows[rows]
        if not bad.any():
            return [fail] * len(rows)
        invalid = Status.unresolvable("invalid resource pools were encountered")
        return [invalid if b else fail for b in bad.tolist()]

    # ---- Score ----------------------------------------------------------------------------------
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        s = state.get(STATE_KEY)
        if not isinstance(s, State) or not s.claims:
            return 0
        allocations = s.node_allocations.get(node_info.node.name) if node_info.node is not None else None
        if allocations is None:
            return 0
        score = 0
        for index, claim in enumerate(s.claims):
            requests = s.prioritized.get(index)
            if requests is None:
                continue  # only prioritized lists (firstAvailable) score
            alloc = allocation(claim) or allocations.get(index) or {}
            chosen = {str(r.get("request")) for r in (alloc.get("devices") or {}).get("results") or ()
                      if "/" in str(r.get("request"))}
            for name, alternatives in requests:
                for i, req in enumerate(alternatives):
                    if req.parent and f"{name}/{req.name}" in chosen:
                        score += FIRST_AVAILABLE_MAX - i
        return score

    def score_all(self, state: CycleState, pod: Pod, nodes: NodeView) -> np.ndarray | None:
        """Every node scores 0 for a pod without claims (most pods) or without firstAvailable
        requests (only those score): no per-node call needed."""
        s = state.get(STATE_KEY)
        if isinstance(s, State) and s.claims and s.prioritized:
            return None
        return zero_scores(len(nodes))

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        default_normalize_score(100, False, scores)
        return None

    def normalize_all(self, state: CycleState, pod: Pod, nodes: NodeView, scores: np.ndarray) -> np.ndarray | None:
        return default_normalize_all(100, False, scores)

    # ---- Reserve / Unreserve --------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        s = state.get(STATE_KEY)
        if not isinstance(s, State) or not s.claims or not s.to_allocate:
            return None
        allocations = s.node_allocations.get(node_name)
        if allocations is None and s.lazy_nodes is not None:
            allocations = self._allocate_lazily(s, node_name)
        if allocations is None:
            if s.to_allocate == [s.extended_index]:
                return None  # only extended resources, all served by the node's device plugins
            return Status.error("claim allocation not found for node")
        for index in s.to_allocate:
            alloc = allocations.get(index)
            if alloc is None:
                if index == s.extended_index:
                    continue
                return Status.error(f"internal error, have {len(allocations)} allocations, "
                                    f"{len(s.to_allocate)} claims to allocate")
            s.pending[index] = alloc
            claim = copy.deepcopy(dict(s.node_extended[node_name][0] if index == s.extended_index
                                       else s.claims[index]))
            finalizers = claim.setdefault("metadata", {}).setdefault("finalizers", [])
            if FINALIZER not in finalizers:
                finalizers.append(FINALIZER)
            claim.setdefault("status", {})["allocation"] = alloc
            self.in_flight[claim_uid(claim)] = claim
        return None

    def _allocate_lazily(self, s: State, node_name: str) -> dict[int, dict[str, Any]] | None:
        """The allocation Filter would have found on the node filter_all passed: the same search
        over the same allocator (nothing was reserved since PreFilter built it)."""
        assert s.lazy_nodes is not None
        nodes, pos = s.lazy_nodes
        row = pos.get(node_name)
        node = nodes[row].node if row is not None else None
        if node is None or s.allocator is None:
            return None
        try:
            result = s.allocator.allocate(node, [s.claims[i] for i in s.to_allocate])
        except AllocationError:
            return None
        if result is None or len(result) != len(s.to_allocate):
            return None
        allocations = dict(zip(s.to_allocate, result, strict=True))
        s.node_allocations[node_name] = allocations
        return allocations

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        s = state.get(STATE_KEY)
        if not isinstance(s, State):
            return
        for claim in s.claims:
            self.in_flight.pop(claim_uid(claim), None)
            if allocation(claim) is not None and is_reserved_for_pod(claim, pod):
                self._background(self._unreserve_claim(claim, pod))
        s.pending.clear()

