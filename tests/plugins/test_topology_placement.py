"""TopologyPlacementGenerator, PodGroupPodsCount and NodeResourcesFit's placement score (upstream's
topologyaware, podgrouppodscount and noderesources' scorePlacement), in tables, with upstream's
messages word for word."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth.cache.pod_groups import POD_GROUP_STATES, PodGroupStates
from kubeberth.framework import CycleState
from kubeberth.framework.status import Code, PluginError
from kubeberth.framework.types import Placement, PlacementScore, PodGroupAssignments, ProposedAssignment
from kubeberth.model import NodeInfo, Pod, PodGroup
from kubeberth.plugins.node_resources_fit import NodeResourcesFit, NodeResourcesFitArgs
from kubeberth.plugins.pod_group_pods_count import PodGroupPodsCount
from kubeberth.plugins.topology_placement_generator import TopologyPlacementGenerator
from tests.builders import make_node, make_pod, node_info
from tests.doubles import handle

RACK = "example.com/rack"


def member(name: str, node: str = "", cpu: str | None = None) -> Pod:
    p = make_pod(name, node=node, cpu=cpu)
    return Pod({**p.raw, "spec": {**p.spec, "schedulingGroup": {"podGroupName": "g"}}})


def group(key: str | None = RACK, min_count: int = 2) -> PodGroup:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if key is not None:
        spec["schedulingConstraints"] = {"topology": [{"key": key}]}
    return PodGroup({"metadata": {"name": "g", "namespace": "default"}, "spec": spec})


def cluster(racks: dict[str, str | None], members: list[Pod], assumed: dict[str, str] | None = None
            ) -> tuple[Any, list[NodeInfo]]:
    """A handle over nodes with their rack (None: unlabelled) and the group's state; `assumed`:
    uid -> node of pods the cache holds assumed."""
    assumed = assumed or {}
    infos = [node_info(make_node(n, labels={RACK: r} if r is not None else {})) for n, r in racks.items()]
    h = handle(node_infos=infos)
    by_uid = {p.uid: p for p in members}

    def assumed_pod(uid: str) -> Pod | None:
        p = by_uid[uid]
        return Pod({**p.raw, "spec": {**p.spec, "nodeName": assumed[uid]}})

    states = PodGroupStates(lambda uid: uid in assumed, assumed_pod)
    states.set_pod_group(group())
    for p in members:
        states.add_or_update_pod(p)
    h.ctx.shared_indexes[POD_GROUP_STATES] = states
    return h, list(h.snapshot.node_infos)


FOUR = {"n1": "a", "n2": "a", "n3": "b", "n4": "b"}


@pytest.mark.parametrize(("racks", "bound", "assumed", "want"), [
    pytest.param(FOUR, {}, {}, [("a", ["n1", "n2"]), ("b", ["n3", "n4"])], id="one-per-domain"),
    pytest.param({"n1": "a", "n2": None, "n3": "b"}, {}, {}, [("a", ["n1"]), ("b", ["n3"])], id="unlabelled-in-none"),
    pytest.param({"n3": "b", "n1": "a", "n4": "b"}, {}, {}, [("b", ["n3", "n4"]), ("a", ["n1"])],
                 id="node-order"),
    pytest.param(FOUR, {"g-0": "n3"}, {}, [("b", ["n3", "n4"])], id="pinned-by-bound-pod"),
    pytest.param(FOUR, {}, {"g-0": "n2"}, [("a", ["n1", "n2"])], id="pinned-by-assumed-pod"),
    pytest.param(FOUR, {"g-0": "n3", "g-1": "n4"}, {}, [("b", ["n3", "n4"])], id="two-pods-one-domain"),
    pytest.param({"n1": None, "n2": None}, {}, {}, [], id="no-node-has-the-key"),
])
def test_generate_placements(racks: dict[str, str | None], bound: dict[str, str], assumed: dict[str, str],
                             want: list[tuple[str, list[str]]]) -> None:
    members = [member(name, node=n) for name, n in bound.items()]
    members += [member(name) for name in assumed]
    members.append(member("g-pending"))
    uids = {p.name: p.uid for p in members}
    h, infos = cluster(racks, members, {uids[name]: n for name, n in assumed.items()})
    placements, status = TopologyPlacementGenerator(None, h).generate_placements(
        CycleState(), group(), Placement("", infos))
    assert status is None
    assert [(p.name, p.node_names()) for p in placements] == want


def test_without_a_topology_key_the_parent_placement() -> None:
    h, infos = cluster(FOUR, [member("g-0")])
    parent = Placement("", infos)
    placements, status = TopologyPlacementGenerator(None, h).generate_placements(CycleState(), group(None), parent)
    assert status is None and placements == [parent]


@pytest.mark.parametrize(("racks", "bound", "message"), [
    pytest.param(FOUR, {"g-0": "n1", "g-1": "n3"},
                 "cannot determine domain for already scheduled pods: more than 1 domain found for pod group: a, b",
                 id="two-domains"),
    pytest.param({"n1": None, "n3": "b"}, {"g-0": "n1"},
                 "cannot determine domain for already scheduled pods: no topology domain found for pod default/g-0",
                 id="node-without-the-label"),
    pytest.param(FOUR, {"g-0": "gone"},
                 "cannot determine domain for already scheduled pods: getting node for pod default/g-0: nodeinfo "
                 'not found for node name "gone"', id="node-gone"),
])
def test_generate_placements_errors(racks: dict[str, str | None], bound: dict[str, str], message: str) -> None:
    h, infos = cluster(racks, [member(name, node=n) for name, n in bound.items()])
    placements, status = TopologyPlacementGenerator(None, h).generate_placements(
        CycleState(), group(), Placement("", infos))
    assert placements == [] and status is not None
    assert (status.code, status.message()) == (Code.ERROR, message)


# ---- PodGroupPodsCount -------------------------------------------------------------------------

def assignments(placement: Placement, n: int) -> PodGroupAssignments:
    return PodGroupAssignments(placement, [ProposedAssignment(member(f"p{i}"), "n1") for i in range(n)])


@pytest.mark.parametrize(("scheduled", "proposed", "want_raw", "want"), [
    pytest.param(0, [3, 3], [3, 3], [100, 100], id="tie"),
    pytest.param(0, [2, 3], [2, 3], [66, 100], id="more-pods-more-score"),
    pytest.param(1, [1, 3], [2, 4], [50, 100], id="scheduled-pods-count"),
    pytest.param(0, [1, 0, 7], [1, 0, 7], [14, 0, 100], id="integer-division"),
])
def test_pod_group_pods_count(scheduled: int, proposed: list[int], want_raw: list[int], want: list[int]) -> None:
    members = [member(f"g-{i}", node="n1") for i in range(scheduled)] + [member("g-pending")]
    h, infos = cluster(FOUR, members)
    pl = PodGroupPodsCount(None, h)
    placement = Placement("a", infos)
    raw = [pl.score_placement(CycleState(), group(), assignments(placement, n)) for n in proposed]
    assert raw == want_raw
    scores = [PlacementScore(placement, s) for s in raw]
    assert pl.normalize_placement_scores(CycleState(), group(), scores) is None
    assert [s.score for s in scores] == want


def test_pod_group_pods_count_with_no_pod_anywhere_is_an_error() -> None:
    h, infos = cluster(FOUR, [member("g-0")])
    scores = [PlacementScore(Placement("a", infos), 0), PlacementScore(Placement("b", infos), 0)]
    status = PodGroupPodsCount(None, h).normalize_placement_scores(CycleState(), group(), scores)
    assert status is not None and status.code == Code.ERROR
    assert status.message() == "no pods from pod group are assigned to any of the candidate placements"


def test_pod_group_pods_count_without_the_groups_state() -> None:
    h, infos = cluster(FOUR, [])
    h.ctx.shared_indexes[POD_GROUP_STATES] = PodGroupStates(lambda uid: False)
    with pytest.raises(PluginError, match="pod group state not found for pod group default/g"):
        PodGroupPodsCount(None, h).score_placement(CycleState(), group(), assignments(Placement("a", infos), 1))


# ---- NodeResourcesFit's placement score --------------------------------------------------------

def fit(strategy: str = "LeastAllocated", resources: list[dict[str, Any]] | None = None) -> NodeResourcesFit:
    scoring: dict[str, Any] = {"type": strategy}
    if resources is not None:
        scoring["resources"] = resources
    return NodeResourcesFit(NodeResourcesFitArgs.model_validate({"scoringStrategy": scoring}), handle())


@pytest.mark.parametrize(("nodes", "pods", "strategy", "resources", "want"), [
    # two 4-CPU 8Gi nodes, 2 CPU / 2Gi used, two pods of 1 CPU / 1Gi: cpu 4/8 -> 50, memory 4/16Gi -> 25
    pytest.param([("4", "8Gi", "1", "1Gi"), ("4", "8Gi", "1", "1Gi")], [("1", "1Gi"), ("1", "1Gi")], "LeastAllocated",
                 None, (50 + 25) // 2, id="most-allocated-whatever-the-strategy"),
    pytest.param([("4", "8Gi", "1", "1Gi"), ("4", "8Gi", "1", "1Gi")], [("1", "1Gi"), ("1", "1Gi")],
                 "MostAllocated", [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}],
                 (50 * 3 + 25) // 4, id="the-strategy's-resources-and-weights"),
    pytest.param([("2", "4Gi", None, None)], [("3", "1Gi")], "LeastAllocated", None, (100 + 25) // 2,
                 id="capped-at-capacity"),
    # a pod without requests counts the scoring defaults (100m, 200Mi)
    pytest.param([("1", "1000Mi", None, None)], [(None, None)], "LeastAllocated", None, (10 + 20) // 2,
                 id="non-zero-defaults"),
])
def test_node_resources_fit_score_placement(nodes: list[tuple[str, str, str | None, str | None]],
                                            pods: list[tuple[str | None, str | None]], strategy: str,
                                            resources: list[dict[str, Any]] | None, want: int) -> None:
    infos = []
    for i, (cpu, mem, used_cpu, used_mem) in enumerate(nodes):
        running = [make_pod(f"r{i}", node=f"n{i}", cpu=used_cpu, memory=used_mem)] if used_cpu else []
        infos.append(node_info(make_node(f"n{i}", cpu=cpu, memory=mem), *running))
    placed = [ProposedAssignment(make_pod(f"p{i}", cpu=c, memory=m), "n0") for i, (c, m) in enumerate(pods)]
    got = fit(strategy, resources).score_placement(CycleState(), group(), PodGroupAssignments(
        Placement("a", infos), placed))
    assert got == want


def test_fuller_placement_scores_higher() -> None:
    empty = [node_info(make_node("n1", cpu="2")), node_info(make_node("n2", cpu="2"))]
    busy = [node_info(make_node("n3", cpu="2"), make_pod("r", node="n3", cpu="1")), node_info(make_node("n4", cpu="2"))]
    pl = fit()
    pods = [ProposedAssignment(make_pod("p", cpu="500m"), "x")]
    assert (pl.score_placement(CycleState(), group(), PodGroupAssignments(Placement("b", busy), pods))
            > pl.score_placement(CycleState(), group(), PodGroupAssignments(Placement("a", empty), pods)))
