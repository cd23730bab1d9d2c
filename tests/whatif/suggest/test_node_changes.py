"""simulate --suggest for the pods no pod-side change places (suggest/node_change.py, the nested
combinations of combine.py): a volume pinned to a node that attaches too few volumes or lacks a
resource, and a gang of mixed priorities that needs two changes after its priorities are aligned.
Each suggestion is applied by this test (its own edits, not the code's) and simulated again."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from kubeberth import features
from kubeberth.report.scope import COUNTS
from kubeberth.report.suggestions import describe, scoped
from kubeberth.whatif.suggest.profile_change import profile_change, profile_edit
from tests.whatif.suggest.test_gangs import all_placed, found, gang
from tests.whatif.suggest.test_on_nodes import DRIVER, TAINT, TOLERATE, storage, uses
from tests.whatif.suggest.test_suggest import node, placed, pod, priority_class, suggestions_of

GPU = "example.com/gpu"


@pytest.fixture(autouse=True)
def gates() -> Iterator[None]:
    with features.override(features.FeatureGates.parse("GenericWorkload=true")):
        yield


def two_volumes(p: dict[str, Any]) -> dict[str, Any]:
    """The pod mounts `data` (its PV pinned to node a) and `logs` (anywhere)."""
    uses(p, "data")["spec"]["volumes"].append({"name": "logs", "persistentVolumeClaim": {"claimName": "logs"}})
    return p


def gpu_node(name: str, count: int, **kw: Any) -> dict[str, Any]:
    n = node(name, **kw)
    n["status"]["allocatable"][GPU] = str(count)
    return n


def wants_gpu(p: dict[str, Any]) -> dict[str, Any]:
    p["spec"]["containers"][0]["resources"]["requests"][GPU] = "1"
    return p


def over_attach_limit() -> list[dict[str, Any]]:
    # a's CSINode attaches 1 volume of the driver, web mounts 2, its PV pins it to a; b is free.
    return [node("a"), node("b"), *storage(), two_volumes(pod("web", "500m"))]


def over_attach_limit_tainted() -> list[dict[str, Any]]:
    # The same, a tainted too: the taint tolerated and the limit raised, together.
    return [node("a", taints=[TAINT]), node("b"), *storage(), two_volumes(pod("web", "500m"))]


def pinned_without_gpu() -> list[dict[str, Any]]:
    # web asks for a GPU; b has one, but web's PV pins it to a, which has none.
    return [node("a"), gpu_node("b", 1), *storage(), wants_gpu(uses(pod("web", "500m"), "data"))]


def made(objects: list[dict[str, Any]], s: dict[str, Any]) -> list[dict[str, Any]]:
    """The node changes and tolerations of a suggestion, made by hand on a copy of the input."""
    out = copy.deepcopy(objects)
    web = next(o for o in out if o.get("kind") == "Pod" and o["metadata"]["name"] == "web")
    for step in s.get("steps") or [s]:
        if step["kind"] == "RaiseVolumeLimit":
            csi = next(o for o in out if o.get("kind") == "CSINode" and o["metadata"]["name"] == step["node"])
            csi["spec"]["drivers"][0]["allocatable"]["count"] = step["to"]
        elif step["kind"] == "AddNodeResource":
            n = next(o for o in out if o.get("kind") == "Node" and o["metadata"]["name"] == step["node"])
            n["status"]["allocatable"][step["resource"]] = step["to"]
        elif step["kind"] == "Relax":
            assert [t["constraint"] for t in step["terms"]] == ["toleration"]
            web["spec"]["tolerations"] = [TOLERATE]
        else:
            raise AssertionError(f"the test cannot make {step}")
    return out


@pytest.mark.parametrize(("build", "kind", "steps"), [
    (over_attach_limit, "RaiseVolumeLimit", [("RaiseVolumeLimit", "a", DRIVER, 1, 2)]),
    (over_attach_limit_tainted, "Combined", [("Relax",), ("RaiseVolumeLimit", "a", DRIVER, 1, 2)]),
    (pinned_without_gpu, "AddNodeResource", [("AddNodeResource", "a", GPU, "0", "1")]),
])
def test_node_changes_on_the_pinned_node(build: Any, kind: str, steps: list[tuple[Any, ...]]) -> None:
    objects = build()
    assert not placed(objects, "default/web")
    got = suggestions_of(objects, "default/web", kind)
    assert got, "no suggestion"
    s = got[0]
    assert s["verified"] is True and s["places"] == [{"pod": "default/web", "node": "a"}]
    shown = [(x["kind"],) if x["kind"] == "Relax" else
             (x["kind"], x["node"], x.get("driver") or x.get("resource"), x["from"], x["to"])
             for x in s.get("steps") or [s]]
    assert shown == steps
    assert all(x.get("note") for x in s.get("steps") or [s] if x["kind"] != "Relax")  # says what to do
    assert placed(made(objects, s), "default/web")


def test_node_change_scoped_names_no_node() -> None:
    (s,) = suggestions_of(over_attach_limit(), "default/web", "RaiseVolumeLimit")[:1]
    assert "node a" in describe(s) and "CSINode count 1 -> 2" in describe(s)
    shown = scoped([s], "default", COUNTS)[0]
    assert "node" not in shown and "'a'" not in repr(shown)
    assert "the node's volume limit" in describe(shown)


def test_gang_of_mixed_priorities_needs_a_toleration_and_a_node() -> None:
    # The PodGroup says `mid`, g-1 nothing; each pod asks for a GPU; the one GPU node is tainted:
    # aligned, then tolerated, then one node more of its shape (the gang needs two GPUs).
    objects = [node("a"), gpu_node("g", 1, taints=[TAINT]), priority_class("mid", 500),
               *gang("g", 2, 2, "500m", priorityClassName="mid")]
    for p in objects[4:]:
        wants_gpu(p)
    objects[4]["spec"]["priorityClassName"] = "mid"
    members, got = found(objects)
    assert [s["kind"] for s in got] == ["Combined"]
    steps = got[0]["steps"]
    assert [(x["kind"], x.get("constraint") or x.get("nodeGroup")) for x in steps] == [
        ("Relax", "podGroupPriority"), ("Relax", None), ("AddNodes", "g")]
    assert [t["constraint"] for t in steps[1]["terms"]] == ["toleration"] and steps[2]["count"] == 1
    fixed = copy.deepcopy(objects)
    fixed[5]["spec"]["priorityClassName"] = "mid"
    for p in fixed[4:]:
        p["spec"]["tolerations"] = [TOLERATE]
    extra = copy.deepcopy(objects[1])
    extra["metadata"]["name"] = extra["metadata"]["labels"]["kubernetes.io/hostname"] = "g-2"
    assert all_placed([*fixed, extra], members)
    assert not all_placed(fixed, members) and not all_placed(objects, members)


ZONE = "topology.kubernetes.io/zone"


def default_spread_rejects() -> list[dict[str, Any]]:
    # The profile's default constraint (zone, DoNotSchedule) applies to web (owned by a ReplicaSet,
    # no constraints of its own); the one node has no zone label: every copy of it is rejected too.
    profile = {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": "p"},
               "spec": {"schedulerName": "default-scheduler", "pluginConfig": [{"name": "PodTopologySpread", "args": {
                   "defaultingType": "List", "defaultConstraints": [
                       {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]}}]}}
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web-rs", "namespace": "default"},
          "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                   "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c"}]}}}}
    web = pod("web", "500m")
    web["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-rs",
                                           "uid": "uid-web-rs", "controller": True}]
    return [profile, node("a"), rs, web]


def test_profile_default_spread_replaced_by_the_pods_own() -> None:
    objects = default_spread_rejects()
    assert not placed(objects, "default/web")
    (s,) = suggestions_of(objects, "default/web", "Relax")[:1]
    (term,) = s["terms"]
    assert (term["path"], term["from"]) == ("spec.topologySpreadConstraints",
                                            "the scheduling profile's defaultConstraints")
    assert [c["whenUnsatisfiable"] for c in term["to"]] == ["ScheduleAnyway"]
    fixed = copy.deepcopy(objects)
    fixed[3]["spec"]["topologySpreadConstraints"] = [
        {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": {"matchLabels": {"app": "web"}}}]
    assert placed(fixed, "default/web")


def repelled_from_the_zone() -> list[dict[str, Any]]:
    # web needs tier=web: only a (zone z1), tainted and full; guard, on c in the same zone (c too
    # small for web), repels app=web from the whole zone: tolerate, evict a's filler AND guard.
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": ZONE}]}}
    return [node("a", labels={"tier": "web", ZONE: "z1"}, taints=[TAINT]), node("c", cpu="500m", labels={ZONE: "z1"}),
            pod("filler", "2", node_name="a", tolerations=[TOLERATE]),
            pod("guard", "100m", node_name="c", affinity=anti),
            pod("web", "1", nodeSelector={"tier": "web"})]


def crowded_gang() -> list[dict[str, Any]]:
    # Two pods of one GPU each, spread by hostname (DoNotSchedule); only g has GPUs (2), and g is
    # tainted, outside the pods' node affinity and full: all of it answered on g, the spread too
    # (both pods on g leave a, eligible, with none).
    spread = [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"group": "g"}}}]
    need = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gpu"]}]}]}}}
    members = gang("g", 2, 2, "500m")
    for p in members[1:]:
        wants_gpu(p)["metadata"]["labels"]["group"] = "g"
        p["spec"].update(topologySpreadConstraints=copy.deepcopy(spread), affinity=copy.deepcopy(need))
    return [node("a"), gpu_node("g", 2, taints=[TAINT]), pod("filler", "2", node_name="g", tolerations=[TOLERATE]),
            *members]


def test_pods_repelling_from_the_domain_are_evicted() -> None:
    objects = repelled_from_the_zone()
    assert not placed(objects, "default/web")
    (s,) = suggestions_of(objects, "default/web", "Combined")[:1]
    evict = next(x for x in s["steps"] if x["kind"] == "Evict")
    assert sorted(e["pod"] for e in evict["evict"]) == ["default/filler", "default/guard"]
    fixed = [o for o in copy.deepcopy(objects) if o["metadata"]["name"] not in ("filler", "guard")]
    fixed[-1]["spec"]["tolerations"] = [TOLERATE]
    assert placed(fixed, "default/web")
    assert not placed([o for o in fixed if o["metadata"]["name"] != "guard"] + [objects[3]], "default/web")


def test_gang_crowded_on_one_node_gets_its_spread_relaxed() -> None:
    objects = crowded_gang()
    members, got = found(objects)
    assert got and got[0]["kind"] == "Combined"
    terms = {t["constraint"] for x in got[0]["steps"] if x["kind"] == "Relax" for t in x["terms"]}
    assert {"nodeAffinity", "toleration", "topologySpreadConstraint"} <= terms
    fixed = [o for o in copy.deepcopy(objects) if o["metadata"]["name"] != "filler"]
    for p in fixed[3:]:
        p["spec"].pop("affinity")
        p["spec"]["tolerations"] = [TOLERATE]
        p["spec"]["topologySpreadConstraints"][0]["whenUnsatisfiable"] = "ScheduleAnyway"
    assert all_placed(fixed, members) and not all_placed(objects, members)


def test_nodes_left_out_by_prefilter_are_in_the_diagnosis() -> None:
    # matchFields on metadata.name: NodeAffinity's PreFilter leaves b out of the attempt (no Filter
    # verdict there); a is full. The diagnosis names b's plugin, so the term is relaxed.
    web = pod("web", "1", affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a"]}]}]}}})
    objects = [node("a"), node("b"), pod("busy", "2", node_name="a"), web]
    assert not placed(objects, "default/web")
    got = suggestions_of(objects, "default/web", "Relax")
    assert [(s["constraint"], s["from"]) for s in got] == [("nodeAffinity", "metadata.name In a")]
    assert got[0]["places"] == [{"pod": "default/web", "node": "b"}]
    fixed = copy.deepcopy(objects)
    fixed[3]["spec"].pop("affinity")
    assert placed(fixed, "default/web")


def in_z2(name: str, **spec: Any) -> dict[str, Any]:
    """A SchedulingProfile whose NodeAffinity adds zone In [z2] to every pod it schedules."""
    return {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": name},
            "spec": {**spec, "pluginConfig": [{"name": "NodeAffinity", "args": {
                "addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["z2"]}]}]}}}}]}}


def test_profile_added_affinity_excluding_the_pinned_node() -> None:
    # web's PV pins it to a (zone z1); the profile adds zone In [z2] to every pod: only the
    # profile's change places it (the pod's own spec is not in the way).
    profile = in_z2("p", schedulerName="default-scheduler")
    objects = [profile, node("a", labels={ZONE: "z1"}), node("b", labels={ZONE: "z2"}), *storage(),
               uses(pod("web", "500m"), "data")]
    assert not placed(objects, "default/web")
    (s,) = suggestions_of(objects, "default/web", "RelaxProfile")[:1]
    assert s["profiles"] == ["p"] and s["places"] == [{"pod": "default/web", "node": "a"}]
    assert "profile(s) p" in describe(s) and s["note"]
    fixed = copy.deepcopy(objects)
    fixed[0]["spec"]["pluginConfig"][0]["args"].pop("addedAffinity")
    assert placed(fixed, "default/web")


def test_only_the_pods_own_profile_is_relaxed() -> None:
    # Two profiles add zone In [z2]: web's (default-scheduler) and batch's. Only web's profile is
    # named and edited; batch's pods keep theirs (job stays off a).
    job = pod("job", "100m")
    job["spec"]["schedulerName"] = "batch"
    objects = [in_z2("p", schedulerName="default-scheduler"), in_z2("q", schedulerName="batch"),
               node("a", labels={ZONE: "z1"}), node("b", labels={ZONE: "z2"}), *storage(),
               uses(pod("web", "500m"), "data"), job]
    assert not placed(objects, "default/web")
    (s,) = suggestions_of(objects, "default/web", "RelaxProfile")[:1]
    assert s["profiles"] == ["p"] and s["places"] == [{"pod": "default/web", "node": "a"}]
    assert s["from"] == objects[0]["spec"]["pluginConfig"][0]["args"]["addedAffinity"]
    edited = profile_edit("default-scheduler")(copy.deepcopy(objects))
    assert "addedAffinity" not in edited[0]["spec"]["pluginConfig"][0]["args"]
    assert edited[1] == objects[1]
    assert profile_change(objects, "batch")["profiles"] == ["q"]
    assert profile_change(objects, "nobody")["profiles"] == []


def test_a_shadow_profiles_added_affinity_is_not_the_pods() -> None:
    # A Shadow profile schedules nothing (its schedulerName defaults to default-scheduler like any
    # other): its addedAffinity keeps no pod off a node, so no RelaxProfile names or edits it.
    shadow = in_z2("s", mode="Shadow")
    objects = [shadow, node("a", labels={ZONE: "z1"}), node("b", labels={ZONE: "z2"}), *storage(),
               uses(pod("web", "500m"), "data")]
    assert placed(objects, "default/web")
    assert profile_change(objects, "default-scheduler")["profiles"] == []
    assert profile_edit("default-scheduler")(copy.deepcopy(objects))[0] == shadow
