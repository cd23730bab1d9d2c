"""NodeAffinity: spec.nodeSelector and node affinity (required filter, preferred score)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..framework import (
    MAX_NODE_SCORE,
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    FilterPlugin,
    Handle,
    ModelError,
    Node,
    NodeInfo,
    NodeScore,
    NodeSelector,
    PluginError,
    Pod,
    PreferredTerm,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHint,
    ScorePlugin,
    Status,
    default_normalize_score,
)
from ..framework.vector import (
    MaskCache,
    default_normalize_all,
    labels_mask,
    selector_key,
    selector_mask,
    term_key,
    term_mask,
)

NAME = "NodeAffinity"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
_VECTOR_KEY = NAME + ".vector"

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

OBJECT_NAME_FIELD = "metadata.name"


class AddedAffinity(BaseModel):
    """A v1.NodeAffinity applied to every pod of the profile."""

    model_config = ConfigDict(extra="forbid")
    requiredDuringSchedulingIgnoredDuringExecution: dict[str, Any] | None = None
    preferredDuringSchedulingIgnoredDuringExecution: list[dict[str, Any]] = Field(default_factory=list)

    @field_validator("requiredDuringSchedulingIgnoredDuringExecution")
    @classmethod
    def _required(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v is not None:
            try:
                NodeSelector.from_dict(v)
            except ModelError as exc:
                raise ValueError(str(exc)) from exc
        return v

    @field_validator("preferredDuringSchedulingIgnoredDuringExecution")
    @classmethod
    def _preferred(cls, v: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for i, term in enumerate(v):
            try:
                PreferredTerm.from_dict(term)
            except ModelError as exc:
                raise ValueError(f"[{i}]: {exc}") from exc
        return v


class NodeAffinityArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    addedAffinity: AddedAffinity | None = None


class RequiredNodeAffinity:
    """spec.nodeSelector AND spec.affinity.nodeAffinity.required (upstream's RequiredNodeAffinity)."""

    __slots__ = ("node_selector", "required")

    def __init__(self, pod: Pod) -> None:
        self.node_selector: Mapping[str, str] = pod.node_selector
        self.required: NodeSelector | None = pod.required_node_selector

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        for k, v in self.node_selector.items():
            if labels.get(k) != v:
                return False
        return self.required is None or self.required.matches(node_name, labels)

    def clone(self) -> RequiredNodeAffinity:
        return self


def preferred_score(terms: Sequence[PreferredTerm], node_name: str, labels: Mapping[str, str]) -> int:
    """Sum of the weights of the preferred terms the node matches (weight 0 terms never count)."""
    return sum(t.weight for t in terms if t.weight and t.term.matches(node_name, labels))


class _PreScoreState:
    __slots__ = ("preferred",)

    def __init__(self, preferred: list[PreferredTerm]) -> None:
        self.preferred = preferred

    def clone(self) -> _PreScoreState:
        return self


def _node_names_from_terms(selector: NodeSelector) -> set[str] | None:
    """The only nodes the required terms can match through matchFields metadata.name In,
    or None when some term does not restrict the name (terms are ORed)."""
    names: set[str] = set()
    for term in selector.terms:
        term_names: set[str] | None = None
        for f in term.fields:
            if f.key == OBJECT_NAME_FIELD and f.operator == "In":
                # The requirements of one term are ANDed: intersect.
                term_names = set(f.values) if term_names is None else term_names & f.values
        if term_names is None:
            return None
        names |= term_names
    return names


def _required_key(s: RequiredNodeAffinity) -> tuple[Any, ...]:
    return (tuple(sorted(s.node_selector.items())), selector_key(s.required))


def _preferred_key(terms: Sequence[PreferredTerm]) -> tuple[Any, ...]:
    return tuple((t.weight, term_key(t.term)) for t in terms)


class NodeAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    name = NAME
    args_model = NodeAffinityArgs
    has_normalize = True

    def __init__(self, args: NodeAffinityArgs | None = None, handle: Handle | None = None) -> None:
        self.handle = handle
        # Matches of node selectors / preferred terms against every node, per node-label version.
        self._masks = MaskCache()
        self.added_node_selector: NodeSelector | None = None
        self.added_pref_terms: list[PreferredTerm] | None = None
        added = args.addedAffinity if args is not None else None
        if added is not None:
            if added.requiredDuringSchedulingIgnoredDuringExecution is not None:
                self.added_node_selector = NodeSelector.from_dict(
                    added.requiredDuringSchedulingIgnoredDuringExecution)
            self.added_pref_terms = [
                PreferredTerm.from_dict(t) for t in added.preferredDuringSchedulingIgnoredDuringExecution]

    def events_to_register(self) -> list[ClusterEvent | ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                                     self._after_node_change)]

    def _after_node_change(self, pod: Pod, old: Node | None, new: Node) -> QueueingHint:
        """The node is new and matches the pod's required affinity, or now matches it and did not."""
        if self.added_node_selector is not None and not self.added_node_selector.matches(new.name, new.labels):
            return QueueingHint.QUEUE_SKIP
        required = RequiredNodeAffinity(pod)
        if not required.matches(new.name, new.labels):
            return QueueingHint.QUEUE_SKIP
        if old is None or not required.matches(old.name, old.labels):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # ---- PreFilter / Filter ------------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        required = pod.required_node_selector
        if required is None and self.added_node_selector is None and not pod.node_selector:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, RequiredNodeAffinity(pod))
        if required is None or not required.terms:
            return None, None
        names = _node_names_from_terms(required)
        if names is None:
            return None, None
        if not names:
            return None, Status.unresolvable(ERR_REASON_CONFLICT)
        return PreFilterResult(names), None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status.error("node not found")
        if self.added_node_selector is not None and not self.added_node_selector.matches(
                node.name, node.labels):
            return Status.unresolvable(ERR_REASON_ENFORCED)
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, RequiredNodeAffinity):
            # PreFilter is disabled: compute here.
            s = RequiredNodeAffinity(pod)
        if not s.matches(node.name, node.labels):
            return Status.unresolvable(ERR_REASON_POD)
        return None

    def _memo_key(self, pod: Pod, what: str, obj: Any, make: Any) -> Any:
        """A structural key for `obj` (a pod's selector or terms), memoised on the pod."""
        memo = pod.cache.get(_VECTOR_KEY)
        if memo is None:
            memo = pod.cache[_VECTOR_KEY] = {}
        entry = memo.get(what)
        if entry is None or entry[0] is not obj:
            entry = memo[what] = (obj, make(obj))
        return entry[1]

    def _required_mask(self, arrays: Any, s: RequiredNodeAffinity, key: Any) -> np.ndarray:
        mask = self._masks.get(arrays, key)
        if mask is None:
            mask = labels_mask(arrays, s.node_selector)
            if s.required is not None:
                mask &= selector_mask(arrays, s.required)
            mask = self._masks.put(key, mask)
        return mask

    def filter_all(self, state: CycleState, pod: Pod, nodes: Any) -> np.ndarray:
        """`filter` for every node of a NodeView; the matches of a selector are cached until
        some node's labels change."""
        a = nodes.arrays
        ok = ~a.missing
        if self.added_node_selector is not None:
            added = self._masks.get(a, "added")
            if added is None:
                added = self._masks.put("added", selector_mask(a, self.added_node_selector))
            ok = ok & added
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, RequiredNodeAffinity):
            s = RequiredNodeAffinity(pod)
        key = ("required", self._memo_key(pod, "required", s.required, lambda _: _required_key(s)))
        ok = ok & self._required_mask(a, s, key)
        return nodes.take(ok)

    def _preferred_scores(self, arrays: Any, terms: Sequence[PreferredTerm], key: Any) -> np.ndarray:
        scores = self._masks.get(arrays, key)
        if scores is None:
            scores = np.zeros(arrays.n, dtype=np.int64)
            for t in terms:
                if t.weight:
                    scores += t.weight * term_mask(arrays, t.term)
            scores = self._masks.put(key, scores)
        return scores

    def score_all(self, state: CycleState, pod: Pod, nodes: Any) -> np.ndarray | None:
        a = nodes.arrays
        if nodes.take(a.missing).any():
            return None
        total = np.zeros(a.n, dtype=np.int64)
        if self.added_pref_terms:
            total = total + self._preferred_scores(a, self.added_pref_terms, "added-preferred")
        s = state.get(PRE_SCORE_STATE_KEY)
        preferred = s.preferred if isinstance(s, _PreScoreState) else pod.preferred_node_terms
        if preferred:
            key = ("preferred", self._memo_key(pod, "preferred", preferred, _preferred_key))
            total = total + self._preferred_scores(a, preferred, key)
        return nodes.take(total)

    def normalize_all(self, state: CycleState, pod: Pod, nodes: Any, scores: np.ndarray) -> np.ndarray:
        return default_normalize_all(MAX_NODE_SCORE, False, scores)

    # ---- PreScore / Score ---------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        if not nodes:
            return None
        if not pod.preferred_node_terms and self.added_pref_terms is None:
            return Status.skip()
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(pod.preferred_node_terms))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        node = node_info.node
        if node is None:
            raise PluginError("node not found", NAME)
        count = 0
        if self.added_pref_terms:
            count += preferred_score(self.added_pref_terms, node.name, node.labels)
        s = state.get(PRE_SCORE_STATE_KEY)
        preferred = s.preferred if isinstance(s, _PreScoreState) else pod.preferred_node_terms
        if preferred:
            count += preferred_score(preferred, node.name, node.labels)
        return count

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, False, scores)
        return None


PLUGINS = [NodeAffinity]
