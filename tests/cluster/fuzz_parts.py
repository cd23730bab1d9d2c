"""The random parts of a fuzz case: pod affinity, spread constraints, tolerations, requests, profile.

Shapes the API server (or kube-scheduler's configuration validation) refuses are never produced:
a Gt/Lt expression has one integer value, matchFields is `metadata.name In [one]`, minDomains
only with DoNotSchedule, no two spread constraints share topologyKey and whenUnsatisfiable,
matchLabelKeys never name a key of the selector, a toleration with Exists has no value,
scoring weights are 1-100 and a RequestedToCapacityRatio shape rises in utilization.
"""

from __future__ import annotations

import random
from typing import Any

APPS = ["web", "db", "cache"]
ZONES = ["z1", "z2", "z3"]
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
IMAGES = {"registry.example/app:1": 500 * 1024**2, "registry.example/db:2": 900 * 1024**2,
          "registry.example/cache:3": 50 * 1024**2, "registry.example/big:4": 2000 * 1024**2}
NAMESPACES = {"default": {}, "team-a": {"team": "a"}}
PRIORITY_CLASSES = {"low": (100, "PreemptLowerPriority"), "mid": (500, "PreemptLowerPriority"),
                    "high": (1000, "PreemptLowerPriority"), "high-never": (1000, "Never")}
SCORE_PLUGINS = ["TaintToleration", "NodeAffinity", "ImageLocality", "InterPodAffinity", "PodTopologySpread",
                 "NodeResourcesFit", "NodeResourcesBalancedAllocation", "VolumeBinding"]
FILTER_PLUGINS = ["TaintToleration", "NodePorts", "NodeAffinity", "NodeUnschedulable", "VolumeZone"]
TOLERATIONS: list[dict[str, Any]] = [
    {"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"},
    {"key": "spot", "operator": "Exists"},
    {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"},
    {"operator": "Exists"},
    {"key": "maintenance", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "dedicated", "operator": "Equal", "value": "other", "effect": "NoSchedule"},
]


def resources(rng: random.Random) -> dict[str, str]:
    out: dict[str, str] = {}
    cpu = rng.choice(["", "100m", "500m", "1", "1500m", "2", "3"])
    if cpu:
        out["cpu"] = cpu
    mem = rng.choice(["", "128Mi", "1Gi", "2Gi", "3Gi", "6Gi"])
    if mem:
        out["memory"] = mem
    if rng.random() < 0.15:
        out["example.com/gpu"] = str(rng.randint(1, 2))
    return out


def tolerations(rng: random.Random) -> list[dict[str, Any]]:
    if rng.random() >= 0.4:
        return []
    return [dict(t) for t in rng.sample(TOLERATIONS, rng.randint(1, 2))]


def node_expression(rng: random.Random, nodes: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """("matchExpressions" | "matchFields", requirement)."""
    kind = rng.randrange(7)
    if kind == 0:
        return "matchExpressions", {"key": ZONE, "operator": "In", "values": rng.sample(ZONES, rng.randint(1, 2))}
    if kind == 1:
        return "matchExpressions", {"key": ZONE, "operator": "NotIn", "values": [rng.choice(ZONES)]}
    if kind == 2:
        return "matchExpressions", {"key": "disk", "operator": rng.choice(["Exists", "DoesNotExist"])}
    if kind == 3:
        return "matchExpressions", {"key": "tier", "operator": rng.choice(["Exists", "DoesNotExist"])}
    if kind == 4:
        return "matchExpressions", {"key": "rank", "operator": rng.choice(["Gt", "Lt"]),
                                    "values": [str(rng.randint(0, 9))]}
    if kind == 5:
        return "matchExpressions", {"key": "disk", "operator": "In", "values": [rng.choice(["ssd", "hdd"])]}
    name = rng.choice(nodes)["metadata"]["name"]
    return "matchFields", {"key": "metadata.name", "operator": rng.choice(["In", "NotIn"]), "values": [name]}


def node_selector_term(rng: random.Random, nodes: list[dict[str, Any]]) -> dict[str, Any]:
    term: dict[str, list[dict[str, Any]]] = {}
    for _ in range(rng.randint(1, 2)):
        where, req = node_expression(rng, nodes)
        term.setdefault(where, []).append(req)
    return term


def pod_affinity_term(rng: random.Random) -> dict[str, Any]:
    apps = rng.sample(APPS, rng.randint(1, 2))
    term: dict[str, Any] = {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": apps}]},
                            "topologyKey": rng.choice([HOSTNAME, HOSTNAME, ZONE])}
    scope = rng.randrange(6)
    if scope == 0:
        term["namespaces"] = ["team-a"]
    elif scope == 1:
        term["namespaceSelector"] = {}
    elif scope == 2:
        term["namespaceSelector"] = {"matchLabels": {"team": "a"}}
    if rng.random() < 0.1:
        term["matchLabelKeys"] = ["pod-template-hash"]
    return term


def affinity(rng: random.Random, nodes: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    node_aff: dict[str, Any] = {}
    if rng.random() < 0.15:
        node_aff["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [node_selector_term(rng, nodes) for _ in range(rng.randint(1, 2))]}
    if rng.random() < 0.3:
        node_aff["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": rng.randint(1, 100), "preference": node_selector_term(rng, nodes)}
            for _ in range(rng.randint(1, 2))]
    if node_aff:
        out["nodeAffinity"] = node_aff
    for kind, required, preferred in (("podAffinity", 0.08, 0.2), ("podAntiAffinity", 0.12, 0.2)):
        part: dict[str, Any] = {}
        if rng.random() < required:
            part["requiredDuringSchedulingIgnoredDuringExecution"] = [pod_affinity_term(rng)]
        if rng.random() < preferred:
            part["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "podAffinityTerm": pod_affinity_term(rng)}
                for _ in range(rng.randint(1, 2))]
        if part:
            out[kind] = part
    return out


def spread_constraints(rng: random.Random, labels: dict[str, str]) -> list[dict[str, Any]]:
    if rng.random() >= 0.3:
        return []
    out: list[dict[str, Any]] = []
    used: set[tuple[str, str]] = set()
    for _ in range(rng.randint(1, 2)):
        key = rng.choice([ZONE, HOSTNAME])
        when = rng.choice(["DoNotSchedule", "ScheduleAnyway"])
        if (key, when) in used:
            continue
        used.add((key, when))
        app = labels["app"] if rng.random() < 0.7 else rng.choice(APPS)
        c: dict[str, Any] = {"maxSkew": rng.randint(1, 2), "topologyKey": key, "whenUnsatisfiable": when,
                             "labelSelector": {"matchLabels": {"app": app}}}
        if when == "DoNotSchedule" and rng.random() < 0.3:
            c["minDomains"] = rng.randint(1, 4)
        if rng.random() < 0.3:
            c["nodeAffinityPolicy"] = rng.choice(["Honor", "Ignore"])
        if rng.random() < 0.3:
            c["nodeTaintsPolicy"] = rng.choice(["Honor", "Ignore"])
        if rng.random() < 0.2:
            c["matchLabelKeys"] = ["pod-template-hash"]
        out.append(c)
    return out


def scoring_strategy(rng: random.Random) -> dict[str, Any]:
    kind = rng.choice(["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"])
    res = [{"name": "cpu", "weight": rng.randint(1, 5)}, {"name": "memory", "weight": rng.randint(1, 5)}]
    if rng.random() < 0.3:
        res.append({"name": "example.com/gpu", "weight": rng.randint(1, 3)})
    strategy: dict[str, Any] = {"type": kind, "resources": res}
    if kind == "RequestedToCapacityRatio":
        points = sorted(rng.sample(range(0, 101, 10), rng.randint(2, 3)))
        strategy["requestedToCapacityRatio"] = {"shape": [{"utilization": u, "score": rng.randint(0, 10)}
                                                          for u in points]}
    return strategy


def profile(rng: random.Random) -> dict[str, Any] | None:
    """A profile for default-scheduler with the variations users write, or None (the default)."""
    if rng.random() < 0.4:
        return None
    spec: dict[str, Any] = {"schedulerName": "default-scheduler"}
    if rng.random() < 0.3:
        spec["percentageOfNodesToScore"] = rng.randint(1, 100)
    config: list[dict[str, Any]] = []
    if rng.random() < 0.5:
        args: dict[str, Any] = {"scoringStrategy": scoring_strategy(rng)}
        if rng.random() < 0.2:
            args["ignoredResources"] = ["example.com/gpu"]
        config.append({"name": "NodeResourcesFit", "args": args})
    if rng.random() < 0.2:
        constraints = [] if rng.random() < 0.3 else [
            {"maxSkew": rng.randint(1, 2), "topologyKey": rng.choice([ZONE, HOSTNAME]),
             "whenUnsatisfiable": rng.choice(["ScheduleAnyway", "DoNotSchedule"])}]
        config.append({"name": "PodTopologySpread", "args": {"defaultingType": "List",
                                                             "defaultConstraints": constraints}})
    if rng.random() < 0.1:
        config.append({"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": rng.randint(0, 100)}})
    if rng.random() < 0.15:
        zone = {"matchExpressions": [{"key": ZONE, "operator": "In", "values": rng.sample(ZONES, 2)}]}
        added: dict[str, Any] = {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": rng.randint(1, 100), "preference": zone}]}
        if rng.random() < 0.4:
            added = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [zone]}}
        config.append({"name": "NodeAffinity", "args": {"addedAffinity": added}})
    if rng.random() < 0.1:
        config.append({"name": "NodeResourcesBalancedAllocation", "args": {"resources": [
            {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": "example.com/gpu", "weight": 1}]}})
    if config:
        spec["pluginConfig"] = config
    plugins: dict[str, Any] = {}
    weighted = rng.sample(SCORE_PLUGINS, rng.randint(1, 3)) if rng.random() < 0.4 else []
    disabled = [p for p in rng.sample(SCORE_PLUGINS, rng.randint(1, 2)) if p not in weighted] \
        if rng.random() < 0.3 else []
    score: dict[str, Any] = {}
    if weighted:
        score["enabled"] = [{"name": p, "weight": rng.randint(1, 10)} for p in weighted]
    if disabled:
        score["disabled"] = [{"name": p} for p in disabled]
    if score:
        plugins["score"] = score
    if rng.random() < 0.1:
        plugins["filter"] = {"disabled": [{"name": rng.choice(FILTER_PLUGINS)}]}
    if plugins:
        spec["plugins"] = plugins
    return spec
