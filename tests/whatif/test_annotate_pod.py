"""The in-memory client's annotate_pod (plugin API 1.5): a pending pod's annotations travel
with its binding into the scheduler's copy; a bound pod's copy is replaced; a pod that is gone
is left alone; what was written is recorded for simulate's outcomes."""

from __future__ import annotations

from kubeberth.clock import FakeClock
from kubeberth.config import SchedulingProfileSpec
from kubeberth.model import Pod
from kubeberth.scheduler import SCHEDULED, Scheduler
from kubeberth.testing import InMemoryClient
from tests.builders import node_dict, pod_dict


async def test_annotations_reach_the_cache_and_the_record() -> None:
    sched = Scheduler(clock=FakeClock())
    client = InMemoryClient(sched)
    sched.ctx.client = client
    sched.add_profile_spec(SchedulingProfileSpec.model_validate({}))
    sched.on_node_add(node_dict("n1"))
    raw = pod_dict("p", cpu="1")
    raw["metadata"]["annotations"] = {"keep": "me"}
    pending = sched.on_pod_add(raw)
    assert pending is not None
    await client.annotate_pod(pending, {"example.com/chosen": "a"})  # pending: kept for its binding
    await sched.run_until_idle()
    assert sched.outcomes["default/p"].status == SCHEDULED
    cached = sched.cache.get_pod(pending.uid)
    assert cached is not None and cached.annotations == {"keep": "me", "example.com/chosen": "a"}
    await client.annotate_pod(cached, {"example.com/chosen": "b"})  # bound: the cached copy changes
    cached = sched.cache.get_pod(pending.uid)
    assert cached is not None and cached.annotations["example.com/chosen"] == "b"
    assert client.annotations_written == {"default/p": {"example.com/chosen": "b"}}
    await client.annotate_pod(Pod(pod_dict("gone")), {"x": "y"})  # unknown: nothing happens
    assert "default/gone" not in client.annotations_written
