"""`Combined` on chosen nodes: every reason the diagnosis gives for rejecting the unit on a node,
answered on that node at once, for a unit no one or two changes placed.

A node is a candidate when each plugin that rejected the pod there has an answer (FIXABLE); not
when its volumes rule it out (a PersistentVolume bound elsewhere: VolumeBinding, VolumeZone), nor
for NodeName or a plugin of one's own. The answers, on node N:
- the pod-side constraints N fails relaxed (relax_node.terms_for: the required node affinity and
  the nodeSelector, a toleration per NoSchedule/NoExecute taint of N, the pod's required pod
  (anti-)affinity, its DoNotSchedule spreads made ScheduleAnyway);
- N uncordoned when NodeUnschedulable rejected the pod there;
- N's CSI attach limit raised when the pod's own volumes exceed it, and the extended resources it
  lacks given to it when no node offering them is a candidate (node_change.py);
- the requests N cannot hold lowered to its allocatable (a resource no node offers: removed), or,
  when that is all it takes, each request lowered to the room N has left;
- the pods on N evicted (the pods the input binds there and those the baseline placed there),
  those that hold what the unit lacks first: a PersistentVolumeClaim the pod uses (its
  ReadWriteOncePod claim, wherever that pod runs: VolumeRestrictions), a volume of their own when N
  is at its volume limit (NodeVolumeLimits), a host port the pod asks for (NodePorts), a pod whose
  required anti-affinity keeps the pod out of N's domain (InterPodAffinity, repel.py); then lowest
  priority first, largest requests first; the shortest such prefix that places the unit is found
  by a binary search, the other answers made as well.
First without evicting (one re-simulation), then with (a binary search). The nodes with the fewest
rejecting plugins first, those needing no eviction first; at most MAX_NODES for a pod. A gang gets
the same answers on its candidate nodes at once (at most MAX_GANG_NODES), the requests lowered to
the largest of their allocatables (and, with more pods than nodes, the gang's own spreads and pod
(anti-)affinity relaxed too). When every answer made still leaves the pod rejected on the node,
the rejections that attempt meets (one explained re-simulation) are answered as well, once. The
result is one `Combined` suggestion (its steps: Relax with `terms`, Uncordon per node,
RaiseVolumeLimit, AddNodeResource, LowerRequests, Evict), verified by one re-simulation of them
all; a single step is printed as its own kind."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...model import ModelError, Node, Pod
from ..config_files import scheduler_name
from ..inputs import object_key
from .core import PLACED, Base, Edit, Rerun, Unit, pods_by_key, read_diagnosis, smallest, verify_change, with_new_pods
from .evict import eviction_entries, priorities, size
from .node_change import resource_change, resource_edit, resource_grants, volume_change, volume_edit, volume_raises
from .profile_change import added_affinity, excluded, own_affinity_matches, profile_change, profile_edit
from .relax_node import DEFAULTS, relax_edit, terms_for
from .relax_node import pod_labels as _labels
from .repel import repelling
from .requests import CPU, MEMORY, cut_change, cut_edit, room
from .uncordon import uncordon_change, uncordon_edit

FIXABLE = frozenset({"NodeAffinity", "TaintToleration", "NodeUnschedulable", "NodeResourcesFit", "NodePorts",
                     "NodeVolumeLimits", "VolumeRestrictions", "InterPodAffinity", "PodTopologySpread"})
# Rejections the pods on the node may cause: evicting them may answer these.
BY_PODS = frozenset({"NodeResourcesFit", "NodePorts", "NodeVolumeLimits", "VolumeRestrictions", "InterPodAffinity"})
MAX_NODES = 3
MAX_GANG_NODES = 6
NEWCOMER_ROUNDS = 3
Cuts = list[tuple[str, int]]


def claims(obj: Mapping[str, Any]) -> set[str]:
    """The PersistentVolumeClaims a pod uses, as NAMESPACE/NAME."""
    ns = str((obj.get("metadata") or {}).get("namespace") or "default")
    out = set()
    for v in (obj.get("spec") or {}).get("volumes") or ():
        name = ((v or {}).get("persistentVolumeClaim") or {}).get("claimName")
        if name:
            out.add(f"{ns}/{name}")
    return out


def host_ports(obj: Mapping[str, Any]) -> set[int]:
    """The host ports a pod's containers ask for."""
    spec = obj.get("spec") or {}
    return {int(p["hostPort"]) for c in [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]
            for p in (c or {}).get("ports") or () if isinstance(p, Mapping) and p.get("hostPort")}


def lacking_resource(pod: Mapping[str, Any] | None, nodes: Mapping[str, Mapping[str, Any]]) -> set[str]:
    """The nodes without a resource the pod requests that another node offers (no cut answers that)."""
    try:
        want = Pod(dict(pod)).requests if pod is not None else None
        allocs = {n: Node(dict(o)).allocatable for n, o in nodes.items()}
    except ModelError:
        return set()
    if want is None:
        return set()
    offered = [r for r in want.scalar if want.get(r) > 0 and any(a.get(r) > 0 for a in allocs.values())]
    return {n for n, a in allocs.items() if any(a.get(r) <= 0 for r in offered)}


def own_volumes_over_limit(pod: Mapping[str, Any] | None, objects: Sequence[Mapping[str, Any]]) -> set[str]:
    """The nodes whose CSI volume limit (CSINode) is below the volumes the pod itself attaches of
    one driver: evicting nothing there makes room for them."""
    if pod is None:
        return set()
    volume_of = {f"{(o.get('metadata') or {}).get('namespace') or 'default'}/{(o.get('metadata') or {}).get('name')}":
                 str((o.get("spec") or {}).get("volumeName") or "")
                 for o in objects if o.get("kind") == "PersistentVolumeClaim"}
    driver_of = {str((o.get("metadata") or {}).get("name")): ((o.get("spec") or {}).get("csi") or {}).get("driver")
                 for o in objects if o.get("kind") == "PersistentVolume"}
    wanted: dict[str, int] = {}
    for c in claims(pod):
        d = driver_of.get(volume_of.get(c, ""))
        if d:
            wanted[d] = wanted.get(d, 0) + 1
    out = set()
    for o in objects:
        if o.get("kind") != "CSINode":
            continue
        for d in (o.get("spec") or {}).get("drivers") or ():
            count = ((d or {}).get("allocatable") or {}).get("count")
            if isinstance(count, int) and wanted.get(str(d.get("name")), 0) > count:
                out.add(str((o.get("metadata") or {}).get("name")))
    return out


def candidates(unit: Unit, nodes: Mapping[str, Mapping[str, Any]], objects: Sequence[Mapping[str, Any]] = (),
               profile: bool = False) -> list[str]:
    """The nodes every rejection of which has an answer (not a profile's added node affinity unless
    `profile`: profile_change.py; an extended resource the node lacks only when no node offering it
    is a candidate), the fewest rejections first, then those needing no eviction, then in input
    order; those needing a change of the node or the profile last."""
    order = {n: i for i, n in enumerate(nodes)}
    pod = pods_by_key([dict(o) for o in objects]).get(unit.pods[0])
    scheduler = scheduler_name(pod or {})
    added = added_affinity(objects, scheduler)
    lacking = lacking_resource(pod, nodes)
    over = own_volumes_over_limit(pod, objects)

    def answered(n: str) -> bool:
        ps = unit.rejected[n]
        if not ps or not ps <= FIXABLE:
            return False
        labels = ((nodes[n].get("metadata") or {}).get("labels")) or {}
        return profile or "NodeAffinity" not in ps or all(s.matches(n, labels) for s in added)
    fit = [n for n in unit.rejected if n in nodes and answered(n)]
    # A node is given a resource (node_change.py) only when no node offering it has answers.
    fit = [n for n in fit if n not in lacking] or fit
    return sorted(fit, key=lambda n: (n in lacking or n in over or (profile and excluded(objects, scheduler, nodes[n])),
                                      len(unit.rejected[n]), bool(unit.rejected[n] & BY_PODS), order[n]))


def node_side_first(rerun: Rerun, unit: Unit) -> bool:
    """Whether the first candidate node needs a change of the node itself (a resource given, a
    volume limit raised): no pod-side change places the pod elsewhere, so the changes on one node
    are searched before the combinations."""
    nodes = _nodes(rerun)
    ranked = candidates(unit, nodes, rerun.objects) if unit.rejected else []
    if not ranked:  # only the profile's addedAffinity keeps the pod off the nodes with answers
        return bool(unit.rejected and candidates(unit, nodes, rerun.objects, profile=True))
    pod = pods_by_key(rerun.objects).get(unit.pods[0])
    return ranked[0] in lacking_resource(pod, nodes) | own_volumes_over_limit(pod, rerun.objects)


def _requests(rerun: Rerun, pod: Mapping[str, Any], on: Sequence[str], nodes: Mapping[str, Mapping[str, Any]],
              granted: set[str]) -> tuple[Cuts, Cuts | None] | None:
    """(the cuts to the largest allocatable of the nodes `on`, the cuts to the room left on the
    first of them or None when some resource has none there); None when the nodes lack a resource
    another node offers (no cut answers that). `granted`: resources given to the nodes (not cut)."""
    try:
        want = Pod(dict(pod)).requests
        allocs = {n: Node(dict(o)).allocatable for n, o in nodes.items()}
    except ModelError:
        return None
    names = tuple(r for r in (CPU, MEMORY, *want.scalar) if r not in granted)
    offered = {r for r in names if any(a.get(r) > 0 for a in allocs.values())}
    best = {r: max(allocs[n].get(r) for n in on) for r in names}
    over = [(r, best[r]) for r in names if want.get(r) > best[r]]
    if any(v <= 0 and r in offered for r, v in over):
        return None
    free = room(rerun.objects, rerun).get(on[0]) or {}
    fits: Cuts | None = []
    for r in names:
        have = free.get(r, 0)
        if want.get(r) > have:
            if have <= 0 and r in offered:
                fits = None
                break
            assert fits is not None
            fits.append((r, max(have, 0)))
    if free.get("pods", 0) < 1:
        fits = None
    return over, fits


def _occupants(rerun: Rerun, unit: Unit, on: Sequence[str], plugins: set[str]) -> list[str]:
    """The pods whose eviction may make room on the nodes `on`, in the order tried (the module's doc)."""
    pods = pods_by_key(rerun.objects)
    mine = pods.get(unit.pods[0]) or {}
    my_claims, my_ports = claims(mine), host_ports(mine)
    where = {k: b.node for k, b in rerun.baseline.items() if b.status in PLACED and b.node}
    prio = priorities(rerun.objects)
    keys = [k for k, n in where.items() if k in pods and k not in unit.pods and
            (n in on or ("VolumeRestrictions" in plugins and claims(pods[k]) & my_claims))]
    repel: set[str] = set()
    if "InterPodAffinity" in plugins:
        placed = {k: (pods[k], n) for k, n in where.items() if k in pods and k not in unit.pods}
        nodes = {str((o.get("metadata") or {}).get("name")): o for o in rerun.objects if o.get("kind") == "Node"}
        repel = {k for n in on for k in repelling(mine, placed, nodes, n)}
        keys += sorted(repel - set(keys))

    def rank(k: str) -> tuple[int, int, tuple[int, int], str]:
        p = pods[k]
        holds = bool(claims(p) & my_claims) or ("NodeVolumeLimits" in plugins and bool(claims(p))) or \
            ("NodePorts" in plugins and bool(host_ports(p) & my_ports)) or k in repel
        cpu, mem = size(p)
        return (0 if holds else 1, prio.get(k, 0), (-cpu, -mem), k)
    return sorted(keys, key=rank)


@dataclass
class Answers:
    """What answers the rejections on the nodes `on` (the module's doc), not yet verified."""

    on: list[str]
    plugins: set[str]
    terms: list[dict[str, Any]]
    cordoned: list[str]
    over: Cuts                  # the requests lowered to the largest allocatable of `on`
    fits: Cuts | None           # ... or to the room left on on[0]; None: some resource has none
    grants: list[tuple[str, str, int]] = field(default_factory=list)        # (node, resource, amount)
    raises: list[tuple[str, str, int, int]] = field(default_factory=list)   # (node, driver, from, to)
    profile: str | None = None  # the schedulerName whose profiles' addedAffinity is removed (profile_change.py)

    def made(self, rerun: Rerun, unit: Unit, lowered: Cuts, gone: Sequence[str] = ()) -> Base:
        """The change (Combined, or its single step) and its edit: the terms relaxed, the nodes
        uncordoned, the requests lowered to `lowered`, the pods `gone` evicted."""
        steps: list[dict[str, Any]] = []
        edits: list[Edit] = []
        if self.profile is not None:
            steps.append(profile_change(rerun.objects, self.profile))
            edits.append(profile_edit(self.profile))
        if self.terms:
            steps.append({"kind": "Relax", "terms": self.terms})
            edits.append(relax_edit(unit, self.terms))
        for n in self.cordoned:
            steps.append(uncordon_change(n))
            edits.append(uncordon_edit(n))
        for n, driver, have, to in self.raises:
            steps.append(volume_change(n, driver, have, to))
            edits.append(volume_edit(n, driver, to))
        for n, r, amount in self.grants:
            steps.append(resource_change(n, r, amount))
            edits.append(resource_edit(n, r, amount))
        if lowered:
            steps.append({"kind": "LowerRequests", **cut_change(rerun, unit, lowered)})
            edits.append(cut_edit(unit, lowered))
        if gone:
            steps.append({"kind": "Evict", "evict": eviction_entries(rerun.objects, gone, rerun)})
        change = steps[0] if len(steps) == 1 else {"kind": "Combined", "steps": steps}
        drop = set(gone)

        def edit(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
            objects = [o for o in objects if o.get("kind") != "Pod" or object_key(o) not in drop]
            for e in edits:
                objects = e(objects)
            return objects
        return change, edit

    def without_evicting(self) -> Cuts | None:
        """The cuts of the attempt without eviction (the room left for a pod on one node, else the
        allocatable); None when it cannot place the unit (resources lacking with no room)."""
        if len(self.on) == 1 and self.fits is not None:
            return self.fits
        if "NodeResourcesFit" in self.plugins and len(self.on) == 1:
            return None
        return self.over


def answers(rerun: Rerun, unit: Unit, on: Sequence[str], nodes: Mapping[str, Mapping[str, Any]]) -> Answers | None:
    """The answers on the nodes `on`; None when some rejection there has none."""
    pod = pods_by_key(rerun.objects).get(unit.pods[0])
    if pod is None or not on:
        return None
    plugins = {p for n in on for p in unit.rejected[n]}
    terms: list[dict[str, Any]] = []
    # A gang with more pods than nodes puts several on one node: its own spreading and pod
    # (anti-)affinity, which passed for the first pod, are relaxed as well.
    crowded = {"PodTopologySpread", "InterPodAffinity"} if len(unit.pods) > len(on) else set()
    scheduler = scheduler_name(pod)
    profile = None
    for n in on:
        plugins_n = unit.rejected[n] | crowded
        if "NodeAffinity" in plugins_n and excluded(rerun.objects, scheduler, nodes[n]):
            profile = scheduler  # the profile's addedAffinity answered; the pod's own only when it fails too
            if own_affinity_matches(pod, nodes[n]):
                plugins_n = plugins_n - {"NodeAffinity"}
        terms += [t for t in terms_for(pod.get("spec") or {}, nodes[n], plugins_n, _labels(pod))
                  if t not in terms and (t.get("from") != DEFAULTS or "PodTopologySpread" in unit.rejected[n])]
    cordoned = [n for n in on if "NodeUnschedulable" in unit.rejected[n]]
    share = -(-len(unit.pods) // len(on))
    grants = [(n, r, a) for n in on if "NodeResourcesFit" in unit.rejected[n]
              for r, a in resource_grants(rerun, unit, n, share)]
    raises = [(n, *r) for n in on if "NodeVolumeLimits" in unit.rejected[n] for r in volume_raises(rerun, unit, n)]
    cuts = _requests(rerun, pod, on, nodes, {r for _, r, _ in grants}) if "NodeResourcesFit" in plugins \
        else ([], None)
    if cuts is None:
        return None
    return Answers(list(on), plugins, terms, cordoned, *cuts, grants, raises, profile)


def _plan(rerun: Rerun, unit: Unit, a: Answers, seen: set[str]) -> dict[str, Any] | None:
    """The answers verified: first without evicting, then with the shortest prefix of the
    occupants."""
    lowered = a.without_evicting()
    if lowered is not None:
        change, edit = a.made(rerun, unit, lowered)
        if repr(change) not in seen and (change.get("steps") or change.get("kind") != "Combined"):
            seen.add(repr(change))
            found = verify_change(rerun, unit, change, edit)
            if found is not None:
                return found
    if not a.plugins & BY_PODS:
        return None
    order = _occupants(rerun, unit, a.on, a.plugins)
    if not order:
        return None
    tried: dict[int, dict[str, Any] | None] = {}

    def prefix(k: int) -> dict[str, Any] | None:
        if k not in tried:
            change, edit = a.made(rerun, unit, a.over, order[:k])
            tried[k] = verify_change(rerun, unit, change, edit, removed=order[:k])
        return tried[k]
    # Every occupant evicted; when pending pods then take the room first, those too (at most
    # NEWCOMER_ROUNDS times); then the shortest prefix.
    for _ in range(NEWCOMER_ROUNDS):
        if prefix(len(order)) is not None or rerun.left() <= 0:
            break
        mine = set(unit.pods)
        came = [o.pod for o in rerun.last if o.status in PLACED and o.node in a.on and o.pod not in mine
                and o.pod not in order]
        if "InterPodAffinity" in a.plugins:  # pods now placed whose anti-affinity keeps the unit off
            pods = pods_by_key(rerun.objects)
            placed = {o.pod: (pods[o.pod], o.node) for o in rerun.last
                      if o.status in PLACED and o.node and o.pod in pods and o.pod not in mine}
            came += sorted({k for n in a.on for k in repelling(pods[unit.pods[0]], placed, _nodes(rerun), n)}
                           - set(order) - set(came))
        if not came:
            return None
        order += came
    if tried.get(len(order)) is None:
        return None
    k = smallest(rerun, prefix, 1, len(order))
    return tried.get(k) if k is not None else None


def _nodes(rerun: Rerun) -> dict[str, Mapping[str, Any]]:
    return {str((o.get("metadata") or {}).get("name")): o for o in rerun.objects if o.get("kind") == "Node"}


def gang_bases(rerun: Rerun, unit: Unit) -> list[Base]:
    """A gang's answers on its candidate nodes together, without eviction, as a first step of
    combine.py (then AddNodes of their shape, say: the gang needs more of such nodes)."""
    if unit.group is None:
        return []
    nodes = _nodes(rerun)
    a = answers(rerun, unit, candidates(unit, nodes, rerun.objects)[:MAX_GANG_NODES], nodes) \
        if unit.rejected else None
    lowered = a.without_evicting() if a is not None and a.on else None
    if a is None or lowered is None:
        return []
    change, edit = a.made(rerun, unit, lowered)
    return [(change, edit)] if change.get("kind") != "Combined" or change.get("steps") else []


def on_nodes(rerun: Rerun, unit: Unit, profile: bool = True) -> list[dict[str, Any]]:
    """The first node (a gang: the candidate nodes together) whose answers place the unit; then,
    with `profile`, those a profile's addedAffinity keeps out, the profile relaxed too."""
    nodes = _nodes(rerun)
    ranked = candidates(unit, nodes, rerun.objects)
    seen: set[str] = set()
    tries = [ranked[:MAX_GANG_NODES]] if unit.group is not None else [[n] for n in ranked[:MAX_NODES]]
    # Then the nodes only a profile's addedAffinity keeps out (profile_change.py), last.
    wider = [n for n in candidates(unit, nodes, rerun.objects, profile=True) if n not in ranked] if profile else []
    if wider:
        tries += [[*ranked, *wider][:MAX_GANG_NODES]] if unit.group is not None else [[n] for n in wider[:MAX_NODES]]
    for on in tries:
        if rerun.left() <= 0:
            break
        a = answers(rerun, unit, on, nodes)
        found = _plan(rerun, unit, a, seen) if a is not None else None
        if found is None and a is not None and rerun.left() > 2:
            # The answers made, other rejections may show there (a pod's anti-affinity with the
            # pods that took the room): answered as well, once.
            wide = _widened(rerun, unit, a)
            more = answers(rerun, wide, on, nodes) if wide is not None else None
            found = _plan(rerun, wide, more, seen) if wide is not None and more is not None else None
        if found is not None:
            return [found]
    return []


def _widened(rerun: Rerun, unit: Unit, a: Answers) -> Unit | None:
    """The unit, its rejections on the nodes `a.on` widened by those its fullest attempt there (every
    answer, every occupant evicted) still meets, read from one explained re-simulation; None when
    there is no new one, or one without an answer."""
    order = _occupants(rerun, unit, a.on, a.plugins) if a.plugins & BY_PODS else []
    _, edit = a.made(rerun, unit, a.over, order)
    objects = rerun.edited(edit)
    there = with_new_pods(unit, objects)
    outcomes, _ = rerun.run(objects, explain=list(there.pods))
    fresh = Unit(unit.key, list(there.pods), unit.group)
    read_diagnosis(fresh, {o.pod: o.explanations for o in outcomes})
    new = {n: fresh.rejected.get(n, set()) - unit.rejected[n] for n in a.on}
    if not any(new.values()) or not all(ps <= FIXABLE for ps in new.values()):
        return None
    widened = {**unit.rejected, **{n: unit.rejected[n] | new[n] for n in a.on}}
    return Unit(unit.key, list(unit.pods), unit.group, widened)
