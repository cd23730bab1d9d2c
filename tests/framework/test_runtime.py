"""Framework runtime: building from a profile, filters, scores, host choice, lifecycle."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from kubeberth.config import ConfigError
from kubeberth.framework import (
    Code,
    CycleState,
    FitError,
    NodePluginScores,
    Status,
)
from kubeberth.framework.runtime import Framework
from kubeberth.scheduler.algorithm import num_feasible_nodes_to_find, schedule_pod, select_host
from tests.builders import make_node, make_pod
from tests.doubles import handle

from . import fakes
from .fakes import Journal


def build(spec: dict[str, Any], nodes: int | list[str] = 3, seed: int = 0) -> Framework:
    names = [f"n{i}" for i in range(1, nodes + 1)] if isinstance(nodes, int) else nodes
    return handle([make_node(n) for n in names], profile=spec, registry=fakes.registry(), rng=random.Random(seed))


def run(coro: Any) -> Any:
    return asyncio.run(coro)


class TestBuild:
    def test_plugins_land_at_their_points_in_order(self) -> None:
        fw = build(fakes.profile(filters=["Reject2", "Reject"], scores=[("Fixed", 3), ("Fixed2", None)]))
        assert [p.name for p in fw.filter_plugins] == ["Reject2", "Reject"]
        assert fw.score_weights == {"Fixed": 3, "Fixed2": 1}

    def test_plugin_at_a_point_it_does_not_implement(self) -> None:
        spec = fakes.profile()
        spec["plugins"]["filter"] = {"enabled": [{"name": "Fixed"}]}
        with pytest.raises(ConfigError) as err:
            build(spec)
        assert err.value.path == "spec.plugins.filter.enabled[0].name"
        assert "does not extend filter plugin" in str(err.value)

    def test_unknown_plugin(self) -> None:
        spec = fakes.profile(filters=["Nope"])
        with pytest.raises(ConfigError, match="plugin 'Nope' does not exist"):
            build(spec)

    def test_args_error_names_the_field(self) -> None:
        spec = fakes.profile(scores=[("Fixed", 1)], args={"Fixed": {"scores": {"n1": "many"}}})
        with pytest.raises(ConfigError) as err:
            build(spec)
        assert err.value.path.startswith("spec.pluginConfig[0].args.scores")

    def test_args_for_unknown_plugin(self) -> None:
        spec = fakes.profile(args={"Ghost": {}})
        with pytest.raises(ConfigError, match=r"spec.pluginConfig\[0\].name"):
            build(spec)

    def test_score_weight_overflow(self) -> None:
        from kubeberth.profile import check_score_overflow

        fw = build(fakes.profile(scores=[("Fixed", 2**31 - 1), ("Fixed2", 2**31 - 1)]))
        assert fw.score_weights["Fixed"] == 2**31 - 1  # the largest int32 weights still fit
        with pytest.raises(ConfigError, match="could overflow at B"):
            check_score_overflow({"A": 2**62 // 50, "B": 2**62 // 50})

    def test_weight_defaults_to_one_and_negative_is_rejected(self) -> None:
        assert build(fakes.profile(scores=[("Fixed", 0)])).score_weights == {"Fixed": 1}
        with pytest.raises(ConfigError, match=r"spec.plugins.score.enabled\[0\].weight"):
            build(fakes.profile(scores=[("Fixed", -1)]))

    def test_exactly_one_queue_sort(self) -> None:
        spec = fakes.profile()
        spec["plugins"]["queueSort"] = {"enabled": []}
        with pytest.raises(ConfigError, match="exactly one queue sort plugin"):
            build(spec)

    def test_multipoint_expands_to_every_point_a_plugin_implements(self) -> None:
        spec = {"plugins": {"multiPoint": {"enabled": [{"name": "Sort"}, {"name": "Lifecycle"}, {"name": "Fixed",
                                                                                              "weight": 4}],
                                           "disabled": [{"name": "*"}]}}}
        fw = build(spec)
        assert [p.name for p in fw.reserve_plugins] == ["Lifecycle"]
        assert [p.name for p in fw.permit_plugins] == ["Lifecycle"]
        assert [p.name for p in fw.bind_plugins] == ["Lifecycle"]
        assert fw.score_weights == {"Fixed": 4}

    def test_specific_point_overrides_multipoint_weight_and_goes_first(self) -> None:
        spec = {"plugins": {
            "multiPoint": {"enabled": [{"name": "Sort"}, {"name": "Lifecycle"}, {"name": "Fixed", "weight": 4},
                                       {"name": "Fixed2", "weight": 1}], "disabled": [{"name": "*"}]},
            "score": {"enabled": [{"name": "Fixed2", "weight": 7}]}}}
        fw = build(spec)
        assert [p.name for p in fw.score_plugins] == ["Fixed2", "Fixed"]
        assert fw.score_weights == {"Fixed": 4, "Fixed2": 7}

    def test_disable_at_one_point_keeps_others(self) -> None:
        spec = {"plugins": {
            "multiPoint": {"enabled": [{"name": "Sort"}, {"name": "Lifecycle"}], "disabled": [{"name": "*"}]},
            "permit": {"disabled": [{"name": "Lifecycle"}]}}}
        fw = build(spec)
        assert fw.permit_plugins == []
        assert [p.name for p in fw.reserve_plugins] == ["Lifecycle"]

    def test_double_registration_in_multipoint(self) -> None:
        spec = {"plugins": {"multiPoint": {"enabled": [{"name": "Sort"}, {"name": "Lifecycle"},
                                                       {"name": "Lifecycle"}], "disabled": [{"name": "*"}]}}}
        with pytest.raises(ConfigError, match="already registered"):
            build(spec)


class TestFilterAndDiagnosis:
    def test_fit_error_message_counts_and_sorts_reasons(self) -> None:
        spec = fakes.profile(filters=["Reject"], args={"Reject": {"nodes": {
            "n1": "Insufficient cpu", "n2": "node(s) had untolerated taint(s)",
            "n3": "node(s) had untolerated taint(s)"}}})
        fw = build(spec)
        with pytest.raises(FitError) as err:
            run(schedule_pod(fw, CycleState(), make_pod()))
        assert str(err.value) == ("0/3 nodes are available: 1 Insufficient cpu, "
                                  "2 node(s) had untolerated taint(s).")

    def test_first_failing_filter_decides(self) -> None:
        spec = fakes.profile(filters=["Reject", "Reject2"], args={
            "Reject": {"nodes": {"n1": "first"}}, "Reject2": {"nodes": {"n1": "second", "n2": "second"}}})
        fw = build(spec, nodes=2)
        with pytest.raises(FitError) as err:
            run(schedule_pod(fw, CycleState(), make_pod()))
        assert err.value.diagnosis.node_to_status.get("n1").reasons == ["first"]
        assert err.value.diagnosis.unschedulable_plugins == {"Reject", "Reject2"}
        assert str(err.value) == "0/2 nodes are available: 1 first, 1 second."

    def test_lexical_sort_as_upstream(self) -> None:
        nodes = [f"n{i}" for i in range(1, 13)]
        reasons = {n: ("b" if i < 10 else "a") for i, n in enumerate(nodes)}
        fw = build(fakes.profile(filters=["Reject"], args={"Reject": {"nodes": reasons}}), nodes=nodes)
        with pytest.raises(FitError) as err:
            run(schedule_pod(fw, CycleState(), make_pod()))
        # "10 b" sorts before "2 a", as Go's sort.Strings would order them.
        assert str(err.value) == "0/12 nodes are available: 10 b, 2 a."

    def test_prefilter_result_restricts_nodes(self) -> None:
        spec = fakes.profile(prefilter=["OnlyNodes"], filters=["Reject"],
                             args={"OnlyNodes": {"nodes": {"n2": ""}}, "Reject": {"nodes": {"n2": "nope"}}})
        fw = build(spec)
        with pytest.raises(FitError) as err:
            run(schedule_pod(fw, CycleState(), make_pod()))
        assert str(err.value) == ("0/3 nodes are available: 1 nope, "
                                  "2 node(s) didn't satisfy plugin(s) [OnlyNodes].")

    def test_single_feasible_node_skips_scoring(self) -> None:
        spec = fakes.profile(filters=["Reject"], scores=[("Fixed", 1)],
                             args={"Reject": {"nodes": {"n1": "x", "n2": "x"}}})
        result = run(schedule_pod(build(spec), CycleState(), make_pod()))
        assert result.suggested_host == "n3"
        assert result.scores == []


class TestScoring:
    def test_weighted_sum_picks_the_best(self) -> None:
        spec = fakes.profile(scores=[("Fixed", 1), ("Fixed2", 3)], args={
            "Fixed": {"scores": {"n1": 100, "n2": 0, "n3": 50}},
            "Fixed2": {"scores": {"n1": 0, "n2": 40, "n3": 10}}})
        result = run(schedule_pod(build(spec), CycleState(), make_pod()))
        totals = {s.name: s.total for s in result.scores}
        assert totals == {"n1": 100, "n2": 120, "n3": 80}
        assert result.suggested_host == "n2"

    def test_normalize_score(self) -> None:
        spec = fakes.profile(scores=[("Fixed", 2)], args={
            "Fixed": {"scores": {"n1": 5, "n2": 10, "n3": 0}, "normalize_to": 100}})
        result = run(schedule_pod(build(spec), CycleState(), make_pod()))
        assert {s.name: s.total for s in result.scores} == {"n1": 100, "n2": 200, "n3": 0}

    def test_score_out_of_range_is_an_error(self) -> None:
        from kubeberth.scheduler.algorithm import SchedulingError

        spec = fakes.profile(scores=[("Fixed", 1)], args={"Fixed": {"scores": {"n1": 101}}})
        with pytest.raises(SchedulingError, match="invalid score 101"):
            run(schedule_pod(build(spec), CycleState(), make_pod()))

    def test_tie_break_is_random_but_seeded(self) -> None:
        scores = [NodePluginScores(f"n{i}", total=10) for i in range(8)]
        picks = {select_host(scores, random.Random(seed)) for seed in range(50)}
        assert len(picks) > 1
        assert select_host(scores, random.Random(3)) == select_host(scores, random.Random(3))

    def test_tie_break_draws_once_among_the_top_nodes_only(self) -> None:
        scores = [NodePluginScores("a", total=9), NodePluginScores("b", total=5),
                  NodePluginScores("c", total=9), NodePluginScores("d", total=9)]
        for seed in range(20):
            rng, ref = random.Random(seed), random.Random(seed)
            assert select_host(scores, rng) == ["a", "c", "d"][ref.randrange(3)]
            assert rng.random() == ref.random()
        alone = [NodePluginScores("a", total=1), NodePluginScores("b", total=7)]
        rng, ref = random.Random(5), random.Random(5)
        assert select_host(alone, rng) == "b"
        assert rng.random() == ref.random()  # no draw when one node leads

    def test_tie_break_is_roughly_uniform(self) -> None:
        scores = [NodePluginScores("a", total=5), NodePluginScores("b", total=9),
                  NodePluginScores("c", total=9), NodePluginScores("d", total=9)]
        rng = random.Random(1)
        counts = {"b": 0, "c": 0, "d": 0}
        for _ in range(3000):
            counts[select_host(scores, rng)] += 1
        assert all(800 < c < 1200 for c in counts.values()), counts


class TestPercentageOfNodesToScore:
    @pytest.mark.parametrize(("pct", "nodes", "want"), [
        (None, 10, 10), (None, 99, 99), (None, 100, 100), (None, 1000, 420), (None, 5000, 500),
        (None, 6000, 300), (None, 15000, 750), (50, 1000, 500), (1, 1000, 100), (100, 5000, 5000),
        (0, 500, 230),
    ])
    def test_adaptive_formula(self, pct: int | None, nodes: int, want: int) -> None:
        assert num_feasible_nodes_to_find(pct, nodes) == want

    @pytest.mark.parametrize(("profile", "scheduler_wide", "want"), [
        pytest.param(None, 0, 0, id="neither: adaptive"),
        pytest.param(None, 30, 30, id="the scheduler-wide value when the profile sets none"),
        pytest.param(50, 30, 50, id="the profile's own value wins"),
        pytest.param(0, 30, 0, id="a profile's explicit 0 (adaptive) wins too"),
    ])
    def test_a_profile_value_wins_over_the_scheduler_wide_one(self, profile: int | None, scheduler_wide: int,
                                                               want: int) -> None:
        fw = build(fakes.profile(filters=["Reject"], percentage=profile), nodes=3)
        fw.ctx.percentage_of_nodes_to_score = scheduler_wide
        assert fw.percentage_of_nodes_to_score == want
        # ... and what it means at 1000 nodes: 0 is upstream's adaptive 42%.
        assert num_feasible_nodes_to_find(fw.percentage_of_nodes_to_score, 1000) == (want or 42) * 10

    def test_rotating_start_index(self) -> None:
        names = [f"n{i:03}" for i in range(200)]
        spec = fakes.profile(filters=["Reject"], percentage=50)
        fw = build(spec, nodes=names)
        first = run(schedule_pod(fw, CycleState(), make_pod()))
        assert first.evaluated_nodes == 100
        assert fw.ctx.next_start_node_index == 100
        run(schedule_pod(fw, CycleState(), make_pod()))
        assert fw.ctx.next_start_node_index == 0


class TestLifecycle:
    def setup_method(self) -> None:
        Journal.entries = []

    def test_unreserve_runs_in_reverse_order(self) -> None:
        fw = build(fakes.profile(lifecycle=["Lifecycle", "Lifecycle2"], args={"Lifecycle2": {"reserve_fails": True}}))
        pod = make_pod()
        status = fw.run_reserve(CycleState(), pod, "n1")
        assert status is not None and status.code == Code.ERROR
        fw.run_unreserve(CycleState(), pod, "n1")
        assert Journal.entries == ["Lifecycle.reserve", "Lifecycle2.reserve", "Lifecycle2.unreserve",
                                   "Lifecycle.unreserve"]

    def test_bind_tries_plugins_until_one_does_not_skip(self) -> None:
        fw = build(fakes.profile(lifecycle=["Lifecycle", "Lifecycle2"], args={"Lifecycle": {"bind": "skip"}}))
        assert run(fw.run_bind(CycleState(), make_pod(), "n1")) is None
        assert Journal.entries == ["Lifecycle.bind", "Lifecycle2.bind"]

    def test_bind_error_stops(self) -> None:
        fw = build(fakes.profile(lifecycle=["Lifecycle", "Lifecycle2"], args={"Lifecycle": {"bind": "error"}}))
        status = run(fw.run_bind(CycleState(), make_pod(), "n1"))
        assert status is not None and status.code == Code.ERROR
        assert Journal.entries == ["Lifecycle.bind"]

    def test_all_binders_skip(self) -> None:
        fw = build(fakes.profile(lifecycle=["Lifecycle"], args={"Lifecycle": {"bind": "skip"}}))
        status = run(fw.run_bind(CycleState(), make_pod(), "n1"))
        assert status is not None and status.is_skip()

    def test_post_bind_runs(self) -> None:
        fw = build(fakes.profile(lifecycle=["Lifecycle"]))
        fw.run_post_bind(CycleState(), make_pod(), "n1")
        assert Journal.entries == ["Lifecycle.post_bind"]

    def test_permit_reject(self) -> None:
        fw = build(fakes.profile(lifecycle=["Lifecycle"], args={"Lifecycle": {"permit": "reject"}}))
        status = fw.run_permit(CycleState(), make_pod(), "n1")
        assert status is not None and status.code == Code.UNSCHEDULABLE and status.plugin == "Lifecycle"

    @pytest.mark.looptime
    async def test_permit_wait_then_allow(self) -> None:
        fw = build(fakes.profile(lifecycle=["Lifecycle", "Lifecycle2"],
                                 args={"Lifecycle": {"permit": "wait"}, "Lifecycle2": {"permit": "wait"}}))
        pod = make_pod()
        status = fw.run_permit(CycleState(), pod, "n1")
        assert status is not None and status.is_wait()
        waiter = asyncio.ensure_future(fw.wait_on_permit(pod))
        await asyncio.sleep(1)
        wp = fw.waiting_pods.get(pod.uid)
        assert sorted(wp.pending_plugins) == ["Lifecycle", "Lifecycle2"]
        wp.allow("Lifecycle")
        await asyncio.sleep(0)
        assert not waiter.done()
        wp.allow("Lifecycle2")
        assert await waiter is None
        assert fw.waiting_pods.get(pod.uid) is None

    @pytest.mark.looptime
    async def test_permit_wait_then_reject(self) -> None:
        fw = build(fakes.profile(lifecycle=["Lifecycle"], args={"Lifecycle": {"permit": "wait"}}))
        pod = make_pod()
        fw.run_permit(CycleState(), pod, "n1")
        waiter = asyncio.ensure_future(fw.wait_on_permit(pod))
        await asyncio.sleep(0)
        fw.waiting_pods.get(pod.uid).reject("Gang", "not all members arrived")
        status = await waiter
        assert status.code == Code.UNSCHEDULABLE and status.reasons == ["not all members arrived"]

    @pytest.mark.looptime
    async def test_permit_timeout_rejects_per_plugin_timeout(self) -> None:
        fw = build(fakes.profile(lifecycle=["Lifecycle", "Lifecycle2"], args={
            "Lifecycle": {"permit": "wait", "timeout": 30}, "Lifecycle2": {"permit": "wait", "timeout": 10}}))
        pod = make_pod()
        fw.run_permit(CycleState(), pod, "n1")
        loop = asyncio.get_running_loop()
        start = loop.time()
        status = await fw.wait_on_permit(pod)
        assert loop.time() - start == pytest.approx(10)
        assert status.code == Code.UNSCHEDULABLE
        assert status.reasons == ["rejected due to timeout after waiting 10s at plugin Lifecycle2"]


class TestStatus:
    def test_codes_have_upstream_names(self) -> None:
        assert [c.upstream_name for c in Code] == [
            "Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable", "Wait", "Skip", "Pending"]

    def test_rejected(self) -> None:
        assert Status.unschedulable("x").is_rejected()
        assert Status.unresolvable("x").is_rejected()
        assert Status(Code.PENDING).is_rejected()
        assert not Status.error("x").is_rejected()
        assert Status() == None  # noqa: E711  (None stands for Success)
