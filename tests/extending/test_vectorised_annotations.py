"""A plugin of one's own that filters and scores on annotations, vectorised through the public
API alone (`annotations_mask`, `annotation_requirement_mask`, `node_column`, `MaskCache`), decides
exactly as its per-node methods: on random nodes, through rounds of changes to the snapshot (nodes
replaced with other annotations, pods coming and going, nodes reordered, added, removed), for the
whole snapshot and for a view of some of its nodes. And the helpers themselves: the annotation
columns follow the nodes' changes, `node_column` computes a node's value once per Node object."""

from __future__ import annotations

import os
import random
from typing import Any

import numpy as np
import pytest

from kubeberth.cache.snapshot import Snapshot
from kubeberth.framework import (
    MAX_NODE_SCORE,
    CycleState,
    FilterPlugin,
    Node,
    NodeInfo,
    Pod,
    Requirement,
    ScorePlugin,
    Status,
)
from kubeberth.framework.vector import (
    AllNodes,
    MaskCache,
    NodeArrays,
    NodeView,
    annotation_requirement_mask,
    annotations_mask,
    node_column,
    requirement_key,
)
from tests.builders import make_pod, node_dict, pod_dict

SCALE = int(os.environ.get("KUBEBERTH_VECTOR_EXAMPLES", "1"))

POOL = "cost.example.com/pool"
COST = "cost.example.com/cost"
READY = "cost.example.com/ready"
POOLS = "cost.example.com/pools"        # on the pod: the pools it may go to, comma-separated
MAX_COST = "cost.example.com/max-cost"  # on the pod: the most it may cost


def parse_cost(node: Node) -> int:
    """A node's cost annotation as a non-negative integer; -1 when absent or not a number."""
    v = node.annotations.get(COST)
    if v is None or not v.isascii() or not v.isdigit() or len(v) > 9:
        return -1
    return int(v)


class CostAware(FilterPlugin, ScorePlugin):
    """Filter: the node is ready (annotation), in one of the pod's pools and within its cost;
    Score: cheaper is better. Per node, and vectorised over the snapshot's annotation columns."""

    name = "CostAware"

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        self.required = {READY: "true"}
        self._masks = MaskCache()

    def _wants(self, pod: Pod) -> tuple[Requirement | None, int | None]:
        """The pod's pools (as a Requirement on the node's pool annotation) and maximum cost,
        parsed once per pod."""
        got: tuple[Requirement | None, int | None] | None = pod.cache.get(self.name)
        if got is None:
            pools = [p for p in pod.annotations.get(POOLS, "").split(",") if p]
            req = Requirement(POOL, "In", pools) if pools else None
            raw = pod.annotations.get(MAX_COST, "")
            got = pod.cache[self.name] = (req, int(raw) if raw.isdigit() else None)
        return got

    # ---- per node ----------------------------------------------------------------------
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status.unresolvable("node not found")
        if any(node.annotations.get(k) != v for k, v in self.required.items()):
            return Status.unresolvable("node(s) not ready for CostAware")
        pools, max_cost = self._wants(pod)
        if pools is not None and not pools.matches(node.annotations):
            return Status.unresolvable("node(s) not in the pod's pools")
        if max_cost is not None and not 0 <= parse_cost(node) <= max_cost:
            return Status.unschedulable("node(s) cost too much")
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        cost = parse_cost(node_info.node) if node_info.node is not None else -1
        return 0 if cost < 0 else MAX_NODE_SCORE - min(cost, MAX_NODE_SCORE)

    # ---- vectorised --------------------------------------------------------------------
    def filter_all(self, state: CycleState, pod: Pod, nodes: Any) -> np.ndarray | None:
        a: NodeArrays = nodes.arrays
        ok = ~a.missing & annotations_mask(a, self.required)
        pools, max_cost = self._wants(pod)
        if pools is not None:
            key = requirement_key(pools)
            mask = self._masks.get(a, key)
            if mask is None:
                mask = self._masks.put(key, annotation_requirement_mask(a, pools))
            ok &= mask
        if max_cost is not None:
            cost = node_column(a, (self.name, "cost"), parse_cost, missing=-1)
            ok &= (cost >= 0) & (cost <= max_cost)
        return nodes.take(ok)

    def score_all(self, state: CycleState, pod: Pod, nodes: Any) -> np.ndarray | None:
        cost = node_column(nodes, (self.name, "cost"), parse_cost, missing=-1)
        scores: np.ndarray = np.where(cost < 0, 0, MAX_NODE_SCORE - np.minimum(cost, MAX_NODE_SCORE))
        return scores.astype(np.int64)


# ---- random nodes, pods and changes ----------------------------------------------------------

def random_node(rng: random.Random, name: str) -> Node:
    # Labels that stay as they are when the node is replaced: its annotations alone change.
    raw = node_dict(name, labels={"zone": "ab"[sum(map(ord, name)) % 2]})
    annotations: dict[str, str] = {}
    if rng.random() < 0.8:
        annotations[READY] = rng.choice(["true", "true", "true", "false", "True"])
    if rng.random() < 0.8:
        annotations[POOL] = rng.choice(["gold", "silver", "bronze", ""])
    if rng.random() < 0.8:
        annotations[COST] = rng.choice(["0", "3", "10", "42", "99", "100", "250", "007", "x", "-3", " 5", "1e3"])
    if rng.random() < 0.3:
        annotations["unrelated.example.com/note"] = rng.choice(["a", "b"])
    if annotations or rng.random() < 0.5:
        raw["metadata"]["annotations"] = annotations
    return Node(raw)


def random_pod(rng: random.Random, i: int) -> Pod:
    raw = pod_dict(f"p{i}", cpu="100m")
    annotations: dict[str, str] = {}
    if rng.random() < 0.6:
        annotations[POOLS] = ",".join(rng.sample(["gold", "silver", "bronze", "lead"], rng.randint(1, 3)))
    if rng.random() < 0.6:
        annotations[MAX_COST] = rng.choice(["0", "10", "50", "100", "1000"])
    raw["metadata"]["annotations"] = annotations
    return Pod(raw)


def random_infos(rng: random.Random, n: int) -> list[NodeInfo]:
    infos = []
    for i in range(n):
        node = random_node(rng, f"n{i:03d}") if rng.random() < 0.95 else None
        pods = [make_pod(f"r{i}-{k}", cpu="100m", node=f"n{i:03d}") for k in range(rng.randint(0, 2))]
        infos.append(NodeInfo(node, pods))
    return infos


def change(rng: random.Random, snap: Snapshot, serial: list[int]) -> None:
    """One change the cache makes to a snapshot between cycles."""
    infos = snap.node_infos
    what = rng.choice(["replace-node", "replace-node", "add-pod", "reorder", "add-node", "remove-node"])
    if what == "replace-node" and infos:
        i = rng.randrange(len(infos))
        serial[0] += 1
        infos[i] = NodeInfo(random_node(rng, infos[i].name or f"m{serial[0]:03d}"), infos[i].pods)
    elif what == "add-pod" and infos:
        i = rng.randrange(len(infos))
        if infos[i].node is None:
            return
        serial[0] += 1
        infos[i] = NodeInfo(infos[i].node, [*infos[i].pods, make_pod(f"added{serial[0]}", node=infos[i].name)])
    elif what == "reorder":
        order = list(infos)
        rng.shuffle(order)
        snap.node_infos = order
        snap.refresh()
    elif what == "add-node":
        serial[0] += 1
        snap.node_infos = [*infos, NodeInfo(random_node(rng, f"m{serial[0]:03d}"))]
        snap.refresh()
    elif what == "remove-node" and len(infos) > 1:
        i = rng.randrange(len(infos))
        snap.node_infos = [ni for k, ni in enumerate(infos) if k != i]
        snap.refresh()


def assert_vectorised_is_per_node(plugin: CostAware, pod: Pod, nodes: Any) -> None:
    state = CycleState()
    mask = plugin.filter_all(state, pod, nodes)
    assert mask is not None
    assert mask.tolist() == [plugin.filter(state, pod, ni) is None for ni in nodes], pod.annotations
    scores = plugin.score_all(state, pod, nodes)
    assert scores is not None and scores.dtype == np.int64
    assert scores.tolist() == [plugin.score(state, pod, ni) for ni in nodes]


@pytest.mark.parametrize("seed", range(40 * SCALE))
def test_the_vectorised_annotation_plugin_decides_as_the_per_node_one(seed: int) -> None:
    rng = random.Random(seed)
    snap = Snapshot(random_infos(rng, rng.randint(1, 40)))
    plugin = CostAware()
    serial = [0]
    for cycle in range(15):
        arrays = snap.arrays()
        for k in range(4):
            pod = random_pod(rng, cycle * 10 + k)
            assert_vectorised_is_per_node(plugin, pod, AllNodes(snap.node_infos, arrays))
            rows = sorted(rng.sample(range(len(snap.node_infos)), rng.randint(0, len(snap.node_infos))))
            view = NodeView([snap.node_infos[r] for r in rows], arrays, np.array(rows, dtype=np.intp))
            assert_vectorised_is_per_node(plugin, pod, view)
        for _ in range(rng.randint(1, 3)):
            change(rng, snap, serial)


# ---- the helpers -------------------------------------------------------------------------------

def annotated(name: str, **annotations: str) -> Node:
    raw = node_dict(name)
    raw["metadata"]["annotations"] = annotations
    return Node(raw)


def counting(calls: list[str]) -> Any:
    def fn(node: Node) -> int:
        calls.append(node.name)
        return parse_cost(node)
    return fn


def test_node_column_computes_a_node_once_per_node_object() -> None:
    snap = Snapshot([NodeInfo(annotated("a", **{COST: "1"})), NodeInfo(annotated("b", **{COST: "2"})),
                     NodeInfo(None), NodeInfo(annotated("c"))])
    calls: list[str] = []
    fn = counting(calls)
    column = node_column(snap.arrays(), "cost", fn, missing=-7)
    assert column.tolist() == [1, 2, -7, -1]
    assert sorted(calls) == ["a", "b", "c"]
    with pytest.raises(ValueError):
        column[0] = 5  # read-only: plugins share it

    calls.clear()
    assert node_column(snap.arrays(), "cost", fn, missing=-7).tolist() == [1, 2, -7, -1]
    assert calls == []

    # Pods coming and going leave the Node as it is: nothing computed again.
    snap.node_infos[0] = NodeInfo(snap.node_infos[0].node, [make_pod("x", node="a")])
    assert node_column(snap.arrays(), "cost", fn, missing=-7).tolist() == [1, 2, -7, -1]
    assert calls == []

    # A changed node is a new Node: that row only.
    snap.node_infos[1] = NodeInfo(annotated("b", **{COST: "20"}))
    assert node_column(snap.arrays(), "cost", fn, missing=-7).tolist() == [1, 20, -7, -1]
    assert calls == ["b"]

    # A node that goes away, and one that comes.
    calls.clear()
    snap.node_infos[2] = NodeInfo(annotated("d", **{COST: "4"}))
    snap.node_infos[0] = NodeInfo(None)
    assert node_column(snap.arrays(), "cost", fn, missing=-7).tolist() == [-7, 20, 4, -1]
    assert calls == ["d"]

    # Another key (or dtype) is another column; a view gets its own rows, in its order.
    arrays = snap.arrays()
    assert node_column(arrays, "cost", fn, dtype=np.float64, missing=0).tolist() == [0.0, 20.0, 4.0, -1.0]
    view = NodeView([snap.node_infos[3], snap.node_infos[1]], arrays, np.array([3, 1], dtype=np.intp))
    assert node_column(view, "cost", fn, missing=-7).tolist() == [-1, 20]
    assert node_column(AllNodes(snap.node_infos, arrays), "cost", fn, missing=-7).tolist() == [-7, 20, 4, -1]


def test_node_column_follows_a_new_node_list() -> None:
    a, b, c = (NodeInfo(annotated(n, **{COST: v})) for n, v in (("a", "1"), ("b", "2"), ("c", "3")))
    snap = Snapshot([a, b])
    calls: list[str] = []
    fn = counting(calls)
    assert node_column(snap.arrays(), "cost", fn).tolist() == [1, 2]
    snap.node_infos = [c, b, a]
    snap.refresh()
    assert node_column(snap.arrays(), "cost", fn).tolist() == [3, 2, 1]
    snap.node_infos = [b]
    snap.refresh()
    assert node_column(snap.arrays(), "cost", fn).tolist() == [2]


def test_annotation_columns_follow_the_nodes() -> None:
    snap = Snapshot([NodeInfo(annotated("a", **{POOL: "gold"})), NodeInfo(annotated("b", **{POOL: "lead"})),
                     NodeInfo(annotated("c"))])
    arrays = snap.arrays()
    gold = {POOL: "gold"}
    assert annotations_mask(arrays, gold).tolist() == [True, False, False]
    assert annotation_requirement_mask(arrays, Requirement(POOL, "Exists")).tolist() == [True, True, False]
    assert annotation_requirement_mask(arrays, Requirement(POOL, "NotIn", ["lead"])).tolist() == [True, False, True]
    labels, annotations = arrays.label_version, arrays.annotation_version
    cache = MaskCache()
    assert cache.get(arrays, "gold") is None
    cache.put("gold", annotations_mask(arrays, gold))
    assert cache.get(arrays, "gold") is not None

    # Another label changes the labels' version only; another annotation the annotations'.
    raw = node_dict("c", labels={"zone": "x"})
    raw["metadata"]["annotations"] = {POOL: "gold"}
    snap.node_infos[2] = NodeInfo(Node(raw))
    arrays = snap.arrays()
    assert annotations_mask(arrays, gold).tolist() == [True, False, True]
    assert arrays.annotation_version != annotations and arrays.label_version != labels
    assert cache.get(arrays, "gold") is None

    labels, annotations = arrays.label_version, arrays.annotation_version
    cache.put("gold", annotations_mask(arrays, gold))
    snap.node_infos[1] = NodeInfo(annotated("b", **{POOL: "gold"}))
    arrays = snap.arrays()
    assert arrays.label_version == labels and arrays.annotation_version != annotations
    assert cache.get(arrays, "gold") is None
    assert annotations_mask(arrays, gold).tolist() == [True, True, True]

    # A node replaced with the same annotations keeps the version (and the cached masks).
    annotations = arrays.annotation_version
    cache.put("gold", annotations_mask(arrays, gold))
    snap.node_infos[1] = NodeInfo(annotated("b", **{POOL: "gold"}), [make_pod("x", node="b")])
    arrays = snap.arrays()
    assert arrays.annotation_version == annotations
    assert cache.get(arrays, "gold") is not None


def test_annotation_masks_of_a_node_list_read_before_any_column() -> None:
    # The annotations of nodes replaced before any plugin asked for an annotation column are read
    # when the column is first built.
    snap = Snapshot([NodeInfo(annotated("a", **{POOL: "gold"}))])
    snap.arrays()
    snap.node_infos[0] = NodeInfo(annotated("a", **{POOL: "lead"}))
    assert annotations_mask(snap.arrays(), {POOL: "lead"}).tolist() == [True]

