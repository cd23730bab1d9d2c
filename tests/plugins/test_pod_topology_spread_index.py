"""The pod label index behind PodTopologySpread and InterPodAffinity stays equal to a fresh one
while the snapshot changes under it (pods added and removed, nodes replaced and deleted)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from kubeberth.cache.snapshot import Snapshot
from kubeberth.framework import CycleState
from kubeberth.model import LabelSelector, NodeInfo, Pod
from kubeberth.plugins._pod_index import PodIndex, index_for
from kubeberth.plugins.inter_pod_affinity import PRE_FILTER_KEY as IPA_PF
from kubeberth.plugins.inter_pod_affinity import PRE_SCORE_KEY as IPA_PS
from kubeberth.plugins.inter_pod_affinity import InterPodAffinity
from kubeberth.plugins.pod_topology_spread import PRE_FILTER_KEY as PTS_PF
from kubeberth.plugins.pod_topology_spread import PRE_SCORE_KEY as PTS_PS
from kubeberth.plugins.pod_topology_spread import PodTopologySpread
from tests.builders import make_node, pod_dict
from tests.doubles import handle

APPS = ["web", "db", "cache"]


def rand_pod(rng: random.Random, i: int, node: str) -> Pod:
    raw = pod_dict(f"p{i}", rng.choice(["default", "other"]), node=node,
                   labels={"app": rng.choice(APPS), "tier": rng.choice(["a", "b"])})
    if rng.random() < 0.1:
        raw["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return Pod(raw)


def brute(snapshot: Snapshot, selector: LabelSelector, ns: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for ni in snapshot.node_infos:
        n = sum(1 for p in ni.pods if p.namespace == ns and p.deletion_timestamp is None
                and selector.matches(p.labels))
        if n:
            out[ni.name] = n
    return out


INCOMING = Pod(pod_dict("incoming", labels={"app": "web", "tier": "a"}, affinity={
    "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}],
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 7, "podAffinityTerm": {
            "labelSelector": {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["b"]}]},
            "topologyKey": "zone", "namespaceSelector": {}}}]},
    "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "cache"]}]},
         "topologyKey": "kubernetes.io/hostname"}]}},
    topologySpreadConstraints=[
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "web"}}},
        {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}},
        {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": {"matchLabels": {"tier": "a"}}}]))


def states(pts: PodTopologySpread, ipa: InterPodAffinity) -> list[Any]:
    cs = CycleState()
    nodes = pts.handle.snapshot.node_infos
    out: list[Any] = []
    for pl, pf, ps in ((pts, PTS_PF, PTS_PS), (ipa, IPA_PF, IPA_PS)):
        _, st = pl.pre_filter(cs, INCOMING, nodes)
        s = cs.get(pf)
        if pl is pts:
            out.append((st, s.counts if s else None))
        else:
            out.append((st, s and (s.affinity_counts, s.anti_affinity_counts, s.existing_anti_affinity_counts)))
        st = pl.pre_score(cs, INCOMING, nodes)
        s = cs.get(ps)
        if pl is pts:
            out.append((st, s and (s.pair_counts, s.host_counts, s.ignored_nodes)))
        else:
            out.append((st, s and s.topology_score))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_long_lived_index_equals_a_fresh_one(seed: int) -> None:
    rng = random.Random(seed)
    nodes = [make_node(f"n{i}", labels={"zone": f"z{i % 3}"}) for i in range(8)]
    pods = [rand_pod(rng, i, f"n{rng.randrange(8)}") for i in range(40)]
    snap = Snapshot.from_objects(nodes, pods)
    pts = PodTopologySpread(None, handle(snapshot=snap, vectorise=False))
    ipa = InterPodAffinity(None, handle(snapshot=snap, vectorise=False))
    counter = 100
    for _step in range(25):
        op = rng.random()
        infos = snap.node_infos
        if op < 0.35 and infos:
            ni = rng.choice(infos)
            counter += 1
            ni.add_pod(rand_pod(rng, counter, ni.name))
        elif op < 0.7 and infos:
            ni = rng.choice(infos)
            if ni.pods:
                ni.remove_pod(rng.choice(ni.pods))
        elif op < 0.85 and infos:
            # The cache hands the snapshot a clone of a changed node.
            i = rng.randrange(len(infos))
            clone = infos[i].clone()
            counter += 1
            clone.add_pod(rand_pod(rng, counter, clone.name))
            infos[i] = clone
            snap.refresh()
        elif len(infos) > 2:
            del infos[rng.randrange(len(infos))]
            snap.refresh()
        fresh_pts = PodTopologySpread(None, handle(snapshot=snap, vectorise=False))
        fresh_ipa = InterPodAffinity(None, handle(snapshot=snap, vectorise=False))
        assert states(pts, ipa) == states(fresh_pts, fresh_ipa)
        index = index_for(pts.handle, pts._index)
        for sel in (LabelSelector({"app": "web"}), LabelSelector(requirements=[]),
                    LabelSelector.from_dict({"matchExpressions": [{"key": "tier", "operator": "NotIn",
                                                                   "values": ["a"]}]})):
            for ns in ("default", "other"):
                got: dict[str, int] = {}
                for sig in index.matching(sel, lambda s, ns=ns: s[0] == ns and not s[2]):
                    for name, n in index.nodes_of(sig).items():
                        got[name] = got.get(name, 0) + n
                assert got == brute(snap, sel, ns)


def test_index_is_shared_through_the_scheduler_context() -> None:
    h1 = handle([make_node("n1")])
    h2 = handle(ctx=h1.ctx)  # another profile of the same scheduler
    a, b = PodIndex(), PodIndex()
    assert index_for(h1, a) is index_for(h2, b)
    assert index_for(h1, a) is not a


def test_candidates_use_the_narrowest_equality_term() -> None:
    index = PodIndex()
    ni = NodeInfo(make_node("n1"), [Pod(pod_dict(f"p{i}", labels={"app": "web", "i": str(i)}, node="n1"))
                                    for i in range(5)])
    index.sync([ni])
    assert len(list(index.candidates(LabelSelector({"app": "web"})))) == 5
    assert len(list(index.candidates(LabelSelector({"app": "web", "i": "3"})))) == 1
    assert list(index.candidates(LabelSelector({"app": "db"}))) == []
    index.sync([])
    assert list(index.all_sigs()) == []
