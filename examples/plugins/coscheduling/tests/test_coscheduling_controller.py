"""The PodGroup status controller: reconcile step by step, and the index the kopf handlers keep."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from cosched_testing import pod_dict, pod_group
from kubeberth_coscheduling import controller
from kubeberth_coscheduling.controller import Index, Outcome, PodSummary, reconcile

NOW = datetime(2024, 1, 1, 0, 5, tzinfo=UTC)


def pg(phase: str = "", **status: Any) -> dict[str, Any]:
    obj = pod_group("job", 3)
    obj["status"] = {"phase": phase, **status} if phase else dict(status)
    return obj


def pods(*phases: str, owner: str = "") -> list[PodSummary]:
    return [PodSummary(f"w{i}", phase, (owner,) if owner else ()) for i, phase in enumerate(phases)]


@pytest.mark.parametrize(("group", "members", "expected"), [
    pytest.param(pg(), [], {"phase": "Pending"}, id="new-group-is-pending"),
    pytest.param(pg("Pending"), pods("Pending", "Pending"), None, id="pending-short-of-pods"),
    pytest.param(pg("Pending"), pods("Pending", "Pending", "Pending", owner="job-launcher"),
                 {"phase": "Scheduling", "occupiedBy": "default/job-launcher",
                  "scheduleStartTime": "2024-01-01T00:05:00Z"},
                 id="pending-with-quorum-starts-scheduling"),
    pytest.param(pg("Scheduling"), pods("Running", "Pending", "Pending"), {"running": 1}, id="counts-running"),
    pytest.param(pg("Scheduling", running=1), pods("Running", "Running", "Running"),
                 {"phase": "Running", "running": 3}, id="quorum-running"),
    pytest.param(pg("Running", running=3), pods("Succeeded", "Running", "Running"),
                 {"running": 2, "succeeded": 1}, id="succeeded-and-running-still-running"),
    pytest.param(pg("Running", running=3), pods("Failed", "Running", "Running"),
                 {"phase": "Failed", "running": 2, "failed": 1}, id="a-failed-pod-fails-the-group"),
    pytest.param(pg("Running", running=1, succeeded=2), pods("Succeeded", "Succeeded", "Succeeded"),
                 {"phase": "Finished", "running": 0, "succeeded": 3}, id="all-succeeded-finished"),
    pytest.param(pg("Scheduling", running=1), pods("Running"), {"phase": "Pending"}, id="pods-gone-back-to-pending"),
    pytest.param(pg("Finished", succeeded=3), pods(), None, id="finished-is-final"),
    pytest.param(pg("Failed", failed=1), pods("Running", "Running", "Running"), None, id="failed-is-final"),
])
def test_reconcile(group: dict[str, Any], members: list[PodSummary], expected: dict[str, Any] | None) -> None:
    assert reconcile(group, members, NOW) == Outcome(status=expected)


def test_a_group_whose_pods_come_days_after_it_is_still_reconciled() -> None:
    # scheduleStartTime (which upstream never sets) three days after creation: upstream's
    # 48-hour check, dead code there, does not stop the group here either.
    group = pg("Scheduling", scheduleStartTime="2024-01-04T00:00:00Z")
    assert reconcile(group, pods("Running", "Running", "Running"), NOW) == Outcome(
        status={"phase": "Running", "running": 3})


def test_scheduling_start_time_is_kept_once_set() -> None:
    group = pg("Pending", scheduleStartTime="2024-01-01T00:01:00Z")
    out = reconcile(group, pods("Pending", "Pending", "Pending"), NOW)
    assert out.status == {"phase": "Scheduling"}


def test_the_index_follows_pods_between_groups_and_out() -> None:
    index = Index()
    index.group_event(None, pod_group("a", 1))
    w = pod_dict("w", group="a")
    assert index.pod_event(None, w) == [("default", "a")]
    assert [p.phase for p in index.pods_of(("default", "a"))] == ["Pending"]
    w["status"]["phase"] = "Running"
    index.pod_event("MODIFIED", w)
    assert [p.phase for p in index.pods_of(("default", "a"))] == ["Running"]
    w["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": "b"}
    assert index.pod_event("MODIFIED", w) == [("default", "a"), ("default", "b")]
    assert index.pods_of(("default", "a")) == [] and len(index.pods_of(("default", "b"))) == 1
    assert index.pod_event("DELETED", w) == [("default", "b")]
    assert index.pods_of(("default", "b")) == []
    index.group_event("DELETED", pod_group("a", 1))
    assert index.groups == {}


def test_the_index_is_forgotten_when_the_handlers_start_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """kubeberth stops the handlers while no profile enables Coscheduling; kopf lists everything anew
    when they start again, and a pod deleted meanwhile must not count for its group."""
    index = Index()
    monkeypatch.setattr(controller, "INDEX", index)
    index.group_event(None, pod_group("a", 2))
    index.pod_event(None, pod_dict("gone", group="a"))
    controller.forget_index()
    assert index.groups == {} and index.pods_of(("default", "a")) == []
    index.group_event(None, pod_group("a", 2))  # the relist brings back what still exists
    assert index.pods_of(("default", "a")) == [] and ("default", "a") in index.groups


def test_the_crd_matches_what_the_plugin_reads() -> None:
    crd = yaml.safe_load((Path(__file__).parent.parent / "crds" / "scheduling.x-k8s.io_podgroups.yaml").read_text())
    from kubeberth_coscheduling.podgroup import PODGROUP

    (version,) = crd["spec"]["versions"]
    assert (crd["spec"]["group"], version["name"], crd["spec"]["names"]["plural"], crd["spec"]["names"]["kind"],
            crd["spec"]["scope"] == "Namespaced") == (PODGROUP.group, PODGROUP.version, PODGROUP.resource,
                                                       PODGROUP.kind, PODGROUP.namespaced)
    props = version["schema"]["openAPIV3Schema"]["properties"]
    assert set(props["spec"]["properties"]) == {"minMember", "minResources", "scheduleTimeoutSeconds"}
    assert set(props["status"]["properties"]) == {"phase", "occupiedBy", "running", "succeeded", "failed",
                                                  "scheduleStartTime"}
    assert version["subresources"] == {"status": {}}


async def test_the_handlers_write_the_status_step_by_step(monkeypatch: pytest.MonkeyPatch,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    import kopf
    from kubeberth_coscheduling import controller

    index = Index()
    monkeypatch.setattr(controller, "INDEX", index)
    writes: list[tuple[str, str, dict[str, Any]]] = []

    async def patch(client: Any, namespace: str, name: str, status: dict[str, Any]) -> dict[str, Any]:
        assert client == "the scheduler's client"
        writes.append((namespace, name, status))
        current = index.groups[(namespace, name)]
        return {**current, "status": {**(current.get("status") or {}), **status}}

    monkeypatch.setattr(controller, "patch_status", patch)
    memo = kopf.Memo(kubeberth_api_client="the scheduler's client")
    group = pod_group("job", 2)
    await controller.podgroup_event(type=None, body=kopf.Body(group), memo=memo)
    assert writes == [("default", "job", {"phase": "Pending"})]
    for name in ("w0", "w1"):
        raw = pod_dict(name, group="job")
        raw["metadata"]["ownerReferences"] = [{"kind": "Job", "name": "trainer"}]
        await controller.pod_event(type=None, body=kopf.Body(raw), memo=memo)
    assert writes[1][2]["phase"] == "Scheduling" and writes[1][2]["occupiedBy"] == "default/trainer"
    assert len(writes) == 2  # the first pod alone changed nothing
    # The status patch comes back as a watch event of the group: the next step.
    await controller.podgroup_event(type="MODIFIED", body=kopf.Body(index.groups[("default", "job")]), memo=memo)
    assert len(writes) == 2  # pending pods: nothing more to say
    for name in ("w0", "w1"):
        await controller.pod_event(type="MODIFIED", body=kopf.Body(pod_dict(name, group="job", node="n1")),
                                   memo=memo)
    assert [w[2] for w in writes[2:]] == [{"running": 1}, {"phase": "Running", "running": 2}]
    # Without kubeberth's client (not inside `kubeberth run`) nothing is written, and the log says why.
    await controller.pod_event(type="DELETED", body=kopf.Body(pod_dict("w0", group="job", node="n1")),
                               memo=kopf.Memo())
    assert len(writes) == 4
    assert "no API client in kopf's memo (kubeberth_api_client)" in caplog.text


async def test_the_index_keeps_nothing_for_a_group_whose_pods_and_podgroup_are_gone() -> None:
    """An empty pod table and a lock were kept for every group ever seen."""
    index = Index()
    index.group_event(None, pod_group("a", 1))
    w = pod_dict("w", group="a")
    index.pod_event(None, w)
    async with index.lock(("default", "a")):
        assert len(index._locks) == 1
    assert index._locks == {}
    index.pod_event("DELETED", w)
    index.group_event("DELETED", pod_group("a", 1))
    assert (index.groups, index.pods, index._pod_group, index._locks) == ({}, {}, {}, {})
