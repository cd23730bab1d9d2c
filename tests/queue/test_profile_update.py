"""A new version of a profile put in force (queue.set_profile replacing the profile of its
schedulerName) is the event kubeberth.io/SchedulingProfileUpdate: that profile's unschedulable
and gated pods (and pod group entries) are tried again as on a wildcard event, its pods in flight
when they come back rejected; the pods of other profiles stay where they are."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth import features
from kubeberth.framework import events as ev
from kubeberth.framework.types import QueuedPodGroupInfo
from kubeberth.model import Pod
from kubeberth.queue import ACTIVE, BACKOFF, GATED, UNSCHEDULABLE, QueueProfile
from tests.doubles import priority_then_age
from tests.queue.fakes import PLUGINS, fail, new_queue, pod, profile, where
from tests.queue.test_pod_group_queue import GATES, member

LABEL = "kubeberth.io/SchedulingProfileUpdate"


def ungated(name: str = "default-scheduler") -> QueueProfile:
    """A version of the profile without the PreEnqueue plugin of fakes.profile."""
    return QueueProfile(name, priority_then_age, queue_sort_name="PrioritySort", initial_backoff=1,
                        max_backoff=10, plugins=PLUGINS)


def test_the_event_is_named_as_upstream_names_a_resources_update() -> None:
    assert ev.EVENT_SCHEDULING_PROFILE_UPDATE.label == LABEL
    assert not ev.EVENT_SCHEDULING_PROFILE_UPDATE.is_wildcard()


@pytest.mark.parametrize(("waited", "expected"), [(0.0, BACKOFF), (2.5, ACTIVE)],
                         ids=["still-backing-off", "backoff-over"])
def test_a_new_version_moves_the_pods_its_predecessor_rejected(waited: float, expected: str) -> None:
    q, clock = new_queue(profile("default-scheduler"), profile("batch"))
    incoming: list[tuple[str, str]] = []
    q.on_incoming = lambda queue, event: incoming.append((queue, event))
    mine, theirs = pod("mine"), pod("theirs", scheduler="batch")
    for p in (mine, theirs):
        q.add(p)
    for _ in range(2):
        # "CostAware" registered no event: by itself it would wait for any event (or the flush)
        assert fail(q, q.pop_nowait(), "VolumeBinding") == UNSCHEDULABLE  # type: ignore[arg-type]
    clock.advance(waited)
    q.move_all_to_active_or_backoff(ev.EVENT_NODE_ADD)  # an event neither rejector registered
    assert (where(q, mine), where(q, theirs)) == (UNSCHEDULABLE, UNSCHEDULABLE)
    incoming.clear()
    q.set_profile(profile("default-scheduler"))
    assert (where(q, mine), where(q, theirs)) == (expected, UNSCHEDULABLE)
    assert incoming == [(expected, LABEL)]


def test_setting_a_profile_for_a_new_scheduler_name_moves_nobody() -> None:
    q, _ = new_queue(profile("default-scheduler"))
    p = pod("p")
    q.add(p)
    assert fail(q, q.pop_nowait(), "VolumeBinding") == UNSCHEDULABLE  # type: ignore[arg-type]
    q.set_profile(profile("batch"))
    assert where(q, p) == UNSCHEDULABLE


@pytest.mark.parametrize(("scheduler", "expected"), [("default-scheduler", BACKOFF), ("batch", UNSCHEDULABLE)],
                         ids=["its-profile", "another-profile"])
def test_a_pod_in_flight_when_its_profile_changes_is_requeued_when_it_comes_back(scheduler: str,
                                                                                 expected: str) -> None:
    q, _ = new_queue(profile("default-scheduler"), profile("batch"))
    p = pod("p", scheduler=scheduler)
    q.add(p)
    info = q.pop_nowait()
    assert info is not None
    q.set_profile(profile("default-scheduler"))  # during its cycle, under the previous version
    assert q.inflight_events()[LABEL] == 1
    assert fail(q, info, "VolumeBinding") == expected


def test_gated_pods_are_asked_the_new_versions_pre_enqueue() -> None:
    q, _ = new_queue(profile("default-scheduler"), profile("batch"))
    mine = pod("mine", schedulingGates=[{"name": "wait"}])
    theirs = pod("theirs", scheduler="batch", schedulingGates=[{"name": "wait"}])
    for p in (mine, theirs):
        q.add(p)
    assert (where(q, mine), where(q, theirs)) == (GATED, GATED)
    q.set_profile(profile("default-scheduler"))  # the same gate: still gated
    assert where(q, mine) == GATED
    q.set_profile(ungated())
    assert (where(q, mine), where(q, theirs)) == (ACTIVE, GATED)
    info = q.pop_nowait()
    assert info is not None and info.pod.name == "mine"


def _gated_group(q: Any, group: str, scheduler: str) -> Pod:
    q.add_pod_group(f"default/{group}", 0)
    first = member(f"{group}-a", group, scheduler=scheduler)
    q.add(first)
    q.add(member(f"{group}-b", group, scheduler=scheduler, schedulingGates=[{"name": "wait"}]))
    return first


def test_pod_group_entries_of_the_profile_move_too() -> None:
    with features.override(GATES):
        q, _ = new_queue(profile("default-scheduler"), profile("batch"))
    mine = _gated_group(q, "g", "default-scheduler")
    theirs = _gated_group(q, "h", "batch")
    assert (where(q, mine), where(q, theirs)) == (GATED, GATED)
    q.set_profile(ungated())
    assert (where(q, mine), where(q, theirs)) == (ACTIVE, GATED)
    entry = q.pop_nowait()
    assert isinstance(entry, QueuedPodGroupInfo) and entry.group_key == "default/g"
    assert [m.pod.name for m in entry.members] == ["g-a", "g-b"]
