"""Coscheduling (examples/plugins/coscheduling, installed by `make install`) against a real API
server: the PodGroup CRD of scheduler-plugins installed as its README says, a SchedulingProfile
enabling the plugin, `kubeberth run` finding it through its entry point, gang scheduling, the
Permit timeout, and the PodGroup status its kopf handlers keep.

The test plays the kubelet where one is needed (pod phases): there is none here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from .conftest import Operators, installed_plugins
from .control_plane import ROOT, ControlPlane, kubectl
from .kube import EVENTS_V1, Kube, eventually, node, pod
from .test_rbac import Permission, granted, used

pytestmark = pytest.mark.cluster

PLUGIN = ROOT / "examples" / "plugins" / "coscheduling"
PODGROUPS = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups"
LABEL = "scheduling.x-k8s.io/pod-group"


@pytest.fixture
def podgroup_crd(control_plane: ControlPlane) -> Iterator[None]:
    """The CRD and RBAC are the session's (conftest.py installs them with the plugin); the
    PodGroups a test made go after it."""
    if "kubeberth-coscheduling" not in installed_plugins():
        pytest.skip("kubeberth-coscheduling is not installed in this environment (make install installs it)")
    yield
    kubectl(control_plane, "delete", "podgroups", "--all", "-A", "--wait=true", check=False)


def profile(args: dict[str, Any] | None = None) -> dict[str, Any]:
    """scheduler-plugins' sample configuration as a SchedulingProfile."""
    spec: dict[str, Any] = {
        "schedulerName": "default-scheduler",
        "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                    "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}},
    }
    if args:
        spec["pluginConfig"] = [{"name": "Coscheduling", "args": args}]
    return {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile",
            "metadata": {"name": "default"}, "spec": spec}


def podgroup(name: str, min_member: int, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"minMember": min_member, **spec}}


def member(name: str, group: str, cpu: str = "1") -> dict[str, Any]:
    return pod(name, cpu=cpu, memory="100Mi", labels={LABEL: group})


async def fresh(kube: Kube) -> None:
    # A CRD just established may answer 429 (storage initializing) for a moment.
    listed = await eventually(lambda: kube.request("GET", PODGROUPS), what="PodGroups listed")
    for pg in listed.get("items") or []:
        await kube.request("DELETE", f"{PODGROUPS}/{pg['metadata']['name']}", ok=(200, 202, 404))


async def accepted(kube: Kube, name: str = "default") -> dict[str, Any] | None:
    prof = await kube.get("schedulingprofiles", name)
    conds = {c["type"]: c for c in (prof.get("status") or {}).get("conditions") or []}
    got = conds.get("Accepted")
    return got if got is not None and got.get("status") == "True" else None


async def bound(kube: Kube, names: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name in names:
        where = (await kube.get("pods", name, "default"))["spec"].get("nodeName")
        if where:
            out[name] = where
    return out


async def group_status(kube: Kube, name: str) -> dict[str, Any]:
    return dict((await kube.request("GET", f"{PODGROUPS}/{name}")).get("status") or {})


async def failed_messages(kube: Kube, name: str) -> list[str]:
    events = await kube.list("events", "default", fieldSelector=f"involvedObject.name={name}")
    return [e["message"] for e in events if e["reason"] == "FailedScheduling"]


async def test_a_group_that_fits_three_at_a_time_waits_then_binds_all_at_once(
        kube: Kube, operators: Operators, podgroup_crd: None) -> None:
    await fresh(kube)
    for i in range(3):
        await kube.create("nodes", node(f"n{i}", cpu="1"))
    await kube.create("schedulingprofiles", profile())
    op = operators.start()
    await eventually(lambda: accepted(kube), what="the profile enabling Coscheduling accepted")
    await kube.request("POST", PODGROUPS, body=podgroup("job", 4))
    names = [f"w{i}" for i in range(4)]
    for name in names:
        await kube.create("pods", member(name, "job"))
    # Each member is tried (three wait at Permit, the fourth finds no node and the group is
    # rejected), and nothing is bound while the room is short.
    for name in names:
        await eventually(lambda n=name: failed_messages(kube, n), what=f"{name} FailedScheduling", timeout=60)
    messages = [m for n in names for m in await failed_messages(kube, n)]
    assert any("gets rejected due to Pod" in m and "is unschedulable even after PostFilter" in m for m in messages)
    for _ in range(30):
        assert await bound(kube, names) == {}
        await asyncio.sleep(0.1)
    # A fourth node: the whole group binds, one pod per node.
    await kube.create("nodes", node("n3", cpu="1"))
    placed = await eventually(lambda: _all_bound(kube, names), what="all four bound", timeout=60)
    assert sorted(placed.values()) == ["n0", "n1", "n2", "n3"]
    # In one go: three members waited at Permit and were allowed together when the fourth came.
    assert 'scheduler_permit_wait_duration_seconds_count{result="Success"} 3.0' in op.metrics()


async def _all_bound(kube: Kube, names: list[str]) -> dict[str, str] | None:
    got = await bound(kube, names)
    return got if len(got) == len(names) else None


async def test_a_quorum_that_never_comes_is_released_after_its_timeout_and_retried(
        kube: Kube, operators: Operators, podgroup_crd: None) -> None:
    await fresh(kube)
    for i in range(2):
        await kube.create("nodes", node(f"n{i}", cpu="1"))
    # A gap of one in three is within podGroupRejectPercentage 50: PostFilter leaves the two
    # placed members waiting, and only the group's timeout releases them.
    await kube.create("schedulingprofiles", profile({"podGroupRejectPercentage": 50}))
    operators.start()
    await eventually(lambda: accepted(kube), what="profile accepted")
    await kube.request("POST", PODGROUPS, body=podgroup("job", 3, scheduleTimeoutSeconds=2))
    for name in ("w0", "w1"):
        await kube.create("pods", member(name, "job"))
    await kube.create("pods", member("w2", "job", cpu="2"))  # fits no node
    timeout = "rejected due to timeout after waiting 2s at plugin Coscheduling"

    async def released() -> list[str] | None:
        got = [m for n in ("w0", "w1") for m in await failed_messages(kube, n)]
        return got if any(m == f"0/1 nodes are available: 1 {timeout}." for m in got) else None

    # (Before w2 exists, the first members are turned away for want of siblings.)
    await eventually(released, what="the Permit timeout", timeout=60)

    async def retried() -> int | None:
        events = [e for n in ("w0", "w1")
                  for e in await kube.list(EVENTS_V1, "default", fieldSelector=f"regarding.name={n}")
                  if e["reason"] == "FailedScheduling"]
        total = sum(int((e.get("series") or {}).get("count") or 1) for e in events)  # a repeat: a series
        return total if total >= 3 else None

    await eventually(retried, what="the released members tried again", timeout=60)
    assert await bound(kube, ["w0", "w1", "w2"]) == {}


async def test_the_podgroup_status_follows_its_pods(kube: Kube, operators: Operators, podgroup_crd: None,
                                                   control_plane: ControlPlane) -> None:
    await fresh(kube)
    started = time.time()
    for i in range(2):
        await kube.create("nodes", node(f"n{i}", cpu="2"))
    await kube.create("schedulingprofiles", profile())
    operators.start()
    await eventually(lambda: accepted(kube), what="profile accepted")
    await kube.request("POST", PODGROUPS, body=podgroup("job", 2))
    await eventually(lambda: _phase(kube, "job", "Pending"), what="a new group is Pending")
    for name in ("w0", "w1"):
        await kube.create("pods", member(name, "job"))
    await eventually(lambda: _all_bound(kube, ["w0", "w1"]), what="both bound")
    status = await eventually(lambda: _phase(kube, "job", "Scheduling"), what="Scheduling with its pods")
    assert status.get("scheduleStartTime")
    # The kubelet's part: the pods run, then finish.
    for name in ("w0", "w1"):
        await kube.patch("pods", name, {"status": {"phase": "Running"}}, "default", subresource="status")
    status = await eventually(lambda: _phase(kube, "job", "Running"), what="Running")
    assert status.get("running") == 2
    for name in ("w0", "w1"):
        await kube.patch("pods", name, {"status": {"phase": "Succeeded"}}, "default", subresource="status")
    status = await eventually(lambda: _phase(kube, "job", "Finished"), what="Finished")
    assert (status.get("succeeded"), status.get("running", 0)) == (2, 0)
    # kopf's handlers of the plugin leave no bookkeeping on the objects they watch.
    group = await kube.request("GET", f"{PODGROUPS}/job")
    assert not group["metadata"].get("finalizers") and not group["metadata"].get("annotations")
    for name in ("w0", "w1"):
        meta = (await kube.get("pods", name, "default"))["metadata"]
        assert not meta.get("finalizers") and not meta.get("annotations")
    # The plugin's RBAC, judged by the audit log: nothing refused, every grant used.
    operators.stop_all()
    mine = granted(PLUGIN / "manifests" / "rbac.yaml")

    def audited() -> set[Permission] | None:
        asked, refused = used(control_plane.audit_events(), started)
        assert [r for r in refused if "podgroups" in r] == []
        return asked if mine <= asked else None

    deadline = time.monotonic() + 10
    while audited() is None and time.monotonic() < deadline:  # the audit backend writes in batches
        await asyncio.sleep(0.5)
    asked = audited()
    assert asked is not None, f"granted but not used: {sorted(mine - used(control_plane.audit_events(), started)[0])}"


async def _phase(kube: Kube, name: str, phase: str) -> dict[str, Any] | None:
    status = await group_status(kube, name)
    return status if status.get("phase") == phase else None


def _kopf_reads(control_plane: ControlPlane, since: float) -> set[tuple[str, str]]:
    """(resource, verb) of the lists and watches kopf (its user agent) sent after `since`."""
    out = set()
    for e in control_plane.audit_events():
        received = e.get("requestReceivedTimestamp") or ""
        if not received or datetime.fromisoformat(received.replace("Z", "+00:00")).timestamp() < since:
            continue
        if e.get("userAgent", "").startswith("kopf/") and e.get("verb") in ("list", "watch"):
            out.add(((e.get("objectRef") or {}).get("resource", ""), e["verb"]))
    return out


async def test_the_controller_runs_only_once_a_profile_enables_coscheduling(
        kube: Kube, operators: Operators, podgroup_crd: None, control_plane: ControlPlane) -> None:
    """Installed but enabled by no profile, the plugin costs nothing: no kopf watch of pods or PodGroups,
    no PodGroup status; a SchedulingProfile enabling it, created on the running scheduler, starts its
    controller (the new group is Pending), and its pods are gang-scheduled."""
    await fresh(kube)
    started = time.time()
    await kube.create("nodes", node("n0", cpu="4"))
    op = operators.start()  # upstream's default profile only
    await kube.request("POST", PODGROUPS, body=podgroup("job", 2))
    await kube.create("pods", pod("plain", cpu="100m", memory="10Mi"))
    await eventually(lambda: bound(kube, ["plain"]), what="a pod of the default profile bound")
    for _ in range(20):  # two seconds: the controller would have set Pending within a few ms
        assert await group_status(kube, "job") == {}
        await asyncio.sleep(0.1)
    await asyncio.sleep(1.5)  # the audit backend writes in batches
    assert _kopf_reads(control_plane, started) == set()
    assert "no profile in force enables" not in op.log() and "Starting the" not in op.log()

    await kube.create("schedulingprofiles", profile())
    await eventually(lambda: accepted(kube), what="the profile enabling Coscheduling accepted")
    await eventually(lambda: _phase(kube, "job", "Pending"), what="the controller set the group Pending")
    for name in ("w0", "w1"):
        await kube.create("pods", member(name, "job"))
    await eventually(lambda: _all_bound(kube, ["w0", "w1"]), what="both members bound")
    await eventually(lambda: _phase(kube, "job", "Scheduling"), what="Scheduling with its pods")

    def kopf_watches() -> set[tuple[str, str]] | None:
        reads = _kopf_reads(control_plane, started)
        return reads if {("pods", "watch"), ("podgroups", "watch")} <= reads else None

    deadline = time.monotonic() + 10
    while kopf_watches() is None and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
    assert kopf_watches() is not None, _kopf_reads(control_plane, started)
    assert "Starting the 3 kopf handler(s) of plugin(s) Coscheduling" in op.log()

    # The profile deleted (upstream's default profile serves default-scheduler again): the controller
    # stops, and a new group gets no status.
    await kube.delete("schedulingprofiles", "default")
    await eventually(lambda: _logged(op, "Stopping the kopf handlers of plugin(s) Coscheduling"),
                     what="the controller stopped")
    await kube.request("POST", PODGROUPS, body=podgroup("later", 1))
    for _ in range(20):
        assert await group_status(kube, "later") == {}
        await asyncio.sleep(0.1)


async def _logged(op: Any, line: str) -> bool:
    return line in op.log()
