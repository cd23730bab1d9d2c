"""The per-node path of `kubeberth capacity`: when whether a copy fits a node depends on that node
alone, the total is the sum over the nodes of how many copies each takes, whatever order the
scores place them in (a copy is refused only once every node is at its limit), and every node
ends at its limit: perNode is that count, exactly what simulate places.

Eligible: one pod (no gang), no preemption, no extenders, and every PreFilter and Filter plugin
of the pod's profile is one whose verdict for copy k on node n depends only on node n and the pods
on it: NodeResourcesFit, NodePorts, TaintToleration, NodeAffinity, NodeName, NodeUnschedulable,
NodeDeclaredFeatures, the node-condition checks; InterPodAffinity when the pod has no required
(anti-)affinity term (existing pods' anti-affinity against it is then the same for every copy), or
only anti-affinity terms per hostname with every node a hostname of its own (whether copies
exclude each other is then a matter of each node: one copy is put on every node, and a probe copy
through the filters tells the nodes that take no second one);
PodTopologySpread when no DoNotSchedule constraint applies to it (its own or the defaults); the
volume plugins when it has no volume but emptyDir, configMap, secret, downwardAPI, projected and
hostPath; DynamicResources when it has no claim and no extended resource a DeviceClass serves; the
gang plugins for a pod of no group; and a plugin of one's own that says so (`per_node_filter =
True` on its class), which it must also say to be at PreEnqueue, Reserve, Permit, PreBind or Bind.
Anything else takes the exact path.

A node's limit: copy 1 through the real filters (the nodes it fits), then NodeResourcesFit's
arithmetic (free room over the request, per resource, and the pod count; one copy where host ports
are asked). The nodes are then filled to their limits in the scheduler's cache and copy N+1
scheduled for the diagnosis; should it be placed, the counting was wrong and the caller takes the
exact path."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from ...framework import CycleState
from ...framework.types import Diagnosis
from ...model import Pod
from ...model.nodeinfo import NodeInfo
from ...plugins.dynamic_resources.extended import delegated_resources
from ...plugins.node_resources_fit import is_extended_resource_name
from ...scheduler.evaluator import node_evaluator
from .copies import CopyMaker, copy_name
from .result import PER_NODE, Answer, Options
from .session import Session

NODE_ONLY = frozenset({
    "NodeResourcesFit", "NodePorts", "TaintToleration", "NodeAffinity", "NodeName", "NodeUnschedulable",
    "NodeDeclaredFeatures", "CheckNodeMemoryPressure", "CheckNodeDiskPressure", "CheckNodePIDPressure",
    "CheckNodeCondition", "PrioritySort", "DefaultBinder", "DefaultPreemption", "SchedulingGates",
})
VOLUME_PLUGINS = frozenset({"VolumeBinding", "VolumeRestrictions", "VolumeZone", "NodeVolumeLimits", "EBSLimits",
                            "GCEPDLimits", "AzureDiskLimits", "CinderLimits"})
GROUP_PLUGINS = frozenset({"GangScheduling", "PodGroupPodsCount", "TopologyPlacementGenerator"})
IN_TREE = "kubeberth.plugins."
HOSTNAME = "kubernetes.io/hostname"
LOCAL_VOLUMES = frozenset({"emptyDir", "configMap", "secret", "downwardAPI", "projected", "hostPath", "name"})


def _required_pod_affinity(spec: Mapping[str, Any]) -> bool:
    aff = spec.get("affinity") or {}
    return any((aff.get(kind) or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
               for kind in ("podAffinity", "podAntiAffinity"))


def hostname_anti_affinity(spec: Mapping[str, Any]) -> bool:
    """The pod's required inter-pod terms are all anti-affinity per node (topologyKey hostname)."""
    aff = spec.get("affinity") or {}
    if (aff.get("podAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution"):
        return False
    terms = (aff.get("podAntiAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or []
    return bool(terms) and all(isinstance(t, Mapping) and t.get("topologyKey") == HOSTNAME for t in terms)


def unique_hostnames(session: Session) -> bool:
    """Every node has a hostname label of its own (a hostname domain is then one node)."""
    cache = session.sched.cache
    seen = set()
    for name in cache.node_names():
        node = cache.node(name)
        value = None if node is None else node.labels.get(HOSTNAME)
        if value is None or value in seen:
            return False
        seen.add(value)
    return True


def why_not(session: Session, maker: CopyMaker, pod: Pod, options: Options) -> str:
    """Why the per-node path does not apply ("" when it does)."""
    template = maker.template
    if template.group is not None or len(template.members) != 1:
        return "a gang: its placement depends on other nodes"
    if options.allow_preemption:
        return "--allow-preemption: evicting depends on the pods placed so far"
    spec = pod.spec
    if spec.get("schedulingGates"):
        return "the pod has scheduling gates"
    fw = session.sched.profiles[pod.scheduler_name]
    if fw.extenders:
        return "the profile has extenders"
    names = {p.name: p for p in [*fw.pre_filter_plugins, *fw.filter_plugins]}
    for name, plugin in sorted(names.items()):
        if name in NODE_ONLY or getattr(plugin, "per_node_filter", False) is True:
            continue
        if name == "InterPodAffinity" and (not _required_pod_affinity(spec) or (
                hostname_anti_affinity(spec) and unique_hostnames(session))):
            continue  # anti-affinity per hostname: the probe (per_node_answer) says where copies exclude each other
        if name == "PodTopologySpread":
            try:
                hard = plugin.constraints(pod, "DoNotSchedule")  # type: ignore[attr-defined]
            except ValueError:
                return "PodTopologySpread cannot read the pod's constraints"
            if not hard:
                continue
            return "PodTopologySpread: a DoNotSchedule constraint counts the copies across nodes"
        if name in VOLUME_PLUGINS and all(set(v) <= LOCAL_VOLUMES for v in spec.get("volumes") or ()):
            continue
        if name == "DynamicResources" and not spec.get("resourceClaims") and not (
                pod.requests.scalar and delegated_resources(session.sched.ctx.objects, pod)):
            continue
        if name in GROUP_PLUGINS and not pod.pod_group_name:
            continue
        return f"plugin {name}: its verdict on a node may depend on the pods of other nodes"
    # After the filters a plugin of one's own could still refuse a node (Reserve, Permit, PreBind, Bind)
    # or hold a copy back (PreEnqueue); the in-tree ones do not for a pod that passed the checks above.
    for plugin in [*fw.pre_enqueue_plugins, *fw.reserve_plugins, *fw.permit_plugins, *fw.pre_bind_plugins,
                   *fw.bind_plugins]:
        if not type(plugin).__module__.startswith(IN_TREE) and getattr(plugin, "per_node_filter", False) is not True:
            return f"plugin {plugin.name}: a plugin of one's own may refuse a copy after the filters"
    return ""


def _limit(pod: Pod, ni: NodeInfo, ignored: frozenset[str], ignored_groups: frozenset[str],
           resources_fit: bool, ports: bool) -> int | None:
    """How many copies node `ni` takes (None: no limit here; negative: the node holds more than
    NodeResourcesFit lets in, which after the fill means a copy was counted there that would not fit)."""
    limits: list[int] = []
    if ports and pod.host_ports:
        limits.append(1)
    if resources_fit:
        alloc, used, req = ni.allocatable, ni.requested, pod.requests
        limits.append(alloc.allowed_pod_number - len(ni.pods))
        pairs = [(req.milli_cpu, alloc.milli_cpu - used.milli_cpu), (req.memory, alloc.memory - used.memory),
                 (req.ephemeral_storage, alloc.ephemeral_storage - used.ephemeral_storage)]
        for name, quant in (req.scalar or {}).items():
            if (ignored or ignored_groups) and is_extended_resource_name(name) and (
                    name in ignored or name.split("/", 1)[0] in ignored_groups):
                continue
            pairs.append((quant, alloc.scalar.get(name, 0) - used.scalar.get(name, 0)))
        limits += [free // want for want, free in pairs if want > 0]
    return (min(limits) if limits else None)


def feasible_nodes(session: Session, pod: Pod) -> list[NodeInfo] | str:
    """The nodes `pod` passes the filters of, now (every node tried); a reason when PreFilter refuses it."""
    sched = session.sched
    fw = sched.profiles[pod.scheduler_name]
    sched.cache.update_snapshot(sched.snapshot)
    sched.ctx.snapshot = sched.snapshot
    nodes = sched.snapshot.node_infos
    state = CycleState()
    pre_res, status, _ = fw.run_pre_filter(state, pod, nodes)
    if status is not None and not status.is_success():
        return "PreFilter refuses copy 1"
    evaluator = node_evaluator(fw)
    if pre_res is not None and not pre_res.all_nodes():
        nodes = evaluator.nodes_allowed(fw, nodes, pre_res.node_names or set())
    start = sched.ctx.next_start_node_index
    feasible, _ = evaluator.pass_filters(fw, state, pod, Diagnosis(), nodes, len(nodes), 0)
    sched.ctx.next_start_node_index = start
    return list(feasible)


def node_limits(session: Session, pod: Pod) -> dict[str, int | None] | str:
    """Each node copy 1 fits, with its limit (None: no filter limits the copies there: it takes
    any number); a reason (str) when PreFilter refuses copy 1."""
    feasible = feasible_nodes(session, pod)
    if isinstance(feasible, str):
        return feasible
    fw = session.sched.profiles[pod.scheduler_name]
    names = {p.name for p in fw.filter_plugins}
    fit = fw.plugin("NodeResourcesFit")
    ignored = frozenset(fit._ignored()) if fit is not None else frozenset()  # type: ignore[attr-defined]
    groups = frozenset(getattr(fit, "ignored_resource_groups", ()) or ())
    out: dict[str, int | None] = {}
    for ni in feasible:
        n = _limit(pod, ni, ignored, groups, "NodeResourcesFit" in names, "NodePorts" in names)
        out[ni.name] = None if n is None else max(0, n)
    return out


class Filler:
    """Copies bound straight into the scheduler's cache, numbered from 1 (clones of copy 1's Pod)."""

    def __init__(self, session: Session, maker: CopyMaker, pod: Pod) -> None:
        self.session = session
        self.member = maker.template.members[0]
        self.base = Pod(maker.first_pod(1))
        self.base.priority, self.base.preemption_policy = pod.priority, pod.preemption_policy
        self.count = 0
        self.parsed: dict[str, Any] | None = None  # what the cache parses of a pod once: the same for every copy

    def copy(self, name: str, uid: str, node: str) -> Pod:
        clone = copy.copy(self.base)
        clone.name, clone.key = name, f"{self.member.namespace}/{name}"
        clone.uid, clone.node_name = uid, node
        clone.cache = {} if self.parsed is None else dict(self.parsed)
        return clone

    def add(self, counts: Mapping[str, int]) -> None:
        """`counts[node]` more copies on each node."""
        cache = self.session.sched.cache
        for node, n in counts.items():
            for _ in range(n):
                self.count += 1
                clone = self.copy(copy_name(self.member.name, self.count), f"capacity-fill-{self.count}", node)
                cache.add_pod(clone)
                if self.parsed is None:
                    self.parsed = clone.cache

    def probe(self) -> Pod:
        """A copy on no node (for the filters), named after none of the copies."""
        return self.copy(copy_name(self.member.name, 0), "capacity-probe", "")


def within_room(session: Session, pod: Pod, nodes: Iterable[str]) -> bool:
    """False when one of `nodes` holds more than NodeResourcesFit lets in (a limit was too high)."""
    fw = session.sched.profiles[pod.scheduler_name]
    if "NodeResourcesFit" not in {p.name for p in fw.filter_plugins}:
        return True
    fit = fw.plugin("NodeResourcesFit")
    ignored = frozenset(fit._ignored()) if fit is not None else frozenset()  # type: ignore[attr-defined]
    groups = frozenset(getattr(fit, "ignored_resource_groups", ()) or ())
    for node in nodes:
        ni = session.sched.cache.get_node(node)
        room = None if ni is None else _limit(pod, ni, ignored, groups, True, False)
        if room is None or room < 0:
            return False
    return True


def fill(session: Session, maker: CopyMaker, pod: Pod, limits: dict[str, int]) -> bool:
    """Copies 1..sum(limits) bound in the scheduler's cache, each node up to its limit (in node
    order). With required anti-affinity per hostname, one copy on each node first, then a probe
    copy through the filters: a node it no longer fits takes no second copy (`limits` lowered).
    False when a node then holds more than NodeResourcesFit lets in."""
    filler = Filler(session, maker, pod)
    if hostname_anti_affinity(pod.spec):
        filler.add({node: 1 for node in limits})
        fits = feasible_nodes(session, filler.probe())
        if isinstance(fits, str):
            return False
        still = {ni.name for ni in fits}
        for node in limits:
            if node not in still:
                limits[node] = 1
        filler.add({node: n - 1 for node, n in limits.items()})
    else:
        filler.add(limits)
    return within_room(session, pod, limits)


def per_node_answer(session: Session, maker: CopyMaker, options: Options) -> tuple[Answer | None, str]:
    """The answer by the per-node path, or None and why not ("fallback: ..." when the session was
    changed and the caller needs a new one)."""
    raw = maker.first_pod(1)
    pod = Pod(raw)
    pod.priority, pod.preemption_policy = session.sched.ctx.objects.priorities.resolve(pod.spec)
    reason = why_not(session, maker, pod, options)
    if reason:
        return None, reason
    counted = node_limits(session, pod)
    if isinstance(counted, str):
        return None, counted
    if any(n is None for n in counted.values()) or sum(n or 0 for n in counted.values()) > options.max_copies:
        # counted (None: no end), not placed: which `max` copies go where is the scores' choice
        return Answer(options.max_copies, {}, None, path=PER_NODE, per_node_limit=dict(counted),
                      max_reached=True), ""
    limits = {name: n for name, n in counted.items() if n}
    total = sum(limits.values())
    if not fill(session, maker, pod, limits):
        return None, "fallback: a node's count exceeded its room"
    total = sum(limits.values())
    nxt = total + 1
    session.add(maker.make(nxt))
    keys = maker.pod_keys(nxt)
    session.run()
    if session.placed(keys) is None:
        session.settle()
    if session.placed(keys) is not None:
        return None, f"fallback: copy {nxt} was placed after the per-node count (a limit was wrong)"
    return Answer(total, dict(limits), session.message(keys), path=PER_NODE, per_node_limit=dict(limits)), ""
