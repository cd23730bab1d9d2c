"""The example extender (examples/extender/server.py), and `simulate` run against it."""

from __future__ import annotations

import asyncio
import copy
import importlib.util
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestServer

from kubeberth.extender import run_filter_extenders, run_prioritize_extenders
from kubeberth.framework import NodeToStatus
from kubeberth.framework.victims import Victims
from kubeberth.whatif.inputs import load_files
from kubeberth.whatif.simulate import simulate
from tests.builders import make_node, make_pod, node_info, snapshot

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "extender"


def _load_example() -> Any:
    spec = importlib.util.spec_from_file_location("example_extender_server", EXAMPLE / "server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


example = _load_example()


@pytest.fixture
async def example_url() -> AsyncIterator[str]:
    server = TestServer(example.make_app(), host="127.0.0.1")
    await server.start_server()
    yield str(server.make_url("/api/scheduler"))
    await server.close()


NODES = [
    node_info(make_node("blocked", labels={"example.com/blocked": "true"})),
    node_info(make_node("fond", labels={"example.com/preferred": "yes"})),
    node_info(make_node("lukewarm", labels={"example.com/preferred": "3"})),
    node_info(make_node("plain", labels={"example.com/blocked": "false"})),
]


@pytest.mark.parametrize("cache", [False, True], ids=["node-list", "node-names"])
async def test_example_filter_and_prioritize(example_url: str, make_extender, cache: bool) -> None:
    ext = make_extender(example_url, filterVerb="filter", prioritizeVerb="prioritize", weight=2,
                        nodeCacheCapable=cache)
    statuses = NodeToStatus()
    feasible = await run_filter_extenders([ext], make_pod("p"), NODES, statuses)
    if cache:  # names only: the example keeps no node cache and lets them pass
        assert len(feasible) == 4 and len(statuses) == 0
        return
    assert [ni.name for ni in feasible] == ["fond", "lukewarm", "plain"]
    assert statuses.get("blocked").reasons == ["node(s) had label example.com/blocked=true"]
    assert await run_prioritize_extenders([ext], make_pod("p"), feasible) == {"fond": 200, "lukewarm": 60,
                                                                              "plain": 0}


@pytest.mark.parametrize("cache", [False, True], ids=["full-victims", "meta-victims"])
async def test_example_preempt_keeps_candidates(example_url: str, make_extender, cache: bool) -> None:
    v1, v2 = make_pod("v1", node="plain", uid="u1"), make_pod("v2", node="fond", uid="u2")
    snap = snapshot([ni.node for ni in NODES], [v1, v2])
    ext = make_extender(example_url, preemptVerb="preempt", nodeCacheCapable=cache)
    candidates = {"plain": Victims([v1], 1), "fond": Victims([v2])}
    assert await ext.process_preemption(make_pod("p", priority=5), candidates, snap) == candidates


def _objects(url: str, **extender: Any) -> list[dict[str, Any]]:
    objects = load_files([EXAMPLE / "cluster.yaml", EXAMPLE / "profile.yaml"])
    objects = copy.deepcopy(objects)
    (profile,) = [o for o in objects if o["kind"] == "SchedulingProfile"]
    profile["spec"]["extenders"][0].update(urlPrefix=url, **extender)
    return objects


def _placement(outcomes: list[Any]) -> dict[str, tuple[str, str | None]]:
    return {o.pod: (o.status, o.node) for o in outcomes}


async def test_simulate_follows_the_example_extender(example_url: str) -> None:
    outcomes = await asyncio.to_thread(simulate, _objects(example_url), seed=1)
    assert _placement(outcomes) == {
        "default/web-1": ("Scheduled", "node-b"),  # preferred by the extender's scores
        "default/web-2": ("Scheduled", "node-b"),
        "default/web-3": ("Scheduled", "node-b"),
        "default/web-4": ("Scheduled", "node-c"),  # node-b is full, node-a filtered out
    }


async def test_simulate_with_extender_down(example_url: str, unused_tcp_port: int) -> None:
    down = f"http://127.0.0.1:{unused_tcp_port}/api/scheduler"
    outcomes = await asyncio.to_thread(simulate, _objects(down, httpTimeout="1s"), seed=1)
    assert {o.status for o in outcomes} == {"Unschedulable"}
    assert all(f"failed filter with extender at URL {down}/filter" in o.message for o in outcomes)

    outcomes = await asyncio.to_thread(simulate, _objects(down, httpTimeout="1s", ignorable=True), seed=1)
    assert {o.status for o in outcomes} == {"Scheduled"}  # skipped: the default profile alone decides


async def test_cli_simulate_against_the_example(example_url: str, tmp_path: Path) -> None:
    profile = (EXAMPLE / "profile.yaml").read_text().replace("http://127.0.0.1:8888/api/scheduler", example_url)
    assert example_url in profile
    (tmp_path / "profile.yaml").write_text(profile)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "kubeberth.cli", "simulate", str(EXAMPLE / "cluster.yaml"),
        str(tmp_path / "profile.yaml"), "--output", "json", "--seed", "3",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    pods = {p["pod"]: p["node"] for p in json.loads(out)["pods"]}
    assert pods == {"default/web-1": "node-b", "default/web-2": "node-b", "default/web-3": "node-b",
                    "default/web-4": "node-c"}
    assert b"Unclosed" not in err, err.decode()


async def test_converted_sample_policy_runs_in_simulate_against_the_example_extender(
        example_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """convert-policy round trip: the design doc's sample policy (with its extender) becomes a
    SchedulingProfile that simulate accepts and schedules with."""
    from kubeberth.cli import main

    policy = json.loads((ROOT / "examples" / "policy.json").read_text())
    policy["extenders"][0]["urlPrefix"] = example_url
    (tmp_path / "policy.json").write_text(json.dumps(policy))
    profile = tmp_path / "profile.yaml"
    assert main(["convert-policy", str(tmp_path / "policy.json"), "-o", str(profile)]) == 0
    capsys.readouterr()
    code = await asyncio.to_thread(main, ["simulate", str(ROOT / "examples" / "cluster.yaml"), str(profile),
                                          "-o", "json"])
    out = capsys.readouterr()
    assert code == 0 and "rejected" not in out.err
    pods = {p["pod"]: p for p in json.loads(out.out)["pods"]}
    assert pods["shop/web-1"]["status"] == "Scheduled", pods["shop/web-1"]
