"""simulate --suggest for gangs (GenericWorkload): the whole gang must be placed by the change;
hand-made cases, each suggestion applied by this test and simulated again."""

from __future__ import annotations

import copy
import io
from collections.abc import Iterator
from typing import Any

import pytest

from kubeberth import features
from kubeberth.whatif.engine import run_simulation
from kubeberth.whatif.suggest import attach
from tests.whatif.suggest.test_suggest import node, pod, priority_class

GATES = features.FeatureGates.parse("GenericWorkload=true")


@pytest.fixture(autouse=True)
def gates() -> Iterator[None]:
    with features.override(GATES):
        yield


def gang(name: str, members: int, min_count: int, cpu: str, **spec: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                                  "metadata": {"name": name, "namespace": "default"},
                                  "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}, **spec}}]
    for i in range(members):
        out.append(pod(f"{name}-{i}", cpu, schedulingGroup={"podGroupName": name}))
    return out


def found(objects: list[dict[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
    outcomes, _ = run_simulation(copy.deepcopy(objects), warn=io.StringIO())
    attach(objects, outcomes, limit=10)
    members = [o.pod for o in outcomes if o.pod.startswith("default/g-")]
    lists = {repr(o.suggestions) for o in outcomes if o.pod in members}
    assert len(lists) == 1  # every pod of the gang carries the gang's suggestions
    return members, next(o.suggestions for o in outcomes if o.pod == members[0]) or []


def all_placed(objects: list[dict[str, Any]], members: list[str]) -> bool:
    outcomes = {o.pod: o for o in run_simulation(copy.deepcopy(objects), warn=io.StringIO())[0]}
    return all(outcomes[k].status == "Scheduled" for k in members)


def test_add_nodes_for_the_whole_gang() -> None:
    # Two pods of 1500m, one node of 2 cpu: a gang of minCount 2 needs a second node.
    objects = [node("a"), *gang("g", 2, 2, "1500m")]
    members, got = found(objects)
    add = [s for s in got if s["kind"] == "AddNodes"]
    assert [(s["nodeGroup"], s["count"]) for s in add] == [("a", 1)]
    assert sorted(p["pod"] for p in add[0]["places"]) == members
    extra = copy.deepcopy(objects[0])
    extra["metadata"]["name"] = extra["metadata"]["labels"]["kubernetes.io/hostname"] = add[0]["newNodes"][0]
    assert all_placed([*objects, extra], members)
    assert not all_placed(objects, members)


def test_gang_short_of_pods_gets_its_min_count_lowered() -> None:
    objects = [node("a", cpu="8"), *gang("g", 2, 3, "1")]
    members, got = found(objects)
    relax = [s for s in got if s["kind"] == "Relax"]
    assert [(s["constraint"], s["from"], s["to"]) for s in relax] == [("minCount", 3, 2)]
    edited = copy.deepcopy(objects)
    edited[1]["spec"]["schedulingPolicy"]["gang"]["minCount"] = 2
    assert all_placed(edited, members)


def test_mixed_priorities_aligned_with_the_group() -> None:
    # The PodGroup says `mid`, one pod says nothing: the scheduler refuses the gang until they agree.
    objects = [node("a", cpu="8"), priority_class("mid", 500), *gang("g", 2, 2, "1", priorityClassName="mid")]
    objects[3]["spec"]["priorityClassName"] = "mid"
    members, got = found(objects)
    assert [(s["kind"], s.get("constraint"), s.get("pods"), s.get("to")) for s in got] == [
        ("Relax", "podGroupPriority", ["default/g-1"], "mid")]
    edited = copy.deepcopy(objects)
    edited[4]["spec"]["priorityClassName"] = "mid"
    assert all_placed(edited, members)
