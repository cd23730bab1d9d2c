"""The scheduler cache: nodes, assigned and assumed pods, expiry, incremental snapshots."""

from __future__ import annotations

import pytest

from kubeberth.cache.cache import CacheError, SchedulerCache, zone_key
from kubeberth.cache.snapshot import Snapshot
from kubeberth.clock import FakeClock
from kubeberth.scheduler import pod_on_node
from tests.builders import make_node, make_pod


def cache_with(*nodes: str, ttl: float = 0.0) -> tuple[SchedulerCache, FakeClock]:
    clock = FakeClock()
    c = SchedulerCache(clock=clock, ttl=ttl)
    for n in nodes:
        c.add_node(make_node(n, cpu="4"))
    return c, clock


def cpu_on(c: SchedulerCache, node: str) -> int:
    ni = c.get_node(node)
    assert ni is not None
    return ni.requested.milli_cpu


# ---- pods and nodes ----------------------------------------------------------------------------
def test_add_update_remove_pod() -> None:
    c, _ = cache_with("n1")
    p = make_pod("p", cpu="1", node="n1")
    c.add_pod(p)
    assert cpu_on(c, "n1") == 1000 and c.pod_count() == 1
    bigger = make_pod("p", cpu="2", node="n1")
    c.update_pod(p, bigger)
    assert cpu_on(c, "n1") == 2000 and c.get_pod(p.uid) is bigger
    assert c.remove_pod(bigger) and cpu_on(c, "n1") == 0
    assert not c.remove_pod(bigger)


def test_pod_before_its_node() -> None:
    c, _ = cache_with()
    c.add_pod(make_pod("early", cpu="1", node="n9"))
    assert c.node_count() == 0 and len(c.snapshot()) == 0
    c.add_node(make_node("n9"))
    snap = c.snapshot()
    assert [ni.name for ni in snap.node_infos] == ["n9"] and snap.get("n9").requested.milli_cpu == 1000  # type: ignore[union-attr]


def test_removed_node_with_pods_stays_as_a_ghost_until_they_go() -> None:
    c, _ = cache_with("n1", "n2")
    p = make_pod("p", cpu="1", node="n1")
    c.add_pod(p)
    snap = Snapshot()
    c.update_snapshot(snap)
    assert c.remove_node("n1")
    ghost = c.get_node("n1")
    assert ghost is not None and ghost.node is None and len(ghost.pods) == 1
    c.update_snapshot(snap)
    assert [ni.name for ni in snap.node_infos] == ["n2"] and snap.get("n1") is None
    c.remove_pod(p)
    assert c.get_node("n1") is None and c.pod_count() == 0
    assert not c.remove_node("n1")
    c.update_snapshot(snap)
    assert [ni.name for ni in snap.node_infos] == ["n2"]


# ---- assume / confirm / forget / expire ---------------------------------------------------------
def test_assume_counts_the_pod_before_binding() -> None:
    c, _ = cache_with("n1")
    p = make_pod("p", cpu="1")
    assumed = pod_on_node(p, "n1")
    c.assume_pod(assumed)
    assert c.is_assumed(p.uid) and cpu_on(c, "n1") == 1000
    with pytest.raises(CacheError, match="can't be assumed"):
        c.assume_pod(assumed)
    with pytest.raises(CacheError, match="no node"):
        c.assume_pod(make_pod("q"))


def test_forget_undoes_assume() -> None:
    c, _ = cache_with("n1")
    assumed = pod_on_node(make_pod("p", cpu="1"), "n1")
    c.assume_pod(assumed)
    c.forget_pod(assumed)
    assert not c.is_assumed(assumed.uid) and cpu_on(c, "n1") == 0
    c.forget_pod(assumed)  # gone already: ignored


def test_forget_refuses_a_confirmed_pod() -> None:
    c, _ = cache_with("n1")
    assumed = pod_on_node(make_pod("p", cpu="1"), "n1")
    c.assume_pod(assumed)
    c.add_pod(make_pod("p", cpu="1", node="n1"))
    with pytest.raises(CacheError, match="not assumed"):
        c.forget_pod(assumed)


@pytest.mark.parametrize("via", ["add", "update"])
def test_bound_pod_event_confirms_the_assumed_pod(via: str) -> None:
    c, _ = cache_with("n1")
    pending = make_pod("p", cpu="1")
    assumed = pod_on_node(pending, "n1")
    c.assume_pod(assumed)
    c.finish_binding(assumed)
    bound = make_pod("p", cpu="1", node="n1")
    if via == "add":
        c.add_pod(bound)
    else:
        c.update_pod(pending, bound)
    assert not c.is_assumed(bound.uid) and c.get_pod(bound.uid) is bound and cpu_on(c, "n1") == 1000


def test_confirmation_on_another_node_moves_the_pod() -> None:
    c, _ = cache_with("n1", "n2")
    c.assume_pod(pod_on_node(make_pod("p", cpu="1"), "n1"))
    c.add_pod(make_pod("p", cpu="1", node="n2"))
    assert cpu_on(c, "n1") == 0 and cpu_on(c, "n2") == 1000


def test_assumed_pods_never_expire_by_default() -> None:
    c, clock = cache_with("n1")
    assumed = pod_on_node(make_pod("p", cpu="1"), "n1")
    c.assume_pod(assumed)
    c.finish_binding(assumed)
    clock.advance(10**6)
    assert c.cleanup_assumed_pods() == [] and c.is_assumed(assumed.uid)


def test_assumed_pod_expires_ttl_after_binding_finished() -> None:
    c, clock = cache_with("n1", ttl=30)
    assumed = pod_on_node(make_pod("p", cpu="1"), "n1")
    c.assume_pod(assumed)
    clock.advance(100)
    assert c.cleanup_assumed_pods() == []  # binding still in progress: never expires
    c.finish_binding(assumed)
    clock.advance(30)
    assert c.cleanup_assumed_pods() == []
    clock.advance(0.5)
    assert [p.key for p in c.cleanup_assumed_pods()] == ["default/p"]
    assert cpu_on(c, "n1") == 0 and c.pod_count() == 0


def test_deleting_an_assumed_pod_removes_it() -> None:
    c, _ = cache_with("n1")
    pending = make_pod("p", cpu="1")
    c.assume_pod(pod_on_node(pending, "n1"))
    assert c.remove_pod(pending)  # the delete event carries the unassigned pod
    assert cpu_on(c, "n1") == 0 and not c.is_assumed(pending.uid)


# ---- snapshots ---------------------------------------------------------------------------------------
def test_snapshot_copies_only_changed_node_infos() -> None:
    c, _ = cache_with("n1", "n2", "n3")
    snap = Snapshot()
    c.update_snapshot(snap)
    first = {ni.name: ni for ni in snap.node_infos}
    c.add_pod(make_pod("p", cpu="1", node="n2"))
    c.update_snapshot(snap)
    second = {ni.name: ni for ni in snap.node_infos}
    assert second["n1"] is first["n1"] and second["n3"] is first["n3"]
    assert second["n2"] is not first["n2"] and second["n2"].requested.milli_cpu == 1000
    assert first["n2"].requested.milli_cpu == 0  # the previous copy was not touched
    c.update_snapshot(snap)
    assert all(snap.by_name[n] is second[n] for n in second)


def test_snapshot_is_never_shared_with_the_cache() -> None:
    c, _ = cache_with("n1")
    snap = Snapshot()
    c.update_snapshot(snap)
    snap.node_infos[0].add_pod(make_pod("dry-run", cpu="3", node="n1"))  # e.g. a plugin mutating it
    assert cpu_on(c, "n1") == 0
    c.add_pod(make_pod("real", cpu="1", node="n1"))
    assert snap.node_infos[0].requested.milli_cpu == 3000  # the cycle's view does not move under it


def test_snapshot_follows_node_additions_removals_and_affinity_lists() -> None:
    c, _ = cache_with("n1")
    snap = Snapshot()
    c.update_snapshot(snap)
    c.add_node(make_node("n2"))
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    c.add_pod(make_pod("p", node="n2", affinity=anti))
    c.update_snapshot(snap)
    assert [ni.name for ni in snap.node_infos] == ["n1", "n2"]
    assert [ni.name for ni in snap.have_pods_with_affinity] == ["n2"]
    assert [ni.name for ni in snap.have_pods_with_required_anti_affinity] == ["n2"]
    c.remove_node("n1")
    c.update_snapshot(snap)
    assert [ni.name for ni in snap.node_infos] == ["n2"] and set(snap.by_name) == {"n2"}


def test_snapshot_counts_images_across_nodes() -> None:
    c, _ = cache_with()
    img = [{"names": ["app:1"], "sizeBytes": 100}]
    c.add_node(make_node("n1", images=img))
    c.add_node(make_node("n2", images=img))
    snap = Snapshot()
    c.update_snapshot(snap)
    assert snap.get("n1").image_num_nodes == {"app:1": 2}  # type: ignore[union-attr]
    c.remove_node("n2")
    c.update_snapshot(snap)
    assert snap.get("n1").image_num_nodes == {"app:1": 1}  # type: ignore[union-attr]


def test_nodes_are_listed_round_robin_over_zones() -> None:
    c, _ = cache_with()
    for name, zone in [("a1", "a"), ("a2", "a"), ("b1", "b"), ("a3", "a"), ("c1", "c"), ("b2", "b")]:
        c.add_node(make_node(name, labels={"topology.kubernetes.io/zone": zone}))
    assert c.node_names() == ["a1", "b1", "c1", "a2", "b2", "a3"]
    assert [ni.name for ni in c.snapshot().node_infos] == ["a1", "b1", "c1", "a2", "b2", "a3"]
    # A node moving zone is listed with its new zone.
    c.update_node(make_node("a1", labels={"topology.kubernetes.io/zone": "c"}))
    assert c.node_names() == ["a2", "b1", "c1", "a3", "b2", "a1"]


def test_zone_key() -> None:
    assert zone_key(make_node("n")) == ""
    assert zone_key(make_node("n", labels={"topology.kubernetes.io/zone": "z"})) == ":\x00:z"
    assert zone_key(make_node("n", labels={"failure-domain.beta.kubernetes.io/region": "r",
                                           "topology.kubernetes.io/zone": "z"})) == "r:\x00:z"


def test_snapshot_after_many_changes_equals_a_fresh_one() -> None:
    c, _ = cache_with(*(f"n{i}" for i in range(20)))
    snap = Snapshot()
    c.update_snapshot(snap)
    for i in range(60):
        node = f"n{(i * 7) % 20}"
        c.add_pod(make_pod(f"p{i}", cpu="100m", node=node))
        if i % 9 == 0:
            c.remove_node(f"n{i % 20}")
        if i % 11 == 0:
            c.add_node(make_node(f"m{i}"))
        c.update_snapshot(snap)
    fresh = c.snapshot()
    assert [ni.name for ni in snap.node_infos] == [ni.name for ni in fresh.node_infos]
    for a, b in zip(snap.node_infos, fresh.node_infos):
        assert a.requested == b.requested and [p.uid for p in a.pods] == [p.uid for p in b.pods]
