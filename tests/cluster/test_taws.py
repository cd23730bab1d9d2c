"""Topology-aware placement (TopologyAwareWorkloadScheduling, KEP-5732) on the real kube-apiserver
v1.37.2 (GenericWorkload and TopologyAwareWorkloadScheduling on, scheduling.k8s.io/v1beta1 served),
kube-scheduler v1.37.2 with the same gates as the oracle, test_gangs.py's side-by-side pattern: the
same objects through kube-scheduler, then through `kubeberth run`.

Two racks of two nodes (label example.com/rack). A group in alike racks goes whole into either
(kube-scheduler logs the tie); a group goes whole into the fuller rack (not spread as without the
gate), the placements' scores, plugin by plugin, those kube-scheduler logs; a group with a pod
already bound in one rack is pinned there; a group that the cluster holds but no single rack
does is unschedulable ("0/2 placements are available"); a group whose key no node has finds no
placement. Every pod's node, every PodScheduled=False
message and every PodGroupInitiallyScheduled condition are compared, word for word.
"""

from __future__ import annotations

import asyncio
import io
import logging
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio

from kubeberth import features
from kubeberth.features import FeatureGates
from kubeberth.whatif.engine import run_simulation

from .conftest import OperatorProcess
from .control_plane import ADMIN_TOKEN, ControlPlane
from .kube import Kube, eventually, node, pod
from .test_gangs import gated_plane, group_state, kubeberth_kubeconfig, reset, settled, start_kube_scheduler

pytestmark = pytest.mark.cluster

GATES = "GenericWorkload=true,TopologyAwareWorkloadScheduling=true"
RACK = "example.com/rack"
RACKS = {"n1": "a", "n2": "a", "n3": "b", "n4": "b"}
# schedule_one_podgroup.go's findBestPlacement at verbosity 10
# (the logger carries the group's podGroupType and podGroup before the call's own values)
PLUGIN_SCORE = re.compile(r'"Plugin scored placement for podGroup"[^\n]*? podGroup="([^"]+)" plugin="([^"]+)" '
                          r'placement="([^"]+)" score=(-?\d+)')
FINAL_SCORE = re.compile(r'"Calculated placement\'s final score for podGroup"[^\n]*? podGroup="([^"]+)" '
                         r'placement="([^"]+)" score=(-?\d+)')


def pod_group(name: str, min_count: int, key: str = RACK) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}},
                     "schedulingConstraints": {"topology": [{"key": key}]}}}


def member(group: str, i: int, cpu: str, node_name: str | None = None) -> dict[str, Any]:
    return pod(f"{group}-{i}", cpu=cpu, memory="100Mi", node_name=node_name, schedulingGroup={"podGroupName": group})


async def placed(kube: Kube, names: list[str]) -> dict[str, tuple[str, str]]:
    """(node, "reason: message" of PodScheduled=False or "") per pod, once they have settled."""
    states = await settled(kube, names)
    nodes = {p["metadata"]["name"]: p["spec"].get("nodeName") or "" for p in await kube.list("pods", "default")}
    return {name: (nodes[name], message) for name, (_, message) in states.items()}


def nodes() -> list[dict[str, Any]]:
    return [node(n, cpu="2", memory="4Gi", labels={RACK: rack}) for n, rack in RACKS.items()]


BUSY = pod("busy", cpu="1", memory="100Mi", node_name="n3")
TIE = [pod_group("tie", 2), *(member("tie", i, "100m") for i in range(2))]
FULLER = [pod_group("fuller", 2), *(member("fuller", i, "500m") for i in range(2))]


async def create(kube: Kube, objects: list[dict[str, Any]]) -> None:
    for obj in objects:
        await kube.create("podgroups" if obj["kind"] == "PodGroup" else "pods", obj, "default")


async def scenario(kube: Kube) -> dict[str, Any]:
    for n in nodes():
        await kube.create("nodes", n)
    out: dict[str, Any] = {}
    # the racks alike: either, whole (then gone again, for the rest to find the racks alike)
    await create(kube, TIE)
    out["tie"] = await placed(kube, ["tie-0", "tie-1"])
    for i in range(2):
        await kube.delete("pods", f"tie-{i}", "default", grace_period=0)

    async def tie_gone() -> bool | None:
        return not any(p["metadata"]["name"].startswith("tie-") for p in await kube.list("pods", "default")) or None

    await eventually(tie_gone, timeout=30)
    await kube.create("pods", BUSY, "default")
    # rack b is the fuller: the group goes there whole
    await create(kube, FULLER)
    out["fuller"] = await placed(kube, [f"fuller-{i}" for i in range(2)])
    # a pod of the group already bound in rack a: the others follow it there
    await kube.create("podgroups", pod_group("pinned", 2), "default")
    await kube.create("pods", member("pinned", 0, "100m", node_name="n1"), "default")
    for i in (1, 2):
        await kube.create("pods", member("pinned", i, "500m"), "default")
    out["pinned"] = await placed(kube, [f"pinned-{i}" for i in (1, 2)])
    # each rack holds two 900m pods now, the cluster four: three need one rack
    await kube.create("podgroups", pod_group("nowhere", 3), "default")
    for i in range(3):
        await kube.create("pods", member("nowhere", i, "900m"), "default")
    out["nowhere"] = await placed(kube, [f"nowhere-{i}" for i in range(3)])
    # no node has the key
    await kube.create("podgroups", pod_group("nokey", 1, key="example.com/none"), "default")
    await kube.create("pods", member("nokey", 0, "100m"), "default")
    out["nokey"] = await placed(kube, ["nokey-0"])
    out["groups"] = {g["metadata"]["name"]: group_state(g) for g in await kube.list("podgroups", "default")}
    return out


@pytest.fixture(scope="module")
def taws_plane() -> Iterator[ControlPlane]:
    with gated_plane(GATES) as plane:
        yield plane


@pytest_asyncio.fixture
async def taws_kube(taws_plane: ControlPlane) -> AsyncIterator[Kube]:
    async with Kube(taws_plane.url, ADMIN_TOKEN, taws_plane.ssl_context()) as client:
        await reset(client)
        yield client


def upstream_scores(log: str, group: str) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """kube-scheduler's logged placement scores of `group`'s last scoring: per placement, per
    plugin (weighted), and the totals."""
    plugins: dict[str, dict[str, int]] = {}
    totals: dict[str, int] = {}
    for m in PLUGIN_SCORE.finditer(log):
        if m.group(1) == group:
            plugins.setdefault(m.group(3), {})[m.group(2)] = int(m.group(4))
    for m in FINAL_SCORE.finditer(log):
        if m.group(1) == group:
            totals[m.group(2)] = int(m.group(3))
    return plugins, totals


def kubeberth_scores(objects: list[dict[str, Any]], group: str) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """What kubeberth's placement scoring says of the same objects (simulate, its debug log)."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.msg.startswith("pod group %s: placement %r scored") and record.args[0] == group:  # type: ignore[index]
                records.append(record)

    logger = logging.getLogger("kubeberth.scheduler")
    handler, level = Keep(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        with features.override(FeatureGates.parse(GATES)):
            run_simulation(objects, warn=io.StringIO())
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    plugins = {r.args[1]: dict(r.args[3]) for r in records}  # type: ignore[index]
    totals = {r.args[1]: r.args[2] for r in records}  # type: ignore[index]
    return plugins, totals


async def test_topology_placement_as_kube_scheduler_does_it(taws_plane: ControlPlane, taws_kube: Kube) -> None:
    kube = taws_kube
    upstream = start_kube_scheduler(taws_plane, GATES, ("-v=2", "--vmodule=schedule_one_podgroup=10"))
    try:
        expected = await scenario(kube)
    finally:
        upstream.stop()
    log = upstream.log_path.read_text(errors="replace")
    await reset(kube)
    op = OperatorProcess(taws_plane, kubeberth_kubeconfig(taws_plane), [f"--feature-gates={GATES}"],
                         name="kubeberth-taws")
    try:
        op.wait_synced()
        got = await scenario(kube)
    finally:
        op.stop()

    # the placements' scores, plugin by plugin, as kube-scheduler logged them and kubeberth computes them
    tie_scores = upstream_scores(log, "default/tie")
    fuller_scores = upstream_scores(log, "default/fuller")
    logged = "\n".join(line for line in log.splitlines() if "placement" in line and "score" in line)
    assert set(tie_scores[1]) == set(fuller_scores[1]) == {"a", "b"}, logged
    assert tie_scores[1]["a"] == tie_scores[1]["b"]  # a tie upstream: either rack may win
    assert fuller_scores[1]["b"] > fuller_scores[1]["a"]
    # one after the other: the gates and the logger are process-wide
    ours_tie = await asyncio.to_thread(kubeberth_scores, [*nodes(), *TIE], "default/tie")
    ours_fuller = await asyncio.to_thread(kubeberth_scores, [*nodes(), BUSY, *FULLER], "default/fuller")
    assert ours_tie == tie_scores
    assert ours_fuller == fuller_scores

    # ties: the whole group in one rack, either
    assert len({RACKS[n] for n, _ in expected.pop("tie").values()}) == 1
    assert len({RACKS[n] for n, _ in got.pop("tie").values()}) == 1

    # what kube-scheduler did, spelled out: the test would pass on no scheduler at all otherwise
    assert {RACKS[n] for n, _ in expected["fuller"].values()} == {"b"}
    assert {RACKS[n] for n, _ in expected["pinned"].values()} == {"a"}
    assert not any(n for n, _ in expected["nowhere"].values())
    assert all("0/2 placements are available" in m or "Insufficient cpu" in m for _, m in expected["nowhere"].values())
    assert expected["groups"]["fuller"] == ("True", "Scheduled", "")
    assert expected["groups"]["nowhere"][:2] == ("False", "Unschedulable")
    assert expected["nokey"]["nokey-0"][0] == ""

    assert got == expected  # every pod's node, every message, every PodGroup condition, word for word
