"""What PodTopologySpread's phases share: constraints (parsed, defaulted) and the rules of
which nodes and which pods count for a constraint (upstream's common.go).

The node rules are written once against `NodeFacts`: a node's facts answer with bools
(`OneNode`, the per-node path), the node arrays' facts with a bool mask per question
(`vector.ArrayFacts`), and `&` combines either. The pod rule is `CountedPods`, used by the
label index for every node at once and by the vectorised path for one node's pods.

AddPod/RemovePod count a pod by another rule, upstream's updateWithPod: its namespace and the
constraint's selector only (an empty selector matches it; terminating pods count).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeVar

import numpy as np

from ...framework import Handle, LabelSelector, ModelError, Node, NodeInfo, Pod, Requirement, find_untolerated
from ...framework.vector import label_selector_key
from .._labels import validate_selector
from .._pod_index import PodIndex, Sig, pod_sig

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

    def __repr__(self) -> str:
        return f"Constraint({self.topology_key}, maxSkew={self.max_skew}, minDomains={self.min_domains})"


def parse_constraints(raws: Sequence[Any], pod_labels: Mapping[str, str], action: str) -> list[Constraint]:
    """The constraints of `raws` whose whenUnsatisfiable is `action`, each selector narrowed by
    the pod's values of its matchLabelKeys."""
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


class PodConstraints:
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
            self.hard = parse_constraints(raws, pod.labels, DO_NOT_SCHEDULE)
            self.soft = parse_constraints(raws, pod.labels, SCHEDULE_ANYWAY)
        except (ModelError, TypeError, ValueError) as exc:
            self.error = str(exc)


def pod_constraints(pod: Pod) -> PodConstraints:
    pc = pod.cache.get(_CACHE_KEY)
    if pc is None:
        pc = pod.cache[_CACHE_KEY] = PodConstraints(pod)
    return pc


# ---- default constraints ----------------------------------------------------------


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


class ConstraintSource:
    """Where a pod's constraints come from: its own, else the plugin's default constraints
    (upstream's system defaults, or the args' list) with a selector from its Services and
    controller, recomputed when the object store changes."""

    __slots__ = ("_handle", "_parsed_defaults", "_raw_defaults", "system_defaulted")

    def __init__(self, raw_defaults: list[dict[str, Any]], system_defaulted: bool, handle: Handle) -> None:
        self._raw_defaults = raw_defaults
        self.system_defaulted = system_defaulted
        self._handle = handle
        # Default constraints without matchLabelKeys do not depend on the pod: parsed once per action.
        self._parsed_defaults: dict[str, list[Constraint]] = {}

    def constraints(self, pod: Pod, action: str) -> list[Constraint]:
        """The pod's constraints for `action`, or the defaults when it has none of its own.
        Raises ValueError when they cannot be parsed."""
        pc = pod_constraints(pod)
        if pc.error:
            raise ValueError(pc.error)
        if pc.has_own:
            return pc.hard if action == DO_NOT_SCHEDULE else pc.soft
        return self._defaults(pod, action)

    def require_all_keys(self, pod: Pod) -> bool:
        """PreScore's rule: nodes must carry every topology key, unless the constraints are the
        system defaults (so that nodes without a zone still spread by hostname)."""
        return pod_constraints(pod).has_own or not self.system_defaulted

    def _defaults(self, pod: Pod, action: str) -> list[Constraint]:
        constraints = self._parsed_defaults.get(action)
        if constraints is None:
            constraints = parse_constraints(self._raw_defaults, pod.labels, action)
            if not any(isinstance(c, Mapping) and c.get("matchLabelKeys") for c in self._raw_defaults):
                self._parsed_defaults[action] = constraints
        if not constraints:
            return []
        selector = self._default_selector(pod)
        if selector.nothing or selector.empty():
            return []
        return [c.with_selector(selector) for c in constraints]

    def _default_selector(self, pod: Pod) -> Selector:
        objects = self._handle.objects if self._handle is not None else None
        generation = objects.generation if objects is not None else 0
        memo = pod.cache.get(_DEFAULT_SEL_KEY)
        if memo is not None and memo.generation == generation:
            return memo.selector
        sel = default_selector(pod, objects)
        pod.cache[_DEFAULT_SEL_KEY] = _DefaultSelectorMemo(generation, sel)
        return sel


# ---- which nodes count ------------------------------------------------------------

Truth = TypeVar("Truth", bool, np.ndarray)
Truth_co = TypeVar("Truth_co", bool, np.ndarray, covariant=True)


class NodeFacts(Protocol[Truth_co]):
    """The questions the node rules ask, about one node (bools) or every node (bool masks)."""

    def present(self) -> Truth_co:
        """The NodeInfo has its Node."""
        ...

    def has_label(self, key: str) -> Truth_co: ...

    def affinity_matches(self) -> Truth_co:
        """The incoming pod's nodeSelector and required node affinity match."""
        ...

    def taints_tolerated(self) -> Truth_co:
        """The incoming pod tolerates every NoSchedule/NoExecute taint."""
        ...


def carries_all_keys(facts: NodeFacts[Truth], constraints: Sequence[Constraint]) -> Truth:
    """nodeLabelsMatchSpreadConstraints: a node without one of the constraints' topology keys
    counts for none of them."""
    ok = facts.present()
    for c in constraints:
        ok = ok & facts.has_label(c.topology_key)
    return ok


def passes_inclusion_policies(facts: NodeFacts[Truth], c: Constraint, ok: Truth) -> Truth:
    """`ok`, narrowed to the nodes that pass c's nodeAffinityPolicy and nodeTaintsPolicy
    (matchNodeInclusionPolicies: Honor checks, Ignore does not)."""
    if c.node_affinity_policy == HONOR:
        ok = ok & facts.affinity_matches()
    if c.node_taints_policy == HONOR:
        ok = ok & facts.taints_tolerated()
    return ok


def required_node_affinity_matches(pod: Pod, node: Node) -> bool:
    """nodeaffinity.GetRequiredNodeAffinity(pod).Match(node): nodeSelector and required terms."""
    labels = node.labels
    for k, v in pod.node_selector.items():
        if labels.get(k) != v:
            return False
    req = pod.required_node_selector
    return req is None or req.matches(node.name, labels)


class OneNode:
    """NodeFacts of one node for the incoming pod; affinity and taints decided at most once.
    `at(node)` points it at another node (one object serves a whole loop)."""

    __slots__ = ("_affinity", "_labels", "_node", "_pod", "_taints")

    def __init__(self, pod: Pod, node: Node | None = None) -> None:
        self._pod = pod
        self._affinity: bool | None = None
        self._taints: bool | None = None
        if node is not None:
            self.at(node)

    def at(self, node: Node) -> OneNode:
        self._node = node
        self._labels = node.labels
        self._affinity = self._taints = None
        return self

    def present(self) -> bool:
        return True  # made for a NodeInfo's Node: callers skip NodeInfos without one

    def has_label(self, key: str) -> bool:
        return key in self._labels

    def affinity_matches(self) -> bool:
        if self._affinity is None:
            self._affinity = required_node_affinity_matches(self._pod, self._node)
        return self._affinity

    def taints_tolerated(self) -> bool:
        if self._taints is None:
            self._taints = find_untolerated(self._node.taints, self._pod.tolerations) is None
        return self._taints


# ---- which pods count -------------------------------------------------------------


class CountedPods:
    """countPodsMatchSelector: the pods of `namespace` that the selector matches, terminating
    pods excluded; a nil or empty (match-all) selector counts none, as upstream."""

    __slots__ = ("namespace", "selector")

    def __init__(self, selector: Selector, namespace: str) -> None:
        sel = selector.selector
        self.selector = None if sel is None or sel.is_empty() else sel
        self.namespace = namespace

    def key(self) -> tuple[Any, ...] | None:
        """Equal keys, equal pods counted (None: none are)."""
        if self.selector is None:
            return None
        return (self.namespace, label_selector_key(self.selector))

    def _admits(self, sig: Sig) -> bool:
        return sig[0] == self.namespace and not sig[2]

    def on_node(self, ni: NodeInfo) -> int:
        sel = self.selector
        if sel is None:
            return 0
        return sum(1 for p in ni.pods if self._admits(pod_sig(p)) and sel.matches(p.labels))

    def per_node(self, index: PodIndex) -> dict[str, int]:
        """`on_node` for every node through the label index: node name -> count (nodes with
        none left out)."""
        out: dict[str, int] = {}
        if self.selector is None:
            return out
        for sig in index.matching(self.selector, self._admits):
            for name, n in index.nodes_of(sig).items():
                out[name] = out.get(name, 0) + n
        return out


# ---- the Filter's skew ------------------------------------------------------------


def skew_limit(c: Constraint, pod_labels: Mapping[str, str], min_match: int) -> int:
    """The most matching pods a node's domain may hold for the node to pass `c`
    (`count + selfMatch - globalMin <= maxSkew`; a domain nobody counted holds 0)."""
    return c.max_skew - (1 if c.selector.matches(pod_labels) else 0) + min_match
