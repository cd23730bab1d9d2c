"""A seeded generator of small random clusters in the conformance case format.

`generate(seed, index)` gives the same case for the same pair on any machine (a private
`random.Random`, no set or dict iteration order involved). A case holds 3-12 nodes (labels, zones,
taints, capacity, images, conditions, unschedulable), bound pods, priority classes, PDBs,
Services and ReplicaSets owning pods (system-default spreading), sometimes a bound PV/PVC pair, an
optional SchedulingProfile for default-scheduler (scoring strategies, weights, disabled plugins,
percentageOfNodesToScore, default spread constraints) and pending pods drawing on every plugin of
the default profile. Everything is shaped so that the API server accepts it (see fuzz_parts.py).
"""

from __future__ import annotations

import random
from typing import Any

from .fuzz_groups import Options, group_objects
from .fuzz_parts import (
    APPS,
    IMAGES,
    NAMESPACES,
    PRIORITY_CLASSES,
    ZONES,
    affinity,
    profile,
    resources,
    spread_constraints,
    tolerations,
)

CPU_CHOICES = ["2", "4", "8"]
MEMORY_CHOICES = ["4Gi", "8Gi", "16Gi"]
TAINTS = [
    {"key": "dedicated", "value": "infra", "effect": "NoSchedule"},
    {"key": "spot", "value": "true", "effect": "PreferNoSchedule"},
    {"key": "maintenance", "effect": "NoExecute"},
    {"key": "gpu", "value": "true", "effect": "NoSchedule"},
]
GPU = "example.com/gpu"
CSI_DRIVER = "disk.csi.example"
BASE_TIME = "2026-01-01T00:{:02d}:{:02d}Z"


def rng_for(seed: int, index: int) -> random.Random:
    return random.Random(seed * 1_000_003 + index)


def generate(seed: int, index: int, options: Options | None = None) -> dict[str, Any]:
    """The case `index` of the run seeded `seed` (the workload flavour's cases differ from the
    default's only in their pending pods, and carry their `featureGates`)."""
    options = options or Options()
    rng = rng_for(seed, index)
    name = f"fuzz-{seed}-{index}" if options.flavour == "default" else f"fuzz-{options.flavour}-{seed}-{index}"
    objects: list[dict[str, Any]] = []
    spec = profile(rng)
    if spec is not None:
        objects.append({"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile",
                        "metadata": {"name": "fuzz"}, "spec": spec})
    objects += [namespace(ns, labels) for ns, labels in NAMESPACES.items()]
    objects += [priority_class(n, v, p) for n, (v, p) in PRIORITY_CLASSES.items()]
    nodes = [node(rng, i) for i in range(rng.randint(3, 12))]
    objects += nodes
    owners = owner_objects(rng)
    objects += owners
    volumes = volume_objects(rng, nodes) if rng.random() < 0.3 else []
    objects += volumes
    bound = bound_pods(rng, nodes, owners)
    objects += bound
    objects += pdbs(rng)
    claims = [v["metadata"]["name"] for v in volumes if v["kind"] == "PersistentVolumeClaim"]
    if options.flavour == "workloads":
        objects += workload_pods(rng, nodes, owners, claims, options)
    else:
        objects += [pending_pod(rng, i, nodes, owners, claims) for i in range(rng.randint(3, 8))]
    case = {"name": name, "description": f"random cluster {index} of seed {seed}"
                                         f"{' (' + options.flags() + ')' if options.flags() else ''} "
                                         "(tests/cluster/fuzz_gen.py)",
            "seed": seed, "objects": objects, "expect": []}
    if options.gates:
        case["featureGates"] = options.gates
    return case


def workload_pods(rng: random.Random, nodes: list[dict[str, Any]], owners: list[dict[str, Any]],
                  claims: list[str], options: Options) -> list[dict[str, Any]]:
    """1-3 PodGroups with their pods (fuzz_groups.py) and 0-3 pods of no group, interleaved."""
    units: list[list[dict[str, Any]]] = []
    groups, singles = rng.randint(1, 3), rng.randint(0, 3)
    for g in range(groups):
        units.append(group_objects(rng, g, pending_pod(rng, 100 + g, nodes, owners, []), options))
    for i in range(singles):
        units.append([pending_pod(rng, i, nodes, owners, claims)])
    rng.shuffle(units)
    return [obj for unit in units for obj in unit]


def namespace(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": dict(labels)}}


def priority_class(name: str, value: int, policy: str) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, "preemptionPolicy": policy, "globalDefault": False}


def node(rng: random.Random, i: int) -> dict[str, Any]:
    name = f"n{i}"
    labels = {"kubernetes.io/hostname": name, "rank": str(rng.randint(0, 9))}
    if rng.random() < 0.9:
        labels["topology.kubernetes.io/zone"] = rng.choice(ZONES)
    if rng.random() < 0.6:
        labels["disk"] = rng.choice(["ssd", "hdd"])
    if rng.random() < 0.3:
        labels["tier"] = rng.choice(["a", "b"])
    capacity = {"cpu": rng.choice(CPU_CHOICES), "memory": rng.choice(MEMORY_CHOICES),
                "pods": str(rng.choice([110, 110, 110, 4, 6]))}
    if rng.random() < 0.25:
        capacity[GPU] = str(rng.randint(1, 4))
    spec: dict[str, Any] = {}
    if rng.random() < 0.3:
        spec["taints"] = [dict(t) for t in rng.sample(TAINTS, rng.randint(1, 2))]
    if rng.random() < 0.08:
        spec["unschedulable"] = True
    ready = "True" if rng.random() < 0.92 else "False"
    status: dict[str, Any] = {"capacity": capacity, "allocatable": dict(capacity),
                              "conditions": [{"type": "Ready", "status": ready}]}
    if rng.random() < 0.6:
        status["images"] = [{"names": [img], "sizeBytes": size}
                            for img, size in rng.sample(sorted(IMAGES.items()), rng.randint(1, 3))]
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "spec": spec, "status": status}


def owner_objects(rng: random.Random) -> list[dict[str, Any]]:
    """A Service and a ReplicaSet for some apps: what system-default spreading selects by."""
    out: list[dict[str, Any]] = []
    for app in APPS:
        if rng.random() < 0.4:
            out.append({"apiVersion": "v1", "kind": "Service",
                        "metadata": {"name": f"{app}-svc", "namespace": "default"},
                        "spec": {"selector": {"app": app}, "ports": [{"port": 80}]}})
        if rng.random() < 0.4:
            labels = {"app": app}
            out.append({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                        "metadata": {"name": f"{app}-rs", "namespace": "default"},
                        "spec": {"replicas": 3, "selector": {"matchLabels": labels},
                                 "template": {"metadata": {"labels": labels},
                                              "spec": {"containers": [{"name": "app", "image": "pause:3.10"}]}}}})
    return out


def owner_reference(rng: random.Random, app: str, owners: list[dict[str, Any]]) -> list[dict[str, Any]]:
    names = {o["metadata"]["name"] for o in owners if o["kind"] == "ReplicaSet"}
    if f"{app}-rs" not in names or rng.random() < 0.3:
        return []
    return [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{app}-rs", "uid": f"uid-{app}-rs",
             "controller": True}]


def volume_objects(rng: random.Random, nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """PVs already bound to their claims: `data` pinned by node affinity (VolumeBinding) and zone label
    (VolumeZone), `extra` anywhere; CSINodes limiting the driver's volumes on some nodes (NodeVolumeLimits)."""
    target = rng.choice(nodes)
    labels = target["metadata"]["labels"]
    pv_labels = {}
    if "topology.kubernetes.io/zone" in labels and rng.random() < 0.6:
        pv_labels["topology.kubernetes.io/zone"] = labels["topology.kubernetes.io/zone"]
    key = "disk" if "disk" in labels and rng.random() < 0.5 else "kubernetes.io/hostname"
    affinity = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": key, "operator": "In", "values": [labels[key]]}]}]}}
    out: list[dict[str, Any]] = [{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                                  "metadata": {"name": "manual"}, "provisioner": "kubernetes.io/no-provisioner",
                                  "volumeBindingMode": "Immediate"}]
    out += bound_claim("data", rng.choice(["ReadWriteOnce", "ReadWriteOncePod"]), pv_labels, affinity)
    out += bound_claim("extra", "ReadWriteMany", {}, None)
    for n in nodes:
        if rng.random() < 0.4:
            name = n["metadata"]["name"]
            out.append({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
                        "spec": {"drivers": [{"name": CSI_DRIVER, "nodeID": name, "topologyKeys": [],
                                              "allocatable": {"count": rng.randint(1, 2)}}]}})
    return out


def bound_claim(name: str, mode: str, pv_labels: dict[str, str],
                affinity: dict[str, Any] | None) -> list[dict[str, Any]]:
    pv_spec: dict[str, Any] = {"capacity": {"storage": "10Gi"}, "accessModes": [mode],
                               "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "manual",
                               "csi": {"driver": CSI_DRIVER, "volumeHandle": f"pv-{name}"},
                               "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                                            "namespace": "default", "name": name, "uid": f"uid-{name}"}}
    if affinity:
        pv_spec["nodeAffinity"] = affinity
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"pv-{name}", "labels": pv_labels},
          "spec": pv_spec, "status": {"phase": "Bound"}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                        "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
           "spec": {"accessModes": [mode], "resources": {"requests": {"storage": "5Gi"}},
                    "volumeMode": "Filesystem", "storageClassName": "manual", "volumeName": f"pv-{name}"},
           "status": {"phase": "Bound", "accessModes": [mode], "capacity": {"storage": "10Gi"}}}
    return [pv, pvc]


def bound_pods(rng: random.Random, nodes: list[dict[str, Any]], owners: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Running pods that fit their nodes, started at distinct times (preemption's tie-breaker); in a
    packed cluster the nodes are nearly full, mostly of low priority (preemption's ground)."""
    out: list[dict[str, Any]] = []
    packed = rng.random() < 0.35
    for n in nodes:
        alloc = n["status"]["allocatable"]
        cpu_left, mem_left = int(alloc["cpu"]) * 1000, int(alloc["memory"][:-2]) * 1024
        # No two pods of a node share a host port: kube-scheduler would never place them so, and its
        # cache, which holds a node's ports as a set, frees such a port when the first of them leaves,
        # which a snapshot taken later cannot show (conformance case host-port-shared-by-two-pods).
        free_ports = [8080, 9090]
        slots = min(int(alloc["pods"]) - 1, rng.randint(3, 8) if packed else rng.randint(0, 4))
        for _ in range(max(slots, 0)):
            cpu, mem = rng.choice([250, 500, 1000, 1500]), rng.choice([256, 512, 1024, 2048, 3072])
            if cpu > cpu_left or mem > mem_left:
                continue
            cpu_left, mem_left = cpu_left - cpu, mem_left - mem
            k = len(out)
            app = rng.choice(APPS)
            ns = rng.choice(["default", "default", "team-a"])
            pc = rng.choice(["low", "low", "low", "mid"] if packed else ["low", "low", "mid", "high"])
            meta: dict[str, Any] = {"name": f"b{k}", "namespace": ns, "labels": {"app": app}}
            if ns == "default":
                refs = owner_reference(rng, app, owners)
                if refs:
                    meta["ownerReferences"] = refs
            container: dict[str, Any] = {"name": "app", "image": rng.choice(sorted(IMAGES)),
                                         "resources": {"requests": {"cpu": f"{cpu}m", "memory": f"{mem}Mi"}}}
            if rng.random() < 0.15 and free_ports:
                port = free_ports.pop(rng.randrange(len(free_ports)))
                container["ports"] = [{"containerPort": 8080, "hostPort": port}]
            if rng.random() < 0.05:  # terminating (named t*): counts for resources, not for spreading
                meta.update(name=f"t{k}", deletionTimestamp="2026-01-01T01:00:00Z", deletionGracePeriodSeconds=600)
            out.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                        "spec": {"containers": [container], "nodeName": n["metadata"]["name"],
                                 "priorityClassName": pc, "tolerations": [{"operator": "Exists"}]},
                        "status": {"phase": "Running", "startTime": BASE_TIME.format(k // 60, k % 60)}})
    return out


def pdbs(rng: random.Random) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for app in APPS:
        if rng.random() < 0.3:
            spec: dict[str, Any] = {"selector": {"matchLabels": {"app": app}}}
            if rng.random() < 0.5:
                spec["minAvailable"] = rng.randint(0, 2)
            else:
                spec["maxUnavailable"] = rng.randint(0, 1)
            allowed = rng.randint(0, 1)
            out.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                        "metadata": {"name": f"{app}-pdb", "namespace": "default"}, "spec": spec,
                        "status": {"disruptionsAllowed": allowed, "currentHealthy": 2, "desiredHealthy": 1,
                                   "expectedPods": 2, "observedGeneration": 1}})
    return out


def pending_pod(rng: random.Random, i: int, nodes: list[dict[str, Any]], owners: list[dict[str, Any]],
                claims: list[str]) -> dict[str, Any]:
    app = rng.choice(APPS)
    labels = {"app": app}
    if rng.random() < 0.3:
        labels["pod-template-hash"] = rng.choice(["h1", "h2"])
    ns = "team-a" if rng.random() < 0.15 else "default"
    meta: dict[str, Any] = {"name": f"p{i}", "namespace": ns, "labels": labels}
    refs = owner_reference(rng, app, owners) if ns == "default" else []
    if refs:
        meta["ownerReferences"] = refs
    container: dict[str, Any] = {"name": "app", "image": rng.choice(sorted(IMAGES))}
    requests = resources(rng)
    if requests:
        container["resources"] = {"requests": requests}
    if rng.random() < 0.2:
        container["ports"] = [{"containerPort": 8080, "hostPort": rng.choice([8080, 9090])}]
    spec: dict[str, Any] = {"containers": [container]}
    if rng.random() < 0.25:
        sidecar = {"name": "side", "image": rng.choice(sorted(IMAGES)),
                   "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}
        spec["containers"].append(sidecar)
    if rng.random() < 0.15:
        init: dict[str, Any] = {"name": "init", "image": rng.choice(sorted(IMAGES)),
                                "resources": {"requests": {"cpu": rng.choice(["500m", "2", "3"]), "memory": "1Gi"}}}
        if rng.random() < 0.5:
            init["restartPolicy"] = "Always"  # a sidecar: its requests add up with the containers'
        spec["initContainers"] = [init]
    if rng.random() < 0.1:
        spec["overhead"] = {"cpu": "250m", "memory": "128Mi"}  # through a RuntimeClass (differential.py)
    if rng.random() < 0.8:
        spec["priorityClassName"] = rng.choice(["low", "mid", "high", "high", "high-never"])
    if rng.random() < 0.12:
        spec["nodeSelector"] = rng.choice([{"disk": "ssd"}, {"tier": "a"}, {"disk": "hdd"}])
    aff = affinity(rng, nodes)
    if aff:
        spec["affinity"] = aff
    tsc = spread_constraints(rng, labels)
    if tsc:
        spec["topologySpreadConstraints"] = tsc
    tol = tolerations(rng)
    if tol:
        spec["tolerations"] = tol
    if rng.random() < 0.05:
        spec["hostNetwork"] = True  # every container port is a host port then
        container["ports"] = [{"containerPort": rng.choice([8080, 9090])}]
    if claims and ns == "default" and rng.random() < 0.4:
        spec["volumes"] = [{"name": c, "persistentVolumeClaim": {"claimName": c}}
                           for c in rng.sample(claims, rng.randint(1, len(claims)))]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
