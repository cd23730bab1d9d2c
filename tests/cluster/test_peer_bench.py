"""The peer benchmark's parts on the real API server: the null binder (tools/k8s/cmd/nullbinder)
binds round-robin and writes one Scheduled event per binding; the DRA case's objects and the
resourceclaim controller's part the harness plays are what upstream kube-scheduler needs to
allocate the claims of pods made from a ResourceClaimTemplate; the gang case's plane and gates
are what both schedulers need to schedule its PodGroups."""

from __future__ import annotations

import asyncio
import os
from collections import Counter

import pytest
from benchmarks import peer_cases as pc
from benchmarks.peer import start_scheduler, started_control_plane

from .control_plane import ADMIN_TOKEN, ControlPlane
from .kube import Kube, as_created, eventually, node, pod


def _null_binder(plane: ControlPlane) -> None:
    if not os.access(plane.bin / "nullbinder", os.X_OK):
        pytest.skip(f"{plane.bin / 'nullbinder'} not built: run `make control-plane`")


async def test_null_binder_binds_round_robin_with_one_scheduled_event_each(
        control_plane: ControlPlane, kube: Kube) -> None:
    _null_binder(control_plane)
    for i in range(3):
        await kube.create("nodes", node(f"n-{i}"))
    for i in range(6):
        await kube.create("pods", as_created(pod(f"p-{i}")))
    await kube.create("pods", as_created(pod("elsewhere", scheduler="another-scheduler")))
    binder = start_scheduler("nullbinder", control_plane).process
    try:
        async def bound() -> dict[str, str] | None:
            pods = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in await kube.list("pods", "default")}
            return pods if sum(1 for n in pods.values() if n) == 6 else None

        pods = await eventually(bound, what="6 pods bound")
        assert pods.pop("elsewhere") is None  # another scheduler's pod is left alone
        assert Counter(pods.values()) == {"n-0": 2, "n-1": 2, "n-2": 2}

        async def scheduled() -> list[dict[str, object]] | None:
            events = await kube.list("events", "default", fieldSelector="reason=Scheduled")
            return events if len(events) == 6 else None

        events = await eventually(scheduled, what="6 Scheduled events")
        assert sorted(str(e["message"]) for e in events) == sorted(
            f"Successfully assigned default/{name} to {n}" for name, n in pods.items())
        await asyncio.sleep(1.0)
        assert len(await kube.list("events", "default", fieldSelector="reason=Scheduled")) == 6
    finally:
        binder.stop()


async def test_dra_template_case_is_allocated_by_kube_scheduler(control_plane: ControlPlane, kube: Kube) -> None:
    [case] = pc.select(["SchedulingWithResourceClaimTemplate/5000pods_500nodes"], nodes=2, init=15, pods=3)
    await case.setup(kube)
    init_claims = await kube.list("resourceclaims", "init")
    assert len(init_claims) == 15 and all(c["status"]["allocation"] for c in init_claims)
    await pc.create_all(kube, "pods", case.pods("init"), after=case.created)
    await pc.create_all(kube, "pods", case.pods("measure"), after=case.created)
    sched = start_scheduler("kube-scheduler", control_plane).process
    try:
        async def allocated() -> dict[str, object] | None:
            figures = await case.check(kube)
            return figures if figures["claims_allocated"] == 3 else None

        assert await eventually(allocated, timeout=60.0, what="3 claims allocated") == {
            "claims": 3, "claims_allocated": 3}
        pods = await kube.list("pods", "test")
        assert all(p["spec"].get("nodeName") for p in pods) and len(pods) == 3
        # 15 of the 20 devices were taken by the init claims: the pods' devices are the other 5.
        taken = {(r["pool"], r["device"]) for c in [*init_claims, *await kube.list("resourceclaims", "test")]
                 for r in c["status"]["allocation"]["devices"]["results"]}
        assert len(taken) == 18
    finally:
        sched.stop()
        await kube.delete_all("pods", "test", grace_period=0)
        await kube.delete_all("pods", "default", grace_period=0)


@pytest.mark.parametrize("peer", ["kube-scheduler", "kubeberth"])
async def test_gang_case_is_scheduled_by_each_scheduler_with_the_gate_on(peer: str) -> None:
    """The pod-group workloads' plane (kube-apiserver serving scheduling.k8s.io/v1beta1) and the
    schedulers' --feature-gates as the harness starts them: both gangs bound whole, each PodGroup
    marked scheduled by the pod-group cycle."""
    [case] = pc.select(["GangScheduling/5000Nodes_1000Gangs_3000Pods"], nodes=2, pods=6)
    with started_control_plane(feature_gates=case.feature_gates) as plane:
        async with Kube(plane.url, ADMIN_TOKEN, plane.ssl_context()) as kube:
            await case.setup(kube)
            await pc.create_all(kube, "pods", case.pods("measure"), after=case.created)
            sched = start_scheduler(peer, plane, feature_gates=case.feature_gates).process
            try:
                async def scheduled() -> list[dict[str, object]] | None:
                    groups = await kube.list("podgroups", "gang-ns-0")
                    done = [g for g in groups if any(c["type"] == "PodGroupInitiallyScheduled" and
                                                     c["status"] == "True"
                                                     for c in (g.get("status") or {}).get("conditions") or ())]
                    return groups if len(done) == 2 else None

                await eventually(scheduled, timeout=60.0, what="2 PodGroups scheduled")

                # The condition is written when the group's cycle ends; its bindings may still
                # be in flight then (kube-scheduler's pods carry only nominatedNodeName a moment).
                async def bound() -> int | None:
                    pods = await kube.list("pods", "gang-ns-0")
                    return len(pods) if len(pods) == 6 and all(p["spec"].get("nodeName") for p in pods) else None

                assert await eventually(bound, timeout=30.0, what="the 6 pods bound") == 6
            finally:
                sched.stop()
