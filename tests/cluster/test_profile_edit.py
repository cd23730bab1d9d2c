"""A SchedulingProfile edited live on a real API server: a pod its plugin's args rejected binds
within seconds of the edit that relaxes them (the event kubeberth.io/SchedulingProfileUpdate),
with no other change in the cluster, while a pod of another profile stays pending."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from .conftest import Operators
from .kube import Kube, eventually, node, pod
from .test_plugins import accepted, bound_node, profile

pytestmark = pytest.mark.cluster

PLUGIN = '''
from pydantic import BaseModel

from kubeberth.framework import ActionType, ClusterEvent, FilterPlugin, Status


class CostAwareArgs(BaseModel):
    maxCost: int = 1


class CostAware(FilterPlugin):
    """Nodes whose label `cost` is at most maxCost; only a node added or relabelled may change that."""

    name = "CostAware"
    args_model = CostAwareArgs

    def __init__(self, args, handle):
        self.max_cost = args.maxCost

    def events_to_register(self):
        return [ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL)]

    def filter(self, state, pod, node_info):
        if int(node_info.node.labels.get("cost", "0")) > self.max_cost:
            return Status.unschedulable("node costs too much")
        return None
'''


def cost_aware(scheduler_name: str, max_cost: int) -> dict[str, Any]:
    return {"schedulerName": scheduler_name, "plugins": {"filter": {"enabled": [{"name": "CostAware"}]}},
            "pluginConfig": [{"name": "CostAware", "args": {"maxCost": max_cost}}]}


async def rejected(kube: Kube, name: str) -> str | None:
    conditions = (await kube.get("pods", name, "default")).get("status", {}).get("conditions") or []
    return next((c["message"] for c in conditions if c["type"] == "PodScheduled" and c["status"] == "False"), None)


async def test_an_edit_that_relaxes_a_plugins_args_binds_the_pod_it_rejected(
        kube: Kube, operators: Operators, tmp_path: Path) -> None:
    plugin = tmp_path / "costaware.py"
    plugin.write_text(textwrap.dedent(PLUGIN))
    await kube.create("nodes", node("pricey", labels={"cost": "2"}))
    op = operators.start("--no-default-profile", f"--plugins={plugin}")
    for name in ("cheap", "frugal"):
        await kube.create("schedulingprofiles", profile(name, cost_aware(name, 1)))
        cond = await eventually(lambda name=name: accepted(kube, name), what=f"{name} judged")  # type: ignore[misc]
        assert cond["status"] == "True", cond
    await kube.create("pods", pod("web", scheduler="cheap"))
    await kube.create("pods", pod("other", scheduler="frugal"))
    for name in ("web", "other"):
        message = await eventually(lambda name=name: rejected(kube, name), what=f"{name} rejected")  # type: ignore[misc]
        assert "node costs too much" in message

    await kube.patch("schedulingprofiles", "cheap", {"spec": cost_aware("cheap", 3)})

    async def in_force() -> bool:
        cond = await accepted(kube, "cheap")
        return bool(cond and cond["status"] == "True" and cond.get("observedGeneration") == 2)

    await eventually(in_force, what="the edit in force")
    # No other event: without the profile's own, the pod would wait for the five-minute flush.
    assert await eventually(lambda: bound_node(kube, "web"), timeout=10, what="web bound after the edit") == "pricey"
    assert await bound_node(kube, "other") is None
    incoming = [line for line in op.metrics().splitlines()
                if line.startswith("scheduler_queue_incoming_pods_total{")
                and 'event="kubeberth.io/SchedulingProfileUpdate"' in line]
    assert incoming and all(line.endswith(" 1.0") for line in incoming), incoming
