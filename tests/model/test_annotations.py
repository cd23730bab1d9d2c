"""The Pod and Node views' annotations: metadata.annotations as str -> str, read on first use, and
a clear error for an object whose annotations are not a mapping."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeberth.model import ModelError, Node, Pod
from tests.builders import node_dict, pod_dict


def pod_with(annotations: Any) -> dict[str, Any]:
    raw = pod_dict("p", "ns")
    raw["metadata"]["annotations"] = annotations
    return raw


def node_with(annotations: Any) -> dict[str, Any]:
    raw = node_dict("n1")
    raw["metadata"]["annotations"] = annotations
    return raw


CASES = [
    pytest.param(None, {}, id="absent"),
    pytest.param({}, {}, id="empty"),
    pytest.param({"example.com/cost": "3", "note": "x"}, {"example.com/cost": "3", "note": "x"}, id="strings"),
    # What YAML makes of unquoted values: the API server would have refused them, simulate's
    # input may still carry them; they are read as the strings kubectl would show.
    pytest.param({"example.com/cost": 3, "on": True}, {"example.com/cost": "3", "on": "True"}, id="scalars"),
]


@pytest.mark.parametrize("annotations, want", CASES)
def test_pod_annotations_are_read(annotations: Any, want: dict[str, str]) -> None:
    assert Pod(pod_with(annotations)).annotations == want


@pytest.mark.parametrize("annotations, want", CASES)
def test_node_annotations_are_read(annotations: Any, want: dict[str, str]) -> None:
    assert Node(node_with(annotations)).annotations == want


def test_a_pod_without_metadata_annotations_has_none() -> None:
    raw = pod_dict("p")
    raw["metadata"].pop("annotations", None)
    assert Pod(raw).annotations == {}
    assert Node(node_dict("n1")).annotations == {}


def test_annotations_are_parsed_once() -> None:
    pod = Pod(pod_with({"a": "1"}))
    node = Node(node_with({"b": "2"}))
    assert pod.annotations is pod.annotations
    assert node.annotations is node.annotations


def test_a_copy_keeps_them() -> None:
    pod = Pod(pod_with({"a": "1"}))
    assert copy.copy(pod).annotations == {"a": "1"}
    fresh = copy.copy(Pod(pod_with({"a": "1"})))  # copied before the first read
    assert fresh.annotations == {"a": "1"}


@pytest.mark.parametrize("annotations", [
    pytest.param(["a=1"], id="list"),
    pytest.param("a=1", id="string"),
])
def test_annotations_that_are_not_a_mapping_are_refused(annotations: Any) -> None:
    with pytest.raises(ModelError, match=r"^pod ns/p: metadata.annotations must be a mapping$"):
        Pod(pod_with(annotations))
    with pytest.raises(ModelError, match=r"^node n1: metadata.annotations must be a mapping$"):
        Node(node_with(annotations))


def test_labels_and_annotations_are_separate() -> None:
    raw = pod_with({"team": "from-annotation"})
    raw["metadata"]["labels"] = {"team": "from-label"}
    pod = Pod(raw)
    assert pod.labels == {"team": "from-label"}
    assert pod.annotations == {"team": "from-annotation"}
