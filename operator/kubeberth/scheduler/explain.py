"""Why a pod went where it went (or nowhere): one scheduling attempt, every extension point.

Captured only for a pod someone asked about (simulate --explain, the operator's
`kubeberth.io/explain` annotation): `begin` puts an `Explanation` into the cycle's CycleState.
The explanation observes the cycle, it is never called from inside it: once schedule_pod has
returned or raised, `observe` builds PreFilter's, Filter's and Score's parts from what the cycle
decided (algorithm.CycleDecision: the feasible nodes, the diagnosis with each rejected node's
status, the score table, the pick); schedule_one.py adds PostFilter and the result. The walk of
the cycle stops at the first plugin that rejects a node and vectorised plugins decide many nodes
at once, so the per-plugin verdicts and raw scores are computed again here, per node, on the
same CycleState, after the cycle's own calls: the decision and the random draws are the
cycle's, untouched. `to_dict` is the stable structure simulate's `-o json` prints (documented in
the README) and the operator publishes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..framework import CycleState, Diagnosis, FilterPlugin, Framework, PreFilterResult, ScorePlugin, Status
from ..framework import events as ev
from ..framework.explain import PREEMPTION_NOTES_KEY, PreemptionNotes
from ..framework.status import Code
from ..framework.vector.views import ScoreTable
from ..model import NodeInfo, Pod

if TYPE_CHECKING:
    from .algorithm import CycleDecision

EXPLAIN_KEY = "kubeberth.io/explain"
EXPLAIN_ANNOTATION = "kubeberth.io/explain"

# Filter verdicts of a node.
PASSED = "Passed"
FILTERED = "Filtered"
NOT_EVALUATED = "NotEvaluated"          # the walk had found enough feasible nodes (percentageOfNodesToScore)
EXCLUDED = "ExcludedByPreFilter"        # outside PreFilter's node subset, or PreFilter rejected the pod
PLUGIN_PASS = "pass"

# A pending pod just annotated to be explained: it goes to an attempt soon, its backoff respected
# (SchedulingQueue.move_to_active_or_backoff), so that its explanation comes within seconds.
EVENT_EXPLAIN_REQUESTED = ev.ClusterEvent(ev.WILDCARD, ev.ActionType.ALL, "ExplainRequested")


def wants_explanation(pod: Pod) -> bool:
    """The operator's opt-in: the pod carries `kubeberth.io/explain: "true"`."""
    annotations = (pod.raw.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(EXPLAIN_ANNOTATION, "")).lower() == "true"


@dataclass
class NodeFilter:
    node: str
    verdict: str
    reason: str = ""      # the status the cycle recorded for a Filtered / Excluded node
    plugin: str = ""      # the plugin that status names
    plugins: dict[str, str] = field(default_factory=dict)  # every filter plugin: "pass" or its reason
    detail: str = ""      # the recorded status's detail (Status.detail: not part of the reason)
    details: dict[str, str] = field(default_factory=dict)  # a filter plugin's detail, where it gave one

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "verdict": self.verdict, "reason": self.reason, "plugin": self.plugin,
                "plugins": dict(self.plugins), "detail": self.detail, "details": dict(self.details)}


@dataclass
class PluginScore:
    raw: int | None
    normalized: int
    weight: int
    weighted: int

    def to_dict(self) -> dict[str, Any]:
        return {"raw": self.raw, "normalized": self.normalized, "weight": self.weight, "weighted": self.weighted}


@dataclass
class NodeScoreLine:
    node: str
    total: int
    plugins: dict[str, PluginScore]
    extenders: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "total": self.total, "extenders": self.extenders,
                "plugins": {name: s.to_dict() for name, s in self.plugins.items()}}


@dataclass
class Explanation:
    """One attempt of one pod: `observe` fills it from the cycle's decision, `post_filtered` and
    `finish` from the rest of the attempt."""

    pod: str
    profile: str
    attempt: int
    total_nodes: int = 0
    pre_filter_plugins: list[str] = field(default_factory=list)
    pre_filter_skipped: list[str] = field(default_factory=list)
    pre_filter_restricted_by: list[str] = field(default_factory=list)
    pre_filter_nodes: list[str] | None = None
    pre_filter_status: Status | None = None
    filter_plugins: list[str] = field(default_factory=list)
    filter_skipped: list[str] = field(default_factory=list)
    nominated_node_first: str = ""   # the nominated node fitted: no other node was evaluated
    nodes: list[NodeFilter] = field(default_factory=list)
    score_plugins: dict[str, int] = field(default_factory=dict)   # name -> weight
    score_skipped: list[str] = field(default_factory=list)
    scores: list[NodeScoreLine] = field(default_factory=list)     # best first
    scored: bool = False
    tied: list[str] = field(default_factory=list)
    selected: str = ""
    post_filter_ran: bool = False
    post_filter_message: str = ""
    nominated_node: str = ""
    preemption: PreemptionNotes = field(default_factory=PreemptionNotes)
    result: str = ""
    result_node: str = ""
    result_message: str = ""
    # A pod of a PodGroup: the group's attempt (group_explain.GroupAttempt.to_dict()), else None.
    pod_group: dict[str, Any] | None = None

    # ---- capture (after the cycle) ---------------------------------------------------------
    def observe(self, fw: Framework, state: CycleState, pod: Pod, decision: CycleDecision | None) -> None:
        """What schedule_pod decided, as far as it got (nothing when it stopped before PreFilter)."""
        if decision is None or not decision.pre_filter_ran:
            return
        self.pre_filtered(fw, state, decision.pre_filter_result, decision.pre_filter_status,
                          decision.pre_filter_plugins)
        if decision.feasible is None or decision.diagnosis is None:
            return  # an Error while filtering
        self.filtered(fw, state, pod, decision.feasible, decision.diagnosis)
        if decision.scores is not None and decision.host:
            self.scored_nodes(fw, state, pod, decision.scores, decision.host)

    def pre_filtered(self, fw: Framework, state: CycleState, result: PreFilterResult | None,
                     status: Status | None, involved: set[str]) -> None:
        self.pre_filter_plugins = [p.name for p in fw.pre_filter_plugins]
        self.pre_filter_skipped = [n for n in self.pre_filter_plugins if n in state.skip_filter_plugins]
        self.pre_filter_restricted_by = sorted(involved)
        if status is not None and not status.is_success():
            self.pre_filter_status = status
        if result is not None and not result.all_nodes():
            self.pre_filter_nodes = sorted(result.node_names or ())

    def filtered(self, fw: Framework, state: CycleState, pod: Pod, feasible: Sequence[NodeInfo],
                 diagnosis: Diagnosis) -> None:
        """Every node's verdict as the cycle saw it, and every filter plugin's on it."""
        all_nodes = fw.snapshot.node_infos
        self.total_nodes = len(all_nodes)
        skip = state.skip_filter_plugins
        plugins = [p for p in fw.filter_plugins if p.name not in skip]
        self.filter_plugins = [p.name for p in plugins]
        self.filter_skipped = [p.name for p in fw.filter_plugins if p.name in skip]
        fits = {ni.name for ni in feasible}
        statuses = diagnosis.node_to_status.statuses
        if pod.nominated_node_name and fits == {pod.nominated_node_name} and not statuses:
            self.nominated_node_first = pod.nominated_node_name
        allowed = set(self.pre_filter_nodes) if self.pre_filter_nodes is not None else None
        absent = diagnosis.node_to_status.absent
        rejected_all = self.pre_filter_status
        for ni in all_nodes:
            name = ni.name
            if rejected_all is not None or (allowed is not None and name not in allowed):
                why = rejected_all if rejected_all is not None else absent
                self.nodes.append(NodeFilter(name, EXCLUDED, why.message() if why is not None else "",
                                             why.plugin if why is not None else "",
                                             detail=why.detail if why is not None else ""))
                continue
            verdicts, details = _plugin_verdicts(fw, plugins, state, pod, ni)
            if name in fits:
                self.nodes.append(NodeFilter(name, PASSED, plugins=verdicts, details=details))
            elif name in statuses:
                st = statuses[name]
                self.nodes.append(NodeFilter(name, FILTERED, st.message() or st.code.upstream_name, st.plugin,
                                             verdicts, st.detail or details.get(st.plugin, ""), details))
            else:
                self.nodes.append(NodeFilter(name, NOT_EVALUATED, plugins=verdicts, details=details))
        if len(feasible) == 1:
            self.tied = [feasible[0].name]
            self.selected = feasible[0].name

    def scored_nodes(self, fw: Framework, state: CycleState, pod: Pod, table: ScoreTable, host: str) -> None:
        """Raw (computed again per node), normalized, weight and weighted score per plugin per
        feasible node; the nodes tied at the top and the one drawn."""
        self.scored = True
        nodes = list(table.nodes)
        totals = table.totals.tolist()
        skip = state.skip_score_plugins
        columns: dict[str, tuple[int, list[int], list[int | None]]] = {}
        for p in fw.score_plugins:
            if p.name in skip:
                self.score_skipped.append(p.name)
                continue
            weight = fw.score_weights[p.name]
            self.score_plugins[p.name] = weight
            weighted = table.per_plugin[p.name].tolist() if p.name in table.per_plugin else [0] * len(nodes)
            columns[p.name] = (weight, weighted, [_raw_score(p, state, pod, ni) for ni in nodes])
        lines = []
        for k, ni in enumerate(nodes):
            per = {name: PluginScore(raw[k], weighted[k] // weight if weight else weighted[k], weight, weighted[k])
                   for name, (weight, weighted, raw) in columns.items()}
            lines.append(NodeScoreLine(ni.name, totals[k], per, totals[k] - sum(s.weighted for s in per.values())))
        top = max(totals) if totals else 0
        self.tied = [line.node for line in lines if line.total == top]
        lines.sort(key=lambda line: (-line.total, line.node))
        self.scores = lines
        self.selected = host

    def post_filtered(self, message: str, nominated_node: str | None) -> None:
        self.post_filter_ran = True
        self.post_filter_message = message
        self.nominated_node = nominated_node or ""

    def finish(self, result: str, node: str, message: str) -> None:
        self.result, self.result_node, self.result_message = result, node, message
        if node and not self.selected:
            self.selected = node

    # ---- reading ---------------------------------------------------------------------------
    def filtered_out(self) -> dict[str, list[str]]:
        """Reason (with its plugin) -> the nodes it filtered out, most nodes first."""
        groups: dict[str, list[str]] = {}
        for n in self.nodes:
            if n.verdict in (FILTERED, EXCLUDED):
                label = f"{n.reason} [{n.plugin}]" if n.plugin else n.reason
                groups.setdefault(label, []).append(n.node)
        return dict(sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])))

    def count(self, verdict: str) -> int:
        return sum(1 for n in self.nodes if n.verdict == verdict)

    def to_dict(self) -> dict[str, Any]:
        out = self._to_dict()
        if self.pod_group is not None:
            out["podGroup"] = self.pod_group
        return out

    def _to_dict(self) -> dict[str, Any]:
        pf = self.pre_filter_status
        return {
            "attempt": self.attempt,
            "profile": self.profile,
            "result": {"status": self.result, "node": self.result_node, "message": self.result_message},
            "nodes": {"total": self.total_nodes, "feasible": self.count(PASSED), "filtered": self.count(FILTERED),
                      "excludedByPreFilter": self.count(EXCLUDED), "notEvaluated": self.count(NOT_EVALUATED)},
            "preFilter": {
                "plugins": self.pre_filter_plugins, "skipped": self.pre_filter_skipped,
                "restrictedBy": self.pre_filter_restricted_by, "nodes": self.pre_filter_nodes,
                "status": None if pf is None else {"code": pf.code.upstream_name, "plugin": pf.plugin,
                                                   "reason": pf.message()}},
            "filter": {
                "plugins": self.filter_plugins, "skipped": self.filter_skipped,
                "nominatedNodeFirst": self.nominated_node_first or None,
                "nodes": [n.to_dict() for n in self.nodes],
                "filteredOut": [{"reason": r, "nodes": ns} for r, ns in self.filtered_out().items()]},
            "postFilter": self._post_filter_dict(),
            "score": None if not self.scored else {
                "plugins": [{"name": n, "weight": w} for n, w in self.score_plugins.items()],
                "skipped": self.score_skipped,
                "nodes": [line.to_dict() for line in self.scores]},
            "selection": {"tied": self.tied, "selected": self.selected or None},
        }

    def _post_filter_dict(self) -> dict[str, Any] | None:
        if not self.post_filter_ran:
            return None
        notes = self.preemption
        return {
            "message": self.post_filter_message,
            "nominatedNode": self.nominated_node or None,
            "candidates": [{"node": c.node, "victims": c.victims, "pdbViolations": c.pdb_violations}
                           for c in notes.candidates],
            "rejected": [{"node": n, "reason": r} for n, r in notes.rejected.items()],
            "chosen": None if not notes.chosen else {"node": notes.chosen, "victims": notes.chosen_victims},
        }


def begin(state: CycleState, fw: Framework, pod: Pod, attempt: int) -> Explanation:
    x = Explanation(pod.key, fw.profile_name, attempt)
    state.write(EXPLAIN_KEY, x)
    state.write(PREEMPTION_NOTES_KEY, x.preemption)
    return x


def explanation_of(state: CycleState) -> Explanation | None:
    """The explanation this cycle fills, None when nobody asked."""
    x = state.get(EXPLAIN_KEY)
    return x if isinstance(x, Explanation) else None


def _plugin_verdicts(fw: Framework, plugins: Sequence[FilterPlugin], state: CycleState, pod: Pod,
                     ni: NodeInfo) -> tuple[dict[str, str], dict[str, str]]:
    """Each plugin's own verdict on `ni`, and the details of those that gave one; with the
    nominated pods of equal or higher priority added first, as the cycle's first pass does."""
    nominator = fw.nominator
    others = [p for p in nominator.nominated_pods_for_node(ni.name) if p.priority >= pod.priority
              and p.uid != pod.uid] if nominator is not None else []
    if others:
        state, ni = state.clone(), ni.clone()
        for other in others:
            ni.add_pod(other)
            fw.run_pre_filter_add_pod(state, pod, other, ni)
    out: dict[str, str] = {}
    details: dict[str, str] = {}
    for p in plugins:
        try:
            st = p.filter(state, pod, ni)
        except Exception as exc:  # an explanation never fails the cycle
            out[p.name] = f"error: {exc}"
            continue
        out[p.name] = PLUGIN_PASS if st is None or st.code == Code.SUCCESS else (st.message() or st.code.upstream_name)
        if st is not None and st.detail:
            details[p.name] = st.detail
    return out, details


def _raw_score(p: ScorePlugin, state: CycleState, pod: Pod, ni: NodeInfo) -> int | None:
    try:
        return int(p.score(state, pod, ni))
    except Exception:  # PluginError or worse: the cycle's own call said so already
        return None
