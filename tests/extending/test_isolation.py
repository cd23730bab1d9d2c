"""A plugin that raises fails its pod's attempt with upstream's wording, the pod backs off and
is retried, the error is counted; the loop and the other profiles' pods go on."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

import kubeberth.whatif.engine as simulate_module
from kubeberth.framework import CycleState, NodeInfo
from kubeberth.framework import plugin_metrics as plugin_metrics_module
from kubeberth.metrics import SchedulerMetrics
from kubeberth.model import Node, Pod
from kubeberth.plugins import use_plugins
from kubeberth.scheduler import Scheduler

FAULTY = str(Path(__file__).with_name("faulty_plugin.py"))


def node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def pod(name: str, scheduler: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulerName": scheduler, "containers": [{"name": "c", "image": "x"}]}}


def faulty_profile(at: str) -> dict[str, Any]:
    return {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": "faulty"},
            "spec": {"schedulerName": "faulty",
                     "plugins": {"multiPoint": {"enabled": [{"name": "Faulty"}]},
                                 # Faulty binds first (it says Skip unless it raises), then DefaultBinder.
                                 "bind": {"enabled": [{"name": "Faulty"}, {"name": "DefaultBinder"}],
                                          "disabled": [{"name": "*"}]}},
                     "pluginConfig": [{"name": "Faulty", "args": {"raiseAt": at}}]}}


@pytest.fixture
def metrics(monkeypatch: pytest.MonkeyPatch) -> SchedulerMetrics:
    """simulate's scheduler with metrics, every cycle's plugins timed."""
    m = SchedulerMetrics()

    class Metered(Scheduler):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(metrics=m, **kwargs)

    monkeypatch.setattr(simulate_module, "Scheduler", Metered)
    monkeypatch.setattr(plugin_metrics_module, "SAMPLE_PERCENT", 100)
    use_plugins([FAULTY], entry_points=False)
    return m


def run(at: str) -> tuple[dict[str, Any], Scheduler]:
    objects = [node("n1"), node("n2"), faulty_profile(at), pod("bad", "faulty"), pod("good", "default-scheduler")]
    outcomes, sched = simulate_module.run_simulation(objects, warn=io.StringIO())
    return {o.pod: o for o in outcomes}, sched


@pytest.mark.parametrize("at, message", [
    ("PreFilter", 'running PreFilter plugin "Faulty": RuntimeError: boom at PreFilter'),
    ("Filter", 'running "Faulty" filter plugin: RuntimeError: boom at Filter'),
    ("PreScore", 'running PreScore plugin "Faulty": RuntimeError: boom at PreScore'),
    ("Score", 'running Score plugins: plugin "Faulty" failed with: RuntimeError: boom at Score'),
    ("NormalizeScore",
     'running Normalize on Score plugins: plugin "Faulty" failed with: RuntimeError: boom at NormalizeScore'),
    ("Reserve", 'running Reserve plugin "Faulty": RuntimeError: boom at Reserve'),
    ("Permit", 'running Permit plugin "Faulty": RuntimeError: boom at Permit'),
    ("PreBind", 'running PreBind plugin "Faulty": RuntimeError: boom at PreBind'),
    ("Bind", 'running Bind plugin "Faulty": RuntimeError: boom at Bind'),
])
def test_a_raising_plugin_errors_its_pods_attempt(metrics: SchedulerMetrics, at: str, message: str) -> None:
    outcomes, sched = run(at)
    bad, good = outcomes["default/bad"], outcomes["default/good"]
    assert (bad.status, bad.message) == ("Unschedulable", message)
    assert sched.outcomes["default/bad"].attempts > 1  # backed off and retried
    assert good.status == "Scheduled"
    errors = metrics.sample("scheduler_schedule_attempts_total", {"result": "error", "profile": "faulty"})
    assert errors == sched.outcomes["default/bad"].attempts
    assert ("default/bad", "Warning", "FailedScheduling") in {e[:3] for e in sched.client.events}  # type: ignore[union-attr]


def test_pre_enqueue_raising_gates_the_pod(metrics: SchedulerMetrics) -> None:
    outcomes, _ = run("PreEnqueue")
    assert outcomes["default/bad"].message == 'running PreEnqueue plugin "Faulty": RuntimeError: boom at PreEnqueue'
    assert outcomes["default/good"].status == "Scheduled"


def test_post_filter_raising_keeps_the_fit_error(metrics: SchedulerMetrics) -> None:
    outcomes, _ = run("PostFilter")
    assert outcomes["default/bad"].message == (
        '0/2 nodes are available: 2 never fits. running PostFilter plugin "Faulty": RuntimeError: boom at PostFilter')


@pytest.mark.parametrize("at", ["PostBind", "Unreserve"])
def test_points_without_a_status_log_and_go_on(metrics: SchedulerMetrics, at: str,
                                               caplog: pytest.LogCaptureFixture) -> None:
    outcomes, _ = run(at)
    expected = "Scheduled" if at == "PostBind" else "Unschedulable"
    assert outcomes["default/bad"].status == expected
    assert outcomes["default/good"].status == "Scheduled"
    assert f'running {at} plugin "Faulty": RuntimeError: boom at {at}' in caplog.text


@pytest.mark.parametrize("which", ["AddPod", "RemovePod"])
def test_pre_filter_extensions_raising(which: str) -> None:
    use_plugins([FAULTY], entry_points=False)
    from kubeberth.config import parse_spec
    from kubeberth.plugins import plugin_registry
    from kubeberth.profile import build_framework

    spec = parse_spec(faulty_profile(which)["spec"])
    sched = Scheduler()
    fw = build_framework(spec, plugin_registry(), sched.ctx)
    fw.pre_filter_plugins = [fw.plugins["Faulty"]]  # type: ignore[list-item]  # Faulty's alone
    p, other = Pod(pod("p", "faulty")), Pod(pod("q", "faulty"))
    ni = NodeInfo(Node(node("n1")))
    run_ext = fw.run_pre_filter_add_pod if which == "AddPod" else fw.run_pre_filter_remove_pod
    status = run_ext(CycleState(), p, other, ni)
    assert status is not None and status.message() == (
        f'running {which} on PreFilter plugin "Faulty": RuntimeError: boom at {which}')


def test_a_slow_plugin_shows_under_its_own_name(metrics: SchedulerMetrics) -> None:
    _, sched = run("")
    sched.flush_plugin_metrics()
    for point, status in (("PreFilter", "Success"), ("Filter", "Success"), ("Score", "Success"),
                          ("Reserve", "Success"), ("Permit", "Success"), ("PreBind", "Success"), ("Bind", "Skip")):
        count = metrics.sample("scheduler_plugin_execution_duration_seconds_count",
                               {"plugin": "Faulty", "extension_point": point, "status": status})
        assert count, point
