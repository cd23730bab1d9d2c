"""simulate --suggest, the kinds for units no single change of the first search placed: a request
no node can hold (lowered to the closest node's allocatable, removed when no node offers the
resource), a gang short of pods (AddPods), a cordoned node (Uncordon), and the prerequisites of a
gang combined. Hand-made clusters; each suggestion applied by this test and simulated again."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from kubeberth import features
from kubeberth.report.scope import COUNTS, FULL
from kubeberth.report.suggestions import describe, scoped
from tests.whatif.suggest.test_gangs import all_placed, found, gang
from tests.whatif.suggest.test_suggest import node, placed, pod, priority_class, suggestions_of

GPU = "example.com/gpu"


@pytest.fixture(autouse=True)
def gates() -> Iterator[None]:
    with features.override(features.FeatureGates.parse("GenericWorkload=true")):
        yield


def with_requests(p: dict[str, Any], **requests: str) -> dict[str, Any]:
    p["spec"]["containers"][0]["resources"]["requests"].update({k.replace("_", "."): v for k, v in requests.items()})
    return p


@pytest.mark.parametrize(("requests", "want", "edited"), [
    # No node offers the GPU: the request is removed, said plainly.
    ({"cpu": "1", GPU: "1"}, [{"resource": GPU, "from": "1", "to": "0",
                                "note": f"no node offers {GPU}: remove the request"}], {"cpu": "1"}),
    # 3 cpu on nodes of 2: lowered to the largest node's allocatable.
    ({"cpu": "3"}, [{"resource": "cpu", "from": "3", "to": "2"}], {"cpu": "2"}),
])
def test_a_request_no_node_can_hold(requests: dict[str, str], want: list[dict[str, str]],
                                    edited: dict[str, str]) -> None:
    web = pod("web", "1")
    web["spec"]["containers"][0]["resources"]["requests"] = dict(requests)
    objects = [node("a"), node("b", cpu="1"), web]
    got = suggestions_of(objects, "default/web", "LowerRequests")
    assert [s["requests"] for s in got] == [want]
    assert not placed(objects, "default/web")
    fixed = copy.deepcopy(objects)
    fixed[2]["spec"]["containers"][0]["resources"]["requests"] = dict(edited)
    assert placed(fixed, "default/web")
    if GPU in requests:
        assert f"(no node offers {GPU}: remove the request)" in describe(got[0])


def test_a_gang_short_of_pods_gets_its_missing_pods() -> None:
    objects = [node("a", cpu="8"), *gang("g", 2, 4, "1")]
    members, got = found(objects)
    add = [s for s in got if s["kind"] == "AddPods"]
    assert [(s["podGroup"], s["minCount"], s["existing"], s["count"], s["copyOf"], s["newPods"]) for s in add] == [
        ("default/g", 4, 2, 2, "default/g-0", ["default/g-0-suggested-1", "default/g-0-suggested-2"])]
    assert got[0]["kind"] == "AddPods"  # first: the gang as its owner meant it
    assert sorted(p["pod"] for p in add[0]["places"]) == sorted([*members, *add[0]["newPods"]])
    copies = []
    for name in ("g-0-suggested-1", "g-0-suggested-2"):
        c = copy.deepcopy(objects[2])
        c["metadata"]["name"] = name
        copies.append(c)
    assert all_placed([*objects, *copies], [*members, *add[0]["newPods"]])
    assert not all_placed(objects, members)
    assert describe(add[0]).startswith("AddPods: create 2 more pod(s) of the gang default/g (minCount 4, 2 exist)")


def test_a_cordoned_node_uncordoned() -> None:
    cordoned = node("spare")
    cordoned["spec"]["unschedulable"] = True
    objects = [node("a"), cordoned, pod("busy", "2", ns="team-b", node_name="a"), pod("web", "1", ns="team-a")]
    got = suggestions_of(objects, "team-a/web", "Uncordon")
    assert [(s["node"], s["from"], s["to"]) for s in got] == [("spare", True, None)]
    assert got[0]["places"] == [{"pod": "team-a/web", "node": "spare"}]
    fixed = copy.deepcopy(objects)
    del fixed[1]["spec"]["unschedulable"]
    assert placed(fixed, "team-a/web") and not placed(objects, "team-a/web")
    for detail, text in ((FULL, "Uncordon: uncordon node spare"), (COUNTS, "Uncordon: uncordon a cordoned node")):
        shown = scoped(got, "team-a", detail, ["team-a", "team-b"])
        assert describe(shown[0]).startswith(text)
        assert ("spare" in repr(shown)) == (detail == FULL)


def test_a_gangs_prerequisites_combined() -> None:
    # Mixed priorities (the scheduler refuses the gang) and a GPU no node offers: both changed at
    # once, then a node added (two pods of 1500m on one node of 2 cpu).
    objects = [node("a"), priority_class("mid", 500), *gang("g", 2, 2, "1500m", priorityClassName="mid")]
    objects[3]["spec"]["priorityClassName"] = "mid"
    for p in objects[3:]:
        with_requests(p, **{"example_com/gpu": "1"})
    members, got = found(objects)
    assert [s["kind"] for s in got] == ["Combined"]
    steps = got[0]["steps"]
    assert [s["kind"] for s in steps] == ["Relax", "LowerRequests", "AddNodes"]
    assert (steps[0]["constraint"], steps[0]["pods"], steps[0]["to"]) == ("podGroupPriority", ["default/g-1"], "mid")
    assert steps[1]["requests"] == [{"resource": GPU, "from": "1", "to": "0",
                                     "note": f"no node offers {GPU}: remove the request"}]
    assert (steps[2]["nodeGroup"], steps[2]["count"]) == ("a", 1)
    assert got[0]["changes"] == 3
    fixed = copy.deepcopy(objects)
    fixed[4]["spec"]["priorityClassName"] = "mid"
    for p in fixed[3:]:
        del p["spec"]["containers"][0]["resources"]["requests"][GPU]
    extra = copy.deepcopy(objects[0])
    extra["metadata"]["name"] = extra["metadata"]["labels"]["kubernetes.io/hostname"] = steps[2]["newNodes"][0]
    assert all_placed([*fixed, extra], members)
    assert not all_placed(fixed, members)
