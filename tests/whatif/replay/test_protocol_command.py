"""`kubeberth replay --protocol artifact` end to end: the issue's contract command with the six
gpushare profiles on a small generated openb trace, its options, `run_replay` giving the
command's bytes, and on the shared trace (skipped without ../shared) BestFit and GpuPacking
against the stand-alone oracle (benchmarks/openb_oracle.py), decision by decision."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubeberth import features
from kubeberth.cli import main
from kubeberth.features import FeatureGates
from kubeberth.framework.tie_break import FixedNodeOrder, Reservoir
from kubeberth.whatif.replay import command, run_replay
from kubeberth.whatif.replay.output import render_json
from kubeberth.whatif.replay.protocol import gpu_allocation_bins

gpushare = pytest.importorskip("kubeberth_gpushare")
PROFILES = Path(gpushare.__file__).parent / "profiles"
POLICIES = ("Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD")
SHARED = Path(__file__).resolve().parents[3] / ".." / "shared" / "traces" / "alibaba-openb-2023"
GPU = "alibabacloud.com/gpu-milli"


@pytest.fixture(autouse=True)
def restore_gates() -> Iterator[None]:
    with features.override(FeatureGates()):
        yield


def write_trace(tmp: Path, tasks: int = 60, seed: int = 5) -> tuple[Path, Path, dict[str, int]]:
    """Three GPU nodes (2, 4, 8 GPUs) and a CPU-only one, `tasks` tasks of small GPU shares (most
    below 2 % of the 14 GPUs). Returns the files and each task's GPU milli (num_gpu x gpu_milli)."""
    rng = random.Random(seed)
    nodes = tmp / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\n" + "".join(
        f"node-{i},64000,262144,{g},{'V100M16' if g else ''}\n" for i, g in enumerate((2, 4, 8, 0))))
    rows, gpu = [], {}
    for i in range(tasks):
        count, milli = rng.choice(((1, 100), (1, 200), (1, 250), (0, 0), (1, 150), (1, 1000)))
        name = f"task-{i:03d}"
        gpu[name] = count * milli
        rows.append(f"{name},{rng.choice((500, 1000, 2000))},{rng.choice((1024, 2048))},{count},{milli},,LS,Running,"
                    f"{i},{i + 100},{i}\n")
    path = tmp / "tasks.csv"
    path.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
                    "deletion_time,scheduled_time\n" + "".join(rows))
    return nodes, path, gpu


def contract(nodes: Path, tasks: Path, policy: str, seed: int = 7, *extra: str) -> list[str]:
    return ["replay", "--format", "openb", "--nodes", str(nodes), str(tasks), "--profile",
            str(PROFILES / f"{policy}.yaml"), "--protocol", "artifact", "--tune", "1.3", "--seed", str(seed),
            "-o", "json", *extra]


def run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    got = capsys.readouterr()
    return code, got.out, got.err


def base_name(pod: str) -> str:
    return pod.split("/", 1)[1].split("-tuned-", 1)[0]


@pytest.mark.parametrize("policy", POLICIES)
def test_the_contract_command_under_each_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                policy: str) -> None:
    nodes, tasks, gpu = write_trace(tmp_path)
    code, out, err = run(capsys, contract(nodes, tasks, policy))
    assert code == 0, err
    assert out.count("\n") == 1
    result = json.loads(out)
    assert result["input"] | {"files": None} == {
        "format": "openb", "files": None, "profile": str(PROFILES / f"{policy}.yaml"), "seed": 7,
        "protocol": "artifact", "tune": 1.3, "tieBreak": "fixed-order"}
    pods = result["pods"]
    # the workload built for 1.3 x the 14 GPUs: every task once, then copies; one arrival per instant
    assert {base_name(p["pod"]) for p in pods if "-tuned-" not in p["pod"]} == set(gpu)
    assert [p["arrival"] for p in pods] == [float(i) for i in range(len(pods))]
    total = sum(gpu[base_name(p["pod"])] for p in pods)
    assert total <= 1.3 * 14000 < total + 1000
    assert {p["status"] for p in pods} <= {"Scheduled", "Dropped"}
    assert all(p["departure"] is None for p in pods if p["status"] == "Scheduled")
    s = result["summary"]
    dropped = sum(p["status"] == "Dropped" for p in pods)
    assert (s["arrived"], s["failed"], s["scheduled"]) == (len(pods), dropped, len(pods) - dropped)
    assert s["departed"] == dropped > 0  # a dropped task leaves at its instant; nothing else does
    # gpuAllocation: one sample per task after its attempt, dropped tasks counted as arrived
    allocated = arrived = 0
    samples = []
    for p in pods:
        g = gpu[base_name(p["pod"])]
        arrived += g
        allocated += g if p["status"] == "Scheduled" else 0
        samples.append((allocated, arrived, 14000))
    curve = result["gpuAllocation"]
    assert curve == gpu_allocation_bins(samples)
    assert list(curve) == sorted(curve, key=int) and set(curve) <= {str(k) for k in range(131)}
    assert int(next(iter(curve))) <= 2 and int(list(curve)[-1]) >= 120
    assert all(0 <= v <= 100 for v in curve.values())
    if policy == "FGD":  # its WorkloadSummary was there: pods placed, fragmentation measured
        frag = result["series"]["columns"].index("OpenGpuShare.fragRatio")
        assert s["scheduled"] > 0 and any(row[frag] for row in result["series"]["rows"])
        assert not any("WorkloadSummary" in reason for reason in s["unschedulableByReason"])


def capture(seen: dict[str, Any]) -> Any:
    """A `hooks` for command.main: records the options and the scheduler's settings once configured."""
    def hooks(data: Any, options: Any) -> None:
        seen["options"] = options
        configure = options.configure

        def wrapped(sched: Any) -> None:
            if configure is not None:
                configure(sched)
            seen["tie_break"] = sched.ctx.tie_break
            seen["percentage"] = sched.ctx.percentage_of_nodes_to_score
        options.configure = wrapped
    return hooks


def parse(argv: list[str]) -> Any:
    from kubeberth.cli import build_parser

    return build_parser().parse_args(argv)


@pytest.mark.parametrize(("extra", "rule", "percentage"), [
    ([], FixedNodeOrder, 100),
    (["--tie-break", "reservoir"], Reservoir, 100),
    (["--percentage-of-nodes-to-score", "50"], FixedNodeOrder, 50),
])
def test_the_protocol_sets_the_scheduler_unless_told_otherwise(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               extra: list[str], rule: type, percentage: int) -> None:
    nodes, tasks, gpu = write_trace(tmp_path, tasks=20)
    seen: dict[str, Any] = {}
    assert command.main(parse(contract(nodes, tasks, "BestFit", 3, *extra)), hooks=capture(seen)) == 0
    result = json.loads(capsys.readouterr().out)
    assert isinstance(seen["tie_break"], rule) and seen["percentage"] == percentage
    assert result["input"]["tieBreak"] == rule.name
    assert seen["options"].drop_unschedulable is True
    # the WorkloadSummary counts the trace's tasks, not the workload built from them
    counted = sorted(str(p["metadata"]["name"]) for p in seen["options"].summary_pods)
    assert counted == sorted(gpu)


def test_tie_break_without_the_protocol(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes, tasks, _ = write_trace(tmp_path, tasks=10)
    for extra, rule in (([], Reservoir), (["--tie-break", "fixed-order"], FixedNodeOrder)):
        seen: dict[str, Any] = {}
        argv = ["replay", "--format", "openb", "--nodes", str(nodes), str(tasks), "-o", "json", *extra]
        assert command.main(parse(argv), hooks=capture(seen)) == 0
        result = json.loads(capsys.readouterr().out)
        assert isinstance(seen["tie_break"], rule)
        assert (result["input"]["protocol"], result["input"]["tune"], result["input"]["tieBreak"]) == \
            (None, None, rule.name)
        assert "gpuAllocation" not in result and seen["options"].drop_unschedulable is False


@pytest.mark.parametrize(("extra", "message"), [
    (["--tune", "1.3"], "--tune is for --protocol artifact"),
    (["--protocol", "artifact", "--tune", "-1"], "--tune: must be 0 or more"),
    (["--protocol", "other"], "--protocol: invalid choice"),
    (["--protocol", "artifact", "--tie-break", "first"], "--tie-break: invalid choice"),
])
def test_refused_options_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str],
                                message: str) -> None:
    nodes, tasks, _ = write_trace(tmp_path, tasks=5)
    argv = ["replay", "--format", "openb", "--nodes", str(nodes), str(tasks), "-o", "json", *extra]
    try:
        code, out, err = run(capsys, argv)
    except SystemExit as exc:  # argparse's own refusals
        code, got = int(exc.code or 0), capsys.readouterr()
        out, err = got.out, got.err
    assert code == 2 and out == "" and message in err and "Traceback" not in err


def test_a_cluster_without_gpus_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes, tasks, _ = write_trace(tmp_path, tasks=5)
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nnode-0,64000,262144,0,\n")
    code, out, err = run(capsys, contract(nodes, tasks, "BestFit"))
    assert code == 2 and out == "" and "no alibabacloud.com/gpu-milli" in err


def test_reruns_are_byte_identical_and_run_replay_is_the_command(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    nodes, tasks, _ = write_trace(tmp_path)
    outs = [run(capsys, contract(nodes, tasks, "FGD", seed))[1] for seed in (7, 7, 8)]
    assert outs[0] == outs[1] and outs[0] != outs[2]
    result = run_replay([str(tasks)], format="openb", nodes=str(nodes), profile=str(PROFILES / "FGD.yaml"), seed=7,
                        protocol="artifact", tune=1.3)
    assert render_json(result) == outs[0]
    assert capsys.readouterr() == ("", "")  # run_replay prints nothing


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"tune": 1.3}, "--tune is for --protocol artifact"),
    ({"protocol": "other"}, "--protocol"),
    ({"protocol": "artifact", "tune": -0.5}, "--tune"),
    ({"format": "csv"}, "--format"),
    ({"nodes": None}, "--format openb needs --nodes"),
])
def test_run_replay_raises_on_refused_input(tmp_path: Path, kwargs: dict[str, Any], message: str) -> None:
    nodes, tasks, _ = write_trace(tmp_path, tasks=5)
    args: dict[str, Any] = {"format": "openb", "nodes": str(nodes), **kwargs}
    with pytest.raises(ValueError, match=message):
        run_replay([str(tasks)], **args)


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared (the openb trace) is missing")
@pytest.mark.parametrize("policy", ["BestFit", "GpuPacking"])
def test_the_shared_trace_decisions_equal_the_oracle(policy: str) -> None:
    from benchmarks.openb_oracle import OracleRun, read_nodes, read_tasks

    from kubeberth.whatif.replay.protocol import build_artifact_workload

    seed = 11
    result = run_replay([str(SHARED / "openb_pod_list_default.csv")], format="openb",
                        nodes=str(SHARED / "openb_node_list_gpu_node.csv"), profile=str(PROFILES / f"{policy}.yaml"),
                        seed=seed, protocol="artifact", tune=1.3)
    cluster = read_nodes(SHARED / "openb_node_list_gpu_node.csv")
    workload = build_artifact_workload(read_tasks(SHARED / "openb_pod_list_default.csv"), 1.3, seed, cluster.capacity)
    state = OracleRun(cluster, policy, seed)
    used = arrived = 0
    samples, placed = [], []
    for t in workload:
        node = state.place(t)
        arrived += t.num_gpu * t.gpu_milli
        used += t.num_gpu * t.gpu_milli if node is not None else 0
        samples.append((used, arrived, cluster.capacity))
        placed.append((f"default/{t.name}", None if node is None else cluster.names[node]))
    assert [(p["pod"], p["node"]) for p in result["pods"]] == placed
    assert result["gpuAllocation"] == gpu_allocation_bins(samples)
