"""PodTopologySpread: hard (DoNotSchedule) and soft (ScheduleAnyway) spread constraints, as upstream.

PreFilter counts matching pods per eligible topology domain of each hard
constraint (nodes must carry all the constraints' topology keys and pass the
node inclusion policies); Filter checks
`count(domain of node) + self-match - global minimum <= maxSkew`, with the
global minimum taken as 0 while fewer than `minDomains` domains exist.

PreScore counts per domain for the soft constraints (per node for
`kubernetes.io/hostname`, done in Score); Score is
`sum(count * log(domains + 2) + maxSkew - 1)`, and NormalizeScore maps it so
that fewer matching pods give a higher score.

Pods without constraints of their own get the plugin's default constraints
(upstream's system defaults unless `defaultingType: List`), with a selector
built from the Services selecting the pod and its controlling ReplicaSet,
ReplicationController or StatefulSet.

Counting goes through the shared label index (`_pod_index`): per constraint the
matching pods per node come from the few signatures that match its selector.

Where this differs from kube-scheduler, on purpose: the global minimum kept for
AddPod/RemovePod is exact, where upstream keeps two "critical paths" that can
miss the true minimum after several updates (and depend on map order).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
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
from ..framework.vector import arrays_for
from ..model import LabelSelector, ModelError, Node, NodeInfo, Pod, Requirement, find_untolerated
from ._labels import qualified_name_errors, validate_selector
from ._pod_index import PodIndex, index_for
from ._spread_vector import SpreadVectors, filter_mask

NAME = "PodTopologySpread"
PRE_FILTER_KEY = "PreFilter" + NAME
PRE_SCORE_KEY = "PreScore" + NAME

ERR_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_NODE_LABEL_NOT_MATCH = ERR_CONSTRAINTS_NOT_MATCH + " (missing required label)"

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_ZONE = "topology.kubernetes.io/zone"
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"

SYSTEM_DEFAULT_CONSTRAINTS: list[dict[str, Any]] = [
    {"topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": LABEL_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
]

_CACHE_KEY = NAME
_DEFAULT_SEL_KEY = NAME + ".defaultSelector"
_INVALID_SCORE = -1

# ---- args -----------------------------------------------------------------------

class DefaultConstraint(BaseModel):
    """One v1.TopologySpreadConstraint of PodTopologySpreadArgs.defaultConstraints."""

    model_config = ConfigDict(extra="forbid", validate_default=True)
    maxSkew: int = 0
    topologyKey: str = ""
    whenUnsatisfiable: str = ""
    labelSelector: dict[str, Any] | None = None
    minDomains: int | None = None
    nodeAffinityPolicy: str | None = None
    nodeTaintsPolicy: str | None = None
    matchLabelKeys: list[str] | None = None

    @field_validator("maxSkew")
    @classmethod
    def _max_skew(cls, v: int) -> int:
        if v <= 0:
            raise ValueError(f"Invalid value: {v}: not in valid range")
        return v

    @field_validator("topologyKey")
    @classmethod
    def _topology_key(cls, v: str) -> str:
        if not v:
            raise ValueError("Required value: can not be empty")
        errs = qualified_name_errors(v)
        if errs:
            raise ValueError(f"Invalid value: {v!r}: {'; '.join(errs)}")
        return v

    @field_validator("whenUnsatisfiable")
    @classmethod
    def _when(cls, v: str) -> str:
        if not v:
            raise ValueError("Required value: can not be empty")
        if v not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            raise ValueError(f'Unsupported value: "{v}": supported values: "{DO_NOT_SCHEDULE}", "{SCHEDULE_ANYWAY}"')
        return v

    @field_validator("labelSelector")
    @classmethod
    def _no_selector(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v is not None:
            raise ValueError("Forbidden: constraint must not define a selector, as they deduced for each pod")
        return v


class PodTopologySpreadArgs(BaseModel):
    """Upstream's PodTopologySpreadArgs (kubescheduler.config.k8s.io/v1); defaultingType defaults to System."""

    model_config = ConfigDict(extra="forbid", validate_default=True)
    defaultConstraints: list[DefaultConstraint] = []
    defaultingType: str = "System"

    @field_validator("defaultConstraints")
    @classmethod
    def _not_repeated(cls, v: list[DefaultConstraint]) -> list[DefaultConstraint]:
        seen: set[tuple[str, str]] = set()
        for i, c in enumerate(v):
            key = (c.topologyKey, c.whenUnsatisfiable)
            if key in seen:
                raise ValueError(f'[{i}]: Duplicate value: "{{{c.topologyKey}, {c.whenUnsatisfiable}}}"')
            seen.add(key)
        return v

    @field_validator("defaultingType")
    @classmethod
    def _defaulting(cls, v: str, info: Any) -> str:
        if v not in ("System", "List"):
            raise ValueError(f'Unsupported value: "{v}": supported values: "List", "System"')
        if v == "System" and info.data.get("defaultConstraints"):
            raise ValueError('Invalid value: "System": when .defaultConstraints are not empty')
        return v


# ---- selectors and constraints --------------------------------------------------


class Selector:
    """labels.Selector as the plugin uses it: `Nothing` (nil labelSelector), or requirements
    ANDed (no requirements: everything, which upstream treats as "empty" and counts no pods)."""

    __slots__ = ("nothing", "selector")

    def __init__(self, selector: LabelSelector | None) -> None:
        self.nothing = selector is None
        self.selector = selector

    def empty(self) -> bool:
        return self.selector is not None and self.selector.is_empty()

    def matches(self, labels: Mapping[str, str]) -> bool:
        sel = self.selector
        return sel is not None and sel.matches(labels)

    def add(self, match_labels: Mapping[str, str], requirements: Sequence[Requirement] = ()) -> Selector:
        if self.selector is None:
            return self
        merged = dict(self.selector.match_labels)
        reqs = list(self.selector.requirements)
        for k, v in match_labels.items():
            if k in merged and merged[k] != v:
                reqs.append(Requirement(k, "In", [v]))
            else:
                merged[k] = v
        reqs.extend(requirements)
        return Selector(LabelSelector(merged, reqs))

    def __repr__(self) -> str:
        if self.selector is None:
            return "Selector(nothing)"
        return f"Selector({self.selector.match_labels}, {len(self.selector.requirements)} reqs)"


class Constraint:
    """The internal form of a v1.TopologySpreadConstraint with its selector parsed."""

    __slots__ = ("max_skew", "min_domains", "node_affinity_policy", "node_taints_policy", "selector",
                 "topology_key")

    def __init__(self, max_skew: int, topology_key: str, selector: Selector, min_domains: int = 1,
                 node_affinity_policy: str = HONOR, node_taints_policy: str = IGNORE) -> None:
        self.max_skew = max_skew
        self.topology_key = topology_key
        self.selector = selector
        self.min_domains = min_domains
        self.node_affinity_policy = node_affinity_policy
        self.node_taints_policy = node_taints_policy

    def with_selector(self, selector: Selector) -> Constraint:
        return Constraint(self.max_skew, self.topology_key, selector, self.min_domains,
                          self.node_affinity_policy, self.node_taints_policy)

    def matches_node_inclusion_policies(self, pod: Pod, node: Node) -> bool:
        if self.node_affinity_policy == HONOR and not required_node_affinity_matches(pod, node):
            return False
        if self.node_taints_policy == HONOR and find_untolerated(node.taints, pod.tolerations) is not None:
            return False
        return True

    def __repr__(self) -> str:
        return f"Constraint({self.topology_key}, maxSkew={self.max_skew}, minDomains={self.min_domains})"


class _Policies:
    """A node's verdicts on the incoming pod's node affinity and taints, computed at most once."""

    __slots__ = ("_affinity", "_node", "_pod", "_taints")

    def __init__(self, pod: Pod, node: Node) -> None:
        self._pod = pod
        self._node = node
        self._affinity: bool | None = None
        self._taints: bool | None = None

    def include(self, c: Constraint) -> bool:
        if c.node_affinity_policy == HONOR:
            if self._affinity is None:
                self._affinity = required_node_affinity_matches(self._pod, self._node)
            if not self._affinity:
                return False
        if c.node_taints_policy == HONOR:
            if self._taints is None:
                self._taints = find_untolerated(self._node.taints, self._pod.tolerations) is None
            if not self._taints:
                return False
        return True


def required_node_affinity_matches(pod: Pod, node: Node) -> bool:
    """nodeaffinity.GetRequiredNodeAffinity(pod).Match(node): nodeSelector and required terms."""
    labels = node.labels
    for k, v in pod.node_selector.items():
        if labels.get(k) != v:
            return False
    req = pod.required_node_selector
    return req is None or req.matches(node.name, labels)


def _parse_constraints(raws: Sequence[Any], pod_labels: Mapping[str, str], action: str) -> list[Constraint]:
    out = []
    for c in raws:
        if not isinstance(c, Mapping) or c.get("whenUnsatisfiable") != action:
            continue
        raw_sel = c.get("labelSelector")
        validate_selector(raw_sel)
        selector = Selector(LabelSelector.from_dict(raw_sel) if raw_sel is not None else None)
        keys = c.get("matchLabelKeys") or ()
        if keys:
            match = {k: pod_labels[k] for k in keys if k in pod_labels}
            if match:
                selector = selector.add(match)
        min_domains = c.get("minDomains")
        out.append(Constraint(
            int(c.get("maxSkew") or 0), str(c.get("topologyKey") or ""), selector,
            int(min_domains) if min_domains is not None else 1,
            str(c.get("nodeAffinityPolicy") or HONOR), str(c.get("nodeTaintsPolicy") or IGNORE)))
    return out


class _PodConstraints:
    """The pod's own hard and soft constraints, parsed once (kept on pod.cache)."""

    __slots__ = ("error", "hard", "has_own", "soft")

    def __init__(self, pod: Pod) -> None:
        raws = pod.spec.get("topologySpreadConstraints") or []
        self.has_own = bool(raws)
        self.error = ""
        self.hard: list[Constraint] = []
        self.soft: list[Constraint] = []
        if not raws:
            return
        try:
            self.hard = _parse_constraints(raws, pod.labels, DO_NOT_SCHEDULE)
            self.soft = _parse_constraints(raws, pod.labels, SCHEDULE_ANYWAY)
        except (ModelError, TypeError, ValueError) as exc:
            self.error = str(exc)


def _pod_constraints(pod: Pod) -> _PodConstraints:
    pc = pod.cache.get(_CACHE_KEY)
    if pc is None:
        pc = pod.cache[_CACHE_KEY] = _PodConstraints(pod)
    return pc


def _controller_of(pod: Pod) -> Mapping[str, Any] | None:
    for ref in (pod.raw.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None


_CONTROLLER_KINDS = {
    ("v1", "ReplicationController"): "ReplicationController",
    ("apps/v1", "ReplicaSet"): "ReplicaSet",
    ("apps/v1", "StatefulSet"): "StatefulSet",
}


def default_selector(pod: Pod, objects: Any) -> Selector:
    """helper.DefaultSelector: the Services selecting the pod, merged with its controller's selector."""
    label_set: dict[str, str] = {}
    if objects is None:
        return Selector(LabelSelector())
    for svc in objects.list("Service", pod.namespace):
        sel = (svc.get("spec") or {}).get("selector")
        if sel is None:
            continue  # a nil selector matches nothing
        if all(pod.labels.get(k) == str(v) for k, v in sel.items()):
            label_set.update({str(k): str(v) for k, v in sel.items()})
    selector = LabelSelector(label_set)
    owner = _controller_of(pod)
    if owner is None:
        return Selector(selector)
    kind = _CONTROLLER_KINDS.get((str(owner.get("apiVersion") or ""), str(owner.get("kind") or "")))
    if kind is None:
        return Selector(selector)
    obj = objects.get(kind, f"{pod.namespace}/{owner.get('name')}")
    if obj is None:
        return Selector(selector)
    spec_sel = (obj.get("spec") or {}).get("selector")
    if kind == "ReplicationController":
        if spec_sel:
            merged = {**label_set, **{str(k): str(v) for k, v in spec_sel.items()}}
            selector = LabelSelector(merged)
        return Selector(selector)
    if spec_sel is None:
        return Selector(selector)
    try:
        other = LabelSelector.from_dict(spec_sel)
    except ModelError:
        return Selector(selector)
    return Selector(selector).add(other.match_labels, other.requirements)


class _DefaultSelectorMemo:
    __slots__ = ("generation", "selector")

    def __init__(self, generation: int, selector: Selector) -> None:
        self.generation = generation
        self.selector = selector


def _node_has_all_keys(labels: Mapping[str, str], constraints: Sequence[Constraint]) -> bool:
    for c in constraints:
        if c.topology_key not in labels:
            return False
    return True


def matching_counts(index: PodIndex, selector: Selector, namespace: str) -> dict[str, int]:
    """countPodsMatchSelector for every node at once: node name -> matching pods of `namespace`,
    terminating pods excluded; an empty (match-all) or nil selector counts nothing, as upstream."""
    out: dict[str, int] = {}
    sel = selector.selector
    if sel is None or sel.is_empty():
        return out
    for sig in index.matching(sel, lambda s: s[0] == namespace and not s[2]):
        for name, n in index.nodes_of(sig).items():
            out[name] = out.get(name, 0) + n
    return out


# ---- cycle state ----------------------------------------------------------------


class _PreFilterState:
    """Per hard constraint: matching pods per eligible domain, and the global minimum."""

    __slots__ = ("_mins", "constraints", "counts")

    def __init__(self, constraints: list[Constraint], counts: list[dict[str, int]],
                 mins: list[int | None] | None = None) -> None:
        self.constraints = constraints
        self.counts = counts
        self._mins: list[int | None] = mins if mins is not None else [None] * len(constraints)

    def clone(self) -> _PreFilterState:
        return _PreFilterState(self.constraints, [dict(c) for c in self.counts], list(self._mins))

    def min_match_num(self, i: int) -> int:
        counts = self.counts[i]
        if len(counts) < self.constraints[i].min_domains:
            # Fewer eligible domains than minDomains: the global minimum is 0.
            return 0
        m = self._mins[i]
        if m is None:
            m = min(counts.values()) if counts else 0
            self._mins[i] = m
        return m

    def update(self, i: int, value: str, delta: int) -> None:
        counts = self.counts[i]
        old = counts.get(value, 0)
        new = counts[value] = old + delta
        m = self._mins[i]
        if m is None:
            return
        if new < m:
            self._mins[i] = new
        elif old == m and new > old:
            self._mins[i] = None


class _PreScoreState:
    __slots__ = ("constraints", "host_counts", "ignored_nodes", "pair_counts", "weights")

    def __init__(self) -> None:
        self.constraints: list[Constraint] = []
        # Per hostname constraint: node name -> matching pods (what upstream counts in Score).
        self.host_counts: list[dict[str, int]] = []
        self.ignored_nodes: set[str] = set()
        # Per constraint: domain value -> matching pods (non-hostname constraints only).
        self.pair_counts: list[dict[str, int]] = []
        self.weights: list[float] = []

    def clone(self) -> _PreScoreState:
        return self


def topology_normalizing_weight(size: int) -> float:
    return math.log(size + 2)


def _round_half_away(x: float) -> int:
    """Go's math.Round for the non-negative scores here."""
    r = math.floor(x)
    return r + 1 if x - r >= 0.5 else r


def score_for_count(cnt: int, max_skew: int, weight: float) -> float:
    return cnt * weight + (max_skew - 1)


# ---- the plugin -------------------------------------------------------------------


class PodTopologySpread(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, PreFilterExtensions):
    name = NAME
    args_model = PodTopologySpreadArgs
    has_normalize = True

    def __init__(self, args: PodTopologySpreadArgs | None, handle: Any) -> None:
        self.args = args if args is not None else PodTopologySpreadArgs()
        self.handle = handle
        if self.args.defaultingType == "System":
            raw_defaults = SYSTEM_DEFAULT_CONSTRAINTS
            self.system_defaulted = True
        else:
            raw_defaults = [c.model_dump(exclude_none=True) for c in self.args.defaultConstraints]
            self.system_defaulted = False
        self._raw_defaults = raw_defaults
        self._index = PodIndex()
        self._vectors = SpreadVectors()  # the vectorised path's caches (_spread_vector.py)

    # ---- constraints ----------------------------------------------------------
    def _objects(self) -> Any:
        return getattr(self.handle, "objects", None) if self.handle is not None else None

    def _default_selector(self, pod: Pod) -> Selector:
        objects = self._objects()
        generation = getattr(objects, "generation", 0)
        memo = pod.cache.get(_DEFAULT_SEL_KEY)
        if memo is not None and memo.generation == generation:
            return memo.selector
        sel = default_selector(pod, objects)
        pod.cache[_DEFAULT_SEL_KEY] = _DefaultSelectorMemo(generation, sel)
        return sel

    def _default_constraints(self, pod: Pod, action: str) -> list[Constraint]:
        constraints = _parse_constraints(self._raw_defaults, pod.labels, action)
        if not constraints:
            return []
        selector = self._default_selector(pod)
        if selector.nothing or selector.empty():
            return []
        return [c.with_selector(selector) for c in constraints]

    def constraints(self, pod: Pod, action: str) -> list[Constraint]:
        """The pod's constraints for `action`, or the defaults when it has none of its own.
        Raises ValueError when they cannot be parsed."""
        pc = _pod_constraints(pod)
        if pc.error:
            raise ValueError(pc.error)
        if pc.has_own:
            return pc.hard if action == DO_NOT_SCHEDULE else pc.soft
        return self._default_constraints(pod, action)

    # ---- PreFilter --------------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        try:
            constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        except ValueError as exc:
            return None, Status.error(f"get constraints from pod: {exc}")
        if not constraints:
            return None, Status.skip()
        arrays = arrays_for(self.handle, nodes)
        if arrays is not None:
            index = index_for(self.handle, self._index)
            vec = self._vectors
            counts = [vec.domain_counts(arrays, c.topology_key, eligible,
                                        vec.matching_per_node(arrays, c.selector, pod.namespace, index,
                                                              matching_counts))
                      for c, eligible in zip(constraints, vec.eligible(arrays, pod, constraints))]
            state.write(PRE_FILTER_KEY, _PreFilterState(constraints, counts))
            return None, None
        counts = [{} for _ in constraints]
        # Per constraint: eligible node name -> its domain (topology value).
        domains: list[dict[str, str]] = [{} for _ in constraints]
        for ni in nodes:
            node = ni.node
            if node is None:
                continue
            labels = node.labels
            if not _node_has_all_keys(labels, constraints):
                continue
            policies = _Policies(pod, node)
            for i, c in enumerate(constraints):
                if not policies.include(c):
                    continue
                value = labels[c.topology_key]
                domains[i][node.name] = value
                counts[i].setdefault(value, 0)
        index = index_for(self.handle, self._index)
        for i, c in enumerate(constraints):
            dom, cnt = domains[i], counts[i]
            for name, n in matching_counts(index, c.selector, pod.namespace).items():
                domain = dom.get(name)
                if domain is not None:
                    cnt[domain] += n
        state.write(PRE_FILTER_KEY, _PreFilterState(constraints, counts))
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self

    def add_pod(self, state: CycleState, pod_to_schedule: Pod, pod_to_add: Pod,
                node_info: NodeInfo) -> Status | None:
        return self._update(state, pod_to_add, pod_to_schedule, node_info, 1)

    def remove_pod(self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: Pod,
                   node_info: NodeInfo) -> Status | None:
        return self._update(state, pod_to_remove, pod_to_schedule, node_info, -1)

    @staticmethod
    def _update(state: CycleState, updated: Pod, preemptor: Pod, node_info: NodeInfo,
                delta: int) -> Status | None:
        s: _PreFilterState | None = state.get(PRE_FILTER_KEY)
        if s is None:
            return Status.error(f"reading {PRE_FILTER_KEY!r} from cycleState: not found")
        node = node_info.node
        if node is None or updated.namespace != preemptor.namespace:
            return None
        labels = node.labels
        if not _node_has_all_keys(labels, s.constraints):
            return None
        for i, c in enumerate(s.constraints):
            if not c.selector.matches(updated.labels):
                continue
            if not c.matches_node_inclusion_policies(preemptor, node):
                continue
            s.update(i, labels[c.topology_key], delta)
        return None

    # ---- Filter -------------------------------------------------------------------
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s: _PreFilterState | None = state.get(PRE_FILTER_KEY)
        if s is None:
            return Status.error(f"reading {PRE_FILTER_KEY!r} from cycleState: not found")
        if not s.constraints:
            return None
        node = node_info.node
        if node is None:
            return Status.error("node not found")
        labels = node.labels
        pod_labels = pod.labels
        for i, c in enumerate(s.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                return Status.unresolvable(ERR_NODE_LABEL_NOT_MATCH)
            self_match = 1 if c.selector.matches(pod_labels) else 0
            skew = s.counts[i].get(value, 0) + self_match - s.min_match_num(i)
            if skew > c.max_skew:
                return Status.unschedulable(ERR_CONSTRAINTS_NOT_MATCH)
        return None

    def filter_all(self, state: CycleState, pod: Pod, nodes: Any) -> np.ndarray | None:
        """`filter` for every node of a NodeView (the vectorised path)."""
        s: _PreFilterState | None = state.get(PRE_FILTER_KEY)
        if s is None:
            return None
        if not s.constraints:
            return np.ones(len(nodes), dtype=bool)
        return nodes.take(filter_mask(nodes.arrays, pod, s.constraints, s.counts, s.min_match_num))

    # ---- PreScore / Score -----------------------------------------------------------
    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        if not self.handle.snapshot.node_infos:
            return Status.skip()
        try:
            constraints = self.constraints(pod, SCHEDULE_ANYWAY)
        except ValueError as exc:
            return Status.error(f"calculating preScoreState: {exc}")
        if not constraints:
            return Status.skip()
        # Nodes must carry every topology key unless the constraints are the
        # system defaults (so that nodes without a zone still spread by hostname).
        require_all = _pod_constraints(pod).has_own or not self.system_defaulted
        s = _PreScoreState()
        s.constraints = constraints
        s.pair_counts = [{} for _ in constraints]
        topo_size = [0] * len(constraints)
        for ni in nodes:
            node = ni.node
            if node is None:
                continue
            labels = node.labels
            if require_all and not _node_has_all_keys(labels, constraints):
                s.ignored_nodes.add(node.name)
                continue
            for i, c in enumerate(constraints):
                if c.topology_key == LABEL_HOSTNAME:
                    continue
                value = labels.get(c.topology_key, "")
                pairs = s.pair_counts[i]
                if value not in pairs:
                    pairs[value] = 0
                    topo_size[i] += 1
        for i, c in enumerate(constraints):
            size = topo_size[i]
            if c.topology_key == LABEL_HOSTNAME:
                size = len(nodes) - len(s.ignored_nodes)
            s.weights.append(topology_normalizing_weight(size))

        index = index_for(self.handle, self._index)
        for i, c in enumerate(constraints):
            per_node = matching_counts(index, c.selector, pod.namespace)
            if c.topology_key == LABEL_HOSTNAME:
                s.host_counts.append(per_node)
                continue
            s.host_counts.append({})
            pairs = s.pair_counts[i]
            if not pairs:
                continue
            for name, n in per_node.items():
                ni = self.handle.snapshot.get(name)
                node = ni.node if ni is not None else None
                if node is None:
                    continue
                labels = node.labels
                if require_all and not _node_has_all_keys(labels, constraints):
                    continue
                value = labels.get(c.topology_key, "")
                if value not in pairs or not c.matches_node_inclusion_policies(pod, node):
                    continue
                pairs[value] += n
        state.write(PRE_SCORE_KEY, s)
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        s: _PreScoreState | None = state.get(PRE_SCORE_KEY)
        if s is None:
            raise PluginError(f"reading {PRE_SCORE_KEY!r} from cycleState: not found", NAME)
        node = node_info.node
        if node is None or node.name in s.ignored_nodes:
            return 0
        labels = node.labels
        total = 0.0
        for i, c in enumerate(s.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                continue
            if c.topology_key == LABEL_HOSTNAME:
                cnt = s.host_counts[i].get(node.name, 0)
            else:
                cnt = s.pair_counts[i].get(value, 0)
            total += score_for_count(cnt, c.max_skew, s.weights[i])
        return _round_half_away(total)

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        s: _PreScoreState | None = state.get(PRE_SCORE_KEY)
        if s is None:
            return Status.error(f"reading {PRE_SCORE_KEY!r} from cycleState: not found")
        ignored = s.ignored_nodes
        lo: int | None = None
        hi = 0
        for ns in scores:
            if ns.name in ignored:
                ns.score = _INVALID_SCORE
                continue
            if lo is None or ns.score < lo:
                lo = ns.score
            if ns.score > hi:
                hi = ns.score
        for ns in scores:
            if ns.score == _INVALID_SCORE:
                ns.score = 0
                continue
            if hi == 0:
                ns.score = MAX_NODE_SCORE
                continue
            assert lo is not None
            ns.score = MAX_NODE_SCORE * (hi + lo - ns.score) // hi
        return None


PLUGINS = [PodTopologySpread]
