"""A single pod's preemption with GenericWorkload on (upstream's DefaultPreemption PostFilter over
GetVictimsOnNode / getCrossNodesVictims): the victims on a node are units. A PodGroup with
`disruptionMode: all` is one unit of all its scheduled pods, on this node and elsewhere: they go
together or stay together. A pod of a group counts at its PodGroup's priority, and ranks before a
pod of no group at equal priority. PDB violations are counted per unit (the violating pods of the
units that go), and every pod of a unit that goes is preempted (DisruptionTarget, Preempted event
naming the node the preemptor is nominated to)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from kubeberth import features
from kubeberth.cache.pod_groups import POD_GROUP_STATES, PodGroupStates
from kubeberth.features import FeatureGates
from kubeberth.framework import Status
from kubeberth.model import Node, Pod, PodGroup
from kubeberth.preemption import list_pdbs
from tests.preemption.fakes import Env, node, pdb, pod

GATE_ON = FeatureGates.parse("GenericWorkload=true")
ALL = {"all": {}}


@pytest.fixture
def gate() -> Iterator[None]:
    with features.override(GATE_ON):
        yield


def group(name: str, priority: int, disruption: dict[str, Any] | None = None) -> PodGroup:
    spec: dict[str, Any] = {"schedulingPolicy": {"basic": {}}, "priority": priority}
    if disruption is not None:
        spec["disruptionMode"] = disruption
    return PodGroup({"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}, "spec": spec})


def member(name: str, pg: str, *, cpu: str = "1", prio: int = 0, node_name: str = "", start: float | None = None,
           labels: dict[str, str] | None = None, preempted: bool = False) -> Pod:
    raw = pod(name, cpu=cpu, prio=prio, node=node_name, start=start, labels=labels, preempted=preempted).raw
    raw["spec"]["schedulingGroup"] = {"podGroupName": pg}
    return Pod(raw)


def env_with(nodes: Sequence[Node], pods: Sequence[Pod], groups: Sequence[PodGroup], **kw: Any) -> Env:
    env = Env(nodes, pods, **kw)
    states = PodGroupStates(lambda uid: False)
    for g in groups:
        states.set_pod_group(g)
    for p in pods:
        states.add_or_update_pod(p)
    env.ctx.shared_indexes[POD_GROUP_STATES] = states
    return env


def select(env: Env, preemptor: Pod, node_name: str = "n1") -> tuple[list[str], int, Status | None]:
    state = env.state_for(preemptor)
    ni = env.ctx.snapshot.get(node_name)
    assert ni is not None
    before = {n.name: [p.name for p in n.pods] for n in env.ctx.snapshot.node_infos}
    victims, violations, status = env.evaluator.select_victims_on_node(
        state.clone(), preemptor, ni.clone(), list_pdbs(env.ctx.objects), groups=env.evaluator.unit_groups())
    assert {n.name: [p.name for p in n.pods] for n in env.ctx.snapshot.node_infos} == before  # untouched
    return [v.name for v in victims], violations, status


G = {"app": "guarded"}


@pytest.mark.usefixtures("gate")
@pytest.mark.parametrize(
    ("pods", "groups", "preemptor", "pdbs", "want"),
    [
        # n1 (4 CPU): ug-0 of a disruptionMode-all group and a lone pod s, all priority 5; ug-1 on n2.
        # The unit ranks first (a group before a pod) and does not fit back: both its pods go, s stays.
        pytest.param([member("ug-0", "ug", cpu="2", prio=5, node_name="n1"), pod("s", cpu="1", prio=5, node="n1"),
                      member("ug-1", "ug", cpu="1", prio=5, node_name="n2")],
                     [group("ug", 5, ALL)], pod("p", cpu="3", prio=100), [], (["ug-0", "ug-1"], 0),
                     id="all-group-is-one-unit-across-nodes"),
        # the same unit fits back whole: none of it goes, though a pod of it is elsewhere
        pytest.param([member("ug-0", "ug", cpu="1", prio=5, node_name="n1"), pod("s", cpu="2", prio=5, node="n1"),
                      member("ug-1", "ug", cpu="1", prio=5, node_name="n2")],
                     [group("ug", 5, ALL)], pod("p", cpu="2", prio=100), [], (["s"], 0),
                     id="all-group-reprieved-whole"),
        # disruptionMode single: the group's pods are units of their own, the one elsewhere stays
        pytest.param([member("sg-0", "sg", cpu="2", prio=5, node_name="n1"), pod("s", cpu="1", prio=5, node="n1"),
                      member("sg-1", "sg", cpu="1", prio=5, node_name="n2")],
                     [group("sg", 5, {"single": {}})], pod("p", cpu="3", prio=100), [], (["sg-0"], 0),
                     id="single-mode-group-pods-alone"),
        # a group's pods count at the PodGroup's priority: own priority 200 > the preemptor's, group's 5
        pytest.param([member("hg-0", "hg", cpu="4", prio=200, node_name="n1")],
                     [group("hg", 5)], pod("p", cpu="2", prio=100), [], (["hg-0"], 0),
                     id="group-priority-makes-a-victim"),
        # own priority 1, the group's 500: not a victim
        pytest.param([member("vip-0", "vip", cpu="4", prio=1, node_name="n1")],
                     [group("vip", 500)], pod("p", cpu="2", prio=100), [],
                     ([], 0, Status.unresolvable("No preemption victims found for incoming pod")),
                     id="group-priority-protects"),
        # a group not known: the pod's own priority; still ranked as a group's pod (before a pod of no
        # group at equal priority, so it is given back first and the lone pod goes)
        pytest.param([member("orphan", "missing", cpu="2", prio=5, node_name="n1", start=100),
                      pod("lone", cpu="2", prio=5, node="n1", start=0)],
                     [], pod("p", cpu="2", prio=100), [], (["lone"], 0),
                     id="pod-of-unknown-group-ranks-as-group"),
        # a PDB guarding the unit's pod on n2: the unit violates as a whole (1 violating pod); it does not
        # fit back and goes, counting 1
        pytest.param([member("ug-0", "ug", cpu="2", prio=5, node_name="n1"), pod("s", cpu="1", prio=50, node="n1"),
                      member("ug-1", "ug", cpu="1", prio=5, node_name="n2", labels=G)],
                     [group("ug", 5, ALL)], pod("p", cpu="3", prio=100), [pdb("g", G, 0)], (["ug-0", "ug-1"], 1),
                     id="pdb-on-a-remote-pod-of-the-unit"),
        # the violating unit is given back before the more important pod s, and fits: s goes instead
        pytest.param([member("ug-0", "ug", cpu="2", prio=5, node_name="n1"), pod("s", cpu="2", prio=50, node="n1"),
                      member("ug-1", "ug", cpu="1", prio=5, node_name="n2", labels=G)],
                     [group("ug", 5, ALL)], pod("p", cpu="2", prio=100), [pdb("g", G, 0)], (["s"], 0),
                     id="pdb-violating-unit-reprieved-first"),
        # units of equal priority: the larger group is given back first
        pytest.param([member("big-0", "big", cpu="2", prio=5, node_name="n1"),
                      member("big-1", "big", cpu="1", prio=5, node_name="n2"),
                      member("big-2", "big", cpu="1", prio=5, node_name="n2"),
                      member("small-0", "small", cpu="2", prio=5, node_name="n1"),
                      member("small-1", "small", cpu="1", prio=5, node_name="n2")],
                     [group("small", 5, ALL), group("big", 5, ALL)], pod("p", cpu="2", prio=100), [],
                     (["small-0", "small-1"], 0), id="larger-unit-kept"),
    ],
)
def test_victim_units_on_a_node(pods: list[Pod], groups: list[PodGroup], preemptor: Pod,
                                pdbs: list[dict[str, Any]], want: tuple[Any, ...]) -> None:
    env = env_with([node("n1", "4"), node("n2", "4")], pods, groups, pdbs=pdbs)
    victims, violations, status = select(env, preemptor)
    if len(want) == 3:
        assert status is not None and (status.code, status.message()) == (want[2].code, want[2].message())
    else:
        assert status is None
    assert (victims, violations) == want[:2]


@pytest.mark.usefixtures("gate")
def test_remote_pods_of_a_unit_go_through_the_prefilter_extensions_with_their_node() -> None:
    """FakePodCount keeps pod counts per node in the CycleState: the unit's pod on n2 is removed
    from (and given back to) n2's count, not n1's."""
    pods = [member("ug-0", "ug", cpu="3", prio=5, node_name="n1"),
            member("ug-1", "ug", cpu="1", prio=5, node_name="n2")]
    env = env_with([node("n1", "4"), node("n2", "4")], pods, [group("ug", 5, ALL)])
    victims, _, status = select(env, pod("p", cpu="2", prio=100))
    assert status is None and victims == ["ug-0", "ug-1"]
    assert env.count.removes == 4 and env.count.adds == 2  # removed, given back, removed again


@pytest.mark.usefixtures("gate")
async def test_every_pod_of_the_unit_is_preempted_naming_the_preemptors_node() -> None:
    pods = [member("ug-0", "ug", cpu="3", prio=5, node_name="n1"),
            member("ug-1", "ug", cpu="1", prio=5, node_name="n2"), pod("full", cpu="4", prio=500, node="n2")]
    env = env_with([node("n1", "4"), node("n2", "4")], pods, [group("ug", 5, ALL)])
    p = pod("p", cpu="2", prio=100)
    result, status = await env.post_filter(p)
    assert status.is_success(), status.message()
    assert status.message() == "preemption: found a potential placement for pod on node n1, preempting 2 victims"
    assert result is not None and result.nominated_node_name == "n1"
    assert sorted(env.client.disruptions) == [
        ("default/ug-0", "default-scheduler: preempting to accommodate a higher priority pod"),
        ("default/ug-1", "default-scheduler: preempting to accommodate a higher priority pod")]
    assert sorted(c for c in env.client.calls if c[0] == "event") == [
        ("event", "default/ug-0", "Normal", "Preempted", "Preempted by pod uid-default-p on node n1"),
        ("event", "default/ug-1", "Normal", "Preempted", "Preempted by pod uid-default-p on node n1")]
    assert env.recorded == [("default/p", ["default/ug-0", "default/ug-1"])]
    assert env.metrics.victims == [2]


@pytest.mark.usefixtures("gate")
async def test_a_unit_counts_all_its_pods_when_candidates_are_compared() -> None:
    """n1 needs a two-pod unit gone, n2 a single pod (of the same priority): n2 has fewer victims."""
    pods = [member("ug-0", "ug", cpu="3", prio=5, node_name="n1"),
            member("ug-1", "ug", cpu="1", prio=5, node_name="n3"), pod("lone", cpu="3", prio=5, node="n2"),
            pod("full", cpu="4", prio=500, node="n3")]
    env = env_with([node("n1", "4"), node("n2", "4"), node("n3", "4")], pods, [group("ug", 5, ALL)])
    result, status = await env.post_filter(pod("p", cpu="2", prio=100))
    assert status.is_success(), status.message()
    assert result is not None and result.nominated_node_name == "n2"
    assert env.recorded == [("default/p", ["default/lone"])]


@pytest.mark.usefixtures("gate")
@pytest.mark.parametrize(("group_priority", "want"), [
    pytest.param(5, (False, "not eligible due to a terminating pod on the nominated node."), id="group-lower"),
    pytest.param(500, (True, ""), id="group-higher"),
])
def test_terminating_victim_on_the_nominated_node_counts_at_its_groups_priority(group_priority: int,
                                                                                 want: tuple[bool, str]) -> None:
    going = member("going", "g", cpu="1", prio=200, node_name="n1", preempted=True)
    env = env_with([node("n1", "4")], [going], [group("g", group_priority)])
    p = pod("p", cpu="1", prio=100, nominated="n1")
    assert env.evaluator.pod_eligible_to_preempt_others(
        p, None, "n1", groups=env.evaluator.pod_groups()) == want


def test_without_the_gate_the_pods_are_victims_one_by_one() -> None:
    pods = [member("ug-0", "ug", cpu="2", prio=5, node_name="n1", start=0),
            pod("s", cpu="1", prio=5, node="n1", start=50), member("ug-1", "ug", cpu="1", prio=5, node_name="n2")]
    env = env_with([node("n1", "4"), node("n2", "4")], pods, [group("ug", 5, ALL)])
    assert env.evaluator.unit_groups() is None
    state = env.state_for(p := pod("p", cpu="3", prio=100))
    ni = env.ctx.snapshot.get("n1")
    assert ni is not None
    victims, _, status = env.evaluator.select_victims_on_node(state.clone(), p, ni.clone(), [])
    assert status is None and [v.name for v in victims] == ["ug-0"]


@pytest.mark.usefixtures("gate")
def test_with_the_gate_but_no_groups_the_pods_are_victims_one_by_one() -> None:
    env = env_with([node("n1", "4")], [pod("a", cpu="2", prio=5, node="n1")], [])
    assert env.evaluator.unit_groups() is None
