"""A field of the wrong kind altogether (the API server's schema would refuse it) is a ModelError
naming the object and the field, never a Python error out of a parser: the one object is skipped,
the others go on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeberth.cli import main
from kubeberth.model import ModelError, Node, Pod


def _pod(spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns", **meta}, "spec": spec}


@pytest.mark.parametrize(("raw", "message"), [
    (_pod({"containers": "x"}), "pod ns/p: spec.containers: expected a list, got 'x'"),
    (_pod({"containers": ["x"]}), "pod ns/p: spec.containers[0]: expected a mapping, got 'x'"),
    (_pod({"containers": [{"name": "a", "resources": "big"}]}),
     "pod ns/p: spec.containers[0].resources: expected a mapping, got 'big'"),
    (_pod({"containers": [{"name": "a", "ports": [7]}]}), "pod ns/p: spec.containers[0].ports[0]: expected a mapping"),
    (_pod({"containers": [], "initContainers": {"a": 1}}), "pod ns/p: spec.initContainers: expected a list"),
    (_pod({"containers": [], "affinity": "x"}), "pod ns/p: spec.affinity: expected a mapping, got 'x'"),
    (_pod({"containers": []}, ownerReferences=[3]), "pod ns/p: metadata.ownerReferences[0]: expected a mapping"),
])
def test_a_pod_field_of_the_wrong_kind_is_named(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ModelError) as err:
        Pod(raw)
    assert str(err.value).startswith(message)


@pytest.mark.parametrize(("raw", "message"), [
    ({"metadata": {"name": "n", "labels": "x"}}, "node n: metadata.labels: expected a mapping, got 'x'"),
    ({"metadata": {"name": "n"}, "status": {"images": [{"names": 3}]}},
     "node n: status.images[0].names: expected a list, got 3"),
    ({"metadata": {"name": "n"}, "spec": {"taints": [5]}}, "node n: taint 5 has no key"),
])
def test_a_node_field_of_the_wrong_kind_is_named(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ModelError) as err:
        Node(raw)
    assert str(err.value).startswith(message)


def test_simulate_reports_the_bad_pod_and_schedules_the_others(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    docs = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
             "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}},
            _pod({"containers": "x"}),
            {**_pod({"containers": [{"name": "a"}]}), "metadata": {"name": "good", "namespace": "ns"}}]
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    assert main(["simulate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "pod ns/p: spec.containers: expected a list, got 'x'" in out
    assert "ns/good  Scheduled" in out.replace("   ", "  ") or "Scheduled      n1" in out
