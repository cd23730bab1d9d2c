"""The pod groups' counts kept from the cache's word on assumed pods (PodGroupStates(tracked=True),
as the scheduler builds them) agree with the counts made on every call, whatever the cache and
the watch do: assume, forget, bind, confirm, expire, delete, pods replaced."""

from __future__ import annotations

import random

import pytest

from kubeberth.cache.cache import SchedulerCache
from kubeberth.cache.pod_groups import PodGroupStates
from kubeberth.clock import FakeClock
from kubeberth.model import Pod
from kubeberth.scheduler.records import pod_on_node
from tests.builders import make_node, make_pod


def member(name: str, group: str, node: str = "") -> Pod:
    p = make_pod(name, node=node)
    return Pod({**p.raw, "spec": {**p.spec, "schedulingGroup": {"podGroupName": group}}})


def views(states: PodGroupStates) -> dict[str, tuple[int, set[str], list[str]]]:
    out = {}
    for key in states.keys():
        s = states.get(key)
        assert s is not None
        out[key] = (s.scheduled_pods_count(), s.assumed_uids(), [p.name for p in s.unscheduled_pods()])
    return out


def scheduler_states(cache: SchedulerCache) -> PodGroupStates:
    states = PodGroupStates(cache.is_assumed, cache.get_pod, tracked=True)
    cache.on_assumed_change = states.assumed_changed
    return states


@pytest.mark.parametrize("seed", range(8))
def test_kept_counts_agree_with_counted_ones(seed: int) -> None:
    rng = random.Random(seed)
    clock = FakeClock()
    cache = SchedulerCache(clock=clock, ttl=30.0)
    for n in ("n1", "n2"):
        cache.add_node(make_node(n))
    kept = scheduler_states(cache)
    counted = PodGroupStates(cache.is_assumed, cache.get_pod)  # counts on every call
    pending: dict[str, Pod] = {}
    for i in range(300):
        roll = rng.random()
        if roll < 0.3 or not pending:  # a pending pod arrives (or a pending one is replaced)
            name = f"p{rng.randrange(max(1, i))}" if rng.random() < 0.2 else f"p{i}"
            p = member(name, rng.choice(["g1", "g2"]))
            if name in pending:
                p = member(name, pending[name].pod_group_name)
            pending[name] = p
            for s in (kept, counted):
                s.add_or_update_pod(p)
            continue
        p = pending[rng.choice(sorted(pending))]
        cached = cache.get_pod(p.uid)
        if roll < 0.5 and cached is None:
            cache.assume_pod(pod_on_node(p, rng.choice(["n1", "n2"])))
        elif roll < 0.6 and cached is not None and cache.is_assumed(p.uid):
            cache.forget_pod(cached)
        elif roll < 0.7 and cached is not None and cache.is_assumed(p.uid):
            cache.finish_binding(cached)
        elif roll < 0.8 and cached is not None:  # the watch brings it bound: group state first, then the cache
            bound = member(p.name, p.pod_group_name, node=cached.node_name)
            for s in (kept, counted):
                s.add_or_update_pod(bound)
            cache.add_pod(bound)
            del pending[p.name]
        elif roll < 0.9:  # deleted
            for s in (kept, counted):
                s.remove_pod(p)
            if cached is not None:
                cache.remove_pod(cached)
            del pending[p.name]
        else:
            clock.advance(rng.choice([1.0, 40.0]))
            cache.cleanup_assumed_pods()
        assert views(kept) == views(counted), i
