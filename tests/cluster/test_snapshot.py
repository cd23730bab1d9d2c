"""`kubeberth snapshot` against a real API server: paginated lists of the kinds simulate reads,
server noise stripped, pending pods filtered, and the stream simulated as is."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeberth.scheduler.watched import WATCHED
from kubeberth.whatif.simulate import simulate

from .conftest import Operators
from .kube import Kube, eventually, node, pod

pytestmark = pytest.mark.cluster


def snapshot(kubeconfig: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kubeberth.cli", "snapshot", f"--kubeconfig={kubeconfig}",
                           "-o", str(out), *args], capture_output=True, text=True, timeout=120)


async def populate(kube: Kube) -> None:
    await kube.create("priorityclasses", {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                          "metadata": {"name": "snap-high"}, "value": 1000})
    for i in range(5):
        await kube.create("nodes", node(f"snap-{i}", cpu="2"))
    await kube.create("pods", pod("on-node", cpu="1500m", node_name="snap-0"))
    await kube.create("pods", pod("other-team-on-node", namespace="team-a", cpu="1500m", node_name="snap-1"))
    for i in range(3):
        await kube.create("pods", pod(f"web-{i}", namespace="team-a", cpu="1", labels={"app": "web"}))
    await kube.create("pods", pod("db", namespace="team-a", cpu="1", labels={"app": "db"}))
    await kube.create("pods", pod("elsewhere", cpu="1", labels={"app": "web"}))


def by_kind(objects: list[dict[str, Any]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for o in objects:
        meta = o["metadata"]
        name = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
        out.setdefault(o["kind"], []).append(name)
    return {k: sorted(v) for k, v in out.items()}


async def test_snapshot_pages_strips_and_simulates(kube: Kube, sa_kubeconfig: Path, tmp_path: Path) -> None:
    await populate(kube)
    out = tmp_path / "cluster.yaml"
    # the kubeberth ServiceAccount's token: its ClusterRole is enough to take a snapshot
    proc = snapshot(sa_kubeconfig, out, "--page-size", "2")
    assert proc.returncode == 0, proc.stderr
    assert "listing nodes: 5\n" in proc.stderr  # progress once a kind takes more than one page
    objects = list(yaml.safe_load_all(out.read_text()))
    kinds = by_kind(objects)
    assert [n for n in kinds["Node"] if n.startswith("snap-")] == [f"snap-{i}" for i in range(5)]
    assert "snap-high" in kinds["PriorityClass"]
    assert {"default/on-node", "team-a/web-0", "team-a/db", "default/elsewhere"} <= set(kinds["Pod"])
    assert set(kinds) <= {k.kind for k in WATCHED}
    for o in objects:
        assert o["apiVersion"] and o["kind"]
        assert not {"managedFields", "resourceVersion"} & set(o["metadata"])
    snap_pod = next(o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"] == "on-node")
    assert set(snap_pod.get("status") or {}) <= {"phase", "nominatedNodeName", "startTime", "conditions",
                                                 "qosClass", "resourceClaimStatuses"}
    assert snap_pod["metadata"]["uid"] and snap_pod["metadata"]["creationTimestamp"]
    # the stream is simulate's input as is: the pending pods land on the nodes with room
    outcomes = {o.pod: o for o in await asyncio.to_thread(simulate, objects)}
    assert outcomes["default/on-node"].status == "Existing"
    assert outcomes["team-a/web-0"].status == "Scheduled"
    assert outcomes["team-a/web-0"].node in {"snap-2", "snap-3", "snap-4"}  # snap-0/1 have 500m left


async def test_snapshot_filters_pending_pods(kube: Kube, sa_kubeconfig: Path, tmp_path: Path) -> None:
    await populate(kube)
    out = tmp_path / "web.yaml"
    proc = snapshot(sa_kubeconfig, out, "--namespace", "team-a", "--selector", "app=web")
    assert proc.returncode == 0, proc.stderr
    pods = by_kind(list(yaml.safe_load_all(out.read_text())))["Pod"]
    # pods on nodes always come (they take room); the pending ones are only team-a's app=web
    assert pods == ["default/on-node", "team-a/other-team-on-node", "team-a/web-0", "team-a/web-1", "team-a/web-2"]


def test_snapshot_reports_an_unreachable_server(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "kubeberth.cli", "snapshot", "--server", "http://127.0.0.1:9",
                           "-o", str(tmp_path / "x.yaml")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr == "kubeberth snapshot: cannot connect to 127.0.0.1:9: Connection refused\n"


async def test_a_refused_profile_in_the_cluster_stops_simulate_naming_it(kube: Kube, operators: Operators,
                                                                         sa_kubeconfig: Path, tmp_path: Path) -> None:
    """Issue 29: a SchedulingProfile kubeberth refuses in the cluster (the schema allows it) once
    gave a warning and the default profile's results when its snapshot was simulated. Now snapshot
    warns, and simulate exits 2 naming the document and the field, printing no results. A Shadow
    profile (valid) is left out with a note: it schedules nothing, as in the cluster."""
    await populate(kube)
    await kube.create("schedulingprofiles", {
        "apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": "broken"},
        "spec": {"schedulerName": "batch", "plugins": {"score": {"enabled": [{"name": "NodeResourceFit"}]}}}})
    await kube.create("schedulingprofiles", {
        "apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": "candidate"},
        "spec": {"mode": "Shadow", "pluginConfig": [{"name": "NodeResourcesFit",
                                                    "args": {"scoringStrategy": {"type": "MostAllocated"}}}]}})
    operators.start("--no-default-profile")  # the pending pods stay pending in the cluster

    async def verdict(name: str) -> str | None:
        conditions = ((await kube.get("schedulingprofiles", name)).get("status") or {}).get("conditions") or []
        return next((f"{c['status']}: {c['message']}" for c in conditions if c["type"] == "Accepted"), None)

    field = "spec.plugins.score.enabled[0].name: plugin 'NodeResourceFit' does not exist"
    assert await eventually(lambda: verdict("broken"), what="broken refused") == f"False: {field}"
    assert await eventually(lambda: verdict("candidate"), what="candidate accepted") == "True: "
    out = tmp_path / "cluster.yaml"
    proc = snapshot(sa_kubeconfig, out)
    assert proc.returncode == 0, proc.stderr
    assert (f"warning: SchedulingProfile broken: {field} (the cluster's kubeberth refuses it too: Accepted=False); "
            "simulate refuses this snapshot until the profile is fixed or left out") in proc.stderr.splitlines()
    objects = list(yaml.safe_load_all(out.read_text()))
    document = 1 + next(i for i, o in enumerate(objects) if o["metadata"]["name"] == "broken")
    sim = subprocess.run([sys.executable, "-m", "kubeberth.cli", "simulate", str(out), "-o", "json"],
                         capture_output=True, text=True, timeout=120)
    assert (sim.returncode, sim.stdout) == (2, "")
    assert sim.stderr.splitlines() == [f"kubeberth simulate: {out}, document {document}: SchedulingProfile broken: "
                                       f"{field}"]
    # without the refused profile: simulated, the Shadow one noted and left out
    kept = tmp_path / "kept.yaml"
    kept.write_text(yaml.safe_dump_all([o for o in objects if o["metadata"]["name"] != "broken"]))
    sim = subprocess.run([sys.executable, "-m", "kubeberth.cli", "simulate", str(kept), "-o", "json"],
                         capture_output=True, text=True, timeout=120)
    assert sim.returncode == 0, sim.stderr
    assert "SchedulingProfile candidate is mode: Shadow: it schedules nothing" in sim.stderr
    assert {p["pod"]: p["status"] for p in json.loads(sim.stdout)["pods"]}["team-a/web-0"] == "Scheduled"
