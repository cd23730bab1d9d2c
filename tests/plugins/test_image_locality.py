"""ImageLocality: sum of the sizes of the pod's images present on the node, scaled by
how many nodes have them, clamped to 23MB..1000MB per container."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from kubeberth.model import Node, Pod
from kubeberth.plugins.image_locality import (
    MB,
    ImageLocality,
    calculate_priority,
    normalized_image_name,
    scaled_image_score,
)
from tests.builders import make_pod, node_dict
from tests.doubles import handle

from ._core_helpers import run_score


def image_node(name: str, *images: tuple[list[str], int]) -> Node:
    return Node(node_dict(name, images=[{"names": names, "sizeBytes": size} for names, size in images]))


def image_pod(*images: str, init: tuple[str, ...] = (), volumes: tuple[str, ...] = ()) -> Pod:
    spec: dict[str, Any] = {}
    if init:
        spec["initContainers"] = [{"name": f"i{i}", "image": img} for i, img in enumerate(init)]
    if volumes:
        spec["volumes"] = [{"name": f"v{i}", "image": {"reference": ref}} for i, ref in enumerate(volumes)]
    return make_pod("p", containers=[{"name": f"c{i}", "image": img} for i, img in enumerate(images)], **spec)


NODE_40_300_2000 = [
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40 * MB),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300 * MB),
    (["gcr.io/2000:latest"], 2000 * MB),
]
NODE_250_10 = [
    (["gcr.io/250:latest"], 250 * MB),
    (["gcr.io/10:latest", "gcr.io/10:v1"], 10 * MB),
]
NODE_250_ALSO = [(["gcr.io/250:latest"], 250 * MB)]


def two_nodes() -> list[Node]:
    return [image_node("node1", *NODE_40_300_2000), image_node("node2", *NODE_250_10)]


# (id, pod, nodes, want scores)
CASES: list[tuple[str, Pod, list[Node], list[int]]] = [
    # node1: 40MB * 1/2 = 20MB < 23MB -> 0; node2: 250MB * 1/2 = 125MB -> 100*(125-23)/(2000-23) = 5
    ("two images spread on two nodes, prefer the larger image one",
     image_pod("gcr.io/40", "gcr.io/250"), two_nodes(), [0, 5]),
    # node1: (40MB + 300MB) * 1/2 = 170MB -> 100*(170-23)/(2000-23) = 7
    ("two images on one node, prefer this node", image_pod("gcr.io/40", "gcr.io/300"), two_nodes(), [7, 0]),
    # node1: 2000MB * 1/2 = 1000MB -> 100*(1000-23)/(2000-23) = 49; node2: 10MB * 1/2 -> 0
    ("if exceed limit, use limit", image_pod("gcr.io/10", "gcr.io/2000"), two_nodes(), [49, 0]),
    # node1: 2000MB * 1/3 -> 100*(666.67-23)/(2000-23) = 32
    ("if exceed limit, use limit (with a node which has no images present)",
     image_pod("gcr.io/10", "gcr.io/2000"), [*two_nodes(), image_node("node3")], [32, 0, 0]),
    # 250MB on both nodes: spread 2/2, one container -> 100*(250-23)/(1000-23) = 23
    ("an image present on every node is not scaled down", image_pod("gcr.io/250"),
     [image_node("node1", *NODE_250_ALSO), image_node("node2", *NODE_250_10)], [23, 23]),
    # 250MB on 2 of 4 nodes -> 125MB -> 100*(125-23)/(1000-23) = 10
    ("spread over half of the nodes", image_pod("gcr.io/250"),
     [image_node("node1", *NODE_250_ALSO), image_node("node2", *NODE_250_10), image_node("node3"),
      image_node("node4")], [10, 10, 0, 0]),
    # init containers count in the sum and in the number of containers: (150 + 20)MB over 2 -> 7
    ("init container images count", image_pod("gcr.io/40", init=("gcr.io/300",)), two_nodes(), [7, 0]),
    ("an explicit tag matches one of the image's names", image_pod("gcr.io/300:v1", "gcr.io/40:v1"), two_nodes(),
     [7, 0]),
    ("an unknown tag does not match", image_pod("gcr.io/300:v2"), two_nodes(), [0, 0]),
    # Upstream does not normalise registries: nginx does not match docker.io/library/nginx:latest.
    # node2: 500MB * 1/2 -> 100*(250-23)/(1000-23) = 23
    ("no docker.io normalisation", image_pod("nginx"),
     [image_node("node1", (["docker.io/library/nginx:latest"], 500 * MB)),
      image_node("node2", (["nginx:latest"], 500 * MB))], [0, 23]),
    ("no images anywhere", image_pod("gcr.io/40"), [image_node("node1"), image_node("node2")], [0, 0]),
    # v1.37: image volumes count in the sum and in the number of images: (150 + 20)MB over 2 -> 7
    ("image volume images count", image_pod("gcr.io/40", volumes=("gcr.io/300",)), two_nodes(), [7, 0]),
    # an image volume absent from every node still raises the threshold: 125MB over 2 -> 100*(125-23)/(2000-23)
    ("an absent image volume raises the threshold", image_pod("gcr.io/250", volumes=("gcr.io/none",)), two_nodes(),
     [0, 5]),
    # The max threshold grows with the number of containers: 2000MB / 1 node, 3 containers -> 100*(2000-23)/(3000-23)
    ("max threshold is per container", image_pod("gcr.io/2000", "a", "b"), [image_node("node1", *NODE_40_300_2000)],
     [66]),
]


@pytest.mark.parametrize(("pod", "nodes", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_score(pod: Pod, nodes: list[Node], want: list[int]) -> None:
    h = handle(nodes)
    assert run_score(ImageLocality(None, h), pod, h.snapshot.node_infos) == want


@pytest.mark.parametrize(("image", "want"), [
    ("root", "root:latest"),
    ("gcr.io:5000/root", "gcr.io:5000/root:latest"),
    ("root:tag", "root:tag"),
    ("gcr.io:5000/root:tag", "gcr.io:5000/root:tag"),
    ("root@sha256:" + hashlib.sha256(b"root").hexdigest(), "root@sha256:" + hashlib.sha256(b"root").hexdigest()),
], ids=["add latest 1", "add latest 2", "keep 1", "keep with registry port", "keep digest"])
def test_normalized_image_name(image: str, want: str) -> None:
    assert normalized_image_name(image) == want


def test_calculate_priority_and_scaling() -> None:
    assert calculate_priority(0, 1) == 0
    assert calculate_priority(23 * MB, 1) == 0
    assert calculate_priority(1000 * MB, 1) == 100
    assert calculate_priority(5000 * MB, 2) == 100
    assert scaled_image_score(100 * MB, 1, 3) == int(100 * MB / 3)
