"""Values passed between the framework, the scheduler and plugins."""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable
from typing import Any

from ..model import NodeInfo, Pod
from .status import Code, Status

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
MAX_TOTAL_SCORE = 2**63 - 1


class NodeScore:
    """A node's score from one Score plugin (`name`, `score`); `normalize_score` rescales a list
    of them in place."""

    __slots__ = ("name", "score")

    def __init__(self, name: str, score: int) -> None:
        self.name = name
        self.score = score

    def __repr__(self) -> str:
        return f"NodeScore({self.name}={self.score})"


class NodePluginScores:
    """The weighted per-plugin scores of one node and their total."""

    __slots__ = ("name", "scores", "total")

    def __init__(self, name: str, scores: dict[str, int] | None = None, total: int = 0) -> None:
        self.name = name
        self.scores = scores or {}
        self.total = total

    def __repr__(self) -> str:
        return f"NodePluginScores({self.name}, total={self.total})"


class Placement:
    """A set of nodes a pod group may be placed on (upstream's fwk.Placement): PlacementGenerate
    plugins cut the parent placement (all nodes) into candidates; the pod-group cycle places the
    group in each in turn, the pods seeing only its nodes. `name` names it in logs and scores
    (TopologyPlacementGenerator: the topology domain's value)."""

    __slots__ = ("name", "nodes")

    def __init__(self, name: str, nodes: list[NodeInfo]) -> None:
        self.name = name
        self.nodes = nodes

    def node_names(self) -> list[str]:
        return [ni.name for ni in self.nodes]

    def __repr__(self) -> str:
        return f"Placement({self.name!r}, {len(self.nodes)} nodes)"


class ProposedAssignment:
    """A pod of the group and the node the placement's attempt put it on."""

    __slots__ = ("node_name", "pod")

    def __init__(self, pod: Pod, node_name: str) -> None:
        self.pod = pod
        self.node_name = node_name

    def __repr__(self) -> str:
        return f"ProposedAssignment({self.pod.key} -> {self.node_name})"


class PodGroupAssignments:
    """A feasible placement and where its attempt put the group's pods (upstream's
    PodGroupAssignments), what PlacementScore plugins score."""

    __slots__ = ("placement", "proposed")

    def __init__(self, placement: Placement, proposed: list[ProposedAssignment]) -> None:
        self.placement = placement
        self.proposed = proposed

    @property
    def nodes(self) -> list[NodeInfo]:
        return self.placement.nodes


class PlacementScore:
    """One placement's score by one PlacementScore plugin (normalised in place)."""

    __slots__ = ("placement", "score")

    def __init__(self, placement: Placement, score: int) -> None:
        self.placement = placement
        self.score = score

    def __repr__(self) -> str:
        return f"PlacementScore({self.placement.name}={self.score})"


class PlacementPluginScores:
    """A placement's weighted score per PlacementScore plugin, and their total."""

    __slots__ = ("placement", "scores", "total")

    def __init__(self, placement: Placement, scores: dict[str, int], total: int) -> None:
        self.placement = placement
        self.scores = scores
        self.total = total

    def __repr__(self) -> str:
        return f"PlacementPluginScores({self.placement.name}, total={self.total})"


class PreFilterResult:
    """Restricts the nodes evaluated in Filter; node_names None means all."""

    __slots__ = ("node_names",)

    def __init__(self, node_names: Iterable[str] | None = None) -> None:
        self.node_names = set(node_names) if node_names is not None else None

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.all_nodes():
            return self
        if self.all_nodes():
            return PreFilterResult(other.node_names)
        assert self.node_names is not None and other.node_names is not None
        return PreFilterResult(self.node_names & other.node_names)


class PostFilterResult:
    """What a PostFilter plugin returns with a success: the node the pod is nominated to
    (`nominated_node_name`, "" for none)."""

    __slots__ = ("nominated_node_name",)

    def __init__(self, nominated_node_name: str = "") -> None:
        self.nominated_node_name = nominated_node_name


class NodeToStatus:
    """Status per node that failed; nodes not listed take `absent` (None: not evaluated)."""

    __slots__ = ("absent", "statuses")

    def __init__(self) -> None:
        self.statuses: dict[str, Status] = {}
        self.absent: Status | None = None

    def set(self, node: str, status: Status) -> None:
        self.statuses[node] = status

    def get(self, node: str) -> Status | None:
        return self.statuses.get(node, self.absent)

    def __len__(self) -> int:
        return len(self.statuses)

    def nodes_with_code(self, code: Code, all_nodes: Iterable[str]) -> list[str]:
        return [n for n in all_nodes if (s := self.get(n)) is not None and s.code == code]


class Diagnosis:
    """Why no node fits a pod (upstream's framework.Diagnosis): each rejected node's Status
    (`node_to_status`), the plugins that rejected it (`unschedulable_plugins`) or made it wait
    (`pending_plugins`), and PreFilter's / PostFilter's messages."""

    __slots__ = ("node_to_status", "pending_plugins", "post_filter_msg", "pre_filter_msg",
                 "unschedulable_plugins")

    def __init__(self) -> None:
        self.node_to_status = NodeToStatus()
        self.unschedulable_plugins: set[str] = set()
        self.pending_plugins: set[str] = set()
        self.pre_filter_msg = ""
        self.post_filter_msg = ""

    def add_plugin_status(self, status: Status) -> None:
        """Note the plugin that rejected a node or the pod (upstream's AddPluginStatus): it is
        the plugin whose events may make the pod schedulable again."""
        plugin = status.plugin
        if not plugin:
            return
        code = status.code
        if code is Code.PENDING:
            self.pending_plugins.add(plugin)
        elif code is Code.UNSCHEDULABLE or code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            self.unschedulable_plugins.add(plugin)


class FitError(Exception):
    """No node fits the pod. The message is upstream's, word for word."""

    def __init__(self, pod: Pod, num_all_nodes: int, diagnosis: Diagnosis,
                 node_names: Iterable[str] = ()) -> None:
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis
        self.node_names = list(node_names)
        super().__init__(self.message())

    def reason_histogram(self) -> Counter[str]:
        hist: Counter[str] = Counter()
        seen = self.diagnosis.node_to_status.statuses
        # Many nodes share one Status (the vectorised filter's): count each distinct one once.
        distinct = dict(zip(map(id, seen.values()), seen.values()))
        for key, count in Counter(map(id, seen.values())).items():
            for r in distinct[key].reasons:
                hist[r] += count
        absent = self.diagnosis.node_to_status.absent
        if absent is not None:
            missing = sum(1 for n in self.node_names if n not in seen)
            if missing:
                for r in absent.reasons:
                    hist[r] += missing
        return hist

    def message(self) -> str:
        msg = f"0/{self.num_all_nodes} nodes are available:"
        if self.diagnosis.pre_filter_msg:
            msg += f" {self.diagnosis.pre_filter_msg}."
        else:
            parts = sorted(f"{count} {reason}" for reason, count in self.reason_histogram().items())
            if parts:
                msg += f" {', '.join(parts)}."
        if self.diagnosis.post_filter_msg:
            # Appended as the PostFilter plugins wrote it: upstream adds no period of its own here.
            msg += f" {self.diagnosis.post_filter_msg}"
        return msg


class QueuedPodInfo:
    """A pod in the scheduling queue with its bookkeeping."""

    __slots__ = ("attempts", "backoff_expiry", "consecutive_errors", "flushed", "gated", "initial_attempt_timestamp",
                 "pending_plugins", "pod", "timestamp", "unschedulable_count", "unschedulable_plugins")

    def __init__(self, pod: Pod, timestamp: float = 0.0) -> None:
        self.pod = pod
        self.timestamp = timestamp
        self.attempts = 0
        self.unschedulable_count = 0
        # Failures with an error (no plugin rejected the pod) in a row: they set the backoff instead.
        self.consecutive_errors = 0
        # When the backoff ends (the queue's cache; -1: no backoff; None: not computed yet).
        self.backoff_expiry: float | None = None
        # Moved out of the unschedulable pool by the timeout (scheduler_pod_scheduled_after_flush_total).
        self.flushed = False
        self.initial_attempt_timestamp: float | None = None
        self.unschedulable_plugins: set[str] = set()
        self.pending_plugins: set[str] = set()
        self.gated = False

    @property
    def key(self) -> str:
        """Its key in the queue: the pod's uid (a pod group's entry has its own)."""
        return self.pod.uid

    @property
    def priority(self) -> int:
        """What QueueSort orders by: the pod's priority (a pod group's entry: the PodGroup's)."""
        return self.pod.priority

    def __repr__(self) -> str:
        return f"QueuedPodInfo({self.pod.key}, attempts={self.attempts})"


POD_GROUP_ENTRY_PREFIX = "podgroup:"


def member_order(q: QueuedPodInfo) -> tuple[int, int, float, str]:
    """Upstream's PodGroupMemberPodsOrderingFunc: higher priority, more attempts, earlier
    timestamp, then name."""
    return (-q.pod.priority, -q.attempts, q.timestamp, q.pod.name)


class QueuedPodGroupInfo(QueuedPodInfo):
    """A PodGroup's queued pods, queued and popped together (upstream's QueuedPodGroupInfo).
    `pod` is its first member (which profile serves it); `priority` the PodGroup's; the queueing
    fields (timestamp, attempts, backoff, gating) are the group's. `changed` collects the uids
    of the members added, replaced or removed since the queue last looked (its PreEnqueue
    answers, kept in `gate_state`, follow them)."""

    __slots__ = ("_index", "changed", "gate_state", "group_key", "group_priority", "members")

    def __init__(self, group_key: str, group_priority: int, members: list[QueuedPodInfo],
                 timestamp: float = 0.0) -> None:
        if not members:
            raise ValueError(f"pod group {group_key}: an entry needs at least one pod")
        super().__init__(members[0].pod, timestamp)
        self.group_key = group_key
        self.group_priority = group_priority
        self.members: list[QueuedPodInfo] = []
        self._index: dict[str, QueuedPodInfo] = {}
        self.changed: set[str] = set()
        self.gate_state: Any = None
        for m in members:
            self.add_member(m)

    @property
    def key(self) -> str:
        return POD_GROUP_ENTRY_PREFIX + self.group_key

    @property
    def priority(self) -> int:
        return self.group_priority

    def add_member(self, q: QueuedPodInfo) -> None:
        """Add (or, for a uid it holds, put again in its place) a pod, in member_order."""
        uid = q.pod.uid
        if uid in self._index:
            self.remove_member(uid)
        # a stable sort's place for it: after the members that order as it does
        bisect.insort_right(self.members, q, key=member_order)
        self._index[uid] = q
        self.changed.add(uid)
        self.pod = self.members[0].pod

    def remove_member(self, uid: str) -> QueuedPodInfo | None:
        m = self._index.pop(uid, None)
        if m is None:
            return None
        self.members.remove(m)
        self.changed.add(uid)
        if self.members:
            self.pod = self.members[0].pod
        return m

    def clear_members(self) -> None:
        """No pods left (the entry is filled again after its attempt); its PreEnqueue answers go too."""
        self.members = []
        self._index = {}
        self.changed = set()
        self.gate_state = None

    def member(self, uid: str) -> QueuedPodInfo | None:
        return self._index.get(uid)

    def __repr__(self) -> str:
        return f"QueuedPodGroupInfo({self.group_key}, pods={[m.pod.name for m in self.members]})"
