"""Judging one pending pod of the fuzzer: upstream's decision against kubeberth's.

Node, victims and the FailedScheduling message are compared. When the nodes differ, kube-scheduler's
log (`schedule_one.go` at verbosity 10) says each feasible node's final score for the pod: the pick
is a tie when kubeberth's node has upstream's best score. Without scores (a single feasible node,
or preemption, whose node choice upstream breaks by map order), the pick counts as a tie only
when kubeberth itself, under other seeds, chooses upstream's node and victims too. A pod of a
PodGroup is logged with its group's keys before its own (`podGroupType=... podGroup=... pod=...`);
when the group preempted, its pods' last scored attempt is group preemption's re-run of the
group's algorithm (the next cycle takes each pod's nominated node without scoring), whose picks
decide the victims: `judge_group_victims`.
`tests/conformance/fuzz-known.yaml` lists the disagreements that are explained.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .control_plane import ROOT

KNOWN = ROOT / "tests" / "conformance" / "fuzz-known.yaml"
KINDS = {"not-run", "environment", "timing", "message-source", "wording"}
FIELDS = {"status", "node", "victims", "message", "group"}
# the logger's own key/values (a group's pods: podGroupType, podGroup) come between the message and the call's
_CONTEXT = r'(?: [\w.-]+="[^"]*")*?'
FINAL_SCORE = re.compile(r'"Calculated node\'s final score for pod"' + _CONTEXT
                         + r' pod="([^"]+)" node="([^"]+)" score=(-?\d+)')
PLUGIN_SCORE = re.compile(r'"Plugin scored node for pod"' + _CONTEXT
                          + r' pod="([^"]+)" plugin="([^"]+)" node="([^"]+)" score=(-?\d+)')


# kube-scheduler's queue (scheduling_queue.go at -v=3, active_queue.go and backoff_queue.go at -v=5)
POD_PARKED = re.compile(r'"Pod moved to an internal scheduling queue"' + _CONTEXT
                        + r' pod="([^"]+)" event="([^"]*)" queue="([^"]+)"')
ENTITY_MOVED = re.compile(r'"Entity moved to an internal scheduling queue"' + _CONTEXT
                          + r' type="pod" entity="([^"]+)" event="([^"]*)" queue="([^"]+)"')
ATTEMPT = re.compile(r'"Attempting to schedule pod"' + _CONTEXT + r' pod="([^"]+)"')
UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"  # flushUnschedulableEntitiesLeftover's event


@dataclass
class Decision:
    status: str  # Scheduled | Unschedulable
    node: str | None = None
    victims: list[str] = field(default_factory=list)
    message: str = ""

    def brief(self) -> str:
        what = f"{self.status} {self.node or ''}".strip()
        if self.victims:
            what += f" victims={','.join(sorted(self.victims))}"
        if self.status != "Scheduled":
            what += f" {self.message!r}"
        return what


@dataclass
class Verdict:
    kind: str  # agree | tie | diff
    field: str = ""  # what differs: status | node | victims | message
    detail: str = ""
    explained_by: str = ""  # the id of the fuzz-known.yaml entry


def attempts(log: str, pod: str) -> list[dict[str, int]]:
    """The final scores per node of each scoring attempt of `pod` in a kube-scheduler log excerpt.
    An attempt logs its plugins' scores, then the final ones: a plugin score after a final score,
    or a node scored twice, starts the next attempt."""
    out: list[dict[str, int]] = []
    new_attempt = True
    for line in log.splitlines():
        final = FINAL_SCORE.search(line)
        if final is None:
            plugin = PLUGIN_SCORE.search(line)
            if plugin is not None and plugin.group(1) == pod:
                new_attempt = True
            continue
        if final.group(1) != pod:
            continue
        if new_attempt or final.group(2) in out[-1]:
            out.append({})
            new_attempt = False
        out[-1][final.group(2)] = int(final.group(3))
    return out


def awaiting_flush(log: str, pod: str) -> bool:
    """Whether upstream's queue left `pod` among its unschedulable pods with only its leftover flush
    to retry it: the last the log says of it is its move to queue "Unschedulable" after a failed
    attempt (every event since got QueueSkip from the QueueingHints of the plugins that rejected
    it), and no flush (event UnschedulableTimeout) has moved it yet. Such a pod is certainly tried
    again once it has spent podMaxInUnschedulablePodsDuration there (flushUnschedulableEntitiesLeftover,
    every 30 s); simulate models that retry (its settle rounds). After one flush it is not awaited
    again: the retry has happened, and another on an unchanged cluster repeats it."""
    parked = flushed = False
    for line in log.splitlines():
        m = POD_PARKED.search(line)
        if m is not None and m.group(1) == pod:
            parked = m.group(3) == "Unschedulable"
            continue
        m = ENTITY_MOVED.search(line)
        if m is not None and m.group(1) == pod:
            parked = False
            flushed = flushed or m.group(2) == UNSCHEDULABLE_TIMEOUT
            continue
        m = ATTEMPT.search(line)
        if m is not None and m.group(1) == pod:
            parked = False
    return parked and not flushed


def plugin_scores(log: str, pod: str, nodes: set[str]) -> dict[str, dict[str, int]]:
    """node -> plugin -> score of the last attempt, for the nodes asked about (for the report)."""
    out: dict[str, dict[str, int]] = {}
    for m in PLUGIN_SCORE.finditer(log):
        if m.group(1) == pod and m.group(3) in nodes:
            out.setdefault(m.group(3), {})[m.group(2)] = int(m.group(4))
    return out


def judge(up: Decision, ours: Decision, scores: dict[str, int] | None,
          other_seeds: list[Decision] | None = None) -> Verdict:
    if up.status != ours.status:
        return Verdict("diff", "status", f"upstream {up.brief()}, kubeberth {ours.brief()}")
    if up.status != "Scheduled":
        if sorted(up.victims) != sorted(ours.victims):
            return Verdict("diff", "victims", f"upstream {up.brief()}, kubeberth {ours.brief()}")
        if up.message != ours.message:
            return Verdict("diff", "message", f"upstream {up.message!r}, kubeberth {ours.message!r}")
        return Verdict("agree")
    if up.node == ours.node:
        if sorted(up.victims) != sorted(ours.victims):
            return Verdict("diff", "victims", f"upstream {up.brief()}, kubeberth {ours.brief()}")
        return Verdict("agree")
    if scores and not up.victims and not ours.victims:
        best = max(scores.values())
        if ours.node in scores and scores[ours.node] == best and scores.get(up.node or "") == best:
            return Verdict("tie", "node", f"{up.node} and {ours.node} both score {best} upstream")
        return Verdict("diff", "node", f"upstream {up.brief()}, kubeberth {ours.brief()}; upstream's final "
                                       f"scores {dict(sorted(scores.items()))}")
    if other_seeds and any(d.node == up.node and sorted(d.victims) == sorted(up.victims) for d in other_seeds):
        return Verdict("tie", "node", f"no upstream scores; kubeberth picks {up.node} under another seed")
    return Verdict("diff", "node", f"upstream {up.brief()}, kubeberth {ours.brief()}; " + (
        f"upstream's final scores {dict(sorted(scores.items()))}" if scores else "no upstream scores logged"))


def judge_group(keys: list[str], up: dict[str, Decision], ours: dict[str, Decision],
                scores: dict[str, dict[str, int] | None],
                other_seeds: list[dict[str, Decision]] | None = None) -> dict[str, Verdict]:
    """The verdicts on a group's pods. Each pod is judged as a pod of no group is; where nodes
    differ, the group's placement is a tie when kubeberth under another seed places every pod of
    the group as upstream did, or when the first pod placed elsewhere was a tie on upstream's
    scores: the group's later pods were then placed on another cluster (their nodes are not
    compared; whether they were placed at all still is)."""
    out = {k: judge(up[k], ours[k], scores[k]) for k in keys}
    if any(v.kind == "diff" for v in out.values()) and sorted(up[k].brief() for k in keys) == sorted(
            ours[k].brief() for k in keys):
        # A group's pods are made from one template: the same outcomes in another order of its pods.
        # Which of a group's pods is tried first is upstream's queue's: the pods a gang held back
        # are released together (map order), and equal in priority and attempts, they are ordered by
        # the time each was added then, nanoseconds apart.
        for k, v in out.items():
            if v.kind == "diff":
                out[k] = Verdict("tie", "order", f"upstream {up[k].brief()}, kubeberth {ours[k].brief()}: the "
                                                 "group's outcomes are the same, its pods taken in another order")
        return out
    if all(v.kind != "diff" or v.field != "node" for v in out.values()):
        return out
    if other_seeds and any(all(d[k].status == up[k].status and d[k].node == up[k].node
                               and sorted(d[k].victims) == sorted(up[k].victims) for k in keys)
                           for d in other_seeds):
        for k, v in out.items():
            if v.kind == "diff" and v.field == "node":
                out[k] = Verdict("tie", "node", f"no single seed's pick; kubeberth places the group as upstream "
                                                f"under another seed ({up[k].node}, kubeberth {ours[k].node})")
        return out
    tied = False
    for k in keys:
        v = out[k]
        if v.kind == "tie":
            tied = True
        elif tied and v.kind == "diff" and v.field == "node":
            out[k] = Verdict("tie", "node", f"upstream {up[k].node}, kubeberth {ours[k].node}: placed after "
                                            "another pod of the group tied elsewhere")
    return out



def scored_tie(up: Decision, ours: Decision, scores: dict[str, int] | None) -> int | None:
    """Upstream's best final score when both nodes have it in upstream's scores of the pod's last
    scored attempt, else None."""
    if not scores or up.node is None or ours.node is None:
        return None
    best = max(scores.values())
    return best if scores.get(up.node) == best and scores.get(ours.node) == best else None


def judge_group_victims(keys: list[str], up: dict[str, Decision], ours: dict[str, Decision],
                        scores: dict[str, dict[str, int] | None], up_group: Decision, ours_group: Decision,
                        other_seeds: list[tuple[dict[str, Decision], Decision]] | None = None) -> Verdict:
    """The verdict on a group's condition and victims (on `up_group` and `ours_group`; the pods'
    own victims are empty). Group preemption takes off every unit of lower priority, re-runs the
    group's algorithm and preempts the units its placement needs (podgrouppreemption.go,
    selectVictimsOnDomain): the victims follow the nodes the re-run gave the pods, and upstream
    breaks a pod's equal best totals there by the order its parallel Filter found the nodes
    (schedule_one.go: findNodesThatPassFilters fills the feasible list as its goroutines finish,
    NewSortedScoredNodes pops the first of equal totals, every Randomizer 0 without extenders).
    Different victims are a tie only when (1) the first pod, in the group's order, that kubeberth
    placed elsewhere was put on a node with upstream's best score in upstream's last scored attempt
    of that pod, and (2) kubeberth under another seed places every pod as upstream did, preempts
    upstream's victims and writes upstream's condition: they then differ by that tie's pick."""
    verdict = judge(up_group, ours_group, None)
    if verdict.kind != "diff" or verdict.field != "victims":
        return verdict
    if any(up[k].status != ours[k].status for k in keys):
        return verdict
    moved = [k for k in keys if up[k].status == "Scheduled" and up[k].node != ours[k].node]
    if not moved:
        return verdict
    first = moved[0]
    best = scored_tie(up[first], ours[first], scores.get(first))
    if best is None:
        return verdict
    for pods, group in other_seeds or []:
        if all(k in pods and pods[k].status == up[k].status and pods[k].node == up[k].node for k in keys) and \
                sorted(group.victims) == sorted(up_group.victims) and group.message == up_group.message:
            return Verdict("tie", "victims", f"group preemption's re-run put {first} on {up[first].node} upstream, "
                                             f"on {ours[first].node} in kubeberth: both score {best} upstream; "
                                             "kubeberth under another seed places the group as upstream and "
                                             "preempts upstream's victims")
    return verdict

# --- the list of explained disagreements ---

TERMINATING = re.compile(r"/t\d+$")  # the generator names pods terminating before the case t<N>
VICTIM_RULES = {
    "same": lambda up, ours: bool(up) and sorted(up) == sorted(ours),
    "same-but-terminating": lambda up, ours: any(TERMINATING.search(v) for v in ours) and sorted(up) == sorted(
        v for v in ours if not TERMINATING.search(v)),
    "more-but-terminating": lambda up, ours: more_but_terminating(up, ours),
}


def more_but_terminating(up: list[str], ours: list[str]) -> bool:
    """kubeberth's victims hold a t<N>; upstream's are kubeberth's others plus more, none a t<N>
    (upstream preempted again while the t<N> it had chosen stayed, no kubelet ending it)."""
    kept = {v for v in ours if not TERMINATING.search(v)}
    extra = set(up) - kept
    return len(kept) < len(ours) and kept < set(up) and not any(TERMINATING.search(v) for v in extra)


@dataclass
class Known:
    id: str
    kind: str
    why: str
    field: str
    upstream: re.Pattern[str] | None = None
    kubeberth: re.Pattern[str] | None = None
    victims: str = ""  # one of VICTIM_RULES: how kubeberth's victims relate to upstream's
    ours_scored: bool | None = None  # whether upstream's final scores (if any) name kubeberth's node

    def explains(self, verdict: Verdict, up: Decision, ours: Decision, scores: dict[str, int] | None) -> bool:
        if verdict.kind != "diff" or verdict.field != self.field:
            return False
        if self.upstream is not None and not self.upstream.search(up.brief()):
            return False
        if self.kubeberth is not None and not self.kubeberth.search(ours.brief()):
            return False
        if self.victims and not VICTIM_RULES[self.victims](up.victims, ours.victims):
            return False
        # No scores logged: upstream's last attempt found a single feasible node and did not score.
        return self.ours_scored is None or (scores is not None and ours.node in scores) == self.ours_scored


MATCH_KEYS = {"field", "upstream", "kubeberth", "victims", "ours_scored"}


def parse_known(entries: Any, source: str = str(KNOWN)) -> list[Known]:
    """The entries of fuzz-known.yaml; a malformed entry is an error naming it."""
    out: list[Known] = []
    for i, e in enumerate(entries or []):
        where = f"{source}: entry {i + 1}"
        if not isinstance(e, dict) or set(e) != {"id", "kind", "why", "match"}:
            raise ValueError(f"{where}: needs exactly id, kind, why and match")
        where += f" ({e['id']})"
        if e["kind"] not in KINDS:
            raise ValueError(f"{where}: kind {e['kind']!r} is not one of {sorted(KINDS)}")
        if len(str(e["why"])) < 40:
            raise ValueError(f"{where}: the why is too short to be a reason")
        match = e["match"]
        if not isinstance(match, dict) or match.get("field") not in FIELDS or set(match) - MATCH_KEYS:
            raise ValueError(f"{where}: match needs field (one of {sorted(FIELDS)}) and optionally "
                             f"{sorted(MATCH_KEYS - {'field'})}")
        if match.get("victims", "") not in ("", *VICTIM_RULES):
            raise ValueError(f"{where}: match.victims is not one of {sorted(VICTIM_RULES)}")
        if match.get("ours_scored") not in (None, True, False):
            raise ValueError(f"{where}: match.ours_scored must be true or false")
        try:
            up = re.compile(match["upstream"]) if "upstream" in match else None
            ours = re.compile(match["kubeberth"]) if "kubeberth" in match else None
        except re.error as exc:
            raise ValueError(f"{where}: bad regular expression: {exc}") from exc
        out.append(Known(str(e["id"]), e["kind"], str(e["why"]), match["field"], up, ours,
                         match.get("victims", ""), match.get("ours_scored")))
    ids = [k.id for k in out]
    if len(ids) != len(set(ids)):
        raise ValueError(f"{source}: an id is used twice")
    return out


def load_known(path: Path = KNOWN) -> list[Known]:
    return parse_known(yaml.safe_load(path.read_text()) if path.exists() else [], str(path))


def explain(verdict: Verdict, up: Decision, ours: Decision, known: list[Known],
            scores: dict[str, int] | None = None) -> Verdict:
    for k in known:
        if k.explains(verdict, up, ours, scores):
            verdict.explained_by = k.id
            break
    return verdict
