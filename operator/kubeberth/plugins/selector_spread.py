"""SelectorSpread: the legacy spreading priority (SelectorSpreadPriority), outside
the default set, as upstream's selectorspread plugin before its removal.

The pod's "default selector" is the union of the selectors of the Services
that select it and of its controlling ReplicationController, ReplicaSet or
StatefulSet. Score counts the pods on a node that match it (same namespace,
not being deleted); NormalizeScore favours nodes with fewer of them, and, when
nodes carry zone/region labels, gives 2/3 of the weight to zones with fewer of
them. Pods with their own topologySpreadConstraints are left to
PodTopologySpread (score 0 here).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..framework import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    LabelSelector,
    ModelError,
    Node,
    NodeInfo,
    NodeScore,
    Pod,
    PreScorePlugin,
    Requirement,
    ScorePlugin,
    Status,
)
from ._volume_util import LABEL_REGION, LABEL_REGION_BETA, LABEL_ZONE, LABEL_ZONE_BETA

NAME = "SelectorSpread"
PRE_SCORE_STATE_KEY = "PreScore" + NAME
ZONE_WEIGHTING = 2.0 / 3.0

_OWNER_KINDS = {
    ("v1", "ReplicationController"): "ReplicationController",
    ("apps/v1", "ReplicaSet"): "ReplicaSet",
    ("apps/v1", "StatefulSet"): "StatefulSet",
}


def get_zone_key(node: Node | None) -> str:
    """utilnode.GetZoneKey: region and zone (beta labels first), '' when neither is set."""
    if node is None:
        return ""
    labels = node.labels
    zone = labels[LABEL_ZONE_BETA] if LABEL_ZONE_BETA in labels else labels.get(LABEL_ZONE, "")
    region = labels[LABEL_REGION_BETA] if LABEL_REGION_BETA in labels else labels.get(LABEL_REGION, "")
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


def _controller_ref(pod: Pod) -> Mapping[str, Any] | None:
    for ref in (pod.raw.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def default_selector(pod: Pod, objects: Any) -> LabelSelector:
    """helper.DefaultSelector: Services selecting the pod, and its controller's selector."""
    label_set: dict[str, str] = {}
    for svc in objects.list("Service", pod.namespace):
        sel = (svc.get("spec") or {}).get("selector")
        if not sel:
            continue
        sel = {str(k): str(v) for k, v in sel.items()}
        if all(pod.labels.get(k) == v for k, v in sel.items()):
            label_set.update(sel)
    selector = LabelSelector(label_set)
    ref = _controller_ref(pod)
    if ref is None:
        return selector
    kind = _OWNER_KINDS.get((str(ref.get("apiVersion") or ""), str(ref.get("kind") or "")))
    if kind is None:
        return selector
    owner = objects.get(kind, f"{pod.namespace}/{ref.get('name')}")
    if owner is None:
        return selector
    owner_sel = (owner.get("spec") or {}).get("selector")
    if kind == "ReplicationController":
        label_set.update({str(k): str(v) for k, v in (owner_sel or {}).items()})
        return LabelSelector(label_set)
    try:
        parsed = LabelSelector.from_dict(owner_sel or {})
    except ModelError:
        return selector
    # selector.Add(requirements...): matchLabels become equality requirements.
    merged = dict(label_set)
    extra = []
    for k, v in parsed.match_labels.items():
        if k in merged and merged[k] != v:
            extra.append((k, v))
        else:
            merged[k] = v
    out = LabelSelector(merged, parsed.requirements)
    if extra:
        out.requirements += [Requirement(k, "In", [v]) for k, v in extra]
    return out


def count_matching_pods(namespace: str, selector: LabelSelector, node_info: NodeInfo) -> int:
    if not node_info.pods or selector.is_empty():
        return 0
    return sum(1 for p in node_info.pods
               if p.namespace == namespace and p.deletion_timestamp is None and selector.matches(p.labels))


def _skip(pod: Pod) -> bool:
    return bool(pod.spec.get("topologySpreadConstraints"))


class _PreScoreState:
    __slots__ = ("selector",)

    def __init__(self, selector: LabelSelector) -> None:
        self.selector = selector

    def clone(self) -> _PreScoreState:
        return self


class SelectorSpread(PreScorePlugin, ScorePlugin):
    name = NAME
    has_normalize = True

    def __init__(self, args: Any, handle: Handle) -> None:
        self.handle = handle

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        if _skip(pod):
            return None
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(default_selector(pod, self.handle.objects)))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        if _skip(pod):
            return 0
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            # Enabled at score but not at preScore: compute what PreScore would have.
            self.pre_score(state, pod, ())
            s = state.get(PRE_SCORE_STATE_KEY)
        return count_matching_pods(pod.namespace, s.selector, node_info)

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        if _skip(pod):
            return None
        snapshot = self.handle.snapshot
        zones: list[str] = []
        counts_by_zone: dict[str, int] = {}
        max_by_node = 0
        for ns in scores:
            max_by_node = max(max_by_node, ns.score)
            ni = snapshot.get(ns.name)
            if ni is None:
                return Status.error(f'getting node "{ns.name}" from Snapshot: not found')
            zone = get_zone_key(ni.node)
            zones.append(zone)
            if zone:
                counts_by_zone[zone] = counts_by_zone.get(zone, 0) + ns.score
        max_by_zone = max(counts_by_zone.values(), default=0)
        have_zones = bool(counts_by_zone)
        top = float(MAX_NODE_SCORE)
        for ns, zone in zip(scores, zones):
            f = top
            if max_by_node > 0:
                f = top * (float(max_by_node - ns.score) / float(max_by_node))
            if have_zones and zone:
                zone_score = top
                if max_by_zone > 0:
                    zone_score = top * (float(max_by_zone - counts_by_zone[zone]) / float(max_by_zone))
                f = f * (1.0 - ZONE_WEIGHTING) + ZONE_WEIGHTING * zone_score
            ns.score = int(f)
        return None


PLUGINS = [SelectorSpread]
