"""Who may preempt, and who may be a victim."""

from __future__ import annotations

import pytest

from kubeberth.framework import Code, Status
from kubeberth.priority import HIGHEST_USER_PRIORITY, SYSTEM_CRITICAL_PRIORITY
from tests.preemption.fakes import Env, node, pod

SYS = HIGHEST_USER_PRIORITY


@pytest.mark.parametrize(
    ("preemptor", "on_n1", "nominated_status", "want_ok", "want_msg"),
    [
        pytest.param(pod("p", prio=10), [], None, True, "", id="default-policy"),
        pytest.param(pod("p", prio=10, policy="PreemptLowerPriority"), [], None, True, "", id="explicit-policy"),
        pytest.param(pod("p", prio=10, policy="Never"), [], None, False,
                     "not eligible due to preemptionPolicy=Never.", id="never"),
        pytest.param(pod("p", prio=10, nominated="n1"), [pod("v", prio=1, node="n1", preempted=True)], None,
                     False, "not eligible due to a terminating pod on the nominated node.",
                     id="lower-priority-victim-terminating-on-nominated-node"),
        pytest.param(pod("p", prio=10, nominated="n1"), [pod("v", prio=1, node="n1")], None, True, "",
                     id="lower-priority-pod-not-terminating"),
        pytest.param(pod("p", prio=10, nominated="n1"), [pod("v", prio=1, node="n1", deleting=True)], None,
                     True, "", id="terminating-for-another-reason-does-not-block"),
        pytest.param(pod("p", prio=10, nominated="n1"), [pod("v", prio=10, node="n1", preempted=True)], None,
                     True, "", id="terminating-pod-of-equal-priority-is-no-victim"),
        pytest.param(pod("p", prio=10, nominated="n1"), [pod("v", prio=20, node="n1", preempted=True)], None,
                     True, "", id="terminating-pod-of-higher-priority-is-no-victim"),
        pytest.param(pod("p", prio=10, nominated="n1"), [pod("v", prio=1, node="n1", preempted=True)],
                     Status.unresolvable("node(s) didn't match Pod's node affinity/selector"), True, "",
                     id="nominated-node-now-unresolvable-preempts-again"),
        pytest.param(pod("p", prio=10, nominated="n1"), [pod("v", prio=1, node="n1", preempted=True)],
                     Status.unschedulable("Insufficient cpu"), False,
                     "not eligible due to a terminating pod on the nominated node.",
                     id="nominated-node-unschedulable-still-waits"),
        pytest.param(pod("p", prio=10, nominated="gone"), [pod("v", prio=1, node="n1", preempted=True)], None,
                     True, "", id="nominated-node-not-in-snapshot"),
        pytest.param(pod("p", prio=10), [pod("v", prio=1, node="n1", preempted=True)], None, True, "",
                     id="not-nominated-terminating-elsewhere-is-irrelevant"),
    ],
)
def test_pod_eligible_to_preempt_others(preemptor, on_n1, nominated_status, want_ok, want_msg):
    env = Env([node("n1")], on_n1)
    assert env.evaluator.pod_eligible_to_preempt_others(preemptor, nominated_status) == (want_ok, want_msg)


def test_nomination_known_only_to_the_nominator_counts():
    """The queue's nominator may know the nomination before the pod's status says so."""
    p = pod("p", prio=10)
    env = Env([node("n1")], [pod("v", prio=1, node="n1", preempted=True)], nominated=[(p, "n1")])
    assert env.evaluator.nominated_node_of(p) == "n1"
    ok, msg = env.evaluator.pod_eligible_to_preempt_others(p, None, env.evaluator.nominated_node_of(p))
    assert (ok, msg) == (False, "not eligible due to a terminating pod on the nominated node.")


@pytest.mark.parametrize(
    ("victim_prio", "preemptor_prio", "allowed"),
    [
        pytest.param(1, 2, True, id="lower"),
        pytest.param(2, 2, False, id="equal"),
        pytest.param(3, 2, False, id="higher"),
        pytest.param(-5, 0, True, id="negative-lower"),
        pytest.param(SYS, SYS - 1, False, id="system-victim-user-preemptor"),
        pytest.param(SYS - 1, SYS, True, id="user-victim-system-preemptor"),
        pytest.param(SYS, SYS + 1, True, id="system-victim-higher-system-preemptor"),
        pytest.param(SYSTEM_CRITICAL_PRIORITY, SYSTEM_CRITICAL_PRIORITY + 1000, True, id="cluster-vs-node-critical"),
        pytest.param(SYSTEM_CRITICAL_PRIORITY, 100, False, id="critical-victim-user-preemptor"),
    ],
)
def test_is_preemption_allowed(victim_prio, preemptor_prio, allowed):
    env = Env([node("n1")])
    ni = env.ctx.snapshot.get("n1")
    victim = pod("v", prio=victim_prio, node="n1")
    assert env.evaluator.is_preemption_allowed(ni, victim, pod("p", prio=preemptor_prio)) is allowed


def test_system_pod_is_never_victim_even_with_custom_hook_default():
    from kubeberth.preemption import default_is_eligible_pod

    ni = Env([node("n1")]).ctx.snapshot.get("n1")
    assert not default_is_eligible_pod(ni, pod("v", prio=SYS), pod("p", prio=SYS - 1))
    assert default_is_eligible_pod(ni, pod("v", prio=SYS - 2), pod("p", prio=SYS - 1))


async def test_never_policy_does_not_preempt():
    env = Env([node("n1")], [pod("low", cpu="4", prio=1, node="n1")])
    result, status = await env.post_filter(pod("p", cpu="1", prio=10, policy="Never"))
    assert result is None
    assert status.code == Code.UNSCHEDULABLE
    assert status.reasons == ["preemption: not eligible due to preemptionPolicy=Never."]
    assert env.client.calls == []
    assert env.metrics.attempts == 1


async def test_equal_priority_pods_are_not_victims():
    env = Env([node("n1")], [pod("same", cpu="4", prio=10, node="n1")])
    result, status = await env.post_filter(pod("p", cpu="1", prio=10))
    assert result is not None and result.nominated_node_name == ""
    assert status.reasons == [
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."]
    assert env.client.of("delete") == []


async def test_user_pod_cannot_evict_system_pod():
    env = Env([node("n1")], [pod("critical", cpu="4", prio=SYSTEM_CRITICAL_PRIORITY, node="n1")])
    _, status = await env.post_filter(pod("p", cpu="1", prio=SYS))
    assert status.code == Code.UNSCHEDULABLE
    assert env.client.of("delete") == []
