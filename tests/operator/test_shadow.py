"""Shadow mode: a SchedulingProfile with spec.mode Shadow evaluates other schedulers' pending pods,
never binds, and counts how its choice compares with theirs."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from kubeberth.clock import FakeClock
from kubeberth.config import ConfigError, parse_spec
from kubeberth.config.kube_config import export_config
from kubeberth.model import Pod
from kubeberth.operator.profiles import ProfileManager
from kubeberth.operator.shadow import ReadOnlyClient, ShadowEvaluator, WriteRefused
from kubeberth.plugins import in_tree_registry
from kubeberth.scheduler import Scheduler
from tests.builders import node_dict, pod_dict

from .conftest import wait_for
from .emulator import make_node, make_pod

SHADOW = {"mode": "Shadow", "shadow": {"schedulerNames": ["other"]},
          "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]}


def count(registry: CollectorRegistry, outcome: str, profile: str = "bin-pack") -> float:
    return registry.get_sample_value("kubeberth_shadow_decisions_total", {"profile": profile, "outcome": outcome}) or 0


def setup() -> tuple[Scheduler, ShadowEvaluator, CollectorRegistry, ProfileManager]:
    sched = Scheduler(clock=FakeClock())
    registry = CollectorRegistry()
    shadow = ShadowEvaluator(sched, registry)
    manager = ProfileManager(sched, in_tree_registry(), shadow=shadow)
    for raw in (node_dict("small", cpu="2"), node_dict("large", cpu="8")):
        sched.on_node_add(raw)
    return sched, shadow, registry, manager


def bound(raw: dict[str, Any], node: str) -> dict[str, Any]:
    return {**raw, "spec": {**raw["spec"], "nodeName": node}}


def unschedulable(raw: dict[str, Any]) -> dict[str, Any]:
    return {**raw, "status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}}


def test_spec_mode_validation() -> None:
    assert parse_spec(SHADOW).mode == "Shadow" and parse_spec({}).mode == "Active"
    with pytest.raises(ConfigError, match="shadow is only for mode: Shadow"):
        parse_spec({"shadow": {"schedulerNames": ["x"]}})
    with pytest.raises(ConfigError, match=r"spec\.mode"):
        parse_spec({"mode": "Dry"})
    with pytest.raises(ConfigError, match="has no KubeSchedulerConfiguration form"):
        export_config([parse_spec(SHADOW)])


async def test_every_outcome_is_counted_and_disagreements_logged(caplog: pytest.LogCaptureFixture) -> None:
    sched, shadow, registry, manager = setup()
    manager.apply("bin-pack", {"metadata": {"name": "bin-pack"}, "spec": SHADOW})
    assert manager.verdicts["bin-pack"].accepted
    assert set(sched.profiles) == {"default-scheduler"}  # a shadow serves no schedulerName
    pods = {name: pod_dict(name, cpu=cpu, scheduler="other")
            for name, cpu in (("same", "1"), ("moved", "1"), ("theirs-fail", "1"), ("ours-fail", "16"),
                              ("both-fail", "16"))}
    ignored = pod_dict("not-watched", cpu="1")  # default-scheduler's: not ours to shadow
    for raw in [*pods.values(), ignored]:
        shadow.on_pod(raw)
    assert set(shadow.pending) == {f"uid-default-{n}" for n in pods}
    await shadow.evaluate_pending()
    chosen = {k[1]: d.node for k, d in shadow.decisions.items()}
    assert chosen["uid-default-same"] == "small"  # MostAllocated packs the small node
    assert chosen["uid-default-ours-fail"] is None
    caplog.set_level(logging.INFO, logger="kubeberth.operator.shadow")
    shadow.on_pod(bound(pods["same"], "small"))
    shadow.on_pod(bound(pods["moved"], "large"))
    shadow.on_pod(unschedulable(pods["theirs-fail"]))
    shadow.on_pod(bound(pods["ours-fail"], "large"))
    shadow.on_pod(unschedulable(pods["both-fail"]))
    assert {o: count(registry, o) for o in ("same_node", "other_node", "we_unschedulable", "they_unschedulable",
                                            "both_unschedulable")} == dict.fromkeys(
        ("same_node", "other_node", "we_unschedulable", "they_unschedulable", "both_unschedulable"), 1.0)
    lines = [r.getMessage() for r in caplog.records]
    assert "Shadow profile bin-pack: pod default/moved: we chose small, other bound it to large" in lines
    assert "Shadow profile bin-pack: pod default/theirs-fail: we chose small, other found it unschedulable" in lines
    assert any(line.startswith("Shadow profile bin-pack: pod default/ours-fail: no node fits for us (0/2 nodes")
               for line in lines)
    assert shadow.decisions == {}
    shadow.on_pod(bound(pods["same"], "small"))  # counted once
    assert count(registry, "same_node") == 1.0
    # the shadow never touched the scheduler's queue: nothing of "other" is pending there
    assert all(p.scheduler_name != "other" for p in sched._pending.values())


async def test_profile_lifecycle_active_to_shadow_and_delete() -> None:
    sched, shadow, _registry, manager = setup()
    manager.apply("p", {"metadata": {"name": "p"}, "spec": {"schedulerName": "other"}})
    assert "other" in sched.profiles
    manager.apply("p", {"metadata": {"name": "p"}, "spec": SHADOW})
    assert "other" not in sched.profiles and "p" in shadow.profiles
    manager.apply("p", None)
    assert shadow.profiles == {}
    refused = ProfileManager(Scheduler(clock=FakeClock()), in_tree_registry())
    refused.apply("s", {"metadata": {"name": "s"}, "spec": SHADOW})
    assert refused.verdicts["s"].message == "spec.mode: Shadow profiles are not available here"


async def test_a_new_version_decides_again_for_the_pods_still_pending() -> None:
    """The choice counted when their own scheduler decides is that of the version in force: the
    pods the previous version evaluated are evaluated again (a pod already decided is not)."""
    sched, shadow, registry, manager = setup()
    manager.apply("bin-pack", {"metadata": {"name": "bin-pack"}, "spec": SHADOW})
    waiting, decided = pod_dict("waiting", cpu="1", scheduler="other"), pod_dict("decided", cpu="1", scheduler="other")
    for raw in (waiting, decided):
        sched.on_pod_add(raw)
        shadow.on_pod(raw)
    await shadow.evaluate_pending()
    assert {k[1]: d.node for k, d in shadow.decisions.items()} == {
        "uid-default-waiting": "small", "uid-default-decided": "small"}  # MostAllocated
    shadow.on_pod(bound(decided, "small"))
    sched.on_pod_update(bound(decided, "small"))
    spreading = {**SHADOW, "pluginConfig": [{"name": "NodeResourcesFit",
                                             "args": {"scoringStrategy": {"type": "LeastAllocated"}}}]}
    manager.apply("bin-pack", {"metadata": {"name": "bin-pack"}, "spec": spreading})
    assert manager.verdicts["bin-pack"].accepted and set(shadow.pending) == {"uid-default-waiting"}
    await shadow.evaluate_pending()
    assert {k[1]: d.node for k, d in shadow.decisions.items()} == {"uid-default-waiting": "large"}
    shadow.on_pod(bound(waiting, "large"))
    assert count(registry, "same_node") == 2


async def test_shadow_frameworks_cannot_write() -> None:
    with pytest.raises(WriteRefused):
        await ReadOnlyClient().bind(Pod(pod_dict("p")), "n")
    _sched, shadow, _registry, manager = setup()
    manager.apply("bin-pack", {"metadata": {"name": "bin-pack"}, "spec": SHADOW})
    fw = shadow.profiles["bin-pack"].fw
    assert isinstance(fw.ctx.client, ReadOnlyClient)
    # a high-priority pod that fits nowhere: a plain FitError, no preemption attempted (no nomination)
    shadow.on_pod(pod_dict("huge", cpu="64", scheduler="other", priority=1000))
    await shadow.evaluate_pending()
    [decision] = shadow.decisions.values()
    assert decision.node is None and decision.message.startswith("0/2 nodes are available: 2 Insufficient cpu.")
    assert shadow.ctx.nominator is not None and len(shadow.ctx.nominator) == 0


async def test_the_operator_shadows_another_scheduler(cluster: Any, start_operator: Any) -> None:
    api = cluster.api
    api.create("nodes", make_node("small", cpu="2"))
    api.create("nodes", make_node("large", cpu="8"))
    api.create("schedulingprofiles", {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile",
                                      "metadata": {"name": "bin-pack"},
                                      "spec": {**SHADOW, "shadow": {"schedulerNames": ["other"], "annotate": True}}})
    op = await start_operator()
    api.create("pods", make_pod("a", cpu="1", scheduler="other"))
    api.create("pods", make_pod("b", cpu="1", scheduler="other"))
    ann = "shadow.kubeberth.io/bin-pack"
    for name in ("a", "b"):
        await wait_for(lambda n=name: ann in ((api.get("pods", n, "default") or {})["metadata"].get("annotations")
                                             or {}), message=f"{name} annotated")
    assert json.loads(api.get("pods", "a", "default")["metadata"]["annotations"][ann]) == {"node": "small"}
    # the test plays "other": it binds a where the shadow would have, b elsewhere
    for name, node in (("a", "small"), ("b", "large")):
        api.patch("pods", name, {"spec": {"nodeName": node}}, "default")
    metrics = op.app.metrics
    await wait_for(lambda: metrics.sample("kubeberth_shadow_decisions_total",
                                          {"profile": "bin-pack", "outcome": "other_node"}) == 1.0,
                   message="other_node counted")
    assert metrics.sample("kubeberth_shadow_decisions_total", {"profile": "bin-pack", "outcome": "same_node"}) == 1.0
    assert api.bindings == []  # kubeberth bound nothing
    assert not api.requests("PATCH", "pods", "status")  # nor wrote any pod status
