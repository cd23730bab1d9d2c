"""Gangs on the real kube-apiserver v1.37.2 (GenericWorkload on, scheduling.k8s.io/v1beta1 served),
with kube-scheduler v1.37.2 run on the same objects as the oracle.

- `--feature-gates` errors: kubeberth's messages are the binary's own, word for word.
- The same scenario through kube-scheduler, then through `kubeberth run` (ServiceAccount token,
  so the RBAC for podgroups and podgroups/status is shown to be enough): a gang that fits is
  bound whole, one that cannot reach minCount is bound not at all, a gang short of pods waits
  (no attempt, no condition) until its last pod arrives, pods created before their PodGroup wait
  for it, a 10-pod gang waits for its last pod and then for a member's scheduling gate to go.
  Every pod's node-or-not, every PodScheduled=False message and every PodGroupInitiallyScheduled
  condition are compared with kube-scheduler's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from kubeberth.features import FeatureGateError, FeatureGates

from ..test_features import REFUSED_AS_UPSTREAM
from .conftest import NAMESPACE, SERVICE_ACCOUNT, OperatorProcess, install_kubeberth
from .control_plane import ADMIN_TOKEN, ControlPlane, Process, bin_dir, kubectl
from .kube import Kube, eventually, node, pod
from .test_rbac import POD_GROUP_GRANTS, used

pytestmark = pytest.mark.cluster

GATES = "GenericWorkload=true"


# ---- the flag, against the binary ---------------------------------------------------------

def upstream_gate_error(value: str) -> str:
    """What kube-scheduler v1.37.2 says of `--feature-gates value` (its "command failed" err)."""
    proc = subprocess.run([str(bin_dir() / "kube-scheduler"), f"--feature-gates={value}", "--secure-port=0",
                           "--kubeconfig=/nonexistent"], capture_output=True, text=True, timeout=30)
    found = re.search(r'"command failed" err="((?:[^"\\]|\\.)*)"', proc.stderr)
    assert found is not None, proc.stderr[-2000:]
    return str(json.loads(f'"{found.group(1)}"'))


@pytest.mark.parametrize(("value", "message"), REFUSED_AS_UPSTREAM)
def test_feature_gate_errors_are_kube_schedulers(value: str, message: str) -> None:
    with pytest.raises(FeatureGateError) as err:
        FeatureGates.parse(value)
    assert str(err.value) == upstream_gate_error(value) == message


# ---- the scenario ----------------------------------------------------------------------------

def pod_group(name: str, min_count: int | None) -> dict[str, Any]:
    policy = {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}}
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"schedulingPolicy": policy}}


def member(group: str, i: int, cpu: str) -> dict[str, Any]:
    return pod(f"{group}-{i}", cpu=cpu, memory="100Mi", schedulingGroup={"podGroupName": group})


def pod_state(p: dict[str, Any]) -> tuple[bool, str]:
    """(bound, "reason: message" of PodScheduled=False, or "")."""
    cond = next((c for c in (p.get("status") or {}).get("conditions") or [] if c["type"] == "PodScheduled"), None)
    failed = cond is not None and cond.get("status") == "False"
    return bool(p["spec"].get("nodeName")), f"{cond.get('reason')}: {cond.get('message', '')}" if failed else ""


def group_state(g: dict[str, Any]) -> tuple[str, str, str] | None:
    cond = next((c for c in (g.get("status") or {}).get("conditions") or []
                 if c["type"] == "PodGroupInitiallyScheduled"), None)
    return (cond["status"], cond["reason"], cond.get("message", "")) if cond is not None else None


async def settled(kube: Kube, names: list[str], *, quiet: float = 2.5, timeout: float = 40.0
                  ) -> dict[str, tuple[bool, str]]:
    """The pods' states once none has changed for `quiet` seconds."""
    last: dict[str, tuple[bool, str]] | None = None
    since = deadline = time.monotonic()
    deadline += timeout
    while time.monotonic() < deadline:
        now = {p["metadata"]["name"]: pod_state(p) for p in await kube.list("pods", "default")
               if p["metadata"]["name"] in names}
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return now
        await asyncio.sleep(0.2)
    raise AssertionError(f"pods did not settle: {last}")


async def scenario(kube: Kube) -> dict[str, Any]:
    """Two 2-CPU nodes. Returns what became of every pod and PodGroup."""
    for n in ("n1", "n2"):
        await kube.create("nodes", node(n, cpu="2", memory="4Gi"))
    await kube.create("priorityclasses", {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                          "metadata": {"name": "high"}, "value": 1000})
    await kube.create("priorityclasses", {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                          "metadata": {"name": "never"}, "value": 0, "preemptionPolicy": "Never"})
    out: dict[str, Any] = {}
    # a gang that fits: bound whole
    await kube.create("podgroups", pod_group("fits", 3), "default")
    for i in range(3):
        await kube.create("pods", member("fits", i, "500m"), "default")
    out["fits"] = await settled(kube, [f"fits-{i}" for i in range(3)])
    # a gang that cannot reach minCount: none bound
    await kube.create("podgroups", pod_group("toobig", 3), "default")
    for i in range(3):
        await kube.create("pods", member("toobig", i, "1500m"), "default")
    out["toobig"] = await settled(kube, [f"toobig-{i}" for i in range(3)])
    # short of pods: held back (no attempt), then whole once its last pod comes
    await kube.create("podgroups", pod_group("short", 3), "default")
    for i in range(2):
        await kube.create("pods", member("short", i, "100m"), "default")
    out["short-waiting"] = await settled(kube, ["short-0", "short-1"])
    await kube.create("pods", member("short", 2, "100m"), "default")
    out["short"] = await settled(kube, [f"short-{i}" for i in range(3)])
    # pods before their PodGroup: they wait for it
    for i in range(2):
        await kube.create("pods", member("late", i, "100m"), "default")
    out["late-waiting"] = await settled(kube, ["late-0", "late-1"])
    await kube.create("podgroups", pod_group("late", 2), "default")
    out["late"] = await settled(kube, ["late-0", "late-1"])
    # pods of one group with different priorities: a SchedulerError for each and on the PodGroup
    await kube.create("podgroups", pod_group("mixed", 2), "default")
    await kube.create("pods", member("mixed", 0, "100m"), "default")
    await kube.create("pods", {**member("mixed", 1, "100m"),
                               "spec": {**member("mixed", 1, "100m")["spec"], "priorityClassName": "high"}}, "default")
    out["mixed"] = await settled(kube, ["mixed-0", "mixed-1"])
    # the basic policy: placed in one cycle, no quorum
    await kube.create("podgroups", pod_group("basic", None), "default")
    for i in range(2):
        await kube.create("pods", member("basic", i, "100m"), "default")
    out["basic"] = await settled(kube, ["basic-0", "basic-1"])
    # a wide gang (a queue entry of 8 pods or more keeps its pods' PreEnqueue answers): 9 of its 10
    # pods, one with a scheduling gate, are held back; the tenth comes, the gate still holds the
    # group; the gate is removed: bound whole
    await kube.create("podgroups", pod_group("wide", 10), "default")
    for i in range(9):
        body = member("wide", i, "100m")
        if i == 4:
            body["spec"]["schedulingGates"] = [{"name": "example.com/hold"}]
        await kube.create("pods", body, "default")
    out["wide-waiting"] = await settled(kube, [f"wide-{i}" for i in range(9)])
    await kube.create("pods", member("wide", 9, "100m"), "default")
    out["wide-gated"] = await settled(kube, [f"wide-{i}" for i in range(10)])
    await kube.patch("pods", "wide-4", {"spec": {"schedulingGates": None}}, "default")
    out["wide"] = await settled(kube, [f"wide-{i}" for i in range(10)])
    # a gang of pods that may not preempt: DefaultPreemption's PodGroupPostFilter says so
    await kube.create("podgroups", pod_group("never", 3), "default")
    for i in range(3):
        await kube.create("pods", {**member("never", i, "1500m"),
                                   "spec": {**member("never", i, "1500m")["spec"], "priorityClassName": "never"}},
                          "default")
    out["never"] = await settled(kube, [f"never-{i}" for i in range(3)])
    out["groups"] = {g["metadata"]["name"]: group_state(g) for g in await kube.list("podgroups", "default")}
    return out


async def reset(kube: Kube) -> None:
    await kube.delete_all("pods", "default", grace_period=0)
    await kube.delete_all("podgroups", "default")
    await kube.delete_all("nodes")
    await kube.delete("priorityclasses", "high")
    await kube.delete("priorityclasses", "never")
    # the API server puts scheduling.k8s.io/podgroup-protection on each PodGroup; the controller
    # that takes it off (kube-controller-manager) does not run here: the test plays it
    for g in await kube.list("podgroups", "default"):
        await kube.patch("podgroups", g["metadata"]["name"], {"metadata": {"finalizers": None}}, "default")

    async def empty() -> bool | None:
        return (not await kube.list("pods", "default") and not await kube.list("podgroups", "default")) or None

    await eventually(empty, timeout=30)


@contextlib.contextmanager
def gated_plane(gates: str) -> Iterator[ControlPlane]:
    """A control plane of its own with `gates` on (kube-apiserver serving scheduling.k8s.io/v1beta1),
    kubeberth's CRDs and manifests applied."""
    plane = ControlPlane(feature_gates=gates).start()
    try:
        install_kubeberth(plane)
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="module")
def gang_plane() -> Iterator[ControlPlane]:
    with gated_plane(GATES) as plane:
        yield plane


@pytest_asyncio.fixture
async def gang_kube(gang_plane: ControlPlane) -> AsyncIterator[Kube]:
    async with Kube(gang_plane.url, ADMIN_TOKEN, gang_plane.ssl_context()) as client:
        await reset(client)
        yield client


def kubeberth_kubeconfig(plane: ControlPlane) -> Path:
    token = kubectl(plane, "create", "token", SERVICE_ACCOUNT, "-n", NAMESPACE, "--duration=1h").stdout.strip()
    return plane.write_kubeconfig(plane.dir / "kubeberth.kubeconfig", token=token,
                                  user=f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}")


def start_kube_scheduler(plane: ControlPlane, gates: str = GATES, logging: tuple[str, ...] = ("-v=2",)) -> Process:
    return plane.start_kube_scheduler(args=(f"--feature-gates={gates}", *logging))


async def test_gangs_as_kube_scheduler_places_them(gang_plane: ControlPlane, gang_kube: Kube) -> None:
    kube = gang_kube
    upstream = start_kube_scheduler(gang_plane)
    try:
        await asyncio.sleep(1)
        expected = await scenario(kube)
    finally:
        upstream.stop()
    await reset(kube)
    started = time.time()
    op = OperatorProcess(gang_plane, kubeberth_kubeconfig(gang_plane), [f"--feature-gates={GATES}"],
                         name="kubeberth-gangs")
    try:
        op.wait_synced()
        got = await scenario(kube)
        metrics = op.metrics()
    finally:
        op.stop()

    # what kube-scheduler did, spelled out: the test would pass on no scheduler at all otherwise
    assert all(bound for bound, _ in expected["fits"].values())
    assert not any(bound for bound, _ in expected["toobig"].values())
    assert expected["short-waiting"] == {"short-0": (False, ""), "short-1": (False, "")}
    assert all(bound for bound, _ in expected["short"].values())
    assert expected["late-waiting"] == {"late-0": (False, ""), "late-1": (False, "")}
    assert all(bound for bound, _ in expected["late"].values())
    assert expected["groups"]["fits"] == ("True", "Scheduled", "")
    assert expected["groups"]["toobig"][:2] == ("False", "Unschedulable")
    assert expected["groups"]["mixed"][:2] == ("False", "SchedulerError")
    assert all(not bound and message.startswith("SchedulerError: ") for bound, message in expected["mixed"].values())
    assert all(bound for bound, _ in expected["basic"].values())
    assert "preemptionPolicy=Never" in expected["groups"]["never"][2]
    assert not any(bound for bound, _ in expected["wide-waiting"].values())
    assert not any(bound for bound, _ in expected["wide-gated"].values())
    assert all(bound for bound, _ in expected["wide"].values()) and len(expected["wide"]) == 10
    assert expected["groups"]["wide"] == ("True", "Scheduled", "")

    assert got == expected  # every pod, every message, every PodGroup condition, word for word

    attempts = {line.split("{")[1].split("}")[0]: float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
                if line.startswith("scheduler_podgroup_schedule_attempts_total{")}
    assert attempts.get('profile="default-scheduler",result="scheduled"', 0) >= 3, attempts  # fits, short, late
    # toobig is retried after its backoff (1s, 2s, ... up to 10s), as upstream: a few attempts, no busy loop
    assert 1 <= attempts.get('profile="default-scheduler",result="unschedulable"', 0) <= 20, attempts
    assert 'scheduler_pending_pods{queue="incomplete"}' in metrics

    # the ServiceAccount's grants for PodGroups were enough, and used (tests/cluster/test_rbac.py leaves them to here)
    def audited() -> tuple[set[Any], list[str]] | None:
        asked, refused = used(gang_plane.audit_events(), started)
        return (asked, refused) if ("scheduling.k8s.io", "podgroups/status", "patch") in asked else None

    deadline = time.monotonic() + 10
    result = audited()
    while result is None and time.monotonic() < deadline:  # the audit backend writes in batches
        await asyncio.sleep(0.5)
        result = audited()
    assert result is not None, "no podgroups/status patch in the audit log"
    asked, refused = result
    assert refused == [], refused
    assert POD_GROUP_GRANTS <= asked


async def test_snapshot_writes_pod_groups_and_simulate_agrees_with_kube_scheduler(
        gang_plane: ControlPlane, gang_kube: Kube, tmp_path: Path) -> None:
    """`kubeberth snapshot` takes the PodGroups (its ServiceAccount may list them); simulate with
    the gate on says of the snapshot what kube-scheduler then does on the cluster."""
    import io
    import sys

    import yaml

    from kubeberth import features
    from kubeberth.whatif.engine import run_simulation

    kube = gang_kube
    for n in ("n1", "n2"):
        await kube.create("nodes", node(n, cpu="2", memory="4Gi"))
    await kube.create("podgroups", pod_group("toobig", 3), "default")
    for i in range(3):
        await kube.create("pods", member("toobig", i, "1500m"), "default")
    out = tmp_path / "snapshot.yaml"
    proc = subprocess.run([sys.executable, "-m", "kubeberth.cli", "snapshot",
                           f"--kubeconfig={kubeberth_kubeconfig(gang_plane)}", "-o", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    objects = [d for d in yaml.safe_load_all(out.read_text()) if d]
    groups = [o for o in objects if o["kind"] == "PodGroup"]
    assert [(g["apiVersion"], g["metadata"]["name"]) for g in groups] == [("scheduling.k8s.io/v1beta1", "toobig")]
    def simulate() -> tuple[Any, Any]:
        with features.override(FeatureGates.parse(GATES)):
            return run_simulation(objects, warn=io.StringIO())

    outcomes, sched = await asyncio.to_thread(simulate)
    simulated = sorted(f"Unschedulable: {o.message}" for o in outcomes)
    simulated_group = (sched.ctx.objects.get("PodGroup", "default/toobig") or {}).get("status", {})["conditions"][0]

    upstream = start_kube_scheduler(gang_plane)
    try:
        states = await settled(kube, [f"toobig-{i}" for i in range(3)])
        group = await kube.get("podgroups", "toobig", "default")
    finally:
        upstream.stop()
    assert not any(bound for bound, _ in states.values())
    # which pod is tried first follows the informer's listing order upstream: the messages as a set
    assert simulated == sorted(message for _, message in states.values())
    assert (simulated_group["status"], simulated_group["reason"], simulated_group["message"]) == group_state(group)


async def test_no_nomination_is_patched_on_a_bound_gang_pod(gang_plane: ControlPlane, gang_kube: Kube) -> None:
    """A gang's pods wait on Permit, nominated to their node (NominatedNodeNameForExpectation), and are
    bound together once the last one is permitted. kube-scheduler writes each nomination before it binds;
    kubeberth once sent both at once, and a nomination landing after the binding was refused (422
    "may not be set on pods that are already bound to a node")."""
    kube = gang_kube
    for n in ("n1", "n2", "n3"):
        await kube.create("nodes", node(n, cpu="8", memory="16Gi"))
    op = OperatorProcess(gang_plane, kubeberth_kubeconfig(gang_plane), [f"--feature-gates={GATES}"],
                         name="kubeberth-gang-writes")
    try:
        op.wait_synced()
        names: list[str] = []
        for g in range(8):
            await kube.create("podgroups", pod_group(f"g{g}", 4), "default")
            for i in range(4):
                await kube.create("pods", member(f"g{g}", i, "100m"), "default")
                names.append(f"g{g}-{i}")
        states = await settled(kube, names, quiet=2.0)
        log = op.log()
    finally:
        op.stop()
    assert all(bound for bound, _ in states.values()), states
    assert "already bound" not in log and "Could not patch the status" not in log, \
        [line for line in log.splitlines() if "patch the status" in line][:5]
