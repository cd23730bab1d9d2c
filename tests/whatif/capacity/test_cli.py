"""`kubeberth capacity` as a command: the JSON contract, --emit-copies given to `simulate` (the
reproduction the docs show), and bad templates refused with the file, document and field (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeberth.cli import main

from .brute import write_yaml
from .clusters import NEVER, node, pod


@pytest.fixture
def cluster(tmp_path: Path) -> Path:
    return write_yaml(tmp_path / "cluster.yaml", [node("n1", "4"), node("n2", "2"),
                                                  pod("run", "1", node_name="n1"), pod("pending", "1")])


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("exact", [False, True])
def test_json_contract(capsys: pytest.CaptureFixture[str], tmp_path: Path, cluster: Path, exact: bool) -> None:
    template = write_yaml(tmp_path / "pod.yaml", [pod("web", "500m")])
    code, out, _ = run(capsys, "capacity", str(cluster), "--pod", str(template), "--seed", "5", "-o", "json",
                       *(["--exact"] if exact else []), "--verify")
    got = json.loads(out)
    assert code == 0
    assert (got["total"], got["perNode"], got["pendingLeftOut"], got["verified"]) == (10, {"n1": 6, "n2": 4}, 1, True)
    assert got["stoppedBy"] == f"0/2 nodes are available: 2 Insufficient cpu. {NEVER}"
    assert got["path"] == ("exact" if exact else "per-node")


def test_emitted_copies_reproduce_with_simulate(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cluster = write_yaml(tmp_path / "cluster.yaml", [node("n1", "3"), node("n2", "2")])
    template = write_yaml(tmp_path / "pod.yaml", [pod("web", "1")])
    _, out, _ = run(capsys, "capacity", str(cluster), "--pod", str(template), "-o", "json")
    total = json.loads(out)["total"]
    _, copies, _ = run(capsys, "capacity", str(cluster), "--pod", str(template), "--emit-copies", str(total + 1))
    (tmp_path / "copies.yaml").write_text(copies)
    _, out, _ = run(capsys, "simulate", str(cluster), str(tmp_path / "copies.yaml"), "-o", "json")
    pods = json.loads(out)["pods"]
    assert [p["pod"] for p in pods] == [f"default/web-capacity-{i}" for i in range(1, total + 2)]
    assert [p["status"] for p in pods] == ["Scheduled"] * total + ["Unschedulable"]


def test_text_output_names_the_next_copy(capsys: pytest.CaptureFixture[str], tmp_path: Path, cluster: Path) -> None:
    template = write_yaml(tmp_path / "pod.yaml", [pod("web", "500m")])
    code, out, _ = run(capsys, "capacity", str(cluster), "--pod", str(template))
    assert code == 0
    assert out.startswith("10 more copies of default/web fit now (per-node path).")
    assert "copy 11 (default/web-capacity-11): 0/2 nodes are available: 2 Insufficient cpu." in out


def _deployment(spec: dict[str, Any] | None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}
    if spec is not None:
        obj["spec"] = spec
    return obj


BAD: list[tuple[str, list[dict[str, Any]], str]] = [
    ("not-a-template", [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}],
     "pod.yaml, document 1: kind Service: not a pod template"),
    ("no-template", [_deployment({"replicas": 2})],
     "pod.yaml, document 1: Deployment web: spec.template: Required value"),
    ("nothing", [], "pod.yaml: no pod template"),
    ("two-pods", [pod("a"), pod("b")], "pod.yaml, document 2: a second pod template (the first is"),
    ("no-image", [_deployment({"template": {"spec": {"containers": [{"name": "c"}]}}})],
     "pod.yaml, document 1: spec.template.spec.containers[0].image: Required value"),
    ("no-containers", [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": {"containers": []}}],
     "pod.yaml, document 1: spec.containers: Required value"),
    ("bad-quantity", [pod("a", "lots")], "pod.yaml, document 1: field spec.containers[0].resources.requests: "
                                         "resource cpu: invalid quantity 'lots'"),
    ("unknown-class", [pod("a", priorityClassName="nope")],
     "pod.yaml, document 1: field spec.priorityClassName: no PriorityClass with name nope was found"),
    ("bound", [pod("a", node_name="n1")], "pod.yaml, document 1: spec.nodeName: set"),
    ("other-scheduler", [pod("a", schedulerName="mine")], "spec.schedulerName: mine is served by no profile"),
    ("group-member-elsewhere", [{"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                                 "metadata": {"name": "g"}, "spec": {"schedulingPolicy": {"basic": {}}}}, pod("a")],
     "pod.yaml, document 2: spec.schedulingGroup.podGroupName: must name the PodGroup default/g"),
]


@pytest.mark.parametrize(("name", "docs", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_templates_are_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path, cluster: Path, name: str,
                                   docs: list[dict[str, Any]], message: str) -> None:
    template = write_yaml(tmp_path / "pod.yaml", docs)
    code, out, err = run(capsys, "capacity", str(cluster), "--pod", str(template))
    assert code == 2 and out == ""
    assert message in err, err
    assert "Traceback" not in err


def test_with_cluster_reproduces_alone(capsys: pytest.CaptureFixture[str], tmp_path: Path, cluster: Path) -> None:
    """--emit-copies --with-cluster: simulate of that one file places N copies and not copy N+1,
    although the input cluster had a pending pod (left out)."""
    template = write_yaml(tmp_path / "pod.yaml", [pod("web", "500m")])
    _, out, _ = run(capsys, "capacity", str(cluster), "--pod", str(template), "-o", "json")
    total = json.loads(out)["total"]
    _, stream, _ = run(capsys, "capacity", str(cluster), "--pod", str(template), "--emit-copies", str(total + 1),
                       "--with-cluster")
    (tmp_path / "check.yaml").write_text(stream)
    _, out, _ = run(capsys, "simulate", str(tmp_path / "check.yaml"), "-o", "json")
    status = {p["pod"]: p["status"] for p in json.loads(out)["pods"]}
    assert "default/pending" not in status
    copies = [status[f"default/web-capacity-{i}"] for i in range(1, total + 2)]
    assert copies == ["Scheduled"] * total + ["Unschedulable"]


def test_gang_without_its_gate_is_said(capsys: pytest.CaptureFixture[str], tmp_path: Path, cluster: Path) -> None:
    from .clusters import gang

    template = write_yaml(tmp_path / "pod.yaml", gang("train", 2, "1"))
    code, _, err = run(capsys, "capacity", str(cluster), "--pod", str(template))
    assert code == 0 and "PodGroups are not read without the GenericWorkload feature gate" in err
    code, _, err = run(capsys, "capacity", str(cluster), "--pod", str(template), "--feature-gates",
                       "GenericWorkload=true")
    assert code == 0 and "GenericWorkload" not in err


def test_generate_name_names_the_copies(capsys: pytest.CaptureFixture[str], tmp_path: Path, cluster: Path) -> None:
    raw = pod("x", "1")
    raw["metadata"] = {"generateName": "job-", "namespace": "batch"}
    template = write_yaml(tmp_path / "pod.yaml", [raw])
    _, out, _ = run(capsys, "capacity", str(cluster), "--pod", str(template), "--emit-copies", "2")
    names = [d["metadata"]["name"] for d in yaml.safe_load_all(out)]
    assert names == ["job-capacity-1", "job-capacity-2"]
