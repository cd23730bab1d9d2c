"""The workload flavour of the fuzzer's generator: PodGroups (scheduling.k8s.io/v1beta1) and their pods.

A group is a PodGroup and 1-4 pods made from one template (fuzz_gen's pending pod: requests, affinity,
spreading, tolerations, ...) naming it in `spec.schedulingGroup.podGroupName`. Its policy is a gang
(minCount from 1 to one above its pod count: a gang whose pods do not all exist waits, one whose pods
do not all fit is placed not at all) or basic. Some groups mix priorities (upstream refuses them with
a SchedulerError). Two options stay off until the parts of issue 31 they test are merged, and are
switched on with the fuzzer's flags:

- `group_preemption` (`--group-preemption`): groups may have priorities above running pods, so that
  a group that does not fit needs preemption (DefaultPreemption's PodGroupPostFilter). Off, a group's
  priority is 0 (no PriorityClass, not above any pod) or `high-never` (preemptionPolicy Never).
  With it, a third of the groups say `disruptionMode: all`: once placed, they are preempted whole,
  by a later group or a later pod of no group. That choice is drawn from a generator of its own,
  seeded with the case generator's state, so the rest of every case is as before it was added.
- `topology` (`--topology`): groups ask for one topology domain (`schedulingConstraints.topology`),
  and both schedulers run with TopologyAwareWorkloadScheduling=true.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass
from typing import Any

from .fuzz_parts import HOSTNAME, ZONE

FLAVOURS = ("default", "workloads")
GROUP_API = "scheduling.k8s.io/v1beta1"


@dataclass(frozen=True)
class Options:
    """What the generator makes, beyond the seed: part of a case's identity (same options, same case)."""

    flavour: str = "default"
    group_preemption: bool = False
    topology: bool = False

    def __post_init__(self) -> None:
        if self.flavour not in FLAVOURS:
            raise ValueError(f"flavour {self.flavour!r} is not one of {', '.join(FLAVOURS)}")
        if (self.group_preemption or self.topology) and self.flavour != "workloads":
            raise ValueError("--group-preemption and --topology are options of the workloads flavour")

    @property
    def gates(self) -> str:
        """kube-scheduler's and kube-apiserver's --feature-gates for these cases ("" for none)."""
        if self.flavour != "workloads":
            return ""
        return "GenericWorkload=true" + (",TopologyAwareWorkloadScheduling=true" if self.topology else "")

    def flags(self) -> str:
        """The fuzzer's flags that give these options (for replay lines)."""
        out = [] if self.flavour == "default" else [f"--flavour {self.flavour}"]
        out += ["--group-preemption"] * self.group_preemption + ["--topology"] * self.topology
        return " ".join(out)


def side_draw(rng: random.Random) -> float:
    """A number in [0, 1) that depends on `rng`'s state but leaves it as it is."""
    return random.Random(repr(rng.getstate())).random()


def group_priorities(rng: random.Random, options: Options) -> str | None:
    """A group's PriorityClass name (None: none, priority 0)."""
    if options.group_preemption:
        return rng.choice([None, "low", "mid", "high", "high", "high-never"])
    return rng.choice([None, None, "high-never"])


def pod_group(rng: random.Random, name: str, members: int, priority_class: str | None,
              options: Options) -> dict[str, Any]:
    if rng.random() < 0.25:
        policy: dict[str, Any] = {"basic": {}}
    else:
        policy = {"gang": {"minCount": rng.randint(1, members + 1) if rng.random() < 0.3 else
                           rng.randint(max(1, members - 1), members)}}
    spec: dict[str, Any] = {"schedulingPolicy": policy}
    if priority_class:
        spec["priorityClassName"] = priority_class
    if options.topology and rng.random() < 0.6:
        spec["schedulingConstraints"] = {"topology": [{"key": rng.choice([ZONE, ZONE, HOSTNAME])}]}
    if options.group_preemption and side_draw(rng) < 1 / 3:
        spec["disruptionMode"] = {"all": {}}
    return {"apiVersion": GROUP_API, "kind": "PodGroup", "metadata": {"name": name, "namespace": "default"},
            "spec": spec}


def group_objects(rng: random.Random, g: int, template: dict[str, Any], options: Options) -> list[dict[str, Any]]:
    """A PodGroup `g<g>` and its pods `g<g>-<k>` made from the pending pod `template`."""
    name = f"g{g}"
    members = rng.randint(1, 4)
    priority_class = group_priorities(rng, options)
    spec = copy.deepcopy(template["spec"])
    for key in ("volumes", "hostNetwork", "priorityClassName"):
        spec.pop(key, None)
    for c in spec["containers"]:
        c.pop("ports", None)  # host ports are left to the single pods
    spec["schedulingGroup"] = {"podGroupName": name}
    labels = dict(template["metadata"]["labels"])
    labels["group"] = name
    out = [pod_group(rng, name, members, priority_class, options)]
    mixed = rng.random() < 0.12 and members > 1
    for k in range(members):
        pod_spec = copy.deepcopy(spec)
        pc = priority_class
        if mixed and k == members - 1:
            pc = rng.choice([c for c in (None, "low", "mid", "high-never") if c != priority_class])
        if pc:
            pod_spec["priorityClassName"] = pc
        out.append({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": f"{name}-{k}", "namespace": "default", "labels": dict(labels)},
                    "spec": pod_spec})
    return out
