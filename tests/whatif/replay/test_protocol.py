"""`--protocol artifact`: the artifact's workload for --tune and its GPU allocation binning, on
small hand-made task lists whose outcome is computed by hand."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import pytest

from kubeberth.framework.tie_break import FIXED_ORDER
from kubeberth.whatif.replay.protocol import (
    ARRIVAL_TIME,
    DEPARTURE_TIME,
    ArtifactProtocol,
    GpuSample,
    ReplayProtocol,
    TaskShape,
    build_artifact_workload,
    gpu_allocation_bins,
    pod_task_shape,
    rename_pod,
)


@dataclass(frozen=True)
class Task:
    name: str
    num_gpu: int = 0
    gpu_milli: int = 0
    cpu_milli: int = 1000
    memory_mib: int = 1024
    gpu_spec: str = ""


def task_pod(t: Task) -> dict[str, Any]:
    """A task as a pod object (spec40's conventions for the openb tasks)."""
    requests = {"cpu": f"{t.cpu_milli}m", "memory": f"{t.memory_mib}Mi"}
    annotations: dict[str, str] = {}
    if t.num_gpu:
        requests["alibabacloud.com/gpu-milli"] = str(t.num_gpu * t.gpu_milli)
        annotations = {"alibabacloud.com/gpu-milli": str(t.gpu_milli), "alibabacloud.com/gpu-count": str(t.num_gpu)}
        if t.gpu_spec:
            annotations["alibabacloud.com/gpu-card-model"] = t.gpu_spec
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": t.name, "namespace": "default", "annotations": annotations},
            "spec": {"containers": [{"name": "main", "resources": {"requests": requests}}]}}


def extras(workload: list[Task], n: int) -> list[Task]:
    return workload[n:]


def gpu_total(tasks: list[Task]) -> int:
    return sum(t.num_gpu * t.gpu_milli for t in tasks)


# ---- the workload


@pytest.mark.parametrize("seed", [0, 1, 42])
def test_all_tasks_first_in_a_seeded_shuffle_of_their_name_order(seed: int) -> None:
    tasks = [Task(f"t{i:02d}", 1, 1000) for i in range(20)]
    got = build_artifact_workload(tasks, 0, seed, 10_000)  # tune 0: no tuning, just the shuffle
    assert sorted(t.name for t in got) == [t.name for t in tasks]
    assert build_artifact_workload(list(reversed(tasks)), 0, seed, 10_000) == got  # input order does not matter
    assert build_artifact_workload(tasks, 0, seed, 10_000) == got  # deterministic
    assert got != tasks  # shuffled
    assert {tuple(t.name for t in build_artifact_workload(tasks, 0, s, 10_000)) for s in range(5)} != {
        tuple(t.name for t in got)}


# (tasks, capacity, tune, extra GPU copies by hand, final GPU total by hand)
CASES = [
    # 4 x 1 GPU = 4000 of 10 GPUs at 1.0: six copies reach 10000 exactly; the 7th would pass it
    ([Task(n, 1, 1000) for n in "abcd"], 10_000, 1.0, 6, 10_000),
    # the test adds the per-GPU milli: 8000 -> 16000 -> 24000 (16000 + 1000 <= 20000), then 24000 + 1000 > 20000
    ([Task("big", 8, 1000)], 20_000, 1.0, 2, 24_000),
    # sharing: 500 -> 2000 in three copies (a total equal to the target is still taken)
    ([Task("half", 1, 500)], 2000, 1.0, 3, 2000),
    # 1.3 x 3000 = 3900: 1000 -> 3000 by two copies, 3000 + 1000 > 3900
    ([Task("one", 1, 1000)], 3000, 1.3, 2, 3000),
]


@pytest.mark.parametrize(("tasks", "capacity", "tune", "copies", "total"), CASES)
@pytest.mark.parametrize("seed", [0, 7])
def test_extras_until_the_next_draw_would_pass_the_target(tasks: list[Task], capacity: int, tune: float,
                                                          copies: int, total: int, seed: int) -> None:
    got = build_artifact_workload(tasks, tune, seed, capacity)
    assert len(got) == len(tasks) + copies
    assert gpu_total(got) == total
    added = extras(got, len(tasks))
    assert [t.name.rsplit("-tuned-", 1)[1] for t in added] == [str(k) for k in range(copies)]
    assert len({t.name for t in got}) == len(got)  # distinct names
    for t in added:  # each a copy of a task of the trace, under its new name
        base = t.name.rsplit("-tuned-", 1)[0]
        [orig] = [o for o in tasks if o.name == base]
        assert (t.num_gpu, t.gpu_milli, t.cpu_milli) == (orig.num_gpu, orig.gpu_milli, orig.cpu_milli)


@pytest.mark.parametrize("seed", range(6))
def test_cpu_only_draws_are_taken_and_the_first_gpu_draw_past_the_target_stops(seed: int) -> None:
    tasks = [Task("cpu-a"), Task("cpu-b"), Task("gpu", 1, 1000)]
    got = build_artifact_workload(tasks, 1.0, seed, 3000)
    added = extras(got, 3)
    gpu_copies = [t for t in added if t.num_gpu]
    assert len(gpu_copies) == 2 and gpu_total(got) == 3000  # 1000 + 2 x 1000 = 3000, the 3rd would pass it
    # CPU-only copies may follow the last GPU copy: what stops is the next GPU draw. Replay the
    # draws: the shuffle, then one randrange(3) per copy, then the GPU draw that stops
    rng = random.Random(seed)
    rng.shuffle(list(range(3)))
    by_name = sorted(tasks, key=lambda t: t.name)
    drawn = [by_name[rng.randrange(3)] for _ in range(len(added) + 1)]
    assert [d.name for d in drawn[:-1]] == [t.name.rsplit("-tuned-", 1)[0] for t in added]
    assert drawn[-1].name == "gpu"


def test_above_the_target_tasks_are_removed_until_it_is_reached() -> None:
    tasks = [Task(n, 1, 1000) for n in "abcdef"]
    for seed in range(5):
        got = build_artifact_workload(tasks, 2.0, seed, 1000)  # 6000 > 2000: four removed
        assert len(got) == 2 and {t.name for t in got} <= set("abcdef")
    got = build_artifact_workload(tasks, 1.0, 0, 6000)  # equal: untouched, shuffled
    assert sorted(t.name for t in got) == list("abcdef")


def test_bad_task_lists() -> None:
    with pytest.raises(ValueError, match="'a' appears more than once"):
        build_artifact_workload([Task("a"), Task("b"), Task("a")], 1.0, 0, 1000)
    with pytest.raises(ValueError, match="no task to draw from"):
        build_artifact_workload([], 1.0, 0, 1000)


def test_pod_objects() -> None:
    pods = [task_pod(Task("p1", 2, 1000)), task_pod(Task("p0", 1, 300)), task_pod(Task("c"))]
    assert [pod_task_shape(p) for p in pods] == [TaskShape("p1", 2, 1000), TaskShape("p0", 1, 300),
                                                 TaskShape("c", 0, 0)]
    got = build_artifact_workload(pods, 1.0, 3, 4000, shape=pod_task_shape, rename=rename_pod)
    total = sum(pod_task_shape(p).total_gpu_milli for p in got)
    # it stopped on a draw of at most 1000 per GPU that would pass 4000, and a copy of p1 (2 x 1000)
    # passes it by at most 1000
    assert 3000 < total <= 5000 and len(got) > 3
    names = [p["metadata"]["name"] for p in got]
    assert len(set(names)) == len(names)
    copy = rename_pod(pods[0] | {"metadata": pods[0]["metadata"] | {"uid": "u"}}, "p1-tuned-0")
    assert copy["metadata"]["name"] == "p1-tuned-0" and "uid" not in copy["metadata"]
    assert pods[0]["metadata"]["name"] == "p1"  # the original untouched


# ---- the binning


def samples(capacity: int, rows: list[tuple[int, int]]) -> list[GpuSample]:
    return [GpuSample(allocated, arrived, capacity) for arrived, allocated in rows]


def test_bins_by_hand() -> None:
    # 10 GPUs: 1000 milli arrived is 10%
    rows = [(0, 0),          # 0%   -> bin 0, 0.00
            (1000, 1000),    # 10%  -> bin 10, 10.00
            (1050, 900),     # 10.5% rounds half to even: bin 10, 9.00
            (1150, 1100),    # 11.5% -> bin 12, 11.00
            (1250, 1000)]    # 12.5% -> bin 12, 10.00
    got = gpu_allocation_bins(samples(10_000, rows))
    assert got == {"0": 0.0, "1": 0.0,               # 1: empty, its neighbours 0..2: bin 0
                   "9": 9.5, "10": 9.5,             # 9: from 8..10
                   "11": 10.0,                      # 11: empty, 10..12: 10, 9, 11, 10
                   "12": 10.5, "13": 10.5}          # 13: from 12..14
    assert list(got) == sorted(got, key=int)


def test_allocation_rounded_per_sample_before_the_mean() -> None:
    # 3 GPUs: 1 milli is 0.0333% -> 0.03, 9 milli 0.3%; mean 0.165 of the rounded values -> 0.16
    # (the mean of the unrounded values, 0.1667, would give 0.17)
    got = gpu_allocation_bins(samples(3000, [(0, 1), (0, 9)]))
    assert got["0"] == 0.16


def test_edges_and_beyond_130() -> None:
    # 1 GPU: 1 milli arrived = 0.1%
    rows = [(1295, 900),   # 129.5% -> 130 (half to even)
            (1305, 950),   # 130.5% -> 130
            (1315, 990),   # 131.5% -> 132: beyond the last bin, not reported
            (1400, 1000)]  # 140%
    got = gpu_allocation_bins(samples(1000, rows))
    assert got == {"129": 92.5, "130": 92.5}  # 129 is empty: 128..130
    # 131 alone: bin 130 from its neighbour 131
    assert gpu_allocation_bins(samples(1000, [(1308, 700)])) == {"130": 70.0}
    assert gpu_allocation_bins([]) == {}


def test_bins_take_plain_tuples() -> None:
    assert gpu_allocation_bins([(500, 1000, 2000)]) == {"49": 25.0, "50": 25.0, "51": 25.0}


# ---- the protocol object


def test_artifact_protocol() -> None:
    proto = ArtifactProtocol(tune=1.0, seed=5)
    check: ReplayProtocol = proto  # it is what replay's engine takes
    assert check.percentage_of_nodes_to_score == 100 and check.tie_break == FIXED_ORDER
    assert check.drop_unschedulable and check.name == "artifact"
    pods = [task_pod(Task(n, 1, 1000)) for n in "abc"]
    pods[0]["metadata"]["annotations"][DEPARTURE_TIME] = "50"
    got = proto.workload(pods, 5000)
    assert len(got) == 5  # 3000 + two copies = 5000
    assert [p["metadata"]["annotations"][ARRIVAL_TIME] for p in got] == ["0.0", "1.0", "2.0", "3.0", "4.0"]
    assert all(DEPARTURE_TIME not in p["metadata"]["annotations"] for p in got)
    assert DEPARTURE_TIME in pods[0]["metadata"]["annotations"]  # the input untouched
    assert proto.summary_source(pods, got) is pods  # FGD's distribution: the trace, not the tuned workload
    for sample in samples(5000, [(1000, 1000), (2000, 1000)]):
        proto.observe(sample)
    result: dict[str, Any] = {"kind": "ReplayResult"}
    proto.finish(result)
    assert result["gpuAllocation"] == {"19": 20.0, "20": 20.0, "21": 20.0, "39": 20.0, "40": 20.0, "41": 20.0}
