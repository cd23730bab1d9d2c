"""A plugin that raises for every pod does not flood the log: one traceback per (plugin,
extension point, exception type), the rest counted (kubeberth_plugin_errors_total, every one) and
logged as a count now and then; the pods' messages stay upstream's."""

from __future__ import annotations

import io
import logging
import re
from pathlib import Path
from typing import Any

import pytest

import kubeberth.whatif.engine as simulate_module
from kubeberth.clock import FakeClock
from kubeberth.framework.isolation import SUMMARY_INTERVAL, PluginErrors
from kubeberth.metrics import SchedulerMetrics
from kubeberth.plugins import use_plugins
from kubeberth.scheduler import Scheduler

BROKEN = '''
import numpy as np

from kubeberth.framework import ScorePlugin


class PerNode(ScorePlugin):
    """Raises in `score`: ValueError for the even pods, TypeError for the odd ones."""

    name = "BrokenPerNode"

    def __init__(self, args, handle=None):
        pass

    def score(self, state, pod, node_info):
        if int(pod.name.rsplit("-", 1)[1]) % 2:
            raise TypeError("cost is not a number")
        raise ValueError("cost label missing")


class Vectorised(ScorePlugin):
    """Raises in `score_all` only: a pod it fails went through the vectorised path."""

    name = "BrokenVectorised"

    def __init__(self, args, handle=None):
        pass

    def score_all(self, state, pod, nodes):
        raise KeyError("cost")

    def score(self, state, pod, node_info):
        return 0
'''

NODES = 70  # above Framework.vector_min_nodes: score_all is used
PODS = 24  # per profile


def profile(name: str, plugin: str) -> dict[str, Any]:
    return {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": name},
            "spec": {"schedulerName": name, "plugins": {"score": {"enabled": [{"name": plugin}]}}}}


def cluster() -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [profile("per-node", "BrokenPerNode"), profile("vectorised", "BrokenVectorised")]
    objects += [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
                 "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"}}} for i in range(NODES)]
    objects += [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{scheduler}-{i}", "namespace": "default"},
                 "spec": {"schedulerName": scheduler, "containers": [{"name": "c", "image": "x"}]}}
                for scheduler in ("per-node", "vectorised") for i in range(PODS)]
    return objects


@pytest.fixture
def metrics(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> SchedulerMetrics:
    m = SchedulerMetrics()

    class Metered(Scheduler):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(metrics=m, **kwargs)

    monkeypatch.setattr(simulate_module, "Scheduler", Metered)
    path = tmp_path / "broken.py"
    path.write_text(BROKEN)
    use_plugins([str(path)], entry_points=False)
    return m


def test_one_traceback_per_plugin_and_type_every_failure_counted(metrics: SchedulerMetrics,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="kubeberth.plugins")
    outcomes, sched = simulate_module.run_simulation(cluster(), warn=io.StringIO())

    by_pod = {o.pod: o for o in outcomes}
    for i in range(PODS):
        error = "TypeError: cost is not a number" if i % 2 else "ValueError: cost label missing"
        assert (by_pod[f"default/per-node-{i}"].status, by_pod[f"default/per-node-{i}"].message) == (
            "Unschedulable", f'running Score plugins: plugin "BrokenPerNode" failed with: {error}')
        assert (by_pod[f"default/vectorised-{i}"].status, by_pod[f"default/vectorised-{i}"].message) == (
            "Unschedulable", "running Score plugins: plugin \"BrokenVectorised\" failed with: KeyError: 'cost'")

    records = [r for r in caplog.records if r.name == "kubeberth.plugins"]
    tracebacks = sorted((r.getMessage(), r.exc_info[0].__name__) for r in records if r.exc_info)
    assert tracebacks == [
        ('running Score plugins: plugin "BrokenPerNode" failed with: TypeError: cost is not a number', "TypeError"),
        ('running Score plugins: plugin "BrokenPerNode" failed with: ValueError: cost label missing', "ValueError"),
        ("running Score plugins: plugin \"BrokenVectorised\" failed with: KeyError: 'cost'", "KeyError"),
    ]
    vectorised_tb = next(r for r in records if r.exc_info and r.exc_info[0] is KeyError)
    assert "in score_all" in caplog.text and vectorised_tb.exc_info

    attempts = {scheduler: sum(sched.outcomes[f"default/{scheduler}-{i}"].attempts for i in range(PODS))
                for scheduler in ("per-node", "vectorised")}
    assert attempts["per-node"] > PODS  # the pods were retried: many more failures than tracebacks
    for plugin, scheduler in (("BrokenPerNode", "per-node"), ("BrokenVectorised", "vectorised")):
        counted = metrics.sample("kubeberth_plugin_errors_total", {"plugin": plugin, "extension_point": "Score"})
        assert counted == attempts[scheduler]
        assert counted == metrics.sample("scheduler_schedule_attempts_total",
                                         {"result": "error", "profile": scheduler})

    # The log accounts for every failure: its traceback once, the others in the summary lines.
    logged: dict[tuple[str, str], int] = {}
    for r in records:
        if r.exc_info:
            plugin = re.search(r'plugin "(\w+)"', r.getMessage()).group(1)  # type: ignore[union-attr]
            key = (plugin, r.exc_info[0].__name__)  # type: ignore[index]
            logged[key] = logged.get(key, 0) + 1
            continue
        m = re.match(r'plugin "(\w+)" raised (\w+) at Score (\d+) more times? in \d+s', r.getMessage())
        assert m is not None, r.getMessage()
        logged[(m[1], m[2])] = logged.get((m[1], m[2]), 0) + int(m[3])
    assert logged[("BrokenPerNode", "ValueError")] + logged[("BrokenPerNode", "TypeError")] == attempts["per-node"]
    assert logged[("BrokenVectorised", "KeyError")] == attempts["vectorised"]
    assert len(records) < 20


def test_later_failures_are_logged_as_a_count_once_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="kubeberth.plugins")
    clock = FakeClock()
    m = SchedulerMetrics()
    errors = PluginErrors(clock, lambda: m)

    def fail(point: str, exc: Exception) -> str:
        try:
            raise exc
        except Exception as caught:
            return errors.raised(point, "Costly", caught).message()

    assert fail("Filter", ValueError("no cost")) == 'running "Costly" filter plugin: ValueError: no cost'
    assert [(r.getMessage(), bool(r.exc_info)) for r in caplog.records] == [
        ('running "Costly" filter plugin: ValueError: no cost', True)]
    caplog.clear()
    for _ in range(5):
        clock.advance(1)
        fail("Filter", ValueError("no cost"))
    errors.summarise()
    assert caplog.records == []  # within the interval: counted only
    fail("PreFilter", ValueError("no cost"))  # another extension point: its own traceback
    fail("Filter", KeyError("cost"))  # another type: its own traceback
    assert [bool(r.exc_info) for r in caplog.records] == [True, True]
    caplog.clear()
    clock.advance(SUMMARY_INTERVAL)
    fail("Filter", ValueError("still no cost"))  # the interval has passed: this one writes the count
    assert [(r.getMessage(), bool(r.exc_info)) for r in caplog.records] == [
        ('plugin "Costly" raised ValueError at Filter 6 more times in 65s (its traceback is logged once; '
         'kubeberth_plugin_errors_total counts them all); the last: running "Costly" filter plugin: '
         "ValueError: still no cost", False)]
    caplog.clear()
    fail("Filter", ValueError("no cost"))
    errors.summarise()
    assert caplog.records == []
    errors.summarise(everything=True)
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == [
        'plugin "Costly" raised ValueError at Filter 1 more time in 0s']
    # Every failure counted: the ValueErrors and the KeyError at Filter, the one at PreFilter.
    assert m.sample("kubeberth_plugin_errors_total", {"plugin": "Costly", "extension_point": "Filter"}) == 9
    assert m.sample("kubeberth_plugin_errors_total", {"plugin": "Costly", "extension_point": "PreFilter"}) == 1


def test_the_counter_is_on_metrics_and_each_scheduler_has_its_own() -> None:
    a, b = SchedulerMetrics(), SchedulerMetrics()  # no registry clash: simulate, tests, the operator
    a.plugin_error("Costly", "Score")
    assert "# TYPE kubeberth_plugin_errors_total counter" in b.render().decode()
    assert 'kubeberth_plugin_errors_total{extension_point="Score",plugin="Costly"} 1.0' in a.render().decode()
    assert b.sample("kubeberth_plugin_errors_total", {"plugin": "Costly", "extension_point": "Score"}) is None


def test_a_failing_queueing_hint_is_counted_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    from kubeberth.framework import ActionType, ClusterEvent, ClusterEventWithHint, QueuedPodInfo, ScorePlugin
    from kubeberth.model import Pod
    from kubeberth.queue import QueueProfile, Strategy
    from kubeberth.queue.profile import worth_requeuing

    node_add = ClusterEvent("Node", ActionType.ADD)

    def hint(pod: Any, old: Any, new: Any) -> Any:
        raise RuntimeError("hint broke")

    class Hinted(ScorePlugin):
        name = "Hinted"

        def events_to_register(self) -> list[ClusterEventWithHint]:
            return [ClusterEventWithHint(node_add, hint)]

    caplog.set_level(logging.ERROR, logger="kubeberth.plugins")
    m = SchedulerMetrics()
    prof = QueueProfile("s", lambda a, b: True, plugins={"Hinted": Hinted()},
                        errors=PluginErrors(FakeClock(), lambda: m))
    q = QueuedPodInfo(Pod({"metadata": {"name": "p"}, "spec": {"containers": []}}))
    q.unschedulable_plugins = {"Hinted"}
    for _ in range(50):  # as upstream: a failing hint requeues the pod, after its backoff
        assert worth_requeuing(prof, q, node_add, None, {}) == Strategy.AFTER_BACKOFF
    assert [r.getMessage() for r in caplog.records if r.exc_info] == [
        'running QueueingHint of plugin "Hinted": RuntimeError: hint broke; requeuing the pod']
    assert len(caplog.records) == 1
    assert m.sample("kubeberth_plugin_errors_total", {"plugin": "Hinted", "extension_point": "QueueingHint"}) == 50


def test_a_pod_groups_pods_fail_with_upstreams_wording_and_one_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    from kubeberth.cli import main

    caplog.set_level(logging.ERROR, logger="kubeberth")
    plugin = tmp_path / "boom.py"
    plugin.write_text("from kubeberth.framework import ScorePlugin\n\n\nclass Boom(ScorePlugin):\n"
                      '    name = "Boom"\n\n    def score(self, state, pod, node_info):\n'
                      '        raise ValueError("no cost")\n')
    cluster = Path(__file__).with_name("gang_with_broken_score.yaml")
    assert main(["simulate", str(cluster), "--plugins", str(plugin), "--feature-gates", "GenericWorkload=true",
                 "-o", "json"]) == 0
    import json
    pods = {p["pod"]: p for p in json.loads(capsys.readouterr().out)["pods"]}
    wording = 'running Score plugins: plugin "Boom" failed with: ValueError: no cost'
    assert pods["default/a"]["message"] == wording
    assert pods["default/b"]["message"] == "failed to schedule other pod from a pod group: " + wording
    assert len([r for r in caplog.records if r.exc_info]) == 1
