"""The operator's glue without kopf: cache-sync ordering, deduplication, and live profiles."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth.config import default_spec, parse_spec
from kubeberth.framework.context import NoMetrics
from kubeberth.operator.ingest import Ingest
from kubeberth.operator.profiles import ProfileManager
from kubeberth.plugins import in_tree_registry
from kubeberth.scheduler import Scheduler
from kubeberth.scheduler.watched import WATCHED

KINDS = {k.kind: k for k in WATCHED}


class Recorder(NoMetrics):
    """A stand-in scheduler that records what it is fed."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any) -> None:
            obj = args[-1]
            self.calls.append((name, obj if isinstance(obj, str) else obj["metadata"]["name"]))
        return call


def obj(name: str, rv: str = "1", **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": rv}, **extra}


def test_the_initial_lists_go_in_dependency_order_with_bound_pods_first_then_events_as_they_come():
    rec = Recorder()
    profiles: list[str] = []
    ingest = Ingest(rec, lambda name, o: profiles.append(name))  # type: ignore[arg-type]
    ingest.apply(KINDS["PriorityClass"], [("ADDED", obj("high"))])
    ingest.apply(KINDS["SchedulingProfile"], [("ADDED", obj("prof"))])
    ingest.apply(KINDS["PodDisruptionBudget"], [("ADDED", obj("pdb"))])
    ingest.apply(KINDS["Node"], [("ADDED", obj("n1"))])
    ingest.apply(KINDS["Pod"], [("ADDED", obj("pending")), ("ADDED", obj("running", spec={"nodeName": "n1"}))])
    assert rec.calls == [("on_object", "high"), ("on_object", "pdb"), ("on_node_add", "n1"),
                         ("on_pod_add", "running"), ("on_pod_add", "pending")]
    assert profiles == ["prof"]

    ingest.synced.set()  # after the sync a batch keeps its order (one pod may appear twice)
    ingest.apply(KINDS["Pod"], [("MODIFIED", obj("pending", rv="3")), ("DELETED", obj("running"))])
    ingest.apply(KINDS["Node"], [("MODIFIED", obj("n1", rv="2")), ("DELETED", obj("n1"))])
    ingest.apply(KINDS["PodDisruptionBudget"], [("DELETED", obj("pdb"))])
    ingest.apply(KINDS["SchedulingProfile"], [("DELETED", obj("prof"))])
    assert rec.calls[5:] == [("on_pod_update", "pending"), ("on_pod_delete", "running"), ("on_node_update", "n1"),
                             ("on_node_delete", "n1"), ("on_object_delete", "pdb")]
    assert profiles == ["prof", "prof"]


def test_an_object_that_fails_to_ingest_does_not_stop_the_others():
    class Failing(Recorder):
        def on_pod_add(self, raw: Any) -> None:
            if raw["metadata"]["name"] == "bad":
                raise ValueError("malformed")
            self.calls.append(("on_pod_add", raw["metadata"]["name"]))

    rec = Failing()
    ingest = Ingest(rec, lambda name, o: None)  # type: ignore[arg-type]
    ingest.apply(KINDS["Pod"], [("ADDED", obj("bad")), ("ADDED", obj("good"))])
    assert rec.calls == [("on_pod_add", "good")]


def make_manager(default_profile: bool = True) -> tuple[ProfileManager, Scheduler]:
    scheduler = Scheduler()
    return ProfileManager(scheduler, in_tree_registry(), default_profile=default_profile), scheduler


def profile(name: str, spec: dict[str, Any], generation: int = 1, status: Any = None) -> dict[str, Any]:
    o: dict[str, Any] = {"metadata": {"name": name, "generation": generation, "uid": name}, "spec": spec}
    if status is not None:
        o["status"] = status
    return o


def test_a_valid_profile_runs_and_an_invalid_edit_keeps_it():
    pm, s = make_manager()
    default_fw = s.profiles["default-scheduler"]
    pm.apply("p", profile("p", {"podMaxBackoffSeconds": 5}))
    assert pm.verdicts["p"].accepted and s.profiles["default-scheduler"] is not default_fw
    running = s.profiles["default-scheduler"]
    pm.apply("p", profile("p", {"plugins": {"filter": {"enabled": [{"name": "Nope"}]}}}, generation=2))
    verdict = pm.verdicts["p"]
    assert not verdict.accepted and verdict.reason == "Invalid"
    assert verdict.message.startswith("spec.plugins.filter.enabled[0].name: ")
    assert verdict.message.endswith("(the previous version stays in force)")
    assert s.profiles["default-scheduler"] is running
    pm.apply("p", profile("p", {"podMaxBackoffSeconds": 5}, generation=3))  # same spec as running: no rebuild
    assert pm.verdicts["p"].accepted and s.profiles["default-scheduler"] is running


def test_a_typo_in_multipoint_is_named_by_the_users_index():
    pm, s = make_manager()
    pm.apply("p", profile("p", {"podMaxBackoffSeconds": 5}))
    running = s.profiles["default-scheduler"]
    pm.apply("p", profile("p", {"plugins": {"multiPoint": {"enabled": [{"name": "ImageLocalty"}]}}}, generation=2))
    verdict = pm.verdicts["p"]
    assert (verdict.accepted, verdict.reason) == (False, "Invalid")
    assert verdict.message == ("spec.plugins.multiPoint.enabled[0].name: plugin 'ImageLocalty' does not exist "
                               "(the previous version stays in force)")
    assert s.profiles["default-scheduler"] is running


def test_deleting_the_default_scheduler_profile_restores_the_default():
    pm, s = make_manager()
    pm.apply("p", profile("p", {"podMaxBackoffSeconds": 5}))
    pm.apply("p", None)
    assert s.profiles["default-scheduler"].spec == default_spec()
    pm2, s2 = make_manager(default_profile=False)
    assert "default-scheduler" not in s2.profiles
    pm2.apply("p", profile("p", {}))
    pm2.apply("p", None)
    assert "default-scheduler" not in s2.profiles


def test_one_scheduler_name_one_profile_and_renames_release_the_old_name():
    pm, s = make_manager()
    pm.apply("a", profile("a", {"schedulerName": "batch"}))
    pm.apply("b", profile("b", {"schedulerName": "batch", "podMaxBackoffSeconds": 3}))
    assert pm.verdicts["b"].reason == "Conflict"
    assert pm.verdicts["b"].message == "spec.schedulerName: batch is already served by SchedulingProfile a"
    assert s.profiles["batch"].spec == parse_spec({"schedulerName": "batch"})
    pm.apply("a", profile("a", {"schedulerName": "gpu"}, generation=2))  # a moves: b gets batch
    assert set(s.profiles) == {"default-scheduler", "gpu", "batch"}
    assert pm.verdicts["b"].accepted and s.profiles["batch"].spec.podMaxBackoffSeconds == 3
    pm.apply("b", None)
    assert "batch" not in s.profiles


@pytest.mark.parametrize("status, writes", [
    (None, True),
    ({"observedGeneration": 1, "conditions": [{"type": "Accepted", "status": "True", "reason": "Valid",
                                               "message": "", "observedGeneration": 1,
                                               "lastTransitionTime": "2024-01-01T00:00:00Z"}]}, False),
    ({"observedGeneration": 0, "conditions": []}, True),
])
def test_status_is_written_only_when_it_changes(status, writes):
    pm, _ = make_manager()
    pm.apply("p", profile("p", {}, status=status))
    pending = pm.pending_status()
    assert bool(pending) is writes
    if writes:
        [(name, patch)] = pending
        assert name == "p" and patch["status"]["observedGeneration"] == 1
        [cond] = patch["status"]["conditions"]
        assert (cond["type"], cond["status"], cond["reason"]) == ("Accepted", "True", "Valid")
    assert pm.pending_status() == []
