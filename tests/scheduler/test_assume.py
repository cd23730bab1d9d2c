"""A cache that refuses to assume the chosen pod (SchedulingCycles._assume): the attempt fails as
an error (the cache's message said, the pod backed off), nothing is reserved or bound."""

from __future__ import annotations

import pytest

from kubeberth.cache.cache import CacheError, SchedulerCache
from kubeberth.model import Pod
from kubeberth.queue import BACKOFF
from kubeberth.scheduler import SCHEDULED
from kubeberth.scheduler import UNSCHEDULABLE as S_UNSCHEDULABLE
from tests.scheduler.fakes import add_pod, journal, scheduler


def refuse(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """The cache refuses to assume the pod called `name` (the others go through)."""
    assume = SchedulerCache.assume_pod

    def refusing(self: SchedulerCache, pod: Pod) -> None:
        if pod.name == name:
            raise CacheError(f"pod {pod.key} refused by the test")
        assume(self, pod)

    monkeypatch.setattr(SchedulerCache, "assume_pod", refusing)


@pytest.mark.parametrize("refused", ["p", "other"])
async def test_a_pod_the_cache_refuses_is_not_reserved_and_backs_off(monkeypatch: pytest.MonkeyPatch,
                                                                     refused: str) -> None:
    refuse(monkeypatch, refused)
    sched, client, _ = scheduler()
    p = add_pod(sched, "p")
    await sched.schedule_one()
    await sched.wait_for_bindings()
    rec = sched.outcomes["default/p"]
    if refused == "p":
        assert (rec.status, rec.message) == (S_UNSCHEDULABLE, "pod default/p refused by the test")
        assert journal(sched) == [] and client.of("bind") == []
        assert not sched.cache.is_assumed(p.uid) and sched.queue.get(p.uid)[0] == BACKOFF  # type: ignore[index]
    else:
        assert (rec.status, rec.node) == (SCHEDULED, "n1") and client.of("bind") == [("default/p", "n1")]
