"""The openb CSV adapter: good rows as Nodes and Pods (spec40's GPU conventions), optional
columns, and each malformed row named FILE:LINE:COLUMN and skipped while the others go on."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from kubeberth.whatif.inputs import InputError
from kubeberth.whatif.replay.fit import never_fits
from kubeberth.whatif.replay.openb import read_openb

NODES = "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\nn1,32000,131072,0,\n"
TASKS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
         "scheduled_time\n")


def read(tmp_path: Path, tasks: str, nodes: str = NODES) -> tuple[list, list, int, str]:  # type: ignore[type-arg]
    (tmp_path / "n.csv").write_text(nodes)
    (tmp_path / "t.csv").write_text(tasks)
    warn = io.StringIO()
    got = read_openb(tmp_path / "n.csv", tmp_path / "t.csv", warn)
    return (*got, warn.getvalue())


def test_nodes(tmp_path: Path) -> None:
    nodes, _, skipped, _ = read(tmp_path, TASKS)
    assert skipped == 0
    n0, n1 = (t.obj for t in nodes)
    assert n0["status"]["allocatable"] == {"cpu": "64000m", "memory": "262144Mi", "pods": "1001",
                                           "alibabacloud.com/gpu-count": "2", "alibabacloud.com/gpu-milli": "2000"}
    assert n0["status"]["capacity"] == n0["status"]["allocatable"]
    assert n0["metadata"]["labels"]["alibabacloud.com/gpu-card-model"] == "P100"
    assert "alibabacloud.com/gpu-card-model" not in n1["metadata"]["labels"]
    assert n1["status"]["allocatable"]["alibabacloud.com/gpu-milli"] == "0"


@pytest.mark.parametrize(("row", "requests", "annotations", "times"), [
    pytest.param("s,6000,12288,1,460,,LS,Running,5,90,5", {"cpu": "6000m", "memory": "12288Mi",
                 "alibabacloud.com/gpu-milli": "460"},
                 {"alibabacloud.com/gpu-milli": "460", "alibabacloud.com/gpu-count": "1"}, (5.0, 90.0), id="share"),
    pytest.param("m,12000,16384,4,1000,V100M16|V100M32,LS,Running,0,,", {"cpu": "12000m", "memory": "16384Mi",
                 "alibabacloud.com/gpu-milli": "4000"},
                 {"alibabacloud.com/gpu-milli": "1000", "alibabacloud.com/gpu-count": "4",
                  "alibabacloud.com/gpu-card-model": "V100M16|V100M32"}, (0.0, None), id="multi-gpu-with-spec"),
    pytest.param("c,4000,8192,0,0,,BE,Running,7,8,7", {"cpu": "4000m", "memory": "8192Mi"}, None, (7.0, 8.0),
                 id="cpu-only"),
    pytest.param("o,1000,1024,1,1500,,,,,,", {"cpu": "1000m", "memory": "1024Mi",
                 "alibabacloud.com/gpu-milli": "1000"},
                 {"alibabacloud.com/gpu-milli": "1000", "alibabacloud.com/gpu-count": "1"}, (0.0, None),
                 id="over-1000-capped"),
])
def test_tasks(tmp_path: Path, row: str, requests: dict[str, str], annotations: dict[str, str] | None,
               times: tuple[float, float | None]) -> None:
    _, tasks, skipped, warn = read(tmp_path, TASKS + row + "\n", NODES + "n2,96000,393216,8,V100M32\n")
    assert skipped == 0
    assert warn == ("" if "1500" not in row else f"{tmp_path / 't.csv'}:2:5: gpu_milli: 1500 is more than one GPU "
                    "(1000 per GPU); taken as 1000, as the artifact does\n")
    (t,) = tasks
    c = t.obj["spec"]["containers"][0]["resources"]
    assert c["requests"] == requests and c["limits"] == requests
    assert t.obj["metadata"].get("annotations") == annotations
    assert (t.arrival, t.departure) == times


def test_only_the_first_five_columns(tmp_path: Path) -> None:
    _, tasks, skipped, _ = read(tmp_path, "name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1000,1024,2,1000\n")
    assert skipped == 0
    assert tasks[0].obj["spec"]["containers"][0]["resources"]["requests"]["alibabacloud.com/gpu-milli"] == "2000"
    assert (tasks[0].arrival, tasks[0].departure) == (0.0, None)


@pytest.mark.parametrize(("row", "where", "message"), [
    ("x,abc,1024,0,0,,,,1,2,", "t.csv:2:2", "cpu_milli: 'abc' is not a number"),
    ("x,1000,,0,0,,,,1,2,", "t.csv:2:3", "memory_mib: empty"),
    ("x,1000,1024,-1,0,,,,1,2,", "t.csv:2:4", "num_gpu: -1 is below 0"),
    ("x,1000,1024,1,0.5,,,,1,2,", "t.csv:2:5", "gpu_milli: '0.5' is not a whole number"),
    ("x,1000,1024,0,0,,,,9,3,", "t.csv:2:10", "deletion_time: 3 is before creation_time 9"),
    ("x,1000,1024,0,0,,,,soon,3,", "t.csv:2:9", "creation_time: 'soon' is not a number"),
    (",1000,1024,0,0,,,,1,2,", "t.csv:2:1", "name: empty"),
    ("x,1000,1024,0,0,,,,1,2,,extra", "t.csv:2:12", "12 fields where the header has 11"),
])
def test_malformed_rows_are_named_and_skipped(tmp_path: Path, row: str, where: str, message: str) -> None:
    _, tasks, skipped, warn = read(tmp_path, TASKS + row + "\nok,1000,1024,0,0,,,,1,2,\n")
    assert skipped == 1
    assert [t.obj["metadata"]["name"] for t in tasks] == ["ok"]
    assert f"{where}: {message}" in warn and "row skipped" in warn


def test_bad_node_rows_and_duplicates(tmp_path: Path) -> None:
    nodes, tasks, skipped, warn = read(tmp_path, TASKS + "a,1,1,0,0,,,,,,\na,1,1,0,0,,,,,,\n",
                                       NODES + "n2,lots,1,0,\n")
    assert [t.obj["metadata"]["name"] for t in nodes] == ["n0", "n1"]
    assert len(tasks) == 1 and skipped == 2
    assert "n.csv:4:2: cpu_milli: 'lots' is not a number" in warn
    assert "t.csv:3:1: name: task a appears twice" in warn


@pytest.mark.parametrize(("nodes", "tasks", "where", "message"), [
    (NODES + ",1,1,0,\n", TASKS, "n.csv:4:1", "sn: empty (want the node's name)"),
    (NODES, TASKS + ",1,1,0,0,,,,,,\n", "t.csv:2:1", "name: empty (want the task's name)"),
    ("cpu_milli,memory_mib,gpu,model,sn\n1,1,0,,n0\n1,1,0,,\n", TASKS, "n.csv:3:5", "sn: empty (want the node's name)"),
    ("cpu_milli,memory_mib,gpu,model,sn\n1,1,0,,n0\n1,1,0,,n0\n", TASKS, "n.csv:3:5", "sn: node n0 appears twice"),
    (NODES, "cpu_milli,memory_mib,num_gpu,gpu_milli,name\n1,1,0,0,\n", "t.csv:2:5",
     "name: empty (want the task's name)"),
    (NODES, "cpu_milli,memory_mib,num_gpu,gpu_milli,name\n1,1,0,0,a\n1,1,0,0,a\n", "t.csv:3:5",
     "name: task a appears twice"),
])
def test_empty_and_repeated_names_name_their_column(tmp_path: Path, nodes: str, tasks: str, where: str,
                                                    message: str) -> None:
    *_, skipped, warn = read(tmp_path, tasks, nodes)
    assert skipped == 1
    assert f"{where}: {message}; row skipped" in warn


def test_unknown_column_is_reported(tmp_path: Path) -> None:
    _, tasks, skipped, warn = read(tmp_path, "name,cpu_milli,memory_mib,num_gpu,gpu_milli,colour\na,1,1,0,0,red\n")
    assert len(tasks) == 1 and skipped == 0
    assert "t.csv:1:6: unknown column 'colour' ignored" in warn


@pytest.mark.parametrize(("tasks", "message"), [
    ("name,cpu_milli,memory_mib,num_gpu\n", "t.csv:1: missing column 'gpu_milli'"),
    ("", "t.csv: empty file"),
])
def test_files_refused(tmp_path: Path, tasks: str, message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        read(tmp_path, tasks)


def test_missing_file(tmp_path: Path) -> None:
    (tmp_path / "n.csv").write_text(NODES)
    with pytest.raises(InputError, match=r"nope\.csv: No such file"):
        read_openb(tmp_path / "n.csv", tmp_path / "nope.csv", io.StringIO())


def test_tasks_that_never_fit(tmp_path: Path) -> None:
    nodes, tasks, _, _ = read(tmp_path, TASKS + "big,128000,1024,0,0,,,,,,\nfine,1000,1024,1,500,,,,,,\n"
                              "gpus,1000,1024,3,1000,,,,,,\n")
    bad = dict(never_fits([*nodes, *tasks]))
    assert bad == {"default/big": "requests more cpu than any node has",
                   "default/gpus": "requests more alibabacloud.com/gpu-milli than any node has"}


def test_a_gpu_model_no_node_has_is_reported_and_the_task_kept(tmp_path: Path) -> None:
    _, tasks, skipped, warned = read(tmp_path, TASKS + "t0,1000,1024,1,500,XYZ|A100,LS,Running,0,9,0\n"
                                     "t1,1000,1024,1,500,P100|XYZ,LS,Running,0,9,0\n")
    assert skipped == 0 and len(tasks) == 2
    assert warned == ("t.csv:2:6: gpu_spec: no node has a GPU of model XYZ|A100 (the nodes' models: P100); "
                      "the task can never be placed\n").replace("t.csv", str(tmp_path / "t.csv"))


def test_a_share_above_one_gpu_is_capped_and_said(tmp_path: Path) -> None:
    _, tasks, skipped, warned = read(tmp_path, TASKS + "t0,1000,1024,1,1500,,LS,Running,0,9,0\n")
    assert skipped == 0
    assert tasks[0].obj["metadata"]["annotations"]["alibabacloud.com/gpu-milli"] == "1000"
    assert warned == (f"{tmp_path / 't.csv'}:2:5: gpu_milli: 1500 is more than one GPU (1000 per GPU); "
                      "taken as 1000, as the artifact does\n")
