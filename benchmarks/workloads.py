"""Workloads after upstream's scheduler_perf (test/integration/scheduler_perf/*/performance-config.yaml).

Names, sizes, templates and node labels are upstream's; each workload is a list of steps:

- nodes from upstream's `node-default.yaml` (110 pods, 4 cpu, 32Gi), optionally labelled by
  upstream's `labelNodePrepareStrategy` (a zone label, values assigned round-robin here
  instead of at random, so every run is the same);
- init pods, scheduled through the scheduler and not measured;
- measured pods, all created at once (upstream's client creates them at a high QPS, so the
  active queue fills up much faster than the scheduler drains it);
- optional churn, as upstream's `churn` opcode: "interleave" (upstream's mode `create`) creates
  one pod of each template every `interval_s` (Unschedulable: a pod no node can take, every
  200 ms); "recreate" deletes what the previous round created and creates one of each
  template (SchedulingWithMixedChurn: a node, an unschedulable pod, a service, every second).
  Under the deterministic `--loop sim`, rounds happen every `every` scheduling cycles instead.

One deliberate difference: nodes carry `kubernetes.io/hostname` (= their name), as a kubelet
sets it. Upstream's API-created nodes have no such label, so its anti-affinity pods (topology key
`kubernetes.io/hostname`) never conflict; here they do, which is the harder case.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from . import templates as tp

Obj = dict[str, Any]
PodTemplate = Callable[[str, str], Obj]  # (name, namespace) -> pod

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


# ---- templates (upstream's test/integration/scheduler_perf/templates/) -------------------------

def node_default(name: str, labels: dict[str, str] | None = None) -> Obj:
    """templates/node-default.yaml."""
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-node-{name}", "labels": {HOSTNAME: name, **(labels or {})}},
        "spec": {},
        "status": {
            "capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"},
            "conditions": [{"type": "Ready", "status": "True"}],
            "phase": "Running",
        },
    }


def node_churn(name: str) -> Obj:
    """templates/churn/node-default.yaml: a node with room for no pod."""
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-node-{name}", "labels": {HOSTNAME: name}},
        "status": {"capacity": {"pods": "0"}, "conditions": [{"type": "Ready", "status": "True"}],
                   "phase": "Running"},
    }


def service_churn(name: str, namespace: str = "default") -> Obj:
    """templates/churn/service-default.yaml."""
    return {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"app": "foo"}, "ports": [{"protocol": "TCP", "port": 8080, "targetPort": 8080}]},
    }


def _container(cpu: str, memory: str = "500Mi", *, limits: bool = True, image: str = "registry.k8s.io/pause:3.10"
               ) -> Obj:
    resources: Obj = {"requests": {"cpu": cpu, "memory": memory}}
    if limits:
        resources["limits"] = {"cpu": cpu, "memory": memory}
    return {"image": image, "name": "pause", "ports": [{"containerPort": 80}], "resources": resources}


def _pod(name: str, namespace: str, spec: Obj, labels: dict[str, str] | None = None) -> Obj:
    meta: Obj = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"}
    if labels:
        meta["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def pod_default(name: str, namespace: str) -> Obj:
    """templates/pod-default.yaml: 100m cpu, 500Mi."""
    return _pod(name, namespace, {"containers": [_container("100m")]})


def pod_low_priority(name: str, namespace: str) -> Obj:
    """templates/pod-low-priority.yaml: 900m cpu, no priority (0)."""
    return _pod(name, namespace, {"terminationGracePeriodSeconds": 0, "containers": [_container("900m")]})


def pod_high_priority(name: str, namespace: str) -> Obj:
    """templates/pod-high-priority.yaml: priority 10, 3000m cpu."""
    return _pod(name, namespace, {"priority": 10, "containers": [_container("3000m")]})


def pod_large_cpu(name: str, namespace: str) -> Obj:
    """templates/pod-large-cpu.yaml: 9 cpu, more than any node has."""
    return _pod(name, namespace, {"containers": [_container("9", limits=False)]})


def pod_high_priority_large_cpu(name: str, namespace: str) -> Obj:
    """templates/pod-high-priority-large-cpu.yaml: priority 10, 9 cpu (unschedulable, even by preemption)."""
    return _pod(name, namespace, {"priority": 10, "containers": [_container("9", limits=False)]})


def pod_with_pod_anti_affinity(name: str, namespace: str) -> Obj:
    """templates/pod-with-pod-anti-affinity.yaml: color=green, required anti-affinity to green pods
    of sched-0 and sched-1 per hostname."""
    return _pod(name, namespace, {
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"color": "green"}},
            "topologyKey": HOSTNAME,
            "namespaces": ["sched-1", "sched-0"],
        }]}},
        "containers": [_container("100m")],
    }, {"color": "green"})


def pod_with_pod_affinity(name: str, namespace: str) -> Obj:
    """templates/pod-with-pod-affinity.yaml: color=blue, required affinity to blue pods per zone."""
    return _pod(name, namespace, {
        "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"color": "blue"}},
            "topologyKey": ZONE,
            "namespaces": ["sched-1", "sched-0"],
        }]}},
        "containers": [_container("100m")],
    }, {"color": "blue"})


def pod_with_node_affinity(name: str, namespace: str) -> Obj:
    """templates/pod-with-node-affinity.yaml: required zone In [zone1, zone2]."""
    return _pod(name, namespace, {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": ZONE, "operator": "In", "values": ["zone1", "zone2"]}]}]}}},
        "containers": [_container("100m")],
    })


def pod_with_topology_spreading(name: str, namespace: str) -> Obj:
    """templates/pod-with-topology-spreading.yaml: color=blue, maxSkew 5 per zone, DoNotSchedule."""
    return _pod(name, namespace, {
        "topologySpreadConstraints": [{
            "maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"color": "blue"}},
        }],
        "containers": [_container("100m")],
    }, {"color": "blue"})


GENERIC_WORKLOAD = "GenericWorkload=true"


def pod_group(name: str, namespace: str, policy: str, min_count: int) -> Obj:
    """podgroup/gangscheduling/templates/podgroup.yaml (gang, minCount = pods per group) and
    podgroup/basicscheduling/templates/podgroup.yaml (basic policy)."""
    if policy == "gang":
        sched: Obj = {"gang": {"minCount": min_count}}
    elif policy == "basic":
        sched = {"basic": {}}
    else:
        raise ValueError(f"pod group policy {policy!r}: want 'gang' or 'basic'")
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-pg-{namespace}-{name}",
                         "generation": 1},
            "spec": {"schedulingPolicy": sched}}


def pod_group_member(name: str, namespace: str) -> Obj:
    """podgroup/*/templates/{gang,basic}-pod.yaml: 100m cpu, 100Mi, no limits, pause 3.10.1
    (Workload.measured_pod adds the schedulingGroup)."""
    return _pod(name, namespace, {"containers": [{
        "image": "registry.k8s.io/pause:3.10.1", "name": "pause",
        "resources": {"requests": {"cpu": "100m", "memory": "100Mi"}}}]})


# ---- workloads -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Churn:
    mode: str                      # "interleave" | "recreate"
    interval_s: float              # upstream's intervalMilliseconds (the operator loop, real time)
    every: int                     # scheduling cycles per round (the sim loop, fake time)
    pods: tuple[PodTemplate, ...] = ()
    nodes: bool = False            # recreate: a churn node each round
    services: bool = False         # recreate: a churn service each round


@dataclass(frozen=True)
class Workload:
    name: str                      # upstream's test case, e.g. "SchedulingBasic"
    variant: str                   # upstream's workload name, e.g. "5000Nodes_10000Pods"
    nodes: int
    init_pods: int
    measure_pods: int
    init_template: PodTemplate = pod_default
    measure_template: PodTemplate = pod_default
    zone_values: tuple[str, ...] = ()
    init_namespace: str = "default"
    measure_namespace: str = "default"
    namespaces: tuple[str, ...] = ()
    churn: Churn | None = None
    extra_nodes: tuple[Callable[[], Obj], ...] = ()  # created before the others (node-with-name)
    tainted_nodes: int = 0         # the last this many nodes are node-with-taint
    init_namespaces: int = 0       # init pods spread over this many namespaces "init-ns-<i>", in blocks
    namespace_labels: tuple[tuple[str, str], ...] = ()  # on every namespace the workload creates
    threshold: float | None = None   # upstream's CI threshold (pods/s, with an API server)
    target: float | None = None      # kubeberth's target (pods/s, in-process)
    rss_target_mib: float | None = None
    tags: tuple[str, ...] = field(default=())
    # upstream's podgroup/ cases: `pod_groups` PodGroups (`group_prefix`-<i>, created before the
    # measured pods), measured pod i in group i // pods_per_group; gang (minCount = pods_per_group)
    # or basic policy; run with these feature gates on
    pod_groups: int = 0
    pods_per_group: int = 0
    group_policy: str = ""          # "gang" | "basic"
    group_prefix: str = ""
    feature_gates: str = ""         # `--feature-gates` text, e.g. "GenericWorkload=true"

    @property
    def id(self) -> str:
        return f"{self.name}/{self.variant}"

    def pod_group_objects(self) -> Iterable[Obj]:
        for i in range(self.pod_groups):
            yield pod_group(f"{self.group_prefix}-{i}", self.measure_namespace, self.group_policy,
                            self.pods_per_group)

    def measured_pod(self, i: int) -> Obj:
        """Measured pod i: the template's, in its pod group when the workload has groups."""
        pod = self.measure_template(f"pod-{i:06d}", self.measure_namespace)
        if self.pods_per_group:
            pod["spec"]["schedulingGroup"] = {"podGroupName": f"{self.group_prefix}-{i // self.pods_per_group}"}
        return pod

    def node_objects(self) -> Iterable[Obj]:
        for make in self.extra_nodes:
            yield make()
        zones = self.zone_values
        first_tainted = self.nodes - self.tainted_nodes
        for i in range(self.nodes):
            labels = {ZONE: zones[i % len(zones)]} if zones else None
            node = node_default(f"scheduler-perf-{i:05d}", labels)
            yield tp.taint_node(node) if i >= first_tainted else node

    def all_namespaces(self) -> tuple[str, ...]:
        return (*self.namespaces, *(f"init-ns-{i}" for i in range(self.init_namespaces)))

    def init_namespace_of(self, i: int) -> str:
        """Upstream's createPodSets: init_pods / init_namespaces pods in each namespace, in turn."""
        if not self.init_namespaces:
            return self.init_namespace
        per = max(1, self.init_pods // self.init_namespaces)
        return f"init-ns-{min(i // per, self.init_namespaces - 1)}"

    def resized(self, *, nodes: int | None = None, init_pods: int | None = None,
                measure_pods: int | None = None) -> Workload:
        """The same workload at another size (named after it, as upstream names its variants)."""
        n = self.nodes if nodes is None else nodes
        i = self.init_pods if init_pods is None else init_pods
        m = self.measure_pods if measure_pods is None else measure_pods
        if (n, i, m) == (self.nodes, self.init_pods, self.measure_pods):
            return self
        if self.pods_per_group and m % self.pods_per_group:
            raise ValueError(f"{self.id}: {m} measured pods is not a whole number of groups of "
                             f"{self.pods_per_group}")
        variant = f"{n}Nodes_{i}Init_{m}Pods"
        if self.pods_per_group:
            variant = f"{n}Nodes_{m // self.pods_per_group}Groups_{self.pods_per_group}PerGroup"
        return replace(self, variant=variant, nodes=n, init_pods=i, measure_pods=m,
                       tainted_nodes=self.tainted_nodes * n // self.nodes,
                       init_namespaces=min(self.init_namespaces, max(1, i)) if self.init_namespaces else 0,
                       pod_groups=m // self.pods_per_group if self.pods_per_group else 0,
                       threshold=None, target=None, rss_target_mib=None, tags=("custom",))


DEFAULT = "default"   # what `make bench` runs without arguments (the list)
QUICK = "quick"       # small variants, a smoke test in well under a minute
RSS = "rss"           # the 5000-node / 50000-pod memory run


def _basic(variant: str, n: int, i: int, m: int, **kw: Any) -> Workload:
    return Workload("SchedulingBasic", variant, n, i, m, **kw)


def _anti(variant: str, n: int, i: int, m: int, **kw: Any) -> Workload:
    return Workload("SchedulingPodAntiAffinity", variant, n, i, m, pod_with_pod_anti_affinity,
                    pod_with_pod_anti_affinity, init_namespace="sched-0", measure_namespace="sched-1",
                    namespaces=("sched-0", "sched-1"), **kw)


def _node_affinity(variant: str, n: int, i: int, m: int, **kw: Any) -> Workload:
    return Workload("SchedulingNodeAffinity", variant, n, i, m, pod_with_node_affinity, pod_with_node_affinity,
                    zone_values=("zone1",), **kw)


def _spreading(variant: str, n: int, i: int, m: int, **kw: Any) -> Workload:
    return Workload("TopologySpreading", variant, n, i, m, pod_default, pod_with_topology_spreading,
                    zone_values=("moon-1", "moon-2", "moon-3"), **kw)


def _affinity(variant: str, n: int, i: int, m: int, **kw: Any) -> Workload:
    return Workload("SchedulingPodAffinity", variant, n, i, m, pod_with_pod_affinity, pod_with_pod_affinity,
                    zone_values=("zone1",), init_namespace="sched-0", measure_namespace="sched-1",
                    namespaces=("sched-0", "sched-1"), **kw)


def _preemption(variant: str, n: int, i: int, m: int, **kw: Any) -> Workload:
    return Workload("PreemptionBasic", variant, n, i, m, pod_low_priority, pod_high_priority, **kw)


_UNSCHEDULABLE_CHURN = Churn("interleave", 0.2, every=100, pods=(pod_high_priority_large_cpu,))


def _preemption_async(variant: str, n: int, i: int, m: int, **kw: Any) -> Workload:
    """High-priority preemptors every 200 ms while the measured (default) pods are scheduled."""
    return Workload("PreemptionAsync", variant, n, i, m, pod_low_priority, pod_default,
                    churn=Churn("interleave", 0.2, every=100, pods=(pod_high_priority,)), **kw)


def _daemonset(variant: str, n: int, m: int, **kw: Any) -> Workload:
    return Workload("SchedulingDaemonset", variant, n, 0, m, pod_default, tp.daemonset_pod,
                    extra_nodes=(tp.node_with_name,), **kw)


def _sched_ns(name: str, variant: str, n: int, i: int, m: int, template: PodTemplate, **kw: Any) -> Workload:
    """Init pods in sched-0, measured pods in sched-1 (the preferred (anti-)affinity cases)."""
    return Workload(name, variant, n, i, m, template, template, init_namespace="sched-0",
                    measure_namespace="sched-1", namespaces=("sched-0", "sched-1"), **kw)


def _ns_selector(name: str, variant: str, n: int, namespaces: int, per_ns: int, m: int,
                 template: PodTemplate, **kw: Any) -> Workload:
    """Init pods in `namespaces` labelled namespaces, measured pods in measure-ns-0 (labelled too)."""
    return Workload(name, variant, n, namespaces * per_ns, m, template, template,
                    measure_namespace="measure-ns-0", namespaces=("measure-ns-0",),
                    init_namespaces=namespaces, namespace_labels=tuple(tp.NS_LABELS.items()), **kw)


def _unschedulable(variant: str, n: int, i: int, m: int, **kw: Any) -> Workload:
    return Workload("Unschedulable", variant, n, i, m, pod_default, pod_default, churn=_UNSCHEDULABLE_CHURN, **kw)


_MIXED_CHURN = Churn("recreate", 1.0, every=500, pods=(pod_high_priority_large_cpu,), nodes=True, services=True)


def _mixed_churn(variant: str, n: int, m: int, **kw: Any) -> Workload:
    return Workload("SchedulingWithMixedChurn", variant, n, 0, m, pod_default, pod_default, churn=_MIXED_CHURN, **kw)


def _groups(name: str, policy: str, ns: str, prefix: str, variant: str, n: int, groups: int, per: int,
            **kw: Any) -> Workload:
    """Upstream's podgroup/gangscheduling (GangScheduling) and podgroup/basicscheduling
    (BasicScheduling): one namespace, `groups` PodGroups, groups * per measured pods, no init pods."""
    return Workload(name, variant, n, 0, groups * per, pod_group_member, pod_group_member,
                    measure_namespace=ns, namespaces=(ns,), pod_groups=groups, pods_per_group=per,
                    group_policy=policy, group_prefix=prefix, feature_gates=GENERIC_WORKLOAD, **kw)


def _gang(variant: str, n: int, groups: int, per: int, **kw: Any) -> Workload:
    return _groups("GangScheduling", "gang", "gang-ns-0", "gang", variant, n, groups, per, **kw)


def _basic_groups(variant: str, n: int, groups: int, per: int, **kw: Any) -> Workload:
    return _groups("BasicScheduling", "basic", "basic-ns-0", "basic-group", variant, n, groups, per, **kw)


GANG = "gang"   # the pod-group workloads

WORKLOADS: list[Workload] = [
    _basic("500Nodes", 500, 500, 1000, target=2000, tags=(DEFAULT, QUICK)),
    _basic("5000Nodes", 5000, 1000, 1000),
    _basic("5000Nodes_10000Pods", 5000, 1000, 10000, threshold=680, target=1000, tags=(DEFAULT,)),
    _basic("5000Nodes_50000Pods", 5000, 5000, 50000, threshold=810, rss_target_mib=1536, tags=(RSS,)),
    _anti("500Nodes", 500, 100, 400, tags=(QUICK,)),
    _anti("5000Nodes", 5000, 1000, 1000, target=300, tags=(DEFAULT,)),
    _anti("5000Nodes_2000Pods", 5000, 1000, 2000, threshold=60),
    _node_affinity("500Nodes", 500, 500, 1000, tags=(QUICK,)),
    _node_affinity("5000Nodes", 5000, 5000, 1000, tags=(DEFAULT,)),
    _node_affinity("5000Nodes_10000Pods", 5000, 5000, 10000, threshold=220),
    _spreading("500Nodes", 500, 1000, 1000, tags=(QUICK,)),
    _spreading("5000Nodes", 5000, 5000, 2000, target=300, tags=(DEFAULT,)),
    _spreading("5000Nodes_5000Pods", 5000, 5000, 5000, threshold=460),
    _affinity("500Nodes", 500, 500, 1000, tags=(QUICK,)),
    _affinity("5000Nodes", 5000, 5000, 1000, tags=(DEFAULT,)),
    _affinity("5000Nodes_5000Pods", 5000, 5000, 5000, threshold=35),
    _preemption("500Nodes", 500, 2000, 500, tags=(QUICK,)),
    _preemption("1000Nodes", 1000, 4000, 1000, target=200, tags=(DEFAULT,)),
    _preemption_async("500Nodes", 500, 2000, 500, tags=(QUICK,)),
    _preemption_async("5000Nodes", 5000, 20000, 5000, threshold=570, tags=(DEFAULT,)),
    _daemonset("15000Nodes", 15000, 30000, threshold=1100, tags=(DEFAULT,)),
    _sched_ns("SchedulingPreferredPodAffinity", "500Nodes", 500, 500, 1000, tp.pod_with_preferred_pod_affinity,
              tags=(QUICK,)),
    _sched_ns("SchedulingPreferredPodAffinity", "5000Nodes_5000Pods", 5000, 5000, 5000,
              tp.pod_with_preferred_pod_affinity, threshold=160, tags=(DEFAULT,)),
    _sched_ns("SchedulingPreferredPodAntiAffinity", "5000Nodes_5000Pods", 5000, 5000, 5000,
              tp.pod_with_preferred_pod_anti_affinity, threshold=190, tags=(DEFAULT,)),
    Workload("PreferredTopologySpreading", "5000Nodes_5000Pods", 5000, 5000, 5000, pod_default,
             tp.pod_with_preferred_topology_spreading, zone_values=("moon-1", "moon-2", "moon-3"),
             threshold=340, tags=(DEFAULT,)),
    Workload("SchedulingWithNodeInclusionPolicy", "5000Nodes", 5000, 0, 4000, pod_default,
             tp.pod_with_node_inclusion_policy, tainted_nodes=1000, threshold=270, tags=(DEFAULT,)),
    _ns_selector("SchedulingPreferredAntiAffinityWithNSSelector", "5000Nodes_2000Pods", 5000, 100, 40, 2000,
                 tp.pod_preferred_anti_affinity_ns_selector, threshold=180, tags=(DEFAULT,)),
    _ns_selector("SchedulingPreferredAffinityWithNSSelector", "5000Nodes_5000Pods", 5000, 100, 50, 5000,
                 tp.pod_preferred_affinity_ns_selector, threshold=190, tags=(DEFAULT,)),
    _unschedulable("500Nodes/10Init/1kPods", 500, 10, 1000, tags=(QUICK,)),
    _unschedulable("5kNodes/100Init/1kPods", 5000, 100, 1000),
    _unschedulable("5kNodes/100Init/10kPods", 5000, 100, 10000, threshold=590, tags=(DEFAULT,)),
    _mixed_churn("1000Nodes", 1000, 1000, tags=(DEFAULT, QUICK)),
    _mixed_churn("5000Nodes", 5000, 2000),
    _mixed_churn("5000Nodes_10000Pods", 5000, 10000, threshold=710, tags=(DEFAULT,)),
    _gang("100Nodes_10Gangs", 100, 10, 3, tags=(QUICK, GANG)),
    _gang("5000Nodes_1000Gangs_3000Pods", 5000, 1000, 3, tags=(DEFAULT, GANG)),
    _gang("5000Nodes_3000Gangs_9000Pods", 5000, 3000, 3, tags=(GANG,)),
    _gang("5000Nodes_3Gangs_3000Pods_1000PerGroup", 5000, 3, 1000, tags=(DEFAULT, GANG)),
    _gang("5000Nodes_9Gangs_9000Pods_1000PerGroup", 5000, 9, 1000, tags=(GANG,)),
    _basic_groups("100Nodes_10Groups", 100, 10, 3, tags=(QUICK, GANG)),
    _basic_groups("5000Nodes_1000Groups_3000Pods", 5000, 1000, 3, tags=(DEFAULT, GANG)),
    _basic_groups("5000Nodes_3Groups_3000Pods_1000PerGroup", 5000, 3, 1000, tags=(DEFAULT, GANG)),
]

# How cost grows with the cluster: SchedulingBasic at these sizes (`--scale`).
SCALE_NODES = (500, 1000, 2000, 5000, 15000)
SCALE_INIT_PODS = 1000
SCALE_MEASURE_PODS = 5000


def scale_workloads(nodes: Iterable[int] = SCALE_NODES, init_pods: int = SCALE_INIT_PODS,
                    measure_pods: int = SCALE_MEASURE_PODS) -> list[Workload]:
    return [_basic(f"{n}Nodes_{measure_pods}Pods", n, init_pods, measure_pods, tags=("scale",)) for n in nodes]


def select(patterns: Iterable[str]) -> list[Workload]:
    """Workloads whose id (`Name/Variant`), name or tag matches one of the patterns (shell globs,
    case-insensitive); in the order of WORKLOADS."""
    pats = [p.lower() for p in patterns]
    out = []
    for w in WORKLOADS:
        keys = [w.id.lower(), w.name.lower(), *(t.lower() for t in w.tags)]
        if any(fnmatch.fnmatchcase(k, p) for p in pats for k in keys):
            out.append(w)
    return out


def find(workload_id: str) -> Workload:
    for w in [*WORKLOADS, *scale_workloads()]:
        if w.id == workload_id:
            return w
    raise KeyError(workload_id)
