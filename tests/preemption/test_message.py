"""The preemption part of the FitError, and the plugin's args."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from kubeberth.config import ConfigError
from kubeberth.framework import Code, Diagnosis, FitError
from kubeberth.plugins.default_preemption import DefaultPreemption, DefaultPreemptionArgs
from tests.doubles import handle
from tests.preemption.fakes import Env, node, pod


@pytest.mark.parametrize(
    ("nodes", "pods", "preemptor", "want"),
    [
        pytest.param([node("n1"), node("n2", labels={"fake/off": "true"}), node("n3", labels={"fake/off": "true"})],
                     [pod("same", cpu="4", prio=10, node="n1")], pod("p", cpu="1", prio=10),
                     "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
                     "2 Preemption is not helpful for scheduling.", id="issue-example"),
        pytest.param([node("n1", labels={"fake/off": "true"}), node("n2", labels={"fake/off": "true"})], [],
                     pod("p", cpu="1", prio=10),
                     "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
                     id="nothing-resolvable"),
        pytest.param([node("n1"), node("n2")],
                     [pod("big", cpu="3", prio=100, node="n1"), pod("l", cpu="1", prio=1, node="n1"),
                      pod("big2", cpu="4", prio=100, node="n2")],
                     pod("p", cpu="2", prio=10),
                     "preemption: 0/2 nodes are available: 1 Insufficient cpu, "
                     "1 No preemption victims found for incoming pod.", id="filter-reason-after-removal"),
        pytest.param([node("n1", "1")], [], pod("p", cpu="2", prio=10),
                     "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
                     id="empty-node-too-small"),
    ],
)
async def test_failure_message(nodes, pods, preemptor, want):
    env = Env(nodes, pods)
    result, status = await env.post_filter(preemptor)
    assert status.code == Code.UNSCHEDULABLE
    assert status.reasons == [want]
    assert result is not None and result.nominated_node_name == ""


async def test_fit_error_reads_as_upstream():
    nodes = [node("n1"), node("n2", labels={"fake/off": "true"}), node("n3", labels={"fake/off": "true"})]
    env = Env(nodes, [pod("same", cpu="4", prio=10, node="n1")])
    p = pod("p", cpu="1", prio=10)
    state = env.state_for(p)
    statuses = env.statuses(state, p)
    _, status = await env.fw.run_post_filter(state, p, statuses)
    diagnosis = Diagnosis()
    diagnosis.node_to_status = statuses
    diagnosis.post_filter_msg = status.message()
    err = FitError(p, 3, diagnosis, ["n1", "n2", "n3"])
    assert str(err) == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling.")


# ---- args -------------------------------------------------------------------------
def test_default_args():
    a = DefaultPreemptionArgs()
    assert (a.minCandidateNodesPercentage, a.minCandidateNodesAbsolute) == (10, 100)
    plugin = DefaultPreemption(None, Env([node("n1")]).fw)
    assert plugin.evaluator.min_candidate_nodes_percentage == 10
    assert plugin.evaluator.min_candidate_nodes_absolute == 100


@pytest.mark.parametrize(
    ("args", "field", "text"),
    [
        pytest.param({"minCandidateNodesPercentage": -1}, "minCandidateNodesPercentage", "greater than or equal",
                     id="percentage-negative"),
        pytest.param({"minCandidateNodesPercentage": 101}, "minCandidateNodesPercentage", "less than or equal",
                     id="percentage-over-100"),
        pytest.param({"minCandidateNodesAbsolute": -1}, "minCandidateNodesAbsolute", "greater than or equal",
                     id="absolute-negative"),
        pytest.param({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
                     "minCandidateNodesPercentage", "cannot be zero at the same time as minCandidateNodesAbsolute",
                     id="both-zero"),
        pytest.param({"minCandidateNodes": 1}, "minCandidateNodes", "Extra inputs", id="unknown-field"),
    ],
)
def test_invalid_args(args, field, text):
    with pytest.raises(ValidationError) as info:
        DefaultPreemptionArgs.model_validate(args)
    err = info.value.errors()[0]
    assert err["loc"] == (field,)
    assert text in err["msg"]


@pytest.mark.parametrize(
    "args",
    [
        {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 1},
        {"minCandidateNodesPercentage": 1, "minCandidateNodesAbsolute": 0},
        {"minCandidateNodesPercentage": 100, "minCandidateNodesAbsolute": 2**31 - 1},
    ],
)
def test_valid_args(args):
    a = DefaultPreemptionArgs.model_validate(args)
    assert a.model_dump() == {**DefaultPreemptionArgs().model_dump(), **args}


def _profile(args):
    return {"plugins": {"multiPoint": {"disabled": [{"name": "*"}]},
                        "queueSort": {"enabled": [{"name": "PrioritySort"}]},
                        "bind": {"enabled": [{"name": "DefaultBinder"}]},
                        "postFilter": {"enabled": [{"name": "DefaultPreemption"}]}},
            "pluginConfig": [{"name": "DefaultPreemption", "args": args}]}


def test_profile_args_reach_the_plugin():
    fw = handle(profile=_profile({"minCandidateNodesPercentage": 30, "minCandidateNodesAbsolute": 5}))
    plugin = fw.plugin("DefaultPreemption")
    assert isinstance(plugin, DefaultPreemption)
    assert fw.post_filter_plugins == [plugin]
    assert plugin.evaluator.get_offset_and_num_candidates(100)[1] == 30


def test_profile_with_bad_args_names_the_field():
    with pytest.raises(ConfigError) as info:
        handle(profile=_profile({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}))
    assert info.value.path == "spec.pluginConfig[0].args.minCandidateNodesPercentage"
