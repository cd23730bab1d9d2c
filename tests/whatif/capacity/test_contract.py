"""`kubeberth capacity` on hand-made clusters, counted by hand: each answer is also checked against
simulate of N+1 copies (brute.check) and, where the per-node path answers, against the exact path."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeberth import features
from kubeberth.whatif.capacity import Options

from .brute import check, write_yaml
from .clusters import NEVER, anti_affinity, gang, node, pod, priority_class, zone_spread

ROOT = Path(__file__).resolve().parents[3]
GANGS = features.FeatureGates.parse("GenericWorkload=true")
TAINT = [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]
ZONES = {"a1": "a", "a2": "a", "b1": "b"}


def deployment(template: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 3, "template": {"metadata": {"labels": template["metadata"]["labels"]},
                                                 "spec": template["spec"]}}}


# (id, cluster, template documents, total, perNode, stoppedBy (whole, or a part of it), path, gates)
CASES: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]], int, dict[str, int], str, str, Any]] = [
    ("resources", [node("n1", "4"), node("n2", "2"), pod("run", "1", node_name="n1")], [pod("web", "500m")],
     10, {"n1": 6, "n2": 4}, f"0/2 nodes are available: 2 Insufficient cpu. {NEVER}", "per-node", None),
    ("deployment-template", [node("n1", "4"), node("n2", "2"), pod("run", "1", node_name="n1")],
     [deployment(pod("web", "500m"))], 10, {"n1": 6, "n2": 4}, "2 Insufficient cpu", "per-node", None),
    ("pod-count", [node("n1", "64", pods="3"), node("n2", "64", pods="2"), pod("run", node_name="n1")],
     [pod("web")], 4, {"n1": 2, "n2": 2}, f"0/2 nodes are available: 2 Too many pods. {NEVER}", "per-node", None),
    ("host-ports", [node("n1"), node("n2"), node("n3"), pod("run", node_name="n1", hostPorts=[80])],
     [pod("web", hostPorts=[80])], 2, {"n2": 1, "n3": 1},
     f"0/3 nodes are available: 3 node(s) didn't have free ports for the requested pod ports. {NEVER}",
     "per-node", None),
    ("node-selector-and-taint", [node("n1", "2", labels={"disk": "ssd"}), node("n2", "3", labels={"disk": "ssd"}),
                                 node("n3", "8"), node("n4", "8", labels={"disk": "ssd"}, taints=TAINT)],
     [pod("web", "1", nodeSelector={"disk": "ssd"})], 5, {"n1": 2, "n2": 3},
     "1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint(s)", "per-node", None),
    ("anti-affinity-between-copies", [node("n1"), node("n2"), node("n3"), node("n4", taints=TAINT)],
     [pod("web", labels={"app": "web"}, affinity=anti_affinity("web"))], 3, {"n1": 1, "n2": 1, "n3": 1},
     "didn't match pod anti-affinity rules", "per-node", None),
    ("anti-affinity-against-others", [node("n1", "2"), node("n2", "2"), node("n3", "3"),
                                      pod("db", node_name="n1", labels={"app": "db"})],
     [pod("web", "1", labels={"app": "web"}, affinity=anti_affinity("db"))], 5, {"n2": 2, "n3": 3},
     "1 node(s) didn't match pod anti-affinity rules, 2 Insufficient cpu", "per-node", None),
    ("anti-affinity-per-zone", [node(n, labels={"topology.kubernetes.io/zone": z}) for n, z in ZONES.items()],
     [pod("web", labels={"app": "web"}, affinity={"podAntiAffinity": {
         "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {"matchLabels": {"app": "web"}},
                                                             "topologyKey": "topology.kubernetes.io/zone"}]}})],
     2, {"a1": 1, "b1": 1}, "didn't match pod anti-affinity rules", "exact", None),
    ("zone-spread", [node(n, "2" if z == "a" else "8", labels={"topology.kubernetes.io/zone": z})
                     for n, z in ZONES.items()],
     [pod("web", "1", topologySpreadConstraints=zone_spread("web"))], 9, {"a1": 2, "a2": 2, "b1": 5},
     "didn't match pod topology spread constraints", "exact", None),
    ("gang-needs-3-nodes", [node(f"n{i}", "4") for i in range(1, 8)], gang("train", 3, "3"), 2,
     {f"n{i}": 1 for i in range(1, 7)}, "", "exact", GANGS),
]


@pytest.mark.parametrize(("name", "cluster", "docs", "total", "per_node", "stopped", "path", "gates"), CASES,
                         ids=[c[0] for c in CASES])
def test_hand_counted(tmp_path: Path, name: str, cluster: list[dict[str, Any]], docs: list[dict[str, Any]],
                      total: int, per_node: dict[str, int], stopped: str, path: str, gates: Any) -> None:
    got = check(cluster, write_yaml(tmp_path / "pod.yaml", docs), Options(seed=3), gates)
    assert (got.total, got.path) == (total, path)
    if name in ("gang-needs-3-nodes", "anti-affinity-per-zone"):  # which nodes of a kind: the scores' choice
        assert sorted(got.per_node.values()) == sorted(per_node.values())
    else:
        assert got.per_node == per_node
    assert stopped in str(got.stopped_by)


def test_dra_devices(tmp_path: Path) -> None:
    """Two devices of the asked size on one node: two copies (conformance case dra-gpu-per-pod)."""
    case = yaml.safe_load((ROOT / "tests/conformance/cases/dra-gpu-per-pod.yaml").read_text())
    objects = case["objects"]
    template = next(o for o in objects if o["kind"] == "Pod")
    got = check(objects, write_yaml(tmp_path / "pod.yaml", [template]), Options(seed=1))
    assert (got.total, got.per_node, got.path, got.pending_left_out) == (2, {"g1": 2}, "exact", 3)
    assert "cannot allocate all claims" in str(got.stopped_by)


@pytest.mark.parametrize("allow", [False, True])
def test_preemption_only_when_allowed(tmp_path: Path, allow: bool) -> None:
    """Low-priority pods fill one of two nodes: the copies (high priority) take the free node, and
    evict the low ones only with --allow-preemption."""
    cluster = [priority_class("low", 10), priority_class("high", 1000), node("n1", "2"), node("n2", "2"),
               pod("low-1", "1", node_name="n1", priorityClassName="low"),
               pod("low-2", "1", node_name="n1", priorityClassName="low")]
    got = check(cluster, write_yaml(tmp_path / "pod.yaml", [pod("web", "1", priorityClassName="high")]),
                Options(allow_preemption=allow))
    assert got.total == (4 if allow else 2)
    assert sorted(got.victims) == (["default/low-1", "default/low-2"] if allow else [])
    assert got.verified is (True if allow else None)


def test_max_stops_the_count(tmp_path: Path) -> None:
    from .brute import answer

    got = answer([node("n1", "4")], write_yaml(tmp_path / "pod.yaml", [pod("web", "1")]),
                 Options(max_copies=2, per_node=False))
    assert (got.total, got.max_reached, got.stopped_by) == (2, True, None)


def test_statefulset_claims_per_copy(tmp_path: Path) -> None:
    """Each copy of a StatefulSet gets its own claim from volumeClaimTemplates: three local volumes
    (two on n2, one on n1), three copies."""
    sc = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "local"},
          "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"}
    pvs = [{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"pv{i}"},
            "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                     "local": {"path": f"/mnt/{i}"},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "kubernetes.io/hostname", "operator": "In", "values": [on]}]}]}}}}
           for i, on in enumerate(["n1", "n2", "n2"])]
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "default"},
           "spec": {"template": {"metadata": {"labels": {"app": "db"}}, "spec": pod("db")["spec"]},
                    "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                        "accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                        "resources": {"requests": {"storage": "1Gi"}}}}]}}
    got = check([sc, node("n1"), node("n2"), *pvs], write_yaml(tmp_path / "pod.yaml", [sts]), Options())
    assert (got.total, got.per_node, got.path) == (3, {"n1": 1, "n2": 2}, "exact")
    assert "didn't find available persistent volumes to bind" in str(got.stopped_by)


def test_max_on_the_per_node_path(tmp_path: Path) -> None:
    """Counted past --max: the total stops there, each node's count is still given."""
    from .brute import answer

    got = answer([node("n1", "4"), node("n2", "2")], write_yaml(tmp_path / "pod.yaml", [pod("web", "1")]),
                 Options(max_copies=5))
    assert (got.total, got.max_reached, got.path, got.per_node_limit) == (5, True, "per-node", {"n1": 4, "n2": 2})


def test_no_filter_limits_the_copies(tmp_path: Path) -> None:
    """A profile without NodeResourcesFit's filter: a node takes any number of copies; the count
    stops at --max at once (per-node path), the node's count given as None."""
    from .brute import answer

    profile = {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": "loose"},
               "spec": {"plugins": {"filter": {"disabled": [{"name": "NodeResourcesFit"}]}}}}
    got = answer([profile, node("n1", "1"), node("n2", "1", taints=TAINT)],
                 write_yaml(tmp_path / "pod.yaml", [pod("web", "1")]), Options(max_copies=7))
    assert (got.total, got.max_reached, got.path, got.per_node_limit) == (7, True, "per-node", {"n1": None})


class _EvenNodes:
    """A filter of one's own: only nodes whose name ends in an even digit (a verdict per node)."""

    name = "EvenNodes"

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        self.handle = handle

    def filter(self, state: Any, pod: Any, node_info: Any) -> Any:
        from kubeberth.framework import Status

        return None if int(node_info.name[-1]) % 2 == 0 else Status.unschedulable("node(s) are odd")


@pytest.mark.parametrize("declared", [False, True])
def test_a_plugin_of_ones_own_takes_the_per_node_path_only_when_it_says_so(tmp_path: Path, declared: bool) -> None:
    from kubeberth.framework import FilterPlugin
    from kubeberth.plugins import plugin_registry
    from kubeberth.whatif.capacity import capacity, read_template

    plugin = type("EvenNodes", (_EvenNodes, FilterPlugin), {"per_node_filter": True} if declared else {})
    registry = plugin_registry().copy()
    registry.register(plugin, origin="test")
    profile = {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": "even"},
               "spec": {"plugins": {"filter": {"enabled": [{"name": "EvenNodes"}]}}}}
    cluster = [profile, node("n1", "2"), node("n2", "2"), node("n4", "3")]
    got = capacity(cluster, read_template(write_yaml(tmp_path / "pod.yaml", [pod("web", "1")])), registry,
                   Options(), warn=io.StringIO())
    assert (got.total, got.per_node) == (5, {"n2": 2, "n4": 3})
    assert got.path == ("per-node" if declared else "exact")
    assert "1 node(s) are odd" in str(got.stopped_by)
