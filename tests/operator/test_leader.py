"""Leader election on a scripted Lease: acquisition, expiry as observed, conflicts, fencing, release."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping
from typing import Any

from kubeberth.operator.leader import LeaderElector, LeaseConfig
from kubeberth.operator.rest import api_exception

CONFIG = LeaseConfig(namespace="ns", name="lease")


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class LeaseServer:
    """One Lease with resourceVersion preconditions, as the API server keeps it."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.rv = 0
        self.conflict_next_put = False

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        if method == "GET":
            if self.lease is None:
                raise api_exception(404, "Not Found", b"")
            return copy.deepcopy(self.lease)
        if method == "POST":
            if self.lease is not None:
                raise api_exception(409, "AlreadyExists", b"")
            return self._store(body)
        if method == "PUT":
            assert self.lease is not None
            if self.conflict_next_put or body["metadata"].get("resourceVersion") != self.lease["metadata"][
                    "resourceVersion"]:
                self.conflict_next_put = False
                raise api_exception(409, "Conflict", b"")
            return self._store(body)
        raise AssertionError(method)

    def _store(self, body: Mapping[str, Any]) -> dict[str, Any]:
        self.rv += 1
        self.lease = copy.deepcopy(dict(body))
        self.lease["metadata"]["resourceVersion"] = str(self.rv)
        return copy.deepcopy(self.lease)

    def take(self, holder: str, renew: str) -> None:
        assert self.lease is not None
        self.lease["spec"].update({"holderIdentity": holder, "renewTime": renew})
        self.rv += 1
        self.lease["metadata"]["resourceVersion"] = str(self.rv)


def elector(server: LeaseServer, clock: Clock, identity: str) -> LeaderElector:
    return LeaderElector(rest=server, identity=identity, config=CONFIG, monotonic=clock,  # type: ignore[arg-type]
                         wall=lambda: 1.7e9)


async def test_the_first_candidate_creates_the_lease_and_the_second_waits_for_it_to_lapse():
    server, clock = LeaseServer(), Clock()
    a, b = elector(server, clock, "a"), elector(server, clock, "b")
    assert await a.try_acquire_or_renew() and a.is_leader
    assert server.lease["spec"]["holderIdentity"] == "a"
    assert server.lease["spec"]["leaseDurationSeconds"] == 15
    assert not await b.try_acquire_or_renew()  # held, and fresh as b has seen it
    clock.t += 14.0
    assert not await b.try_acquire_or_renew()  # a did not renew, but 15 s have not passed yet for b
    clock.t += 2.0
    assert await b.try_acquire_or_renew() and b.is_leader
    assert server.lease["spec"]["holderIdentity"] == "b" and server.lease["spec"]["leaseTransitions"] == 1
    assert not a.is_leader  # its last renewal is 16 s old: more than the renew deadline


async def test_expiry_runs_from_when_this_process_saw_the_record_change_not_from_the_holders_clock():
    server, clock = LeaseServer(), Clock()
    a, b = elector(server, clock, "a"), elector(server, clock, "b")
    await a.try_acquire_or_renew()
    await b.try_acquire_or_renew()
    for _ in range(5):  # a renews every 10 s (the renewTime changes): b never sees it lapse
        clock.t += 10.0
        server.take("a", f"renewed-{clock.t}")
        assert not await b.try_acquire_or_renew()


async def test_a_write_conflict_loses_the_round():
    server, clock = LeaseServer(), Clock()
    a = elector(server, clock, "a")
    await a.try_acquire_or_renew()
    clock.t += 2.0
    server.conflict_next_put = True  # someone wrote the Lease between a's read and a's write
    assert not await a.try_acquire_or_renew()
    assert a.is_leader  # still within the renew deadline: the next try may succeed
    clock.t += 2.0
    assert await a.try_acquire_or_renew()


async def test_a_frozen_leader_is_fenced_before_it_talks_to_anyone_and_loses_for_good():
    server, clock = LeaseServer(), Clock()
    a, b = elector(server, clock, "a"), elector(server, clock, "b")
    await a.try_acquire_or_renew()
    await b.try_acquire_or_renew()
    clock.t += 55.0  # a is frozen (SIGSTOP); b takes over meanwhile
    assert await b.try_acquire_or_renew()
    assert not a.is_leader  # on waking, before any request: its renewal is older than the deadline
    assert not await a.try_acquire_or_renew()  # held by b, fresh as a sees it
    assert not a.is_leader


async def test_release_hands_the_lease_over_at_once():
    server, clock = LeaseServer(), Clock()
    a, b = elector(server, clock, "a"), elector(server, clock, "b")
    await a.try_acquire_or_renew()
    await b.try_acquire_or_renew()
    await a.release()
    assert not a.is_leader and server.lease["spec"]["holderIdentity"] is None
    assert await b.try_acquire_or_renew()  # no 15 s wait


async def test_a_read_older_than_the_renew_deadline_is_not_acted_on():
    """A process paused between reading the Lease and writing it (SIGSTOP, a long GC) writes
    nothing with what it read: the next attempt reads again."""
    server, clock = LeaseServer(), Clock()
    elector = LeaderElector(rest=server, identity="me", config=CONFIG, monotonic=clock)  # type: ignore[arg-type]
    assert await elector.try_acquire_or_renew()
    rv_before = server.rv
    real_request = server.request

    async def paused_after_get(method: str, path: str, **kw: Any) -> Any:
        answer = await real_request(method, path, **kw)
        if method == "GET":
            clock.t += CONFIG.renew_deadline + 1  # frozen right after the read
        return answer

    server.request = paused_after_get  # type: ignore[method-assign]
    assert not await elector.try_acquire_or_renew()
    assert server.rv == rv_before  # no PUT went out


async def test_a_standby_tries_again_when_the_lease_lapses_not_a_whole_retry_period_later():
    server, clock = LeaseServer(), Clock()
    a, b = elector(server, clock, "a"), elector(server, clock, "b")
    await a.try_acquire_or_renew()
    assert b.next_try_in(0.5) == 2.0 * (1 + 0.5 * 1.2)  # nothing seen yet: client-go's jittered period
    assert not await b.try_acquire_or_renew()  # b sees a's Lease at t: it lapses at t + 15
    assert b.lapses_in() == 15.0
    clock.t += 13.5
    assert b.next_try_in(0.0) == 1.5 + 0.01  # the lapse comes before even the shortest retry
    assert b.next_try_in(0.9) == 1.5 + 0.01
    clock.t += b.next_try_in(0.9)
    assert await b.try_acquire_or_renew()  # at once, not up to 4.4 s later
    assert b.lapses_in() is None  # b holds it: renewals keep the retry period
    assert b.next_try_in(0.0) == 2.0


async def test_a_standby_that_sees_renewals_keeps_the_retry_period():
    server, clock = LeaseServer(), Clock()
    a, b = elector(server, clock, "a"), elector(server, clock, "b")
    await a.try_acquire_or_renew()
    await b.try_acquire_or_renew()
    clock.t += 3.0
    server.take("a", "renewed")
    assert not await b.try_acquire_or_renew()  # a change seen: the lapse runs from now
    assert b.lapses_in() == 15.0 and b.next_try_in(1.0) == 2.0 * 2.2


async def test_run_sleeps_until_the_lapse_and_then_leads():
    server, clock = LeaseServer(), Clock()
    a = elector(server, clock, "a")
    await a.try_acquire_or_renew()
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        if not b.elected.is_set():  # the pauses of the candidate, not the leader's renewals
            slept.append(seconds)
        clock.t += seconds
        await asyncio.sleep(0)

    b = LeaderElector(rest=server, identity="b", config=CONFIG, monotonic=clock,  # type: ignore[arg-type]
                      wall=lambda: 1.7e9, sleep=sleep)
    task = asyncio.ensure_future(b.run())
    while not b.elected.is_set():
        await asyncio.sleep(0)
    task.cancel()
    assert 15.0 <= sum(slept) < 15.0 + 0.02  # took over as the lapse came, not at the next jittered retry
