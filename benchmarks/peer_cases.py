"""What the peer benchmark (benchmarks/peer.py) runs through a real API server: one `PeerCase` per
workload, whatever its family, so that every scheduler of the comparison meets the same objects
created the same way.

A case creates its cluster before the scheduler starts (`setup`: namespaces, nodes, classes, DRA
objects), names the pods of its two phases (`pods("init")`, bound before the measured phase;
`pods("measure")`, created while the scheduler runs) and plays, for each pod it created, the part
of the controllers that are not running here (`created`: kube-controller-manager's resourceclaim
controller for DRA claim templates). Each family is a subclass and a `select_*` function that
finds its workloads by pattern; `select` asks them all. The pod-group workloads (upstream's
podgroup/ cases) are scheduler_perf workloads: their PodGroups come in `setup`, the pods naming
them in `pods`, and `feature_gates` turns GenericWorkload on for kube-apiserver and both schedulers.

Init pods are named `init-<i>`, measured pods `pod-<i>`: the harness tells the phases apart by
these prefixes. A case without init pods has one probe pod (no requests, no claims) in the init
phase instead, so that every scheduler has shown it has synced and binds before the measured
pods are created.
"""

from __future__ import annotations

import asyncio
import copy
import fnmatch
import random
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import Any

from tests.cluster.kube import Kube, as_created

from . import dra
from . import workloads as wl

Obj = dict[str, Any]
CONNECTIONS = 50  # concurrent requests while creating objects


async def create_all(kube: Kube, resource: str, objects: Iterable[Obj],
                     after: Callable[[Kube, Obj], Any] | None = None) -> tuple[float, float]:
    """Creates `objects` over CONNECTIONS concurrent requests, each followed by `after(kube, created)`
    when given (in the same worker: the next create waits for it); returns the monotonic times of
    the first create and of the end of the last."""
    queue: asyncio.Queue[Obj] = asyncio.Queue()
    for obj in objects:
        queue.put_nowait(as_created(obj))
    first: list[float] = []
    last = 0.0

    async def worker() -> None:
        nonlocal last
        while not queue.empty():
            obj = queue.get_nowait()
            if not first:
                first.append(time.monotonic())
            made = await kube.create(resource, obj)
            if after is not None:
                await after(kube, made)
            last = max(last, time.monotonic())

    await asyncio.gather(*(worker() for _ in range(CONNECTIONS)))
    return (first[0] if first else time.monotonic()), last


def probe_pod() -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "init-probe", "namespace": "default"},
            "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10"}]}}


class PeerCase:
    """A workload as the peer benchmark runs it; subclasses fill in the family's objects."""

    id: str
    name: str
    nodes: int
    init_pods: int      # 0: the probe pod alone is the init phase
    measure_pods: int
    measure_namespace: str
    feature_gates: str = ""  # both schedulers' and kube-apiserver's --feature-gates (GenericWorkload)

    def describe(self) -> Obj:
        return {"workload": self.id, "name": self.name, "nodes": self.nodes, "init_pods": self.init_pods,
                "measure_pods": self.measure_pods}

    @property
    def init_count(self) -> int:
        """The pods of the init phase, the probe pod included."""
        return self.init_pods or 1

    async def setup(self, kube: Kube) -> None:
        raise NotImplementedError

    def pods(self, phase: str) -> Iterator[Obj]:
        raise NotImplementedError

    async def created(self, kube: Kube, pod: Obj) -> None:
        """The controllers' part for a pod just created (nothing by default)."""

    async def check(self, kube: Kube) -> Obj:
        """Figures on the cluster after the measured phase, beside the bindings (none by default)."""
        return {}


# ---- scheduler_perf's workloads (benchmarks/workloads.py) ----------------------------------------

def priority_class_name(value: int) -> str:
    return f"bench-priority-{value}"


def with_priority_classes(obj: Obj) -> Obj:
    """scheduler_perf's templates give a pod's priority in its spec, which only an API server without
    the Priority admission plugin accepts; here it comes from a PriorityClass of that value."""
    spec = obj.get("spec") or {}
    if spec.get("priority") is not None and not spec.get("priorityClassName"):
        spec["priorityClassName"] = priority_class_name(int(spec.pop("priority")))
    return obj


class SchedulerPerfCase(PeerCase):
    def __init__(self, w: wl.Workload) -> None:
        self.w = w
        self.id, self.name, self.nodes = w.id, w.name, w.nodes
        self.init_pods, self.measure_pods, self.measure_namespace = w.init_pods, w.measure_pods, w.measure_namespace
        self.feature_gates = w.feature_gates

    def describe(self) -> Obj:
        from .record import describe

        return describe(self.w)

    async def setup(self, kube: Kube) -> None:
        w = self.w
        for ns in sorted({w.init_namespace, w.measure_namespace, *w.all_namespaces()} - {"default"}):
            await kube.create("namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                             "metadata": {"name": ns, "labels": dict(w.namespace_labels)}})
        await create_all(kube, "nodes", w.node_objects())
        values = {int(t("probe", "default").get("spec", {}).get("priority") or 0)
                  for t in (w.init_template, w.measure_template)}
        for value in sorted(values - {0}):
            await kube.create("priorityclasses", {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                                  "metadata": {"name": priority_class_name(value)}, "value": value})
        # upstream's podgroup/ cases: the PodGroups before any pod names them (createPodGroups)
        await create_all(kube, "podgroups", w.pod_group_objects())

    def pods(self, phase: str) -> Iterator[Obj]:
        w = self.w
        if phase == "init":
            if not w.init_pods:
                yield probe_pod()
            for i in range(w.init_pods):
                yield with_priority_classes(w.init_template(f"init-{i:06d}", w.init_namespace_of(i)))
        else:
            for i in range(w.measure_pods):
                yield with_priority_classes(w.measured_pod(i))


def select_scheduler_perf(patterns: list[str], nodes: int | None = None, init: int | None = None,
                          pods: int | None = None) -> list[PeerCase]:
    return [SchedulerPerfCase(w.resized(nodes=nodes, init_pods=init, measure_pods=pods))
            for w in wl.select(patterns)]


# ---- DynamicResources (benchmarks/dra.py: upstream's dra/performance-config.yaml) -------------

CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"  # resourceapi.PodResourceClaimAnnotation
TEMPLATE = "test-claim-template"
POD_CLAIM = "resource"  # the pod's name for its claim, in upstream's pod templates


def allocation(node: str, pool: str, device: str) -> Obj:
    """An AllocationResult of one device of a node-local pool, as the structured allocator writes it."""
    return {"devices": {"results": [{"request": dra.REQUESTS[0]["name"], "driver": dra.DRIVER, "pool": pool,
                                     "device": device}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}


def init_allocations(nodes: int, claims: int, devices: int = 10, seed: int = 0) -> list[Obj]:
    """upstream's allocResourceClaims for the init claims: each on a node drawn at random among those
    with a free device (its nodes shuffled per claim, the first that fits), the node's first free
    device; seeded, so every scheduler of a comparison meets the same allocations."""
    if claims > nodes * devices:
        raise ValueError(f"{claims} init claims do not fit {nodes} nodes of {devices} devices")
    rng = random.Random(seed)
    used = [0] * nodes
    free = list(range(nodes))  # nodes with a free device
    out = []
    for _ in range(claims):
        k = rng.randrange(len(free))
        j = free[k]
        out.append(allocation(f"scheduler-perf-dra-{j}", f"resourceslice-{j}", f"basic-device-{used[j]}"))
        used[j] += 1
        if used[j] == devices:
            free[k] = free[-1]
            free.pop()
    return out


class DraCase(PeerCase):
    """SchedulingWithResourceClaimTemplate / SchedulingWithResourceClaim through the API: the
    DeviceClass, one ResourceSlice of 10 devices per DRA node, the init claims created in `init`
    and allocated (their status written as allocResourceClaims does), then the measured pods in
    `test`, with a claim from the template or a claim of their own created in setup."""

    def __init__(self, w: dra.DraWorkload) -> None:
        self.w = w
        self.id, self.name = w.id, w.name
        self.nodes = w.nodes_with_dra + w.nodes_without_dra
        self.init_pods, self.measure_pods, self.measure_namespace = 0, w.measure_pods, "test"
        self.template = w.name == "SchedulingWithResourceClaimTemplate"

    def describe(self) -> Obj:
        return {**super().describe(), "variant": self.w.variant, "init_claims": self.w.init_claims,
                "nodes_with_dra": self.w.nodes_with_dra, "threshold": self.w.threshold, "target": None,
                "rss_target_mib": None}

    async def setup(self, kube: Kube) -> None:
        w = self.w
        for ns in ("init", "test"):
            await kube.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        await create_all(kube, "nodes", [*(dra.node(f"scheduler-perf-{i}", False) for i in range(w.nodes_without_dra)),
                                         *(dra.node(f"scheduler-perf-dra-{i}", True) for i in range(w.nodes_with_dra))])
        await create_all(kube, "resourceslices", (dra.resource_slice(i) for i in range(w.nodes_with_dra)))
        await kube.create("deviceclasses", copy.deepcopy(dra.CLASS))
        allocations = init_allocations(w.nodes_with_dra, w.init_claims)

        async def allocate(kube: Kube, claim: Obj) -> None:
            i = int(claim["metadata"]["name"].rsplit("-", 1)[1])
            await kube.patch("resourceclaims", claim["metadata"]["name"], {"status": {"allocation": allocations[i]}},
                             "init", subresource="status")

        await create_all(kube, "resourceclaims", (dra.claim(f"test-claim-{i}", "init") for i in range(w.init_claims)),
                         after=allocate)
        if self.template:
            await kube.create("resourceclaimtemplates", {
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": TEMPLATE, "namespace": "test"},
                "spec": {"spec": {"devices": {"requests": copy.deepcopy(dra.REQUESTS)}}}})
        else:
            await create_all(kube, "resourceclaims",
                             (dra.claim(f"test-claim-{i}", "test") for i in range(w.measure_pods)))

    def pods(self, phase: str) -> Iterator[Obj]:
        if phase == "init":
            yield probe_pod()
            return
        for i in range(self.w.measure_pods):
            source = {"resourceClaimTemplateName": TEMPLATE} if self.template else \
                {"resourceClaimName": f"test-claim-{i}"}
            yield dra.pod(f"pod-{i:06d}", "test", source)

    async def created(self, kube: Kube, pod: Obj) -> None:
        """The resourceclaim controller's part for a pod with a claim template: its ResourceClaim
        (generated name `<pod>-<claim>-`, the pod as controlling owner, the pod-claim-name
        annotation, the template's spec), then the pod's status.resourceClaimStatuses naming it."""
        meta = pod["metadata"]
        if meta.get("name") == "init-probe":
            return
        statuses = []
        for ref in (pod.get("spec") or {}).get("resourceClaims") or ():
            if not ref.get("resourceClaimTemplateName"):
                continue
            claim = await kube.create("resourceclaims", {
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"generateName": f"{meta['name']}-{ref['name']}-", "namespace": meta["namespace"],
                             "annotations": {CLAIM_ANNOTATION: ref["name"]},
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": meta["name"],
                                                  "uid": meta["uid"], "controller": True}]},
                "spec": {"devices": {"requests": copy.deepcopy(dra.REQUESTS)}}})
            statuses.append({"name": ref["name"], "resourceClaimName": claim["metadata"]["name"]})
        if statuses:
            await kube.patch("pods", meta["name"], {"status": {"resourceClaimStatuses": statuses}},
                             meta["namespace"], subresource="status")


    async def check(self, kube: Kube) -> Obj:
        """How many of the measured pods' claims were allocated and reserved for their pod (the null
        binder allocates none: it binds only)."""
        claims = await kube.list("resourceclaims", "test")
        allocated = sum(1 for c in claims if (c.get("status") or {}).get("allocation")
                        and (c.get("status") or {}).get("reservedFor"))
        return {"claims": len(claims), "claims_allocated": allocated}


def _dra_sized(w: dra.DraWorkload, nodes: int | None, init: int | None, pods: int | None) -> dra.DraWorkload:
    if nodes is None and init is None and pods is None:
        return w
    n = w.nodes_with_dra if nodes is None else nodes
    i = w.init_claims if init is None else init
    m = w.measure_pods if pods is None else pods
    return replace(w, variant=f"{n}Nodes_{i}InitClaims_{m}Pods", nodes_with_dra=n, init_claims=i,
                   measure_pods=m, threshold=None)


def select_dra(patterns: list[str], nodes: int | None = None, init: int | None = None,
               pods: int | None = None) -> list[PeerCase]:
    pats = [p.lower() for p in patterns]
    return [DraCase(_dra_sized(w, nodes, init, pods)) for w in dra.WORKLOADS
            if any(fnmatch.fnmatchcase(k, p) for p in pats for k in (w.id.lower(), w.name.lower(), "dra"))]


# The gang workloads (upstream's podgroup/ cases) are scheduler_perf workloads with PodGroups
# (Workload.pod_groups) and feature gates: SchedulerPerfCase creates them.
FAMILIES: tuple[Callable[[list[str], int | None, int | None, int | None], list[PeerCase]], ...] = (
    select_scheduler_perf, select_dra)


def select(patterns: list[str], *, nodes: int | None = None, init: int | None = None,
           pods: int | None = None) -> list[PeerCase]:
    """Every family's workloads matching the patterns (shell globs on `Name/variant`, `Name` or a
    tag; `dra` names the DRA workloads), sized by --nodes/--init/--pods when given (for DRA:
    DRA nodes, init claims, measured pods)."""
    return [case for family in FAMILIES for case in family(patterns, nodes, init, pods)]
