"""The dry-run engine (kubeberth/dryrun/engine.py, worker.answer): its answers equal what the
scheduler then does with the same pods, copies and gangs are placed one after another, victims
of other namespaces are only counted, and the scheduler is left as it was found."""

from __future__ import annotations

import time
from typing import Any

import pytest

from kubeberth.dryrun.worker import answer
from kubeberth.scheduler import SCHEDULED, Scheduler

from .cluster import cluster, new_pod


def dry(sched: Scheduler, pods: list[dict[str, Any]], ns: str = "team-a", live: bool = False,
        **kw: Any) -> dict[str, Any]:
    return answer(sched, {"namespace": ns, "pods": pods, "detail": "full",
                          "namespaces": ["team-a", "team-b"], **kw}, time.monotonic(), live=live)


async def really(sched: Scheduler, pods: list[dict[str, Any]]) -> list[Any]:
    """The pods created for real, the scheduler run until idle: their records."""
    for raw in pods:
        sched.on_pod_add(raw)
    await sched.run_until_idle()
    return [sched.outcomes[f"{p['metadata']['namespace']}/{p['metadata']['name']}"] for p in pods]


CASES = [
    # (id, cluster kwargs, pods)
    ("fits-best-node", {}, [new_pod("a")]),
    ("fits-nowhere", {}, [new_pod("big", cpu="5")]),
    ("copies-one-after-another", {}, [new_pod(f"c{i}", cpu="1500m") for i in range(4)]),
    ("fits-only-on-third", {"free": ("0.2", "0.2", "2")}, [new_pod("mid", cpu="1")]),
]


@pytest.mark.parametrize("live", [False, True], ids=["on-a-copy", "live"])
@pytest.mark.parametrize("kw, pods", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
async def test_the_answer_is_what_the_scheduler_then_does(kw, pods, live):
    sched = cluster(**kw)
    got = dry(sched, pods, live=live)
    records = await really(sched, pods)
    for a, rec in zip(got["pods"], records, strict=True):
        if rec.status == SCHEDULED:
            assert (a["status"], a["node"]) == ("Scheduled", rec.node)
        else:
            assert a["status"] == "Unschedulable" and "node" not in a
            assert a["message"] == rec.message  # upstream's FailedScheduling message, word for word
    assert got["scheduled"] == sum(1 for r in records if r.status == SCHEDULED)
    assert got["schedulable"] == all(r.status == SCHEDULED for r in records)


@pytest.mark.parametrize("live", [False, True], ids=["on-a-copy", "live"])
async def test_preemption_names_the_node_and_victims_the_scheduler_then_evicts(live):
    sched = cluster(full=True)
    pod = new_pod("urgent", "team-b", cpu="1", high=True)
    got = dry(sched, [pod], ns="team-b", live=live)["pods"][0]
    assert got["status"] == "Unschedulable"
    assert got["message"].startswith("0/3 nodes are available: 3 Insufficient cpu. preemption: found a potential")
    (rec,) = await really(sched, [pod])
    assert rec.status == SCHEDULED and got["preemption"]["node"] == rec.node
    seen = [f"{v['namespace']}/{v['name']}" for v in got["preemption"]["victims"]]
    assert seen == rec.victims  # all of team-b's own: named


async def test_victims_of_other_namespaces_are_counted_not_named():
    sched = cluster(full=True)
    pod = new_pod("urgent", "team-a", cpu="1", high=True)
    got = dry(sched, [pod], explain=True)["pods"][0]
    (rec,) = await really(sched, [pod])
    pre = got["preemption"]
    assert pre["node"] == rec.node
    assert [f"{v['namespace']}/{v['name']}" for v in pre["victims"]] == [k for k in rec.victims
                                                                         if k.startswith("team-a/")]
    assert pre["victimsInOtherNamespaces"] == sum(1 for k in rec.victims if not k.startswith("team-a/"))
    assert "team-b/" not in str(got["explanation"])  # the explanation is scoped as the published ones


def state_of(sched: Scheduler) -> tuple[Any, ...]:
    snap = sched.snapshot
    arrays = snap.arrays()
    return (sched.cache.pod_count(), sched.cache.assumed_count(), sched.ctx.next_start_node_index,
            sched.ctx.rng.getstate(), dict(sched.outcomes), sched.ctx.snapshot is snap,
            {n: sched.cache.get_node(n).generation for n in sched.cache.node_names()},
            [id(ni) for ni in snap.node_infos], {k: id(v) for k, v in snap.by_name.items()},
            [sorted(p.key for p in ni.pods) for ni in snap.node_infos],
            arrays.names.tolist() if hasattr(arrays.names, "tolist") else list(arrays.names), snap.generation)


@pytest.mark.parametrize("live", [False, True], ids=["on-a-copy", "live"])
def test_the_scheduler_is_left_as_found(live):
    sched = cluster()
    sched.cache.update_snapshot(sched.snapshot)  # what a dry run does first (as the next cycle would)
    sched.ctx.snapshot = sched.snapshot
    before = state_of(sched)
    first = dry(sched, [new_pod(f"c{i}", cpu="1") for i in range(5)], live=live)
    assert first["scheduled"] == 5
    if not live:  # the copy's snapshot still shows the forgotten pods until its next update
        sched.cache.update_snapshot(sched.snapshot)
    after = state_of(sched)
    if not live:  # the copy's cache moved (assume, forget: new generations, new clones); the live one is not
        before, after = before[:6] + before[9:10], after[:6] + after[9:10]
    assert after == before
    again = dry(sched, [new_pod(f"c{i}", cpu="1") for i in range(5)], live=live)
    assert again["pods"] == first["pods"]  # the same state, the same answer


def test_a_gang_is_placed_pod_after_pod_and_judged_by_its_min_count():
    sched = cluster()
    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "g", "namespace": "team-a", "uid": "g-1"},
             "spec": {"schedulingPolicy": {"gang": {"minCount": 3}}}}
    members = [new_pod(f"m{i}", cpu="1500m", schedulingGroup={"podGroupName": "g"}) for i in range(4)]
    got = dry(sched, members, pod_group=group, min_count=3)
    nodes = [p.get("node") for p in got["pods"]]
    assert nodes[:3] == ["n0", "n1", "n0"] and nodes[3] is None  # each sees the ones before
    assert got["schedulable"] is True and got["scheduled"] == 3
    assert sched.ctx.objects.get("PodGroup", "team-a/g") is None  # gone again


@pytest.mark.parametrize("raw, problem", [
    ({"metadata": {"name": "x", "namespace": "team-a"}, "spec": {"containers": [
        {"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}}, "pods[0]: "),
    ({"metadata": {"name": "x", "namespace": "team-a"}, "spec": {"nodeName": "n0", "containers": []}},
     "pods[0]: spec.nodeName is set"),
    ({"metadata": {"name": "x", "namespace": "team-a"}, "spec": {"priorityClassName": "nope", "containers": []}},
     "pods[0]: "),
], ids=["bad-quantity", "already-bound", "unknown-priority-class"])
def test_a_pod_the_scheduler_cannot_read_is_an_error_naming_it(raw, problem):
    got = dry(cluster(), [raw])
    assert got["error"].startswith(problem)


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


@pytest.mark.parametrize("request_, in_loop", [
    ({"pods": [new_pod("a")]}, True),
    ({"pods": [new_pod("a")], "explain": True}, False),
    ({"pods": [new_pod(f"a{i}") for i in range(17)]}, False),
    ({"pods": [new_pod("a")], "pod_group": {"metadata": {"name": "g"}}}, False),
], ids=["one-pod", "explained", "many-pods", "gang"])
def test_what_is_answered_in_the_loop(request_, in_loop):
    from kubeberth.dryrun.service import DryRunService

    sched = cluster()
    service = DryRunService(lambda: sched, None, clock=Clock())  # type: ignore[arg-type]
    assert service.in_loop(request_) is in_loop


@pytest.mark.parametrize("spent, loop, busy, refused", [
    (0.06, 1.0, True, False),    # 6% of a busy loop
    (0.09, 1.0, True, True),     # 9% of a busy loop: over the share
    (0.09, 1.0, False, False),   # idle: only the absolute budget counts
    (0.30, 1.0, False, True),    # over the absolute budget
], ids=["busy-under-share", "busy-over-share", "idle", "over-budget"])
async def test_the_loops_budget(spent, loop, busy, refused):
    from kubeberth.dryrun.service import DryRunService
    from kubeberth.dryrun.worker import Overloaded

    clock, cpu = Clock(), Clock()
    sched = cluster()
    if busy:
        sched.on_pod_add(new_pod("waiting"))  # in activeQ
    service = DryRunService(lambda: sched, None, live_budget=0.25, live_share=0.08, clock=clock,  # type: ignore[arg-type]
                            cpu=cpu)
    service.spent, service.loop = spent, loop
    request_ = {"namespace": "team-a", "pods": [new_pod("a")]}
    if refused:
        with pytest.raises(Overloaded):
            await service.ask(request_)
        clock.t += 3.0  # the sums decay: e^-3 = 5%
        cpu.t += 0.5    # the loop worked meanwhile
    got = await service.ask(request_)
    assert got["servedBy"] == "scheduler" and got["scheduled"] == 1
    assert (service.live, service.refused) == (1, int(refused))
