"""The parts of a pod group's preemption (preemption/pod_group.py) on their own: the domain's victim
units, their order, the PDB split, the preemption policy and the snapshot edits."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth.cache.pod_groups import PodGroupStates
from kubeberth.cache.snapshot import Snapshot
from kubeberth.model import Pod, PodGroup
from kubeberth.preemption.pdb import PDB
from kubeberth.preemption.pod_group import (
    TYPE_POD,
    TYPE_POD_GROUP,
    GroupVictim,
    SnapshotEdits,
    domain_victims,
    more_important_key,
    resolve_preemption_policy,
    split_by_pdb,
)
from tests.builders import make_pod, node_info

NOW = 1000.0


def group(name: str, priority: int = 5, **spec: Any) -> PodGroup:
    return PodGroup({"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
                     "spec": {"schedulingPolicy": {"basic": {}}, "priority": priority, **spec}})


def grouped(name: str, pg: str, node: str, priority: int = 0) -> Pod:
    return make_pod(name, node=node, priority=priority, schedulingGroup={"podGroupName": pg})


def states(*pairs: tuple[PodGroup | None, list[Pod]]) -> PodGroupStates:
    s = PodGroupStates(lambda uid: False)
    for pg, pods in pairs:
        if pg is not None:
            s.set_pod_group(pg)
        for p in pods:
            s.add_or_update_pod(p)
    return s


def test_victims_are_pods_but_a_disruption_mode_all_group_is_one_unit_across_nodes() -> None:
    a0, a1 = grouped("a-0", "a", "n1"), grouped("a-1", "a", "n2")
    s0, s1 = grouped("s-0", "s", "n1"), grouped("s-1", "s", "n2")
    lone = make_pod("lone", node="n2", priority=3)
    orphan = grouped("orphan", "missing", "n1", priority=2)
    pods = [a0, a1, s0, s1, lone, orphan]
    groups = states((group("a", 7, disruptionMode={"all": {}}), [a0, a1]),
                    (group("s", 6, disruptionMode={"single": {}}), [s0, s1]), (None, [orphan]))
    infos = [node_info("n1", a0, s0, orphan), node_info("n2", a1, s1, lone)]
    victims = domain_victims(infos, groups, NOW)
    got = [([p.name for p in v.pods], v.priority, v.kind) for v in victims]
    assert got == [
        (["a-0", "a-1"], 7, TYPE_POD_GROUP),      # the unit, with the group's priority
        (["s-0"], 6, TYPE_POD_GROUP),              # a pod of a single-mode group: alone, the group's priority
        (["orphan"], 2, TYPE_POD_GROUP),           # its group is not known: the pod's own priority
        (["s-1"], 6, TYPE_POD_GROUP),
        (["lone"], 3, TYPE_POD),
    ]
    assert len({p.uid for p in pods}) == sum(len(v.pods) for v in victims)


def v(name: str, priority: int, kind: str = TYPE_POD, size: int = 1, start: float = NOW) -> GroupVictim:
    return GroupVictim([make_pod(f"{name}-{i}") for i in range(size)], priority, kind, start, key=name)


def test_victims_order_priority_then_groups_then_size_then_start() -> None:
    victims = [v("pod-old", 1, start=1.0), v("pod-new", 1, start=2.0), v("group-small", 1, TYPE_POD_GROUP, 2),
               v("group-big", 1, TYPE_POD_GROUP, 3), v("high-pod", 2)]
    assert [x.key for x in sorted(victims, key=more_important_key)] == [
        "high-pod", "group-big", "group-small", "pod-old", "pod-new"]


def test_a_unit_with_any_pdb_violating_pod_violates_whole_and_budgets_are_spent_in_order() -> None:
    guarded = [make_pod(f"g{i}", labels={"app": "x"}) for i in range(3)]
    unit = GroupVictim(guarded[:2], 1, TYPE_POD_GROUP, NOW)
    single = GroupVictim([guarded[2]], 1, TYPE_POD, NOW)
    free = GroupVictim([make_pod("free")], 1, TYPE_POD, NOW)
    pdb = PDB.from_dict({"metadata": {"name": "b", "namespace": "default"},
                         "spec": {"selector": {"matchLabels": {"app": "x"}}}, "status": {"disruptionsAllowed": 1}})
    bad, good = split_by_pdb([unit, single, free], [pdb])
    # the unit spends the budget of 1 and breaks it with its second pod; the single pod then breaks it too
    assert [(x.pods[0].name, n) for x, n in bad] == [("g0", 1), ("g2", 1)]
    assert good == [free]
    bad, good = split_by_pdb([single, unit, free], [pdb])
    assert [(x.pods[0].name, n) for x, n in bad] == [("g0", 2)]
    assert good == [single, free]


@pytest.mark.parametrize(("gate", "pg_policy", "pod_policies", "want"), [
    (False, None, ["PreemptLowerPriority", "Never"], "Never"),
    (False, "Never", ["PreemptLowerPriority"], "PreemptLowerPriority"),
    (True, "Never", ["PreemptLowerPriority"], "Never"),
    (True, None, ["Never"], "PreemptLowerPriority"),
])
def test_the_preemption_policy(gate: bool, pg_policy: str | None, pod_policies: list[str], want: str) -> None:
    pg = group("g", **({"preemptionPolicy": pg_policy} if pg_policy else {}))
    pods = [make_pod(f"p{i}", preemptionPolicy=p) for i, p in enumerate(pod_policies)]
    assert resolve_preemption_policy(pg, pods, gate) == want


def test_snapshot_edits_survive_a_cache_refresh_and_are_undone() -> None:
    a, b = make_pod("a", node="n1"), make_pod("b", node="n1")
    original = node_info("n1", a, b)
    snap = Snapshot([original, node_info("n2")])
    edits = SnapshotEdits(snap)
    edits.remove_victim(a)
    assert [p.name for p in snap.get("n1").pods] == ["b"]
    assert [p.name for p in original.pods] == ["a", "b"]  # the cache's NodeInfo is not touched
    # the cache replaces the entry (the node changed): the victim is taken off the new one too
    fresh = node_info("n1", a, b, make_pod("c", node="n1"))
    snap.node_infos[0] = fresh
    snap.by_name["n1"] = fresh
    edits.apply()
    assert [p.name for p in snap.get("n1").pods] == ["b", "c"]
    edits.add_victim_back(a)
    edits.apply()
    assert sorted(p.name for p in snap.get("n1").pods) == ["a", "b", "c"]
    edits.restore()
    assert snap.get("n1") is fresh and snap.node_infos[0] is fresh
