"""simulate --suggest for units that need three changes or more (suggest/on_node.py, the gang
prerequisites of combine.py): hand-made clusters, one per class of the coverage's misses; each
suggestion is applied by this test (its own edits, not the code's) and simulated again."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from kubeberth import features
from kubeberth.report.scope import COUNTS
from kubeberth.report.suggestions import scoped
from tests.whatif.suggest.test_gangs import all_placed, found, gang
from tests.whatif.suggest.test_suggest import node, placed, pod, priority_class, suggestions_of

DRIVER = "disk.csi.example"
TAINT = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
TOLERATE = {"key": "dedicated", "effect": "NoSchedule", "operator": "Equal", "value": "db"}


@pytest.fixture(autouse=True)
def gates() -> Iterator[None]:
    with features.override(features.FeatureGates.parse("GenericWorkload=true")):
        yield


def claim(name: str, on_node: str | None) -> list[dict[str, Any]]:
    """A PV bound to claim `name` (pinned to `on_node` by node affinity when given) and the claim."""
    pv_spec: dict[str, Any] = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                               "storageClassName": "manual", "csi": {"driver": DRIVER, "volumeHandle": name},
                               "claimRef": {"namespace": "default", "name": name}}
    if on_node:
        pv_spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [on_node]}]}]}}
    return [{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"pv-{name}"}, "spec": pv_spec,
             "status": {"phase": "Bound"}},
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default"},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                      "storageClassName": "manual", "volumeName": f"pv-{name}"},
             "status": {"phase": "Bound"}}]


def uses(p: dict[str, Any], name: str) -> dict[str, Any]:
    p["spec"]["volumes"] = [{"name": name, "persistentVolumeClaim": {"claimName": name}}]
    return p


def storage() -> list[dict[str, Any]]:
    return [{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "manual"},
             "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "Immediate"},
            {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "a"},
             "spec": {"drivers": [{"name": DRIVER, "nodeID": "a", "allocatable": {"count": 1}}]}},
            *claim("data", "a"), *claim("logs", None)]


def at_volume_limit() -> list[dict[str, Any]]:
    # The PV of `data` is pinned to node a; a pod placed there before web (higher priority) holds
    # a's only volume slot; b is free but the PV rules it out.
    first = uses(pod("first", "100m", nodeSelector={"kubernetes.io/hostname": "a"}, priorityClassName="high"),
                 "logs")
    return [node("a"), node("b"), priority_class("high", 100), *storage(), first, uses(pod("web", "500m"), "data")]


def tainted_cordoned_full() -> list[dict[str, Any]]:
    # One node, tainted, cordoned and full: three changes on it.
    a = node("a", taints=[TAINT])
    a["spec"]["unschedulable"] = True
    return [a, pod("busy", "2", ns="team-b", node_name="a", tolerations=[TOLERATE]), pod("web", "1", ns="team-a")]


def too_big_tainted_full() -> list[dict[str, Any]]:
    # web asks for more cpu than any node has; the largest node is tainted and full.
    return [node("a", cpu="2", taints=[TAINT]), node("b", cpu="1"),
            pod("busy", "2", node_name="a", tolerations=[TOLERATE]), pod("busy-b", "1", node_name="b"),
            pod("web", "3")]


def unoffered_tainted_full() -> list[dict[str, Any]]:
    # web asks for a GPU no node offers; the only node is tainted and full.
    web = pod("web", "1")
    web["spec"]["containers"][0]["resources"]["requests"]["example.com/gpu"] = "1"
    return [node("a", taints=[TAINT]), pod("busy", "2", node_name="a", tolerations=[TOLERATE]), web]


def made(objects: list[dict[str, Any]], key: str, s: dict[str, Any]) -> list[dict[str, Any]]:
    """The steps of a suggestion made by hand on a copy of the input."""
    out = copy.deepcopy(objects)
    gone: set[str] = set()
    for step in s.get("steps") or [s]:
        target = next(o for o in out if o.get("kind") == "Pod" and
                      f"{o['metadata'].get('namespace', 'default')}/{o['metadata']['name']}" == key)
        if step["kind"] == "Evict":
            gone |= {e["pod"] for e in step["evict"]}
        elif step["kind"] == "Uncordon":
            next(o for o in out if o.get("kind") == "Node" and o["metadata"]["name"] == step["node"])[
                "spec"].pop("unschedulable")
        elif step["kind"] == "LowerRequests":
            for r in step["requests"]:
                target["spec"]["containers"][0]["resources"]["requests"][r["resource"]] = r["to"]
        elif step["kind"] == "Relax":
            for t in step["terms"]:
                assert t["constraint"] == "toleration", t
                target["spec"].setdefault("tolerations", []).append(t["to"])
        else:
            raise AssertionError(f"the test cannot make {step}")
    return [o for o in out if o.get("kind") != "Pod" or
            f"{o['metadata'].get('namespace', 'default')}/{o['metadata']['name']}" not in gone]


@pytest.mark.parametrize(("build", "key", "kind", "steps", "evicted"), [
    # (a) volumes: the node the PV is pinned to is at its volume limit, held by a pod the
    # baseline placed there (not bound in the input): evicting it is the answer.
    (at_volume_limit, "default/web", "Evict", ["Evict"], ["default/first"]),
    # (b) three constraints on the only node: tolerate, uncordon, evict.
    (tainted_cordoned_full, "team-a/web", "Combined", ["Evict", "Relax", "Uncordon"], ["team-b/busy"]),
    # (c) more than any node's allocatable, every node full (the largest one tainted too): lowered
    # to the allocatable of b, the pod there evicted.
    (too_big_tainted_full, "default/web", "Combined", ["Evict", "LowerRequests"], ["default/busy-b"]),
    # (e) an extended resource no node offers, the only node tainted and full: the request
    # removed, the taint tolerated, the pod there evicted.
    (unoffered_tainted_full, "default/web", "Combined", ["Evict", "LowerRequests", "Relax"], ["default/busy"]),
])
def test_changes_on_one_node(build: Any, key: str, kind: str, steps: list[str], evicted: list[str]) -> None:
    objects = build()
    assert not placed(objects, key)
    got = suggestions_of(objects, key, kind)
    assert got, "no suggestion"
    s = got[0]
    assert s["verified"] is True
    assert sorted(x["kind"] for x in s.get("steps") or [s]) == steps  # one step of each kind
    assert [e["pod"] for x in s.get("steps") or [s] if x["kind"] == "Evict" for e in x["evict"]] == evicted
    assert placed(made(objects, key, s), key)


def test_lowered_request_is_the_nodes_allocatable() -> None:
    # Lowered to the largest allocatable (2), then to b's (1): one step, from the pod's own value.
    objects = too_big_tainted_full()
    (s,) = suggestions_of(objects, "default/web", "Combined")[:1]
    assert [x["requests"] for x in s["steps"] if x["kind"] == "LowerRequests"] == [
        [{"resource": "cpu", "from": "3", "to": "1"}]]


def test_evicted_pod_placed_by_the_baseline_says_its_node() -> None:
    (s,) = suggestions_of(at_volume_limit(), "default/web", "Evict")[:1]
    assert [(e["pod"], e["node"]) for e in s["evict"]] == [("default/first", "a")]
    assert s["places"] == [{"pod": "default/web", "node": "a"}]


def test_scoped_steps_name_no_other_namespace() -> None:
    (s,) = suggestions_of(tainted_cordoned_full(), "team-a/web", "Combined")[:1]
    shown = scoped([s], "team-a", COUNTS, ["team-a", "team-b"])[0]
    evict = next(x for x in shown["steps"] if x["kind"] == "Evict")
    assert evict["evict"] == [] and evict["evictInOtherNamespaces"] == [{"priority": 0, "pdbBlocks": False}]
    assert "team-b/busy" not in repr(shown) and "'a'" not in repr(shown)


def test_gang_of_mixed_priorities_short_of_pods() -> None:
    # (d) The PodGroup says `mid`, one pod nothing, and minCount 3 of 2 pods: the pods pinned to
    # the two nodes (no new node matches), a third pod fits nowhere; the priorities aligned AND
    # minCount lowered place the gang.
    pin = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["a", "b"]}]}]}}}
    objects = [node("a"), node("b"), priority_class("mid", 500),
               *gang("g", 2, 3, "1500m", priorityClassName="mid")]
    for p in objects[4:]:
        p["spec"]["affinity"] = copy.deepcopy(pin)
    objects[4]["spec"]["priorityClassName"] = "mid"
    members, got = found(objects)
    assert [s["kind"] for s in got] == ["Combined"]
    steps = got[0]["steps"]
    assert [(x["kind"], x.get("constraint")) for x in steps] == [("Relax", "podGroupPriority"), ("Relax", "minCount")]
    assert (steps[1]["from"], steps[1]["to"]) == (3, 2)
    fixed = copy.deepcopy(objects)
    fixed[5]["spec"]["priorityClassName"] = "mid"
    fixed[3]["spec"]["schedulingPolicy"]["gang"]["minCount"] = 2
    assert all_placed(fixed, members) and not all_placed(objects, members)


@pytest.mark.parametrize(("init", "want"), [
    # A regular init container asking for more than the node has: capped (the pod asks for the
    # larger of it and the containers' sum).
    ({"name": "init", "image": "x", "resources": {"requests": {"cpu": "3"}}}, {"init": "2", "c": "1"}),
    # A sidecar (restarted Always) runs alongside the container: the two are cut together.
    ({"name": "init", "image": "x", "restartPolicy": "Always", "resources": {"requests": {"cpu": "2"}}},
     {"init": "1", "c": "1"}),
])
def test_init_containers_lowered_too(init: dict[str, Any], want: dict[str, str]) -> None:
    web = pod("web", "1")
    web["spec"]["initContainers"] = [init]
    objects = [node("a"), web]
    (s,) = suggestions_of(objects, "default/web", "LowerRequests")[:1]
    assert s["requests"] == [{"resource": "cpu", "from": "3", "to": "2"}]
    fixed = copy.deepcopy(objects)
    fixed[1]["spec"]["initContainers"][0]["resources"]["requests"]["cpu"] = want["init"]
    fixed[1]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = want["c"]
    assert placed(fixed, "default/web") and not placed(objects, "default/web")


def test_overhead_kept_when_lowering() -> None:
    # 2500m + an overhead of 500m on nodes of 2 cpu: the container lowered to 1500m (the overhead
    # stays: it is the runtime's).
    web = pod("web", "2500m", overhead={"cpu": "500m"})
    objects = [node("a"), web]
    (s,) = suggestions_of(objects, "default/web", "LowerRequests")[:1]
    assert s["requests"] == [{"resource": "cpu", "from": "3", "to": "2"}]
    fixed = copy.deepcopy(objects)
    fixed[1]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1500m"
    assert placed(fixed, "default/web") and not placed(objects, "default/web")


def test_new_nodes_attach_what_their_template_attaches() -> None:
    # Every node attaches one volume of the driver (CSINode); web uses two: a copy of a node
    # would refuse it as well, so no AddNodes is printed (a copy without the limit would "place" it).
    objects = [node("a"), *storage(), *claim("cache", None),
               uses(pod("web", "500m"), "logs")]
    objects[-1]["spec"]["volumes"].append({"name": "cache", "persistentVolumeClaim": {"claimName": "cache"}})
    objects = [o for o in objects if o.get("metadata", {}).get("name") not in ("data", "pv-data")]
    assert not placed(objects, "default/web")
    assert suggestions_of(objects, "default/web", "AddNodes") == []
