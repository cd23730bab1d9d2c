"""A pod a volume plugin rejected waits in the unschedulable pool through changes to claims it
does not mount, and is tried again when its own claim appears or changes (the volume plugins'
QueueingHints over the scheduler's event handlers)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth.clock import FakeClock
from kubeberth.config import SchedulingProfileSpec
from kubeberth.queue import UNSCHEDULABLE
from kubeberth.scheduler import SCHEDULED, Scheduler
from kubeberth.testing import InMemoryClient
from tests.builders import node_dict, pod_dict

NO_PREEMPTION = {"plugins": {"postFilter": {"disabled": [{"name": "*"}]}}}
PVC = "PersistentVolumeClaim"


def claim(name: str, volume: str = "", version: str = "1") -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "storageClassName": "",
                            "resources": {"requests": {"storage": "1Gi"}}}
    if volume:
        spec["volumeName"] = volume
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": version},
            "spec": spec}


def _scheduler() -> Scheduler:
    sched = Scheduler(clock=FakeClock())
    sched.ctx.client = InMemoryClient(sched)
    sched.add_profile_spec(SchedulingProfileSpec.model_validate(NO_PREEMPTION))
    sched.on_node_add(node_dict("n1"))
    sched.on_object("PersistentVolume", {"metadata": {"name": "pv1"}, "spec": {
        "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": ""}})
    return sched


def _state(sched: Scheduler, name: str) -> str:
    got = sched.queue.get(sched._uids[f"default/{name}"])
    assert got is not None
    return got[0]


@pytest.mark.parametrize("existing, rejector, fix", [
    # The claim exists but is unbound with no delayed binding: VolumeBinding rejects; the
    # claim getting its volume (an update) lets the pod in.
    (claim("data"), "VolumeBinding", claim("data", volume="pv1", version="2")),
    # The claim does not exist: VolumeRestrictions (first in PreFilter order) rejects; its
    # creation, already bound, lets the pod in.
    (None, "VolumeRestrictions", claim("data", volume="pv1")),
], ids=["binding-claim-updated", "restrictions-claim-created"])
async def test_only_an_event_on_the_pods_own_claim_requeues_it(existing: dict[str, Any] | None, rejector: str,
                                                               fix: dict[str, Any]) -> None:
    sched = _scheduler()
    if existing is not None:
        sched.on_object(PVC, existing)
    sched.on_pod_add(pod_dict("app", volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]))
    await sched.run_until_idle(max_attempts=1)
    app = sched.queue.get(sched._uids["default/app"])
    assert app is not None and app[0] == UNSCHEDULABLE
    assert app[1].unschedulable_plugins == {rejector}

    # Another claim created and updated, and a claim of the same name in another namespace.
    sched.on_object(PVC, claim("other"))
    sched.on_object(PVC, claim("other", volume="pv-other", version="2"))
    sched.on_object(PVC, {**claim("data"), "metadata": {"name": "data", "namespace": "team-b", "uid": "b"}})
    assert _state(sched, "app") == UNSCHEDULABLE

    sched.on_object(PVC, fix)
    assert _state(sched, "app") != UNSCHEDULABLE
    await sched.run_until_idle()
    assert (sched.outcomes["default/app"].status, sched.outcomes["default/app"].node) == (SCHEDULED, "n1")
