"""PodGroups created on the real kube-apiserver v1.37.2 (GenericWorkload, with and without
PodGroupPreemptionPolicy): the spec.priority, priorityClassName and preemptionPolicy its Priority
admission stores, and its refusals word for word, are those simulate's
`PriorityResolver.admit_pod_group` gives under the same gates (tests/whatif/test_pod_group_priority.py's
table, each case under both).

Cases the API server cannot be given are left out: two globalDefault classes (its admission refuses
the second), a class whose preemptionPolicy is not one of the two (its validation refuses it). The
PodGroups that carry spec.priority already, naming no class or one the input lacks, are a dump of a
cluster to simulate, taken as stored; created here they are refused, as shown."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kubeberth.priority import PriorityResolver, Refused
from tests.whatif.test_pod_group_priority import ADMISSION_CASES, FORBIDDEN, pod_group

from .control_plane import ADMIN_TOKEN, ControlPlane
from .kube import ApiError, Kube, eventually

pytestmark = pytest.mark.cluster

NOT_CREATABLE = {"two-defaults-the-lowest", "policy-class-invalid"}
# kubeberth takes these as stored objects; the API server refuses to create them
STORED = {"stored-class-not-in-the-input": "no PriorityClass with name high was found",
          "stored-without-class": "priority set in the pod group (42) must match the priority computed (0) based "
                                  "on the priority class set in the spec",
          "stored-above-highest": "priority set in the pod group (1000000001) must match the priority computed (0) "
                                  "based on the priority class set in the spec"}
FIELDS = ("priorityClassName", "priority", "preemptionPolicy")


@pytest.fixture(scope="module", params=[False, True], ids=["GenericWorkload", "PodGroupPreemptionPolicy"])
def gated(request: pytest.FixtureRequest) -> Iterator[tuple[ControlPlane, bool]]:
    policy_gate = bool(request.param)
    gates = "GenericWorkload=true" + (",PodGroupPreemptionPolicy=true" if policy_gate else "")
    plane = ControlPlane(feature_gates=gates).start()
    try:
        yield plane, policy_gate
    finally:
        plane.stop()


async def remove_pod_groups(kube: Kube) -> None:
    """Deleted, their finalizer (no controller here removes it) taken off, gone."""
    await kube.delete_all("podgroups", "default")
    for g in await kube.list("podgroups", "default"):
        await kube.patch("podgroups", g["metadata"]["name"], {"metadata": {"finalizers": None}}, "default")

    async def gone() -> bool | None:
        return not await kube.list("podgroups", "default") or None

    await eventually(gone, timeout=30, interval=0.1, what="the PodGroups gone")


async def create_until(kube: Kube, spec: dict[str, Any], expected: dict[str, Any] | str) -> dict[str, Any] | str:
    """The PodGroup created: its admitted fields, or the API server's refusal; again (for up to
    5 s) while that is not `expected`. The last answer."""
    deadline = time.monotonic() + 5
    while True:
        try:
            created = await kube.create("podgroups", pod_group(**spec), "default")
            theirs: dict[str, Any] | str = {k: v for k, v in created["spec"].items() if k in FIELDS}
        except ApiError as exc:
            assert exc.status in (403, 422), exc  # admission's Forbidden, validation's Invalid
            theirs = str(exc.body["message"])
        if theirs == expected or time.monotonic() > deadline:
            return theirs
        await remove_pod_groups(kube)
        await asyncio.sleep(0.2)


def _ours(classes: list[dict[str, Any]], spec: dict[str, Any], policy_gate: bool) -> dict[str, Any] | str:
    resolver = PriorityResolver()
    for c in classes:
        resolver.put(c)
    try:
        admitted = resolver.admit_pod_group(pod_group(**spec), preemption_policy_gate=policy_gate)
    except Refused as exc:
        return str(exc)
    return {k: v for k, v in admitted["spec"].items() if k in FIELDS}


async def test_the_api_server_admits_pod_groups_as_simulate_does(gated: tuple[ControlPlane, bool]) -> None:
    plane, policy_gate = gated
    checked = []
    async with Kube(plane.url, ADMIN_TOKEN, plane.ssl_context()) as kube:
        for case in ADMISSION_CASES:
            classes, spec, _, _ = case.values  # every case under this plane's gates, as simulate would
            if case.id in NOT_CREATABLE:
                continue
            # the table's class "odd" (an invalid preemptionPolicy) is refused by validation
            classes = [c for c in classes if c.get("preemptionPolicy") in (None, "PreemptLowerPriority", "Never")]
            for c in classes:
                await kube.create("priorityclasses", c)
            ours = STORED.get(str(case.id))
            expected = FORBIDDEN + ours if ours is not None else _ours(classes, spec, policy_gate)
            try:
                # admission reads the classes from an informer: the ones just created (or deleted
                # for the case before) may take a moment to show there
                theirs = await create_until(kube, spec, expected)
                assert theirs == expected, case.id
                checked.append(case.id)
            finally:
                await remove_pod_groups(kube)
                for c in classes:
                    await kube.delete("priorityclasses", c["metadata"]["name"])
    assert "unknown-class" in checked and len(checked) >= 5, checked
