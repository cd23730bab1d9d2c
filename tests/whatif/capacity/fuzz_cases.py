"""Random clusters for the capacity brute-force check: the fuzzer's cases (tests/cluster/fuzz_gen.py,
every flavour: affinity, spreading, volumes, gangs, group preemption, topology), each with a
template picked among its pending pods (a PodGroup with its pods in the workloads flavours), one
in five of the default ones given DRA devices (a DeviceClass, ResourceSlices on random nodes, a
ResourceClaimTemplate the template's pod claims from), one in three run with --allow-preemption,
one in seven with --tie-break fixed-order, each with a seed of its own."""

from __future__ import annotations

import copy
import io
import random
from dataclasses import dataclass
from typing import Any

from kubeberth import features
from kubeberth.framework.tie_break import FIXED_ORDER, RESERVOIR
from kubeberth.whatif.capacity import Options
from kubeberth.whatif.policy_tests import parse_case, prepare_case
from tests.cluster.fuzz_gen import generate
from tests.cluster.fuzz_groups import Options as FuzzOptions
from tests.cluster.fuzz_parts import APPS

FLAVOURS = {"default": FuzzOptions(), "workloads": FuzzOptions(flavour="workloads"),
            "topology": FuzzOptions(flavour="workloads", topology=True),
            "group-preemption": FuzzOptions(flavour="workloads", group_preemption=True)}
SEED = 41
DRIVER = "gpu.example.com"


@dataclass
class FuzzCase:
    name: str
    objects: list[dict[str, Any]]
    template: list[dict[str, Any]]
    options: Options
    gates: features.FeatureGates


def _dra(rng: random.Random, objects: list[dict[str, Any]], template: dict[str, Any]) -> None:
    nodes = [o["metadata"]["name"] for o in objects if o["kind"] == "Node"]
    objects.append({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
                    "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    for name in rng.sample(nodes, rng.randint(1, len(nodes))):
        objects.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                        "metadata": {"name": f"{name}-gpu"}, "spec": {"driver": DRIVER, "nodeName": name,
                                 "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                                 "devices": [{"name": f"gpu-{d}"} for d in range(rng.randint(1, 3))]}})
    ns = template["metadata"].get("namespace") or "default"
    objects.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                    "metadata": {"name": "gpu", "namespace": ns},
                    "spec": {"spec": {"devices": {"requests": [
                        {"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}}}})
    template["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]


def _stateful_set(rng: random.Random, objects: list[dict[str, Any]], template: dict[str, Any]) -> dict[str, Any]:
    """The template as a StatefulSet whose copies each claim a local volume (WaitForFirstConsumer):
    1-6 volumes of random sizes on random nodes, some too small."""
    nodes = [o["metadata"]["name"] for o in objects if o["kind"] == "Node"]
    objects.append({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "local-wffc"},
                    "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"})
    for v in range(rng.randint(1, 6)):
        objects.append({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"local-{v}"},
                        "spec": {"capacity": {"storage": rng.choice(["1Gi", "4Gi", "8Gi"])},
                                 "accessModes": ["ReadWriteOnce"], "storageClassName": "local-wffc",
                                 "local": {"path": f"/mnt/{v}"},
                                 "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                                     {"key": "kubernetes.io/hostname", "operator": "In",
                                      "values": [rng.choice(nodes)]}]}]}}}})
    spec = copy.deepcopy(template["spec"])
    spec.pop("volumes", None)
    meta = template["metadata"]
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": meta["name"], "namespace": meta.get("namespace") or "default"},
            "spec": {"template": {"metadata": {"labels": dict(meta.get("labels") or {})}, "spec": spec},
                     "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                         "accessModes": ["ReadWriteOnce"], "storageClassName": "local-wffc",
                         "resources": {"requests": {"storage": "2Gi"}}}}]}}


def fuzz_case(number: int) -> FuzzCase:
    """Case `number`: the flavours in turn, the fuzzer's index growing."""
    flavour = list(FLAVOURS)[number % len(FLAVOURS)]
    index = number // len(FLAVOURS)
    doc = generate(SEED, index, FLAVOURS[flavour])
    doc["expect"] = [{"pod": "-/-", "unschedulable": False}]
    case = parse_case(doc, str(doc["name"]))
    with features.override(case.gates):
        sim = prepare_case(case, io.StringIO())
    objects = copy.deepcopy(sim.objects)
    rng = random.Random(number)
    pending = [o for o in objects if o["kind"] == "Pod" and not o["spec"].get("nodeName")]
    groups = [o for o in objects if o["kind"] == "PodGroup"]
    if groups:
        group = rng.choice(groups)
        gname = group["metadata"]["name"]
        template = [group] + [p for p in pending
                              if (p["spec"].get("schedulingGroup") or {}).get("podGroupName") == gname]
    else:
        with_claims = [p for p in pending if any("persistentVolumeClaim" in v for v in p["spec"].get("volumes") or ())]
        template = [rng.choice(with_claims if with_claims and number % 2 == 0 else pending)]
        if number % 20 == 0 or (flavour == "default" and index % 5 == 4):
            _dra(rng, objects, template[0])
        elif flavour == "default" and index % 5 == 2:
            template = [_stateful_set(rng, objects, template[0])]
    options = Options(seed=case.seed + number, percentage_of_nodes_to_score=sim.percentage_of_nodes_to_score or 0,
                      allow_preemption=number % 3 == 2, tie_break=FIXED_ORDER if number % 7 == 3 else RESERVOIR)
    return FuzzCase(f"{flavour}-{SEED}-{index}", objects, copy.deepcopy(template), options, case.gates)


def features_of(case: FuzzCase) -> set[str]:
    """What the template exercises (for the coverage check)."""
    out = set()
    for obj in case.template:
        if obj["kind"] == "PodGroup":
            out.add("gang")
            continue
        if obj["kind"] == "StatefulSet":
            out.add("volumes")
            obj = obj["spec"]["template"]
        spec = obj["spec"]
        aff = spec.get("affinity") or {}
        if aff.get("podAffinity") or aff.get("podAntiAffinity"):
            out.add("pod-affinity")
        if aff.get("nodeAffinity") or spec.get("nodeSelector"):
            out.add("node-affinity")
        if spec.get("topologySpreadConstraints"):
            out.add("spreading")
        if any("persistentVolumeClaim" in v for v in spec.get("volumes") or ()):
            out.add("volumes")
        if spec.get("resourceClaims"):
            out.add("dra")
        if any(p.get("hostPort") for c in spec["containers"] for p in c.get("ports") or ()):
            out.add("host-ports")
    if case.options.allow_preemption:
        out.add("preemption")
    return out


def per_node_case(number: int) -> FuzzCase:
    """A default-flavour case whose template keeps only what the per-node path counts (requests,
    host ports, node affinity, tolerations, preferred terms, anti-affinity per hostname in one case
    of two): its other pod (anti-)affinity requirements, spreading, volumes and priority are dropped,
    its cpu request sometimes made 250m."""
    doc = generate(SEED + 1, number, FLAVOURS["default"])
    doc["expect"] = [{"pod": "-/-", "unschedulable": False}]
    case = parse_case(doc, str(doc["name"]))
    sim = prepare_case(case, io.StringIO())
    rng = random.Random(number)
    pending = [o for o in sim.objects if o["kind"] == "Pod" and not o["spec"].get("nodeName")]
    pod = copy.deepcopy(rng.choice(pending))
    spec = pod["spec"]
    for key in ("topologySpreadConstraints", "volumes", "priorityClassName"):
        spec.pop(key, None)
    aff = spec.get("affinity") or {}
    (aff.get("podAffinity") or {}).pop("requiredDuringSchedulingIgnoredDuringExecution", None)
    anti = aff.get("podAntiAffinity") or {}
    terms = anti.get("requiredDuringSchedulingIgnoredDuringExecution") or []
    if number % 2 or any(t.get("topologyKey") != "kubernetes.io/hostname" for t in terms):
        anti.pop("requiredDuringSchedulingIgnoredDuringExecution", None)  # kept (per hostname) in one case of two
    if number % 4 == 0:  # one per node, or away from another app's pods
        app = rng.choice([pod["metadata"]["labels"]["app"], rng.choice(APPS)])
        aff.setdefault("podAntiAffinity", {})["requiredDuringSchedulingIgnoredDuringExecution"] = [
            {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}]
        spec["affinity"] = aff
    if rng.random() < 0.5:
        for c in spec["containers"]:
            requests = (c.get("resources") or {}).get("requests") or {}
            if "cpu" in requests:
                requests["cpu"] = "250m"
    options = Options(seed=case.seed, percentage_of_nodes_to_score=sim.percentage_of_nodes_to_score or 0)
    return FuzzCase(f"per-node-{SEED + 1}-{number}", sim.objects, [pod], options, case.gates)
