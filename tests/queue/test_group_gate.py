"""A pod group entry's PreEnqueue answers kept between passes (queue/group_gate.py): each plugin
is asked again only where its answer may have changed (its `pre_enqueue_scope`), and the queue
decides exactly as when every plugin is asked for every pod on every pass (upstream's way, and
what a profile that lists only its whole PreEnqueue still gets)."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from kubeberth import features
from kubeberth.clock import FakeClock
from kubeberth.features import FeatureGates
from kubeberth.framework import Status
from kubeberth.framework import events as ev
from kubeberth.framework.types import QueuedPodGroupInfo, QueuedPodInfo
from kubeberth.model import Pod
from kubeberth.queue import ACTIVE, GATED, ActionType, ClusterEvent, PriorityQueue, QueueProfile, group_gate
from kubeberth.queue.group_gate import SCOPE_ANY, SCOPE_POD, SCOPE_POD_GROUP, PreEnqueueStep, run_steps
from tests.doubles import priority_then_age
from tests.queue.fakes import T0, EventsPlugin, pod

GATES = FeatureGates.parse("GenericWorkload=true")
POD_GROUP_ADD = ClusterEvent(ev.POD_GROUP, ActionType.ADD)
POD_GROUP_UPDATE = ClusterEvent(ev.POD_GROUP, ActionType.UPDATE)

PLUGINS = {p.name: p for p in (
    EventsPlugin("SchedulingGates", [ClusterEvent(ev.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)]),
    EventsPlugin("Gang", [ev.EVENT_UNSCHEDULED_POD_ADD, POD_GROUP_ADD, POD_GROUP_UPDATE]),
    EventsPlugin("Flaky", [ev.EVENT_NODE_ADD]),
)}


class World:
    """What the PreEnqueue plugins below read: each PodGroup's minCount (absent: not observed),
    the pods of each group the scheduler knows, and a switch the Flaky plugin follows. Counts
    each plugin's calls."""

    def __init__(self) -> None:
        self.min_count: dict[str, int] = {}
        self.pods: dict[str, set[str]] = {}
        self.switch = False
        self.calls: Counter[str] = Counter()

    def steps(self) -> tuple[PreEnqueueStep, ...]:
        def gates(p: Pod) -> Status | None:
            self.calls["SchedulingGates"] += 1
            if p.scheduling_gates:
                return Status.unresolvable("waiting for scheduling gates", plugin="SchedulingGates")
            return None

        def gang(p: Pod) -> Status | None:  # GangScheduling's PreEnqueue
            self.calls["Gang"] += 1
            if not p.pod_group_name:
                return None
            want = self.min_count.get(p.pod_group_key)
            if want is None:
                return Status.unresolvable("waiting for its pod group", plugin="Gang")
            if len(self.pods.get(p.pod_group_key, ())) < want:
                return Status.unresolvable("waiting for minCount pods", plugin="Gang")
            return None

        def flaky(p: Pod) -> Status | None:  # reads something no scope can name
            self.calls["Flaky"] += 1
            if p.labels.get("flaky") and not self.switch:
                return Status.unresolvable("switched off", plugin="Flaky")
            return None

        return (PreEnqueueStep("SchedulingGates", gates, lambda p: SCOPE_POD),
                PreEnqueueStep("Gang", gang, lambda p: SCOPE_POD_GROUP if p.pod_group_name else SCOPE_POD),
                PreEnqueueStep("Flaky", flaky, lambda p: SCOPE_ANY if p.labels.get("flaky") else SCOPE_POD))


def kept_queue(world: World) -> PriorityQueue:
    """The plugins listed one by one: a group's answers are kept."""
    prof = QueueProfile("default-scheduler", priority_then_age, queue_sort_name="PrioritySort",
                        pre_enqueue_steps=world.steps(), plugins=PLUGINS)
    with features.override(GATES):
        return PriorityQueue((prof,), clock=FakeClock(T0))


def asked_queue(world: World) -> PriorityQueue:
    """The profile's whole PreEnqueue only: every plugin asked for every pod on every pass."""
    steps = world.steps()
    prof = QueueProfile("default-scheduler", priority_then_age, queue_sort_name="PrioritySort",
                        pre_enqueue=lambda p: run_steps(steps, p), plugins=PLUGINS)
    with features.override(GATES):
        return PriorityQueue((prof,), clock=FakeClock(T0))


def member(name: str, group: str, *, gated: bool = False, flaky: bool = False, prio: int = 0) -> Pod:
    kw: dict[str, Any] = {}
    if gated:
        kw["schedulingGates"] = [{"name": "wait"}]
    if flaky:
        kw["labels"] = {"flaky": "yes"}
    p = pod(name, prio=prio, **kw)
    return Pod({**p.raw, "spec": {**p.spec, "schedulingGroup": {"podGroupName": group}}})


def arrive(q: PriorityQueue, world: World, p: Pod) -> None:
    """A new pending pod, as the scheduler's event handlers bring it (upstream's addPodToSchedulingQueue)."""
    if p.pod_group_name:
        world.pods.setdefault(p.pod_group_key, set()).add(p.uid)
    q.add(p)
    q.move_all_to_active_or_backoff(ev.EVENT_UNSCHEDULED_POD_ADD, None, p)


def leave(q: PriorityQueue, world: World, p: Pod) -> None:
    world.pods.get(p.pod_group_key, set()).discard(p.uid)
    q.delete(p)


def observe_group(q: PriorityQueue, world: World, key: str, min_count: int, *, added: bool = True) -> None:
    world.min_count[key] = min_count
    if added:
        q.add_pod_group(key, 0)
        q.move_all_to_active_or_backoff(POD_GROUP_ADD)
    else:
        q.update_pod_group(key, 0)
        q.move_all_to_active_or_backoff(POD_GROUP_UPDATE)


def entry_of(q: PriorityQueue, group: str) -> tuple[str, QueuedPodInfo] | None:
    return q._get_entry("podgroup:" + group)


@pytest.fixture(autouse=True)
def keep_from_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """The answers kept for entries of any size here (a real queue keeps them from KEEP_FROM_MEMBERS pods)."""
    monkeypatch.setattr(group_gate, "KEEP_FROM_MEMBERS", 1)


# ---- the calls ---------------------------------------------------------------------------------
def test_a_gang_arriving_pod_by_pod_asks_each_plugin_a_bounded_number_of_times() -> None:
    n = 120
    kept_world, asked_world = World(), World()
    kept, asked = kept_queue(kept_world), asked_queue(asked_world)
    for q, world in ((kept, kept_world), (asked, asked_world)):
        observe_group(q, world, "default/g", n)
        for i in range(n):
            arrive(q, world, member(f"p{i:03}", "g"))
            found = entry_of(q, "default/g")
            assert found is not None
            # the gate opens when the last pod arrives, not before
            assert found[0] == (ACTIVE if i == n - 1 else GATED), i
    # kept: each pod object asked once by the pod-scoped plugins, the group-wide one once per pass
    # (two passes per arrival: the pod joins the entry, then its Add event moves the entry)
    assert kept_world.calls["SchedulingGates"] == n
    assert kept_world.calls["Gang"] <= 2 * n
    assert kept_world.calls["Flaky"] == n
    # every plugin for every pod on every pass: n^2 (what the kept answers save)
    assert asked_world.calls["Gang"] >= n * n
    assert {m.pod.name for m in entry_of(kept, "default/g")[1].members} == {f"p{i:03}" for i in range(n)}


def test_a_plugin_whose_answer_may_change_anytime_is_asked_for_its_pods_on_every_pass() -> None:
    world = World()
    q = kept_queue(world)
    observe_group(q, world, "default/g", 10)
    for i in range(4):
        arrive(q, world, member(f"p{i}", "g", flaky=(i == 0)))
    # Gang, earlier in the profile, gates every pod: Flaky is not reached, as upstream stops at the first
    assert world.calls["Flaky"] == 0
    world.min_count["default/g"] = 4
    q.update_pod_group("default/g", 0)
    q.move_all_to_active_or_backoff(POD_GROUP_UPDATE)
    assert world.calls["Flaky"] == 4  # now reached, for each pod
    assert entry_of(q, "default/g")[0] == GATED and q._gating["podgroup:default/g"] == "Flaky"
    calls = world.calls["Flaky"]
    world.switch = True
    q.move_all_to_active_or_backoff(ev.EVENT_NODE_ADD)
    assert world.calls["Flaky"] == calls + 1 and entry_of(q, "default/g")[0] == ACTIVE


# ---- the gate: when it opens ---------------------------------------------------------------------
def test_the_gate_opens_when_the_last_gated_member_is_updated_without_its_gates() -> None:
    world = World()
    q = kept_queue(world)
    observe_group(q, world, "default/g", 3)
    a, b, c = member("a", "g"), member("b", "g", gated=True), member("c", "g")
    for p in (a, b, c):
        arrive(q, world, p)
    assert entry_of(q, "default/g")[0] == GATED and q._gating["podgroup:default/g"] == "SchedulingGates"
    info = q.get(b.uid)
    assert info is not None and info[1].gated and info[1].unschedulable_plugins == {"SchedulingGates"}
    ungated = member("b", "g")
    q.update(b, ungated)
    assert entry_of(q, "default/g")[0] == ACTIVE
    assert not q.get(b.uid)[1].gated  # type: ignore[index]


def test_a_member_deleted_before_the_quorum_leaves_the_gate_shut_until_another_arrives() -> None:
    world = World()
    q = kept_queue(world)
    observe_group(q, world, "default/g", 3)
    a, b, c, d = (member(n, "g") for n in "abcd")
    arrive(q, world, a)
    arrive(q, world, b)
    leave(q, world, b)
    arrive(q, world, c)
    assert entry_of(q, "default/g")[0] == GATED  # two pods of three
    arrive(q, world, d)
    assert entry_of(q, "default/g")[0] == ACTIVE
    assert [m.pod.name for m in entry_of(q, "default/g")[1].members] == ["a", "c", "d"]


def test_a_smaller_min_count_opens_the_gate() -> None:
    world = World()
    q = kept_queue(world)
    observe_group(q, world, "default/g", 3)
    arrive(q, world, member("a", "g"))
    arrive(q, world, member("b", "g"))
    assert entry_of(q, "default/g")[0] == GATED
    observe_group(q, world, "default/g", 2, added=False)
    assert entry_of(q, "default/g")[0] == ACTIVE


def test_the_entry_is_gated_by_the_plugin_of_its_last_gated_member() -> None:
    # a gated by SchedulingGates, z (last in member order) by Flaky: upstream copies the last one's
    world = World()
    q = kept_queue(world)
    observe_group(q, world, "default/g", 2)
    arrive(q, world, member("a", "g", gated=True, prio=5))
    arrive(q, world, member("z", "g", flaky=True))
    assert q._gating["podgroup:default/g"] == "Flaky"
    world.switch = True
    q.move_all_to_active_or_backoff(ev.EVENT_NODE_ADD)
    assert q._gating["podgroup:default/g"] == "SchedulingGates"


# ---- the same decisions as asking every pod every time ----------------------------------------
def observed(q: PriorityQueue, pods: list[Pod]) -> dict[str, Any]:
    """What the queue shows: each pod's place, gate and rejectors; the entries' gating plugins;
    activeQ's pop order."""
    out: dict[str, Any] = {"active": [p.name for p in q.pods_in_active()],
                           "backoff": [p.name for p in q.pods_in_backoff()],
                           "counts": q.entity_counts(), "gating": dict(q._gating)}
    for p in pods:
        got = q.get(p.uid)
        out[p.name] = (got[0], got[1].gated, sorted(got[1].unschedulable_plugins)) if got is not None \
            else q.in_flight(p.uid)
    return out


class Driver:
    """One queue and its world, driven by the same random steps as another."""

    def __init__(self, q: PriorityQueue, world: World) -> None:
        self.q, self.world = q, world
        self.live: dict[str, Pod] = {}  # name -> latest version, for pods not bound
        self.flying: QueuedPodInfo | None = None

    def step(self, op: str, arg: Any) -> None:
        q, world = self.q, self.world
        if op == "add":
            self.live[arg.name] = arg
            arrive(q, world, arg)
        elif op == "update":
            old = self.live.get(arg.name)
            if old is not None:
                self.live[arg.name] = arg  # same name, same uid
                q.update(old, arg)
        elif op == "delete":
            old = self.live.pop(arg, None)
            if old is not None:
                leave(q, world, old)
        elif op == "group":
            key, count = arg
            observe_group(q, world, key, count, added=key not in world.min_count)
        elif op == "switch":
            world.switch = not world.switch
            q.move_all_to_active_or_backoff(ev.EVENT_NODE_ADD)
        elif op == "pop":
            got = q.pop_nowait()
            if isinstance(got, QueuedPodGroupInfo):
                if arg == "scheduled":
                    for m in got.members:
                        self.live.pop(m.pod.name, None)  # bound: no longer pending
                else:
                    for m in got.members:
                        m.unschedulable_plugins = {"NodeResourcesFit"}
                        q.add_unschedulable_if_not_present(m)
                q.add_attempted_pod_group(got, arg)
            elif got is not None:
                got.unschedulable_plugins = {"NodeResourcesFit"}
                q.add_unschedulable_if_not_present(got)
        elif op == "activate":
            q.activate([p for p in self.live.values() if p.pod_group_key == arg])
        elif op == "flush":
            clock = q.clock
            assert isinstance(clock, FakeClock)
            clock.advance(arg)
            q.flush_backoff_completed()
            q.flush_unschedulable_leftover()


def random_ops(rng: random.Random, n: int) -> list[tuple[str, Any]]:
    ops: list[tuple[str, Any]] = []
    names: list[str] = []
    groups = ["default/g0", "default/g1", "default/g2"]
    for i in range(n):
        roll = rng.random()
        if roll < 0.4 or not names:
            name = f"p{i}"
            names.append(name)
            group = rng.choice(groups).split("/")[1]
            ops.append(("add", member(name, group, gated=rng.random() < 0.15, flaky=rng.random() < 0.1,
                                      prio=rng.choice([0, 0, 5]))))
        elif roll < 0.5:
            name = rng.choice(names)
            group = next((op[1].pod_group_name for op in ops if op[0] == "add" and op[1].name == name), "g0")
            ops.append(("update", member(name, group, gated=rng.random() < 0.3, flaky=rng.random() < 0.1)))
        elif roll < 0.6:
            ops.append(("delete", rng.choice(names)))
        elif roll < 0.7:
            ops.append(("group", (rng.choice(groups), rng.randint(1, 5))))
        elif roll < 0.75:
            ops.append(("switch", None))
        elif roll < 0.87:
            ops.append(("pop", rng.choice(["unschedulable", "scheduled", "error"])))
        elif roll < 0.93:
            ops.append(("activate", rng.choice(groups)))
        else:
            ops.append(("flush", rng.choice([0.5, 2.0, 400.0])))
    return ops


@pytest.mark.parametrize("keep_from", [1, 3])
@pytest.mark.parametrize("seed", range(12))
def test_kept_answers_decide_as_asking_every_pod_every_time(seed: int, keep_from: int,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(group_gate, "KEEP_FROM_MEMBERS", keep_from)  # 3: entries go from one way to the other
    rng = random.Random(seed)
    ops = random_ops(rng, 160)
    kept_world, asked_world = World(), World()
    kept, asked = Driver(kept_queue(kept_world), kept_world), Driver(asked_queue(asked_world), asked_world)
    for i, (op, arg) in enumerate(ops):
        kept.step(op, arg)
        asked.step(op, arg)
        pods = list(asked.live.values())
        assert observed(kept.q, pods) == observed(asked.q, pods), (i, op, arg)
    assert sum(kept_world.calls.values()) <= sum(asked_world.calls.values())


def test_a_group_whose_pods_name_different_profiles_is_asked_pod_by_pod() -> None:
    # each pod is asked under its own profile (validation fails such a group later, at its cycle)
    def queues(world: World, kept: bool) -> PriorityQueue:
        steps = world.steps()
        how: dict[str, Any] = {"pre_enqueue_steps": steps} if kept else {"pre_enqueue": lambda p: run_steps(steps, p)}
        profs = [QueueProfile(name, priority_then_age, queue_sort_name="PrioritySort", plugins=PLUGINS, **how)
                 for name in ("default-scheduler", "other")]
        with features.override(GATES):
            return PriorityQueue(profs, clock=FakeClock(T0))

    drivers: list[tuple[PriorityQueue, list[Pod]]] = []
    for kept in (True, False):
        world = World()
        q = queues(world, kept)
        observe_group(q, world, "default/g", 3)
        a, b, c = member("a", "g"), member("b", "g", gated=True), member("c", "g")
        b = Pod({**b.raw, "spec": {**b.spec, "schedulerName": "other"}})
        for p in (a, b, c):
            arrive(q, world, p)
        q.update(b, Pod({**b.raw, "spec": {**b.spec, "schedulingGates": []}}))
        drivers.append((q, [a, b, c]))
    (kept_q, pods), (asked_q, _) = drivers
    assert observed(kept_q, pods) == observed(asked_q, pods)
    assert entry_of(kept_q, "default/g")[0] == ACTIVE
    assert kept_q._get_entry("podgroup:default/g")[1].gate_state is None  # type: ignore[union-attr]
